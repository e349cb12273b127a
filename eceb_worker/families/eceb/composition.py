"""What a task's full permitted-context baseline is made of (ECEB-0.1 §6,
§7): the artifacts its first repetition selected against every artifact the
task permits (:class:`~eceb_worker.families.eceb.verdicts.BaselineComposition`).

What a task permits depends on the whole registry, which an evaluation shard
may not hold (a cluster's worker keeps only the artifacts the run and the
benchmark name). The registry is therefore summed once, as it is read, by
classification (:class:`RegistryTally`: a few integers, whatever the
registry's size); a task's permitted artifacts are those of its allowed
classifications less its denied artifacts, which every shard holds.
:class:`RegistryArtifacts` carries those sums beside the artifacts a shard
looks up, so that every way of evaluating a task gives the same figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

import msgspec

from eceb_worker.core.arithmetic import ratio_bps
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.families.eceb.benchmark import Task
from eceb_worker.families.eceb.run import Observation
from eceb_worker.families.eceb.verdicts import BaselineComposition

__all__ = [
    "RegistryArtifacts",
    "RegistryTally",
    "RegistryTotals",
    "Sized",
    "baseline_composition",
    "registry_totals",
]


class Sized(Protocol):
    """What the tally reads of an artifact: its classification and size."""

    @property
    def classification(self) -> str:
        """One of the four classifications (ECEB-0.1 §6)."""
        ...

    @property
    def size_bytes(self) -> int:
        """Length of its source bytes."""
        ...


class RegistryTotals(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A whole registry's artifacts and bytes, by classification (ECEB-0.1 §5, §6).

    Fields:
        by_classification: ``(classification, artifacts, bytes)`` for each
            classification the registry holds, in classification order.
    """

    by_classification: tuple[tuple[str, int, int], ...] = ()

    def of(self, classifications: Iterable[str]) -> tuple[int, int]:
        """The artifacts and bytes of the registry's artifacts of ``classifications``."""
        wanted = frozenset(classifications)
        count = size = 0
        for classification, artifacts, size_bytes in self.by_classification:
            if classification in wanted:
                count += artifacts
                size += size_bytes
        return count, size


class RegistryTally:
    """Sums a registry's artifacts and bytes by classification as they are
    read; memory is one pair of integers per classification."""

    __slots__ = ("_sums",)

    def __init__(self) -> None:
        self._sums: dict[str, list[int]] = {}

    def add(self, artifacts: Iterable[Sized]) -> None:
        """Count ``artifacts`` (each once: the caller gives each registry artifact once)."""
        sums = self._sums
        for artifact in artifacts:
            entry = sums.get(artifact.classification)
            if entry is None:
                entry = sums[artifact.classification] = [0, 0]
            entry[0] += 1
            entry[1] += artifact.size_bytes

    def totals(self) -> RegistryTotals:
        """What was counted so far."""
        return RegistryTotals(by_classification=tuple((c, n, b) for c, (n, b) in sorted(self._sums.items())))


class RegistryArtifacts(dict[str, Artifact]):
    """A registry's artifacts by id (all of them, or only those an
    evaluation looks up) with the :class:`RegistryTotals` of the whole
    registry, as :attr:`totals`."""

    __slots__ = ("totals",)

    def __init__(self, artifacts: Mapping[str, Artifact], totals: RegistryTotals) -> None:
        super().__init__(artifacts)
        self.totals = totals

    @classmethod
    def of(cls, artifacts: Iterable[Artifact]) -> RegistryArtifacts:
        """Every artifact of a registry, by id, with their totals."""
        by_id = {a.artifact_id: a for a in artifacts}
        tally = RegistryTally()
        tally.add(by_id.values())
        return cls(by_id, tally.totals())


def registry_totals(artifacts: Mapping[str, Artifact]) -> RegistryTotals:
    """The whole registry's totals: those ``artifacts`` carries (a
    :class:`RegistryArtifacts`), else the sums of ``artifacts``, which must
    then be every artifact of the registry."""
    if isinstance(artifacts, RegistryArtifacts):
        return artifacts.totals
    tally = RegistryTally()
    tally.add(artifacts.values())
    return tally.totals()


def _share(part: int, whole: int) -> int | None:
    return ratio_bps(part, whole) if whole else None


def baseline_composition(
    task: Task,
    baseline: Sequence[Observation],
    artifacts: Mapping[str, Artifact],
    totals: RegistryTotals,
) -> BaselineComposition:
    """The composition of ``task``'s baseline (ECEB-0.1 §7), its
    observations ``baseline`` (strategy ``full_permitted_context``, in any
    order), against the registry: ``artifacts`` holds at least the task's
    required and denied artifacts and those the baseline selected, by id;
    ``totals`` is the whole registry's (:func:`registry_totals`).

    The selection described is the first repetition's (the lowest
    repetition number); ``repetitions_differ`` says whether another selects
    another set of artifact ids (their digests aside).
    """
    allowed = frozenset(task.allowed_classifications)
    denied = frozenset(task.denied_artifacts)
    permitted_artifacts, permitted_bytes = totals.of(allowed)
    for artifact_id in denied:
        artifact = artifacts.get(artifact_id)
        if artifact is not None and artifact.classification in allowed:
            permitted_artifacts -= 1
            permitted_bytes -= artifact.size_bytes
    required = frozenset(task.required_artifacts)
    required_bytes = sum(artifacts[a].size_bytes for a in required if a in artifacts)

    ordered = sorted(baseline, key=lambda o: o.repetition)
    selections = [frozenset(s.artifact_id for s in o.selected_artifacts) for o in ordered]
    first = selections[0] if selections else frozenset()
    selected_bytes = selected_permitted_bytes = selected_required = selected_required_bytes = not_permitted = 0
    for artifact_id in first:
        artifact = artifacts.get(artifact_id)
        size = 0 if artifact is None else artifact.size_bytes
        selected_bytes += size
        if artifact is None or artifact.classification not in allowed or artifact_id in denied:
            not_permitted += 1
        else:
            selected_permitted_bytes += size
        if artifact_id in required:
            selected_required += 1
            selected_required_bytes += size
    return BaselineComposition(
        permitted_artifacts=permitted_artifacts,
        permitted_bytes=permitted_bytes,
        required_artifacts=len(required),
        required_bytes=required_bytes,
        repetition=ordered[0].repetition if ordered else None,
        repetitions_differ=any(selection != first for selection in selections[1:]),
        selected_artifacts=len(first),
        selected_bytes=selected_bytes,
        selected_required=selected_required,
        selected_required_bytes=selected_required_bytes,
        selected_not_permitted=not_permitted,
        permitted_bytes_selected_bps=_share(selected_permitted_bytes, permitted_bytes),
        required_bytes_share_bps=_share(selected_required_bytes, selected_bytes),
    )
