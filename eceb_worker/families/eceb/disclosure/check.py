"""The disclosure check's setting and what the disclosure gate reads
(ECEB-0.1 §1, §17): each answer's findings, located by offsets, never
quoted, at most :data:`LISTED_FINDINGS` of them listed per answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Final, Literal

import msgspec

from eceb_worker.core.digests import digest_bytes
from eceb_worker.core.disclosure.index import DEFAULT_MINIMUM_OVERLAP_TOKENS

__all__ = [
    "DEFAULT_DISCLOSURE_CHECK",
    "DISCLOSURE_OFF",
    "LISTED_FINDINGS",
    "AnswerFindings",
    "DisclosureCheck",
    "DisclosureHit",
    "TaskFindings",
    "answer_key",
    "describe_hit",
    "describe_more",
    "findings_by_task",
]

LISTED_FINDINGS: Final = 16
"""Findings listed per answer (in answer order); the rest are counted."""


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


class DisclosureHit(msgspec.Struct, frozen=True, kw_only=True, array_like=True, gc=False):
    """Restricted text found in an answer.

    Fields:
        kind: ``"overlap"`` (a run of at least N tokens in common) or
            ``"secret"`` (a marked secret value).
        artifact_id: the artifact it comes from.
        answer_start, answer_end: where it is in the answer, code points, ``[start, end)``.
        artifact_start, artifact_end: where it is in the artifact, bytes, ``[start, end)``.
        tokens: how many tokens the run holds (0 for a secret).
    """

    kind: Literal["overlap", "secret"]
    artifact_id: str
    answer_start: int
    answer_end: int
    artifact_start: int
    artifact_end: int
    tokens: int

    @property
    def order(self) -> tuple[int, int, str, str, int]:
        """Its place among an answer's findings: by answer offsets, then
        artifact, kind and artifact offset."""
        return (self.answer_start, self.answer_end, self.artifact_id, self.kind, self.artifact_start)


def answer_key(answer: str) -> str:
    """How findings name an answer: the BLAKE3-256 of its UTF-8 bytes (never its text)."""
    return digest_bytes(answer.encode("utf-8", "surrogatepass"))


class AnswerFindings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The disclosures of one task's answer (a message to its evaluation shard).

    Fields:
        task_id: the task.
        answer: :func:`answer_key` of the answer.
        hits: the first :data:`LISTED_FINDINGS` findings, in answer order.
        more: how many more were found, not listed.
    """

    task_id: str
    answer: str
    hits: tuple[DisclosureHit, ...]
    more: int = 0

    @property
    def count(self) -> int:
        """Every finding, listed or not."""
        return len(self.hits) + self.more


class TaskFindings:
    """One task's findings by answer, as its disclosure gate reads them
    (an answer with none has no entry)."""

    def __init__(self, findings: Iterable[AnswerFindings] = ()) -> None:
        self._by_answer = {f.answer: f for f in findings}
        self._keys: dict[str, str] = {}

    def of(self, answer: str) -> AnswerFindings | None:
        """The findings of ``answer``, or None when it discloses nothing."""
        if not self._by_answer:
            return None
        key = self._keys.get(answer)
        if key is None:
            key = self._keys[answer] = answer_key(answer)
        return self._by_answer.get(key)


def findings_by_task(check: DisclosureCheck, found: Iterable[AnswerFindings]) -> dict[str, TaskFindings] | None:
    """The findings ``found`` grouped by task, as an evaluation reads them;
    ``None`` when ``check`` is off."""
    if not check.enabled:
        return None
    grouped: dict[str, list[AnswerFindings]] = {}
    for findings in found:
        grouped.setdefault(findings.task_id, []).append(findings)
    return {task_id: TaskFindings(items) for task_id, items in grouped.items()}


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


def describe_more(more: int) -> str:
    """The assertion message counting an answer's findings beyond those listed."""
    return (
        f"{more:,} more disclosure{'s' if more != 1 else ''} in this answer, not listed "
        f"(the first {LISTED_FINDINGS} are)"
    )
