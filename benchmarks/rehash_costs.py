"""Where the time of re-hashing small files goes: the cost per file of each
part, in one process, over a set ``benchmarks/rehash.py`` generated.

Usage::

    python benchmarks/rehash_costs.py [--set 1m] [--data-dir DIR] [--runs 2]

Times, best of ``--runs``, over every file of the set (one process, warm
page cache), each loop alone:

* ``open + close``: each file opened relative to its directory (opened
  once per directory) with ``O_NOFOLLOW``, then closed;
* ``open + pread + close``: the same with one ``pread`` of 4 KiB + 1;
* ``BLAKE3 + compare``: ``blake3(data).hexdigest() == digest`` over one
  4 KiB buffer, once per file;
* ``loop``: the loop over the files, doing nothing;
* ``bare loop``: open, pread, close, BLAKE3 and compare: the floor of any
  re-hash from Python;
* ``check_artifacts``: eceb's loop (``LocalStorage.check_artifacts``) over
  the registry's artifacts;
* ``range decode``: the registry's lines decoded as a shard's process
  decodes them (``RangeArtifact``, no checks), 1,800 lines at a time;
* ``registry check``: ``load_registry`` keeping nothing (what ``eceb corpus
  verify`` runs on one core while the helpers hash), per artifact.

Prints microseconds per file and the CPU model.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import blake3
import msgspec

from eceb_worker.corpus.checked_lines import RangeArtifact
from eceb_worker.io.local_corpus import LocalStorage
from eceb_worker.pipeline.inputs import load_registry

SETS = {"10k": "small-10k", "100k": "small-100k", "1m": "small-1m"}
SHARD_LINES = 1800
"""Lines of a default shard of 4 KiB files (64 MiB-equivalent, each file counting 4 KiB + 32 KiB)."""
FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted(SETS), default="1m")
    parser.add_argument("--data-dir", type=Path, default=Path(__file__).resolve().parent / "data")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    root = args.data_dir / SETS[args.set]
    files = root / "files"
    if not (root / "manifest.json").is_file():
        sys.exit(f"{root}: not generated; run benchmarks/rehash.py --sets {args.set} first")
    digests, paths = [], []
    for line in (root / "b3sums.txt").read_text().splitlines():
        digest, path = line.split("  ", 1)
        digests.append(digest)
        paths.append(path)
    body = (root / "registry.jsonl").read_bytes().split(b"\n", 1)[1]
    artifacts = msgspec.json.Decoder(RangeArtifact).decode_lines(body)
    storage = LocalStorage(files)
    range_decoder = msgspec.json.Decoder(RangeArtifact)
    lines = body.splitlines(keepends=True)
    pieces = [b"".join(lines[i : i + SHARD_LINES]) for i in range(0, len(lines), SHARD_LINES)]

    zipped = list(zip([path.rpartition("/") for path in paths], digests, strict=True))

    def opened(body: Callable[[int, str], None]) -> Callable[[], None]:
        def run() -> None:
            last, dir_fd = None, -1
            for (directory, _, name), digest in zipped:
                if directory != last:
                    if dir_fd >= 0:
                        os.close(dir_fd)
                    dir_fd, last = os.open(os.path.join(files, directory), os.O_RDONLY | os.O_DIRECTORY), directory
                fd = os.open(name, FLAGS, dir_fd=dir_fd)
                body(fd, digest)
                os.close(fd)
            os.close(dir_fd)

        return run

    def nothing(fd: int, digest: str) -> None:
        pass

    def read(fd: int, digest: str) -> None:
        os.pread(fd, 4097, 0)

    def read_and_hash(fd: int, digest: str) -> None:
        if blake3.blake3(os.pread(fd, 4097, 0)).hexdigest() != digest:
            raise SystemExit("a file does not match the check file")

    data = os.urandom(4096)

    def hashing() -> None:
        for digest in digests:
            _ = blake3.blake3(data).hexdigest() == digest

    def loop() -> None:
        last = None
        for (directory, _, _name), _digest in zipped:
            if directory != last:
                last = directory

    parts: list[tuple[str, Callable[[], object]]] = [
        ("open + close", opened(nothing)),
        ("open + pread + close", opened(read)),
        ("BLAKE3 + compare", hashing),
        ("loop", loop),
        ("bare loop", opened(read_and_hash)),
        ("check_artifacts", lambda: storage.check_artifacts(artifacts)),
        ("range decode", lambda: [range_decoder.decode_lines(piece) for piece in pieces]),
        ("registry check", lambda: load_registry(root / "registry.jsonl", keep=frozenset())),
    ]
    best = {name: float("inf") for name, _ in parts}
    for _ in range(args.runs):
        for name, run in parts:
            started = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - started)
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if "model name" in line), "?")
    avx512 = "AVX-512" if "avx512f" in cpuinfo else "no AVX-512"
    print(f"costs per file, {len(paths):,} files of 4 KiB ({args.set}), best of {args.runs}, one process")
    print(f"CPU: {model}, {avx512}, {os.cpu_count()} logical CPUs")
    for name, seconds in best.items():
        print(f"{name:<24} {seconds * 1e6 / len(paths):6.2f} us  ({seconds:.3f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
