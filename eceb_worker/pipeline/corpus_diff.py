"""``eceb corpus diff``'s inputs: two registries and perhaps a benchmark,
read from local files or ``s3://`` objects, checked, and compared
(:mod:`eceb_worker.corpus.diff`).

Each registry is checked by the one registry reader
(:func:`~eceb_worker.pipeline.inputs.load_registry`) keeping no artifact,
its sorts spilling to temporary files: memory does not grow with it. A
registry in corpus-root order (as eceb writes them) is then read a second
time as a stream (:func:`~eceb_worker.corpus.diff.registry_stream`),
refused unless its bytes are exactly those checked (their BLAKE3), and the
two streams are merge-walked: memory holds the differences, not the
registries. A registry in another order is read whole and sorted in memory.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterable, Iterator
from typing import Final

import blake3

from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.diff import CorpusDiff, diff_artifacts, id_order, registry_stream, with_benchmark
from eceb_worker.corpus.registry import Registry
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.benchmark import Benchmark
from eceb_worker.io.locations import Location, Locator
from eceb_worker.pipeline.inputs import load_benchmark, load_registry

__all__ = ["read_corpus_diff"]

_NOTHING_KEPT: Final = frozenset[str]()
"""``keep`` for the checking pass: no artifact is held."""


class _Hashed:
    """A :class:`Location` whose streamed bytes are hashed as they pass:
    ``digest`` is the BLAKE3 of the last complete :meth:`chunks` read."""

    def __init__(self, location: Location) -> None:
        self._location = location
        self.digest = ""

    @property
    def name(self) -> str:
        return self._location.name

    def read(self) -> bytes:
        return self._location.read()

    def map(self) -> bytes | mmap.mmap:
        return self._location.map()

    def chunks(self) -> Iterator[bytes]:
        hasher = blake3.blake3()
        for chunk in self._location.chunks():
            hasher.update(chunk)
            yield chunk
        self.digest = hasher.hexdigest()

    def read_range(self, start: int, end: int) -> bytes:
        return self._location.read_range(start, end)

    def sibling(self, relative: str) -> Location:
        return self._location.sibling(relative)


class _Checked:
    """A registry checked without its artifacts, and where it is."""

    def __init__(self, location: Location) -> None:
        hashed = _Hashed(location)
        self.location = location
        self.registry = load_registry(hashed, keep=_NOTHING_KEPT)
        self.digest = hashed.digest

    def artifacts(self) -> tuple[Iterable[Artifact], str]:
        """Its artifacts in artifact-id order (a stream when its lines are in
        corpus-root order, else held and sorted), and its corpus root."""
        if self.registry.in_root_order:
            stream = registry_stream(self.location.chunks(), self.registry, self.location.name, digest=self.digest)
            return stream, self.registry.corpus_root
        whole: Registry = load_registry(self.location)
        return id_order(whole.artifacts), whole.corpus_root


def read_corpus_diff(old: str, new: str, benchmark: str | None = None, locator: Locator | None = None) -> CorpusDiff:
    """Compare registry ``old`` with registry ``new`` (local paths or
    ``s3://`` URLs, read with ``locator``), and with ``benchmark`` (a
    benchmark file) say what it does to its tasks
    (:func:`~eceb_worker.corpus.diff.with_benchmark`).

    Every file is checked before anything is compared; raises
    :class:`InputError` holding every problem of all of them (each naming
    its file, line and field), or naming a registry that changed while it
    was read; ``StorageError`` when the storage cannot be read. Memory:
    the differences, and any registry not in corpus-root order.
    """
    locator = locator or Locator()
    problems: list[Problem] = []
    checked: dict[str, _Checked] = {}
    for where in dict.fromkeys((old, new)):  # the same registry given twice is checked once
        try:
            checked[where] = _Checked(locator.locate(where))
        except InputError as error:
            problems.extend(error.problems)
    loaded: Benchmark | None = None
    if benchmark is not None:
        try:
            loaded = load_benchmark(benchmark, locator)
        except InputError as error:
            problems.extend(error.problems)
    if problems:
        raise InputError(problems)
    (before, old_root), (after, new_root) = checked[old].artifacts(), checked[new].artifacts()
    found = diff_artifacts(before, after, old_root=old_root, new_root=new_root)
    if loaded is None:
        return found
    return with_benchmark(
        found, benchmark_id=loaded.benchmark_id, corpus_root=loaded.registry.corpus_root, tasks=loaded.tasks
    )
