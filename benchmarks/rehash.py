"""Re-hash benchmark: ``eceb corpus verify`` against ``b3sum --check``.

Usage::

    python benchmarks/rehash.py [--data-dir DIR] [--small-count 100000] [--small-size 4096]
                                [--large-count 3] [--large-size 268435456] [--runs 3]
                                [--seed 0] [--workers N] [--only small|large] [--regenerate]

Two corpora are generated under the data directory (default
``benchmarks/data/``, git-ignored), with deterministic content derived from
``--seed`` (BLAKE3 extendable output), and reused by later runs when their
manifest matches the requested parameters:

* ``large``: ``--large-count`` files of ``--large-size`` bytes (default 3 x 256 MiB);
* ``small``: ``--small-count`` files of ``--small-size`` bytes (default 100,000 x 4 KiB),
  100 to a directory, spread over two directory levels.

For each corpus the script writes a rules file that classifies every file,
builds the registry with ``eceb corpus register`` and a check file with
``b3sum`` (and checks that both agree on every digest), then times, in the
same run, with a warm page cache, ``--runs`` runs of each of::

    eceb corpus verify REGISTRY --source FILES     (the installed CLI, as a subprocess)
    b3sum --check CHECKFILE                        (run inside FILES)

taken in turn (eceb, b3sum, eceb, ...) after one untimed warm-up run each,
and keeps the best. Wall-clock time includes process start-up and, for
eceb, reading and validating the registry; eceb runs with a bytecode cache
(``PYTHONDONTWRITEBYTECODE`` is removed from its environment), as an
installed package has. It prints files/s, MB/s (10^6
bytes per second) and the ratio eceb/b3sum against the targets: small files
>= 1.5x b3sum's files/s, large files >= 0.9x b3sum's MB/s. It measures and
reports; it exits 0 whether or not the targets are met (a failing tool run
is reported and leaves its row empty).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import blake3

GENERATOR_VERSION = 1
"""Bumped whenever the generated content or layout changes (invalidates reuse)."""

FILES_PER_DIR = 100
DIRS_PER_TOP = 100
RULES = """schema = "symgliph.eceb/rules-v0.1"

[[rule]]
glob = "**"
kind = "code"
classification = "internal"
"""

ECEB_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
"""Environment of the eceb runs: with a bytecode cache, as an installed package has (without
one, every run would compile eceb's modules again)."""

TARGETS = {"small": ("files/s", 1.5), "large": ("MB/s", 0.9)}
"""Per set: the figure compared and the minimum ratio eceb/b3sum."""


@dataclass(frozen=True)
class CorpusSet:
    """One generated corpus: ``count`` files of ``size`` bytes under ``root/files``."""

    name: str
    count: int
    size: int
    seed: int
    root: Path

    @property
    def files(self) -> Path:
        return self.root / "files"

    @property
    def registry(self) -> Path:
        return self.root / "registry.jsonl"

    @property
    def checkfile(self) -> Path:
        return self.root / "b3sums.txt"

    @property
    def rules(self) -> Path:
        return self.root / "rules.toml"

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    def relative_path(self, index: int) -> str:
        """Where file ``index`` lives under ``files``: two directory levels, 100 files a directory."""
        directory = index // FILES_PER_DIR
        return f"d{directory // DIRS_PER_TOP:03d}/d{directory % DIRS_PER_TOP:02d}/f{index:07d}.bin"

    def expected_manifest(self) -> dict[str, object]:
        return {
            "generator": GENERATOR_VERSION,
            "name": self.name,
            "count": self.count,
            "size": self.size,
            "seed": self.seed,
        }


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def file_key(seed: int, set_name: str, index: int) -> bytes:
    """The 32-byte BLAKE3 key whose extendable output is file ``index``'s content."""
    return blake3.blake3(f"eceb-rehash-benchmark:{seed}:{set_name}:{index}".encode()).digest()


def write_file(path: Path, key: bytes, size: int) -> None:
    """Write ``size`` bytes of BLAKE3 output keyed by ``key``, in 16 MiB pieces."""
    step = 16 * 1024 * 1024
    with path.open("wb") as out:
        for offset in range(0, size, step):
            out.write(blake3.blake3(key).digest(length=min(step, size - offset), seek=offset))


def is_current(corpus: CorpusSet) -> bool:
    """True when ``corpus`` was generated completely with the same parameters."""
    try:
        manifest = json.loads(corpus.manifest.read_text())
    except (OSError, ValueError):
        return False
    if manifest != corpus.expected_manifest():
        return False
    if not (corpus.registry.is_file() and corpus.checkfile.is_file() and corpus.rules.is_file()):
        return False
    for index in {0, corpus.count // 2, corpus.count - 1}:
        try:
            if (corpus.files / corpus.relative_path(index)).stat().st_size != corpus.size:
                return False
        except OSError:
            return False
    return True


def generate(corpus: CorpusSet, eceb: list[str]) -> None:
    """(Re)create the files, the rules file, the registry and the b3sum check file."""
    if is_current(corpus):
        log(f"[{corpus.name}] reusing {corpus.root}")
        return
    log(f"[{corpus.name}] generating {corpus.count} files of {corpus.size} bytes in {corpus.files} ...")
    started = time.perf_counter()
    if corpus.root.exists():
        shutil.rmtree(corpus.root)
    corpus.files.mkdir(parents=True)
    for index in range(corpus.count):
        path = corpus.files / corpus.relative_path(index)
        if index % FILES_PER_DIR == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, file_key(corpus.seed, corpus.name, index), corpus.size)
    corpus.rules.write_text(RULES)
    log(f"[{corpus.name}] generated in {time.perf_counter() - started:.1f} s; registering with eceb ...")
    subprocess.run(
        [*eceb, "corpus", "register", str(corpus.files), "--rules", str(corpus.rules), "-o", str(corpus.registry)],
        check=True,
        stdout=subprocess.DEVNULL,
        env=ECEB_ENV,
    )
    log(f"[{corpus.name}] writing the b3sum check file ...")
    relative = sorted(corpus.relative_path(i) for i in range(corpus.count))
    with corpus.checkfile.open("wb") as out:
        for start in range(0, len(relative), 5000):
            done = subprocess.run(
                ["b3sum", "--", *relative[start : start + 5000]], cwd=corpus.files, check=True, stdout=subprocess.PIPE
            )
            out.write(done.stdout)
    cross_check(corpus)
    corpus.manifest.write_text(json.dumps(corpus.expected_manifest(), sort_keys=True) + "\n")
    log(f"[{corpus.name}] ready in {time.perf_counter() - started:.1f} s")


def cross_check(corpus: CorpusSet) -> None:
    """Fail unless the registry and the check file agree on every digest."""
    registered: dict[str, str] = {}
    with corpus.registry.open("rb") as lines:
        next(lines)
        for line in lines:
            record = json.loads(line)
            registered[record["path"]] = record["source_digest"]
    checked = {}
    for line in corpus.checkfile.read_text().splitlines():
        digest, path = line.split("  ", 1)
        checked[path] = digest
    if registered != checked:
        sys.exit(f"[{corpus.name}] eceb's registry and b3sum disagree: regenerate with a clean --data-dir")


def timed(command: list[str], cwd: Path | None = None) -> float | None:
    """Wall-clock seconds of one run of ``command``, or None when it fails (reported)."""
    env = ECEB_ENV if command[0] != "b3sum" else None
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        log(f"FAILED (exit {done.returncode}): {' '.join(command)}\n{done.stderr.decode(errors='replace')[-2000:]}")
        return None
    return elapsed


def measure(runs: int, commands: dict[str, tuple[list[str], Path | None]]) -> dict[str, list[float]]:
    """Times of ``runs`` runs of each command, taken in turn (tool A, tool B, tool A, ...)
    so that every tool sees the same machine conditions; one untimed warm-up run each first.
    A tool whose run fails gets no times."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    failed: set[str] = set()
    for name, (command, cwd) in commands.items():
        if timed(command, cwd) is None:
            failed.add(name)
    for _ in range(runs):
        for name, (command, cwd) in commands.items():
            if name in failed:
                continue
            seconds = timed(command, cwd)
            if seconds is None:
                failed.add(name)
                times[name] = []
            else:
                times[name].append(seconds)
    return times


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = "unknown memory"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB RAM"
                break
    except OSError:
        pass
    system = f"{platform.system()} {platform.release()}"
    return f"{os.cpu_count()} logical CPUs ({model}), {memory}, {system}, Python {platform.python_version()}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).resolve().parent / "data")
    parser.add_argument("--small-count", type=int, default=100_000)
    parser.add_argument("--small-size", type=int, default=4096, help="bytes per small file")
    parser.add_argument("--large-count", type=int, default=3)
    parser.add_argument("--large-size", type=int, default=256 * 1024 * 1024, help="bytes per large file")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per tool and set (best is kept)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="eceb --workers (default: eceb's own default)")
    parser.add_argument("--only", choices=["small", "large"], default=None)
    parser.add_argument("--regenerate", action="store_true", help="generate the data again even if it matches")
    parser.add_argument("--eceb", default=None, help="the eceb executable (default: next to this Python)")
    args = parser.parse_args()

    if shutil.which("b3sum") is None:
        sys.exit("b3sum not found on PATH (Debian/Ubuntu: apt install b3sum; or cargo install b3sum)")
    eceb_path = args.eceb or str(Path(sys.executable).parent / "eceb")
    if not Path(eceb_path).exists():
        eceb_path = shutil.which("eceb") or sys.exit("eceb not found: install the project (pip install -e .)")
    eceb = [eceb_path]
    b3sum_version = subprocess.run(["b3sum", "--version"], check=True, capture_output=True, text=True).stdout.strip()

    sets = [
        CorpusSet("large", args.large_count, args.large_size, args.seed, args.data_dir / "large"),
        CorpusSet("small", args.small_count, args.small_size, args.seed, args.data_dir / "small"),
    ]
    sets = [s for s in sets if s.count > 0 and (args.only is None or s.name == args.only)]
    for corpus in sets:
        if args.regenerate:
            corpus.manifest.unlink(missing_ok=True)
        generate(corpus, eceb)

    rows = []
    for corpus in sets:
        verify = [*eceb, "corpus", "verify", str(corpus.registry), "--source", str(corpus.files)]
        if args.workers is not None:
            verify += ["--workers", str(args.workers)]
        check = ["b3sum", "--check", str(corpus.checkfile)]
        log(f"[{corpus.name}] timing {args.runs} runs of each tool, in turn (after one warm-up run each) ...")
        times = measure(args.runs, {"eceb": (verify, None), "b3sum": (check, corpus.files)})
        for tool, seconds in times.items():
            log(f"[{corpus.name}]   {tool:<6} runs: {', '.join(f'{t:.3f}' for t in seconds) or 'failed'} s")
        rows.append((corpus, verify, check, times))

    print()
    print("Re-hash benchmark: eceb corpus verify vs b3sum --check")
    print(f"machine: {machine()}")
    print(f"b3sum:   {b3sum_version}; --check with its defaults: files of 16 KiB or more are memory-mapped")
    print(f"         and hashed on {os.cpu_count()} threads (multithreaded mmap); smaller files are read and")
    print("         hashed one at a time, on one thread")
    print(f"eceb:    workers: {args.workers or 'default, one per core'}; with a bytecode cache, as installed")
    print(f"timing:  wall clock per run (start-up included), warm page cache, best of {args.runs}")
    print("         runs of each tool taken in turn, after one warm-up run each")
    for corpus, verify, check, _ in rows:
        print(f"{corpus.name + ':':<9}{' '.join(verify)}")
        print(f"{'':<9}(cd {corpus.files} && {' '.join(check)})")
    print()
    header = f"{'set':<24} {'tool':<6} {'seconds':>8} {'files/s':>10} {'MB/s':>8} {'ratio':>6} {'target':>15}  met"
    print(header)
    print("-" * len(header))
    verdicts = []
    for corpus, _, _, times in rows:
        total = corpus.count * corpus.size
        label = f"{corpus.name}: {corpus.count} x {human(corpus.size)}"
        unit, minimum = TARGETS[corpus.name]
        best = {tool: min(seconds) for tool, seconds in times.items() if seconds}
        # Both tools do the same work, so the ratio of speeds is the inverse ratio of times.
        ratio = best["b3sum"] / best["eceb"] if len(best) == 2 else None
        met = ratio is not None and ratio >= minimum
        verdicts.append(met)
        for tool in ("eceb", "b3sum"):
            if tool not in best:
                print(f"{label:<24} {tool:<6} {'failed':>8}")
                continue
            seconds = best[tool]
            cells = f"{seconds:>8.3f} {corpus.count / seconds:>10,.0f} {total / seconds / 1e6:>8,.0f}"
            if tool == "eceb" and ratio is not None:
                cells += f" {ratio:>5.2f}x {f'>= {minimum}x {unit}':>15}  {'yes' if met else 'NO'}"
            print(f"{label:<24} {tool:<6} {cells}")
    print()
    print("ratio = eceb speed / b3sum speed; MB = 10^6 bytes")
    print("all targets met" if all(verdicts) else "some targets NOT met")
    return 0


def human(size: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} B"


if __name__ == "__main__":
    sys.exit(main())
