"""A reproducible synthetic corpus for the benchmarks.

:class:`SyntheticCorpus`: ``files`` files whose sizes follow a fixed or
lognormal distribution (``median_bytes``, ``sigma``), optionally scaled to a
total of ``total_bytes``, all derived from ``seed``. Contents are BLAKE3
extendable output keyed by seed and file index. Files live 100 to a directory
under four top-level directories, one per kind (``code/``, ``issue/``,
``policy/``, ``runbook/``), and :data:`RULES` classifies every one of them.
:func:`ensure_corpus` writes the files, the rules file and the registry
(built by eceb's own ``register_corpus``), and reuses them when a manifest
shows the same parameters. Same parameters, same bytes: sizes come from
``random.Random(seed)``, contents from BLAKE3.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import blake3

GENERATOR_VERSION = 1
"""Bumped whenever generated content or layout changes (invalidates reuse)."""

FILES_PER_DIR = 100
KINDS = ("code", "issue", "policy", "runbook")
"""Top-level directories, one per kind (directory ``d`` goes under ``KINDS[d % 4]``)."""
CLASSIFICATION_OF = {"code": "internal", "issue": "confidential", "policy": "public", "runbook": "internal"}
RULES = 'schema = "symgliph.eceb/rules-v0.1"\n' + "".join(
    f'\n[[rule]]\nglob = "{kind}/**"\nkind = "{kind}"\nclassification = "{CLASSIFICATION_OF[kind]}"\n' for kind in KINDS
)

Distribution = Literal["fixed", "lognormal"]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Layout:
    """Where artifact ``index`` of ``count`` lives: ``KIND/dDDDDD/fIIIIIII.bin``,
    100 files a directory, directory ``d`` under ``KINDS[d % 4]``; fixed-width
    numbers, so paths sort by (kind, directory, index)."""

    count: int

    @property
    def directories(self) -> int:
        return max(1, math.ceil(self.count / FILES_PER_DIR))

    def path(self, index: int) -> str:
        directory = index // FILES_PER_DIR
        dir_width = max(3, len(str(self.directories - 1)))
        file_width = max(5, len(str(self.count - 1)))
        return f"{KINDS[directory % len(KINDS)]}/d{directory:0{dir_width}d}/f{index:0{file_width}d}.bin"


def draw_sizes(
    count: int, distribution: Distribution, median_bytes: int, sigma: float, seed: int, total_bytes: int | None
) -> list[int]:
    """``count`` file sizes (at least 1 byte each): all ``median_bytes``
    (``fixed``) or lognormal around ``median_bytes`` with shape ``sigma``;
    with ``total_bytes``, scaled so that they add up to exactly that."""
    if count < 1:
        raise ValueError("count must be positive")
    if distribution == "fixed":
        if total_bytes is None:
            return [median_bytes] * count
        base, extra = divmod(total_bytes, count)
        return [base + (1 if i < extra else 0) for i in range(count)]
    rng = random.Random(seed)
    mu = math.log(median_bytes)
    raw = [rng.lognormvariate(mu, sigma) for _ in range(count)]
    if total_bytes is None:
        return [max(1, round(x)) for x in raw]
    if total_bytes < count:
        raise ValueError("total_bytes must allow at least one byte per file")
    scale = total_bytes / sum(raw)
    sizes = [max(1, round(x * scale)) for x in raw]
    largest = max(range(count), key=sizes.__getitem__)
    sizes[largest] += total_bytes - sum(sizes)
    if sizes[largest] < 1:
        raise ValueError("cannot reach total_bytes with these parameters")
    return sizes


@dataclass(frozen=True)
class SyntheticCorpus:
    """A generated corpus under ``root``: ``files/``, ``rules.toml``, ``registry.jsonl``."""

    files_count: int
    distribution: Distribution
    median_bytes: int
    sigma: float
    total_bytes: int | None
    seed: int
    root: Path

    @property
    def files(self) -> Path:
        return self.root / "files"

    @property
    def registry(self) -> Path:
        return self.root / "registry.jsonl"

    @property
    def rules(self) -> Path:
        return self.root / "rules.toml"

    @property
    def manifest(self) -> Path:
        return self.root / "manifest.json"

    def expected_manifest(self) -> dict[str, object]:
        return {
            "generator": GENERATOR_VERSION,
            "files": self.files_count,
            "distribution": self.distribution,
            "median_bytes": self.median_bytes,
            "sigma": self.sigma,
            "total_bytes": self.total_bytes,
            "seed": self.seed,
        }

    def sizes(self) -> list[int]:
        return draw_sizes(
            self.files_count, self.distribution, self.median_bytes, self.sigma, self.seed, self.total_bytes
        )

    def key(self, index: int) -> bytes:
        """The 32-byte BLAKE3 key whose extendable output is file ``index``'s content."""
        return blake3.blake3(f"eceb-distributed-benchmark:{self.seed}:{index}".encode()).digest()


def corpus_dir(base: Path, manifest: dict[str, object]) -> Path:
    """A directory under ``base`` named after the parameters."""
    digest = blake3.blake3(json.dumps(manifest, sort_keys=True).encode()).hexdigest()[:12]
    return base / f"corpus-{manifest['files']}-{digest}"


def _write_file(path: Path, key: bytes, size: int) -> None:
    step = 16 * 1024 * 1024
    with path.open("wb") as out:
        for offset in range(0, size, step):
            out.write(blake3.blake3(key).digest(length=min(step, size - offset), seek=offset))


def _is_current(corpus: SyntheticCorpus, sizes: list[int]) -> bool:
    try:
        if json.loads(corpus.manifest.read_text()) != corpus.expected_manifest():
            return False
    except (OSError, ValueError):
        return False
    if not (corpus.registry.is_file() and corpus.rules.is_file()):
        return False
    layout = Layout(corpus.files_count)
    for index in {0, corpus.files_count // 2, corpus.files_count - 1}:
        try:
            if (corpus.files / layout.path(index)).stat().st_size != sizes[index]:
                return False
        except OSError:
            return False
    return True


def ensure_corpus(corpus: SyntheticCorpus, *, workers: int | None = None) -> None:
    """Generate the files, write the rules and register the corpus with
    eceb's ``register_corpus``, unless a complete corpus with the same
    parameters is there already."""
    from eceb_worker.corpus.registry import registry_lines
    from eceb_worker.corpus.rules import parse_rules
    from eceb_worker.corpus.storage import StorageSpec
    from eceb_worker.executors import InProcessExecutor
    from eceb_worker.io.files import atomic_write
    from eceb_worker.pipeline.register import register_corpus

    sizes = corpus.sizes()
    if _is_current(corpus, sizes):
        log(f"[corpus] reusing {corpus.root}")
        return
    log(f"[corpus] generating {corpus.files_count:,} files, {sum(sizes):,} bytes, in {corpus.files} ...")
    started = time.perf_counter()
    if corpus.root.exists():
        shutil.rmtree(corpus.root)
    corpus.files.mkdir(parents=True)
    layout = Layout(corpus.files_count)
    for index, size in enumerate(sizes):
        path = corpus.files / layout.path(index)
        if index % FILES_PER_DIR == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
        _write_file(path, corpus.key(index), size)
    corpus.rules.write_text(RULES)
    log(f"[corpus] generated in {time.perf_counter() - started:.1f} s; registering with eceb ...")
    registry = register_corpus(
        StorageSpec(source=str(corpus.files)),
        parse_rules(RULES.encode(), str(corpus.rules)),
        rules_name=str(corpus.rules),
        executor=InProcessExecutor(workers or os.cpu_count() or 1),
    )
    if len(registry.artifacts) != corpus.files_count:
        raise RuntimeError(f"registered {len(registry.artifacts)} artifacts, expected {corpus.files_count}")
    atomic_write(corpus.registry, registry_lines(registry))
    corpus.manifest.write_text(json.dumps(corpus.expected_manifest(), sort_keys=True) + "\n")
    log(f"[corpus] ready in {time.perf_counter() - started:.1f} s")
