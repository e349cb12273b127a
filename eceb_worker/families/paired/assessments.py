"""Assessment bundles: the bound independent assessments of explanation
answers (task-context-benchmark-reference.md, "Paired inputs and retained
outputs": "Optional assessment bundles have repocue/task-evaluation-1 and
kind assessments. Assessments bind task, policy, attempt, answer,
fingerprint, assessor, rubric, and original references").

An :class:`AssessmentBundle` holds :class:`Assessment` records. Each binds,
by digest or exact value: the task (its id), the policy (the freeze
digest), the attempt (its id), the answer (BLAKE3 of the answer text), the
fingerprint (the repository's tree fingerprint at the freeze), the assessor
(the frozen identity), the rubric (its frozen digest) and the original
references (the task's targets with their git object ids at the reviewed
revision). :func:`binding_problems` names every field of an assessment
that does not match the attempt it claims: such an assessment is
rejected, and its attempt stays unassessed (visible, never failed
silently). Pure.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

from eceb_worker.core.digests import Digest
from eceb_worker.families.paired.records import GitId

__all__ = ["EVALUATION_SCHEMA", "Assessment", "AssessmentBundle", "Binding", "OriginalReference", "binding_problems"]

EVALUATION_SCHEMA: Final = "repocue/task-evaluation-1"
ASSESSMENTS_KIND: Final = "assessments"

Text = Annotated[str, msgspec.Meta(min_length=1, max_length=65536)]


class OriginalReference(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, order=True):
    """A target of the task as the assessor read it: its repository ``path``
    and git ``object`` id at the reviewed revision."""

    path: Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]
    object: GitId


class Assessment(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One assessment of one attempt's answer.

    Fields (bound): ``task`` (id), ``policy`` (the freeze digest),
    ``attempt`` (its id, ``task-pair-.../A``), ``answer`` (BLAKE3 of the
    answer text), ``fingerprint`` (the repository's frozen tree
    fingerprint), ``assessor`` (the frozen identity), ``rubric`` (the
    frozen rubric's BLAKE3), ``references`` (the task's targets, each with
    its git object id). The judgment: ``accurate`` (every claim accurate
    under the rubric) and ``notes``.
    """

    task: Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
    policy: Digest
    attempt: Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]
    answer: Digest
    fingerprint: Digest
    assessor: Text
    rubric: Digest
    references: tuple[OriginalReference, ...]
    accurate: bool
    notes: str = ""


class AssessmentBundle(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A bundle of assessments (``schema``: :data:`EVALUATION_SCHEMA`,
    ``kind``: :data:`ASSESSMENTS_KIND`); ``synthetic``: its judgments verify
    software handling only."""

    schema: Literal["repocue/task-evaluation-1"]
    kind: Literal["assessments"]
    synthetic: bool
    assessments: tuple[Assessment, ...]


class Binding(msgspec.Struct, frozen=True, kw_only=True):
    """What an assessment of one attempt must bind: the same fields as
    :class:`Assessment`'s bound ones, taken from the attempt's evidence and
    its freeze (``answer`` is ``None`` when the attempt has no answer)."""

    task: str
    policy: str
    attempt: str
    answer: str | None
    fingerprint: str
    assessor: str
    rubric: str
    references: tuple[OriginalReference, ...]


def binding_problems(assessment: Assessment, binding: Binding) -> tuple[str, ...]:
    """Every bound field of ``assessment`` that differs from ``binding``,
    each named (``"answer: binds 1f…, the attempt's answer is 9c…"``);
    empty when the assessment is of that attempt, answer, freeze and rubric.
    An attempt without an answer cannot be assessed."""
    if binding.answer is None:
        return ("answer: the attempt has no answer to assess",)
    problems = []
    for field in ("task", "policy", "attempt", "answer", "fingerprint", "assessor", "rubric"):
        bound, wanted = getattr(assessment, field), getattr(binding, field)
        if bound != wanted:
            problems.append(f"{field}: binds {bound!r}, the attempt's is {wanted!r}")
    if tuple(sorted(assessment.references)) != tuple(sorted(binding.references)):
        shown = ", ".join(f"{r.path}@{r.object[:12]}" for r in sorted(binding.references))
        problems.append(f"references: not the task's targets at the reviewed revision ({shown})")
    return tuple(problems)
