"""What a plan will cost, before anything is called (``eceb run --dry-run``).

Per execution, the prompt's tokens are estimated without reading the
corpus: a ladder budget for ``compiled`` and ``naive_top_k`` (the gates
hold the prompt within it, ECEB-0.1 §11 gate 2); for the baseline, the rest
of the prompt plus the permitted artifacts' registered sizes (with their
block markup) by the local estimate, at most the model's input window. Spend
is the upper bound of every paid call (:func:`~.costs.upper_bound`): the
whole output allowance of every answer and judgment, no cache discount. An
LLM judgment's prompt is estimated as the rubric, the query, the answer
terms and a whole answer.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.families.eceb.benchmark import Task
from eceb_worker.families.eceb.making.baselines import BYTES_PER_TOKEN, estimate_tokens, permitted
from eceb_worker.families.eceb.making.costs import upper_bound
from eceb_worker.families.eceb.making.judging import JUDGE_SYSTEM, judge_prompt
from eceb_worker.families.eceb.making.plan import Execution
from eceb_worker.families.eceb.making.profile import LlmJudge, RunProfile
from eceb_worker.families.eceb.making.prompt import render_prompt

__all__ = ["PlanEstimate", "estimate_plan"]

_MARKUP_BYTES = 64
"""Bytes of an artifact block's markup beyond its path and id (estimate)."""


class PlanEstimate(msgspec.Struct, frozen=True, kw_only=True):
    """A plan's size and upper-bound spend.

    Fields:
        executions: by strategy, in plan order of strategies.
        paid_calls: answers, plus LLM judgments.
        input_tokens: estimated prompt tokens of every paid call.
        output_tokens: the output allowance of every paid call.
        upper_micro_usd: the most the plan may cost (see the module).
    """

    executions: dict[str, int]
    paid_calls: int
    input_tokens: int
    output_tokens: int
    upper_micro_usd: int


def _baseline_tokens(profile: RunProfile, task: Task, overhead: int, artifacts: tuple[Artifact, ...]) -> int:
    size = sum(a.size_bytes + len(a.path) + len(a.artifact_id) + _MARKUP_BYTES for a in permitted(task, artifacts))
    return min(profile.model.input_window_tokens, overhead + -(-size // BYTES_PER_TOKEN))


def estimate_plan(
    profile: RunProfile,
    plan: Iterable[Execution],
    tasks: tuple[Task, ...],
    artifacts: tuple[Artifact, ...],
    rubric: str,
) -> PlanEstimate:
    """The estimate of ``plan`` (see the module)."""
    by_strategy: dict[str, int] = {}
    calls = input_tokens = output_tokens = upper = 0
    baseline: dict[int, int] = {}
    judge = profile.judge
    max_out = profile.decoding.max_output_tokens
    for execution in plan:
        task = tasks[execution.task_index]
        by_strategy[execution.strategy] = by_strategy.get(execution.strategy, 0) + 1
        overhead = estimate_tokens(profile.prompt.system) + estimate_tokens(
            render_prompt(profile.prompt, query=task.query, context="")
        )
        if execution.budget is None:
            if execution.task_index not in baseline:
                baseline[execution.task_index] = _baseline_tokens(profile, task, overhead, artifacts)
            tokens = baseline[execution.task_index]
        else:
            tokens = execution.budget
        calls += 1
        input_tokens += tokens
        output_tokens += max_out
        upper += upper_bound(tokens, max_out, profile.pricing)
        if isinstance(judge, LlmJudge):
            judged = estimate_tokens(JUDGE_SYSTEM) + estimate_tokens(judge_prompt(rubric, task, "")) + max_out
            calls += 1
            input_tokens += judged
            output_tokens += judge.decoding.max_output_tokens
            upper += upper_bound(judged, judge.decoding.max_output_tokens, judge.pricing)
    return PlanEstimate(
        executions=by_strategy,
        paid_calls=calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        upper_micro_usd=upper,
    )
