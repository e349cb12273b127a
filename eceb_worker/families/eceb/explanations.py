"""What a report's figures mean beyond the values it stores, for the texts
and pages that explain them: which failed assertions decided a task's
verdict (ECEB-0.1 §7, §10, §11), and a saving before it saturates at 0
(§12).
"""

from __future__ import annotations

from eceb_worker.core.arithmetic import BPS
from eceb_worker.families.eceb.gates import TASK_CHECK_NAMES
from eceb_worker.families.eceb.verdicts import Assertion, TaskResult

__all__ = ["decides_verdict", "signed_savings_bps"]


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
