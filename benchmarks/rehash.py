"""Re-hash scaling table: ``eceb corpus verify`` against ``b3sum --check``.

Usage::

    python benchmarks/rehash.py [--sets 10k,100k,768m | all] [--runs 3] [--workers N]
                                [--before TREE] [--floor] [--data-dir DIR] [--seed 0] [--regenerate]

Sets (``--sets``, comma-separated, or ``all``; default ``10k,100k,768m``,
about half a minute once generated):

* ``10k``, ``100k``, ``1m``: 10,000, 100,000 and 1,000,000 files of 4 KiB,
  100 to a directory, two directory levels;
* ``768m``, ``6g``: 3 and 24 files of 256 MiB (768 MiB and 6 GiB).

Each set is generated once under the data directory (default
``benchmarks/data/``, git-ignored; ``1m`` takes about 4.3 GB and a few
minutes, ``6g`` 6.4 GB) with deterministic content derived from ``--seed``
(BLAKE3 extendable output), and reused by later runs while its manifest
matches. For each set the script writes a rules file, builds the registry
with ``eceb corpus register`` and a check file with ``b3sum`` (and checks
that both agree on every digest), then times, with a warm page cache,
``--runs`` runs of each of::

    eceb corpus verify REGISTRY --source FILES     (python -P -m eceb_cli, this tree)
    eceb corpus verify ...                         (the same, from --before TREE, if given)
    b3sum --check CHECKFILE                        (run inside FILES)

taken in turn (eceb, b3sum, eceb, ...) after one untimed warm-up run each,
keeping the best wall-clock time (process start-up included). Each run's
peak RSS and CPU time come from GNU ``time`` (``%M``: the largest of
the process and the helper processes it started and reaped; ``%U + %S``). eceb runs
with a bytecode cache (``PYTHONDONTWRITEBYTECODE`` is removed from its
environment), as an installed package has.

``--floor`` adds, for the small sets, a bare loop in Python over the same
files (``os.open``, one ``os.read`` of size + 1, ``os.close``, BLAKE3 of the
bytes, compared with the check file's digest; one process per core, the
files split in two halves): the floor of re-hashing from Python, with no
registry, no plan and no findings. For the large sets it adds ``copy``
(every file read into one page-aligned 2 MiB buffer, nothing hashed: the
copy out of the page cache that a read costs, on one core) and ``mapped``
(every file hashed memory-mapped by BLAKE3 on all cores, as b3sum does:
the hashing without the copy), and from their loops the floor of hashing
by reading, ``read`` = start-up + (copy + mapped x cores) / cores: what no
reader can beat on this machine, since eceb must read (a mapped file
truncated under the hash kills the process with SIGBUS).

The table gives seconds, files/s, MB/s (10^6 bytes per second), peak RSS,
CPU seconds and the ratio eceb/b3sum against the targets: 1,000,000 small
files >= 1.5x b3sum's files/s with eceb's peak RSS <= 300 MB; 6 GiB >= 0.9x
b3sum's MB/s (the other sets show their ratio, with no target). It
measures and reports; it exits 0 whether or not the targets are met (a
failing tool run is reported and leaves its row empty).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import blake3

GENERATOR_VERSION = 2
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

TREE = Path(__file__).resolve().parents[1]

SETS = {
    "10k": ("small", 10_000, 4096),
    "100k": ("small", 100_000, 4096),
    "1m": ("small", 1_000_000, 4096),
    "768m": ("large", 3, 256 * 1024 * 1024),
    "6g": ("large", 24, 256 * 1024 * 1024),
}
DEFAULT_SETS = "10k,100k,768m"

TARGETS = {"1m": ("files/s", 1.5), "6g": ("MB/s", 0.9)}
"""The sets with a target: the figure compared and the minimum ratio eceb/b3sum (the others are
shown for the scaling, with their ratio and no target)."""

RSS_TARGET_MB = {"1m": 300}
"""Sets with a peak RSS target for eceb, in MB (10^6 bytes)."""

CHECKFILE_CODE = r"""
import os, sys, time, blake3
paths, digests = [], []
with open(sys.argv[1], "rb") as lines:
    for line in lines:
        digest, path = line.rstrip(b"\n").split(b"  ", 1)
        paths.append(path)
        digests.append(digest.decode())
"""
"""Both floors' start: the check file's paths and digests, in its order."""

FLOOR_CODE = (
    CHECKFILE_CODE
    + r"""
part, parts, size = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
paths, digests = paths[part::parts], digests[part::parts]
os.chdir(sys.argv[5])
flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW
bad = 0
started = time.perf_counter()
for path, digest in zip(paths, digests):
    fd = os.open(path, flags)
    data = os.read(fd, size + 1)
    os.close(fd)
    if blake3.blake3(data).hexdigest() != digest:
        bad += 1
print(f"loop {time.perf_counter() - started:.6f}")
sys.exit(1 if bad else 0)
"""
)
"""The floor loop: check-file lines ``part::parts``, each file opened, read once, closed, hashed."""

FLOOR = [sys.executable, "-c", FLOOR_CODE]

LARGE_FLOOR_CODE = (
    CHECKFILE_CODE
    + r"""
import mmap
os.chdir(sys.argv[3])
started = time.perf_counter()
bad = 0
if sys.argv[2] == "copy":  # every byte copied out of the page cache, nothing hashed
    buffer = memoryview(mmap.mmap(-1, 2 * 1024 * 1024))
    for path in paths:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        while os.readv(fd, [buffer]):
            pass
        os.close(fd)
else:  # "mapped": hashed on every core straight from the page cache, as b3sum does
    for path, digest in zip(paths, digests):
        hasher = blake3.blake3(max_threads=blake3.blake3.AUTO)
        if hasher.update_mmap(os.fsdecode(path)).hexdigest() != digest:
            bad += 1
print(f"loop {time.perf_counter() - started:.6f}")
sys.exit(1 if bad else 0)
"""
)
"""The large-file floor: ``copy`` reads every file into one page-aligned 2 MiB
buffer and hashes nothing (the copy a read costs); ``mapped`` hashes every
file memory-mapped on all cores, compared with the check file (the hashing
alone, no copy: what b3sum does, and what eceb must not, see
docs/INTERPRETATIONS.md)."""


@dataclass(frozen=True)
class CorpusSet:
    """One generated corpus: ``count`` files of ``size`` bytes under ``root/files``."""

    name: str
    kind: str
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

    @property
    def label(self) -> str:
        return f"{self.count:,} x {human(self.size)}"

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
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for offset in range(0, size, step):
            os.write(fd, blake3.blake3(key).digest(length=min(step, size - offset), seek=offset))
    finally:
        os.close(fd)


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
        env=eceb_env(TREE),
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


def eceb_env(tree: Path) -> dict[str, str]:
    """The environment of an eceb run from ``tree``: its modules first on the path, a bytecode cache."""
    env = dict(ECEB_ENV)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH")) if p)
    return env


@dataclass(frozen=True)
class Run:
    """One timed run: wall-clock seconds, CPU seconds (user + system, reaped children included), peak RSS."""

    seconds: float
    cpu: float
    rss_bytes: int
    loop: float | None = None
    """For the floor: the slowest process's loop alone, in seconds (start-up and reading the check file left out)."""


@dataclass(frozen=True)
class Tool:
    """One command to time: ``commands`` run one after the other make one run (their times add up)."""

    name: str
    commands: list[list[str]]
    cwd: Path | None
    env: dict[str, str] | None


def timed(tool: Tool) -> Run | None:
    """One run of ``tool``, or None when a command fails (reported). Commands run at once, together.

    Each command runs under GNU time (``/usr/bin/time``), whose figures are the command's own:
    ``wait4`` from this process would count this interpreter's memory too (a child's
    ``ru_maxrss`` starts from its parent's at the fork). Without GNU time, ``wait4`` is used.
    """
    gnu_time = shutil.which("time", path="/usr/bin:/bin")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        errors_path = Path(scratch) / "stderr"
        with errors_path.open("wb") as errors:
            processes = []
            for number, command in enumerate(tool.commands):
                wrapped = command
                if gnu_time is not None:
                    wrapped = [gnu_time, "-f", "%M %U %S", "-o", f"{scratch}/usage{number}", *command]
                with (Path(scratch) / f"stdout{number}").open("wb") as out:
                    processes.append(subprocess.Popen(wrapped, cwd=tool.cwd, env=tool.env, stdout=out, stderr=errors))
            cpu, rss, failed = 0.0, 0, False
            for number, process in enumerate(processes):
                _, status, usage = os.wait4(process.pid, 0)
                process.returncode = os.waitstatus_to_exitcode(status)
                failed = failed or process.returncode != 0
                if gnu_time is not None and not failed:
                    kib, user, system = (Path(scratch) / f"usage{number}").read_text().split()[-3:]
                    cpu += float(user) + float(system)
                    rss = max(rss, int(kib) * 1024)
                else:
                    cpu += usage.ru_utime + usage.ru_stime
                    rss = max(rss, usage.ru_maxrss * 1024)
            elapsed = time.perf_counter() - started
            loops = [
                float(line.split()[1])
                for number in range(len(processes))
                for line in (Path(scratch) / f"stdout{number}").read_text().splitlines()
                if line.startswith("loop ")
            ]
        if failed:
            log(f"FAILED: {tool.name}: {tool.commands}\n{errors_path.read_bytes().decode(errors='replace')[-2000:]}")
            return None
    return Run(elapsed, cpu, rss, max(loops) if loops else None)


def measure(runs: int, tools: list[Tool]) -> dict[str, list[Run]]:
    """``runs`` runs of each tool, taken in turn (tool A, tool B, tool A, ...) so that every
    tool sees the same machine conditions; one untimed warm-up run each first. A tool whose
    run fails gets no runs."""
    times: dict[str, list[Run]] = {tool.name: [] for tool in tools}
    failed = {tool.name for tool in tools if timed(tool) is None}
    for _ in range(runs):
        for tool in tools:
            if tool.name in failed:
                continue
            run = timed(tool)
            if run is None:
                failed.add(tool.name)
                times[tool.name] = []
            else:
                times[tool.name].append(run)
    return times


def cpu_model() -> tuple[str, str]:
    """The CPU's model name, and its AVX-512 and AVX2 flags as one phrase."""
    model, flags = "unknown CPU", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model == "unknown CPU":
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    avx512 = sorted(flag for flag in flags if flag.startswith("avx512"))
    if avx512:
        simd = f"AVX-512 ({' '.join(avx512)})"
    elif "avx2" in flags:
        simd = "AVX2, no AVX-512"
    else:
        simd = "no AVX2, no AVX-512"
    return model, simd


def machine() -> str:
    memory = "unknown memory"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB RAM"
                break
    except OSError:
        pass
    system = f"{platform.system()} {platform.release()}"
    return f"{os.cpu_count()} logical CPUs, {memory}, {system}, Python {platform.python_version()}"


def human(size: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} B"


def chosen_sets(text: str, data_dir: Path, seed: int) -> list[CorpusSet]:
    names = list(SETS) if text == "all" else [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in SETS]
    if unknown:
        sys.exit(f"unknown set(s) {', '.join(unknown)}: choose among {', '.join(SETS)} or all")
    return [CorpusSet(name, *SETS[name], seed, data_dir / f"{SETS[name][0]}-{name}") for name in names]


def tools_for(corpus: CorpusSet, args: argparse.Namespace) -> list[Tool]:
    verify = ["corpus", "verify", str(corpus.registry), "--source", str(corpus.files)]
    if args.workers is not None:
        verify += ["--workers", str(args.workers)]
    eceb = [sys.executable, "-P", "-m", "eceb_cli"]
    tools = [Tool("eceb", [[*eceb, *verify]], Path(tempfile.gettempdir()), eceb_env(TREE))]
    if args.before is not None:
        tools.append(Tool("before", [[*eceb, *verify]], Path(tempfile.gettempdir()), eceb_env(args.before)))
    tools.append(Tool("b3sum", [["b3sum", "--check", str(corpus.checkfile)]], corpus.files, None))
    if args.floor and corpus.kind == "small":
        parts = os.cpu_count() or 1
        tools.append(
            Tool(
                "floor",
                [
                    [*FLOOR, str(corpus.checkfile), str(part), str(parts), str(corpus.size), str(corpus.files)]
                    for part in range(parts)
                ],
                None,
                None,
            )
        )
    if args.floor and corpus.kind == "large":
        for name in ("copy", "mapped"):
            command = [sys.executable, "-c", LARGE_FLOOR_CODE, str(corpus.checkfile), name, str(corpus.files)]
            tools.append(Tool(name, [command], None, None))
    return tools


def read_floor(copy: Run, mapped: Run, cores: int) -> float:
    """The least wall-clock time of hashing the files by reading them on
    ``cores`` cores: the copy's CPU time and the hashing's CPU time, shared
    by every core, plus the start-up of one process (each run's wall time
    less its loop)."""
    assert copy.loop is not None and mapped.loop is not None
    start_up = min(copy.seconds - copy.loop, mapped.seconds - mapped.loop)
    return start_up + (copy.loop + mapped.loop * cores) / cores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=DEFAULT_SETS, help=f"comma-separated among {','.join(SETS)}, or all")
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).resolve().parent / "data")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per tool and set (best is kept)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None, help="eceb --workers (default: eceb's own default)")
    parser.add_argument("--before", type=Path, default=None, help="also time eceb from this tree (a checkout)")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also time a bare Python loop over the small files, and the copy and mapped hashing of the large ones",
    )
    parser.add_argument("--regenerate", action="store_true", help="generate the data again even if it matches")
    args = parser.parse_args()

    if shutil.which("b3sum") is None:
        sys.exit("b3sum not found on PATH (Debian/Ubuntu: apt install b3sum; or cargo install b3sum)")
    b3sum_version = subprocess.run(["b3sum", "--version"], check=True, capture_output=True, text=True).stdout.strip()
    sets = chosen_sets(args.sets, args.data_dir, args.seed)
    for corpus in sets:
        if args.regenerate:
            corpus.manifest.unlink(missing_ok=True)
        generate(corpus, [sys.executable, "-P", "-m", "eceb_cli"])

    rows = []
    for corpus in sets:
        tools = tools_for(corpus, args)
        log(f"[{corpus.name}] timing {args.runs} runs of each of {', '.join(t.name for t in tools)}, in turn ...")
        times = measure(args.runs, tools)
        for tool, runs in times.items():
            log(f"[{corpus.name}]   {tool:<6} runs: {', '.join(f'{r.seconds:.3f}' for r in runs) or 'failed'} s")
        rows.append((corpus, tools, times))

    model, simd = cpu_model()
    print()
    print("Re-hash scaling: eceb corpus verify vs b3sum --check")
    print(f"CPU:     {model}, {simd}")
    print(f"machine: {machine()}")
    print(f"b3sum:   {b3sum_version}; --check with its defaults: files of 16 KiB or more are memory-mapped")
    print(f"         and hashed on {os.cpu_count()} threads; smaller files are read and hashed one at a time")
    print(f"eceb:    {TREE} (python -P -m eceb_cli); workers: {args.workers or 'default, one per core'}")
    if args.before is not None:
        print(f"before:  {args.before.resolve()} (the same command from that tree)")
    print(f"timing:  wall clock per run (start-up included), warm page cache, best of {args.runs} runs of")
    print("         each tool taken in turn, after one warm-up run each; peak RSS and CPU of the best run")
    print()
    header = (
        f"{'set':<20} {'tool':<6} {'seconds':>8} {'files/s':>10} {'MB/s':>7} {'peak MB':>8} {'cpu s':>7}"
        f" {'ratio':>6} {'target':>22}  met"
    )
    print(header)
    print("-" * len(header))
    verdicts = []
    for corpus, tools, times in rows:
        total = corpus.count * corpus.size
        unit, minimum = TARGETS.get(corpus.name, ("", 0.0))
        best = {tool: min(runs, key=lambda r: r.seconds) for tool, runs in times.items() if runs}
        for tool in tools:
            run = best.get(tool.name)
            if run is None:
                print(f"{corpus.label:<20} {tool.name:<6} {'failed':>8}")
                continue
            cells = (
                f"{run.seconds:>8.3f} {corpus.count / run.seconds:>10,.0f} {total / run.seconds / 1e6:>7,.0f}"
                f" {run.rss_bytes / 1e6:>8,.0f} {run.cpu:>7.2f}"
            )
            # Both tools do the same work, so the ratio of speeds is the inverse ratio of times.
            if tool.name in ("eceb", "before") and "b3sum" in best:
                ratio = best["b3sum"].seconds / run.seconds
                if not unit:
                    print(f"{corpus.label:<20} {tool.name:<6} {cells} {ratio:>5.2f}x")
                    continue
                target = f">= {minimum}x {unit}"
                met = ratio >= minimum
                rss_target = RSS_TARGET_MB.get(corpus.name)
                if rss_target is not None:
                    target += f", <= {rss_target} MB"
                    met = met and run.rss_bytes <= rss_target * 1_000_000
                cells += f" {ratio:>5.2f}x {target:>22}  {'yes' if met else 'NO'}"
                if tool.name == "eceb":
                    verdicts.append(met)
            elif tool.name in ("floor", "mapped") and "b3sum" in best:
                cells += f" {best['b3sum'].seconds / run.seconds:>5.2f}x"
            print(f"{corpus.label:<20} {tool.name:<6} {cells}")
            if tool.name == "mapped" and "copy" in best and "b3sum" in best:
                floor = read_floor(best["copy"], run, os.cpu_count() or 1)
                cells = f"{floor:>8.3f} {corpus.count / floor:>10,.0f} {total / floor / 1e6:>7,.0f} {'':>8} {'':>7}"
                print(f"{corpus.label:<20} {'read':<6} {cells} {best['b3sum'].seconds / floor:>5.2f}x")
            if run.loop is not None and "b3sum" in best and tool.name == "floor":
                loop = run.loop
                cells = f"{loop:>8.3f} {corpus.count / loop:>10,.0f} {total / loop / 1e6:>7,.0f} {'':>8} {'':>7}"
                print(f"{corpus.label:<20} {'loops':<6} {cells} {best['b3sum'].seconds / loop:>5.2f}x")
    print()
    print("ratio = speed / b3sum's speed; MB = 10^6 bytes; peak MB = largest process (GNU time %M)")
    if args.floor:
        print("floor = open, read, close and BLAKE3 of each small file in a bare Python loop, one process per core;")
        print("loops = the same, the loops alone (the slower process's; start-up and reading the check file left out)")
        print("copy = the large files read into one page-aligned 2 MiB buffer, nothing hashed (one core);")
        print("mapped = the large files hashed memory-mapped on every core, no copy (what b3sum does);")
        print("read = the floor of hashing by reading: start-up + (copy loop + mapped loop x cores) / cores")
    if not verdicts:
        print(f"no set with a target was timed ({', '.join(TARGETS)})")
    else:
        print("all targets met" if all(verdicts) else "some targets NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
