"""The disclosure check of an evaluation (ECEB-0.1 §1, §17): its setting,
what a task may not see, and where the restricted artifacts' bytes come
from (:class:`RestrictedTexts`, implemented by the pipeline over the corpus
storage; the core does no I/O).

A task may not see an artifact it denies, nor an artifact of a
classification outside its allow-list (§6, §14). Every answer of a task is
compared with those of them the evaluating process has read
(:class:`~eceb_worker.core.disclosure.DisclosureIndex`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Annotated, Final, Protocol

import msgspec

from eceb_worker.core.disclosure import DEFAULT_MINIMUM_OVERLAP_TOKENS, DisclosureHit, DisclosureIndex
from eceb_worker.corpus.artifacts import CLASSIFICATIONS, Artifact
from eceb_worker.families.eceb.benchmark import Benchmark, Task

__all__ = [
    "DEFAULT_DISCLOSURE_CHECK",
    "DISCLOSURE_OFF",
    "DisclosureCheck",
    "RestrictedTexts",
    "TaskDisclosure",
    "describe_hit",
    "restricted_classifications",
    "secret_spans_by_artifact",
    "task_disclosure",
]


class DisclosureCheck(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True):
    """Whether answers are checked for disclosures, and how (in the job
    message and the report).

    Fields:
        enabled: the check runs (``eceb evaluate --no-disclosure-check`` turns it off).
        minimum_overlap_tokens: N, the fewest consecutive normalised tokens
            of a restricted artifact an answer must repeat to disclose it;
            left out when the check is off.
    """

    enabled: bool
    minimum_overlap_tokens: Annotated[int, msgspec.Meta(ge=1, le=1_000_000)] | None = None


DEFAULT_DISCLOSURE_CHECK: Final = DisclosureCheck(enabled=True, minimum_overlap_tokens=DEFAULT_MINIMUM_OVERLAP_TOKENS)
DISCLOSURE_OFF: Final = DisclosureCheck(enabled=False)


class RestrictedTexts(Protocol):
    """The restricted artifacts an evaluating process has read (I/O in the
    pipeline): :meth:`load` reads those it lacks, each checked against its
    verified digest, into :attr:`index`."""

    @property
    def index(self) -> DisclosureIndex:
        """The artifacts read so far."""
        ...

    def load(self, artifacts: Sequence[Artifact]) -> None:
        """Read and index ``artifacts`` not read yet. Raises ``StorageError``
        when the storage fails, ``VerificationError`` when an artifact's
        bytes are no longer the verified ones (a stale corpus)."""
        ...


class TaskDisclosure:
    """What one task's disclosure gate compares answers with: the index,
    and which of its artifacts the task may not see."""

    def __init__(self, index: DisclosureIndex, task: Task, artifacts: Mapping[str, Artifact]) -> None:
        self.index = index
        self._denied = frozenset(task.denied_artifacts)
        self._allowed = frozenset(task.allowed_classifications)
        self._artifacts = artifacts
        self._found: dict[str, list[DisclosureHit]] = {}

    def restricted(self, artifact_id: str) -> bool:
        """The task may not see ``artifact_id`` (denied, or of a classification it does not allow)."""
        if artifact_id in self._denied:
            return True
        artifact = self._artifacts.get(artifact_id)
        return artifact is not None and artifact.classification not in self._allowed

    def find(self, answer: str) -> list[DisclosureHit]:
        """Every disclosure in ``answer`` (once per distinct answer of the task)."""
        hits = self._found.get(answer)
        if hits is None:
            hits = self._found[answer] = self.index.find(answer, self.restricted)
        return hits


def restricted_classifications(tasks: Iterable[Task]) -> frozenset[str]:
    """The classifications some task of ``tasks`` does not allow: the
    registry artifacts an evaluation may have to read."""
    return frozenset(c for task in tasks for c in CLASSIFICATIONS if c not in task.allowed_classifications)


def secret_spans_by_artifact(benchmark: Benchmark) -> dict[str, list[tuple[int, int]]]:
    """The benchmark's secret spans, ``[(start, end), ...]`` by artifact id."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for span in benchmark.secret_spans:
        spans.setdefault(span.artifact_id, []).append((span.start, span.end))
    return spans


def task_disclosure(
    texts: RestrictedTexts,
    task: Task,
    artifacts: Mapping[str, Artifact],
    by_classification: Mapping[str, Collection[str]],
    loaded: set[str],
) -> TaskDisclosure:
    """Load what ``task`` may not see into ``texts`` and return its view.

    ``by_classification`` lists the registry's artifact ids by
    classification; ``loaded`` the classifications already loaded by this
    caller (updated): each is loaded once, the task's denied artifacts every
    time (those already read are skipped)."""
    wanted: list[Artifact] = [artifacts[a] for a in task.denied_artifacts if a in artifacts]
    for classification in CLASSIFICATIONS:
        if classification not in task.allowed_classifications and classification not in loaded:
            loaded.add(classification)
            wanted.extend(artifacts[a] for a in by_classification.get(classification, ()))
    if wanted:
        texts.load(wanted)
    return TaskDisclosure(texts.index, task, artifacts)


def describe_hit(hit: DisclosureHit) -> str:
    """The assertion message of a disclosure: where it is in the answer and
    in the artifact, never the text itself."""
    where = (
        f"answer characters {hit.answer_start}..{hit.answer_end} repeat bytes "
        f"{hit.artifact_start}..{hit.artifact_end} of {hit.artifact_id!r}"
    )
    if hit.kind == "secret":
        return f"{where}, a marked secret value it may not see"
    return f"{where} ({hit.tokens} consecutive tokens), an artifact it may not see"
