"""What a report's figures mean beyond the values it stores, for the texts
and pages that explain them: which failed assertions decided a task's
verdict (ECEB-0.1 §7, §10, §11), and a saving before it saturates at 0
(§12).
"""

from __future__ import annotations

from typing import Final

from eceb_worker.core.arithmetic import BPS
from eceb_worker.families.eceb.gates import TASK_CHECK_NAMES
from eceb_worker.families.eceb.verdicts import Assertion, TaskResult

__all__ = [
    "CLAIM_CLASSES",
    "NOT_STRONGER_EVIDENCE",
    "decides_verdict",
    "interval_not_estimated_reason",
    "signed_savings_bps",
]

CLAIM_CLASSES: Final = {
    "conformance_seed": (
        "synthetic or hand-authored records proving the evaluator's behaviour; not a model-performance claim"
    ),
    "public_reproduction": "a public, immutable corpus and a replayable model and judge configuration",
    "enterprise_proxy": "a public corpus built to resemble enterprise source mixtures and policy boundaries",
    "enterprise_validated": (
        "a real-enterprise evaluation with declared sampling, authorization, human review and reproducibility controls"
    ),
}
"""What each claim class claims (ECEB-0.1 §15), in one line each."""

NOT_STRONGER_EVIDENCE: Final = "a result of one claim class is not evidence for a stronger one (ECEB-0.1 §15)"
"""The sentence of ECEB-0.1 §15 every claim class is printed with."""


def decides_verdict(task: TaskResult, assertion: Assertion) -> bool:
    """Whether ``assertion`` is one of the reasons ``task`` fails (ECEB-0.1
    §10, §11): never for a passing task, nor for a ``naive_top_k`` group
    (§7: it does not decide the task); always for the baseline and the
    task-level checks; for a ``compiled`` group, only when no budget of the
    ladder passes (otherwise the task fails for another reason)."""
    if task.passed or assertion.strategy == "naive_top_k":
        return False
    if assertion.strategy in ("", "full_permitted_context") or assertion.gate in TASK_CHECK_NAMES:
        return True
    return task.minimum_viable_budget is None


def signed_savings_bps(full: int | None, compiled: int | None) -> int | None:
    """``floor(10,000 × (full − compiled) / full)`` basis points before the
    saturation at 0 of ECEB-0.1 §12 (negative when the compiled figure is
    the larger); ``None`` without both figures or with a baseline that is
    not positive. The report stores the saturated value
    (:func:`~eceb_worker.core.arithmetic.savings_bps`)."""
    if full is None or compiled is None or full <= 0:
        return None
    return (BPS * (full - compiled)) // full


def interval_not_estimated_reason(task: TaskResult, estimated: bool) -> str:
    """Why a passing task's savings interval is ``null`` (ECEB-0.1 §16):
    uncertainty not estimated for the report, a group of one repetition, or
    a baseline some resample would leave at zero."""
    if not estimated:
        return "not estimated for this report"
    counts = {g.observations for g in task.groups if g.strategy == "full_permitted_context"}
    counts |= {
        g.observations for g in task.groups if g.strategy == "compiled" and g.budget == task.minimum_viable_budget
    }
    if 1 in counts:
        return "not estimated: a group has one repetition, whose variation cannot be seen"
    return "not estimated: some resample of the baseline has no positive figure to save from"
