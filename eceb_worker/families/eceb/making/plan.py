"""The plan of a run to make: every execution of every task, strategy,
budget and repetition, and every paid call they need, in one deterministic
order (ECEB-0.1 §7, §8, §13).

Order: tasks in the benchmark's order; within a task the baseline
(``full_permitted_context``, no budget), then ``compiled`` at each budget of
the ladder ascending, then ``naive_top_k`` at each budget (when the profile
asks for it); within a group, repetitions 1..R. Each execution is one answer
call, then one judge call (an LLM judge's is paid; a command judge's is
not). The plan's digest binds a journal to it: resuming against another
benchmark, registry or profile is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final, Literal

import msgspec

from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.digests import digest_bytes
from eceb_worker.families.eceb.benchmark import Benchmark, Task
from eceb_worker.families.eceb.making.profile import LlmJudge, RunProfile
from eceb_worker.families.eceb.vocabulary import Strategy

__all__ = [
    "PLAN_DOMAIN",
    "Call",
    "Execution",
    "executions",
    "paid_calls",
    "plan_digest",
    "plan_size",
    "repetitions_of",
]

PLAN_DOMAIN: Final = b"symgliph:eceb:run-plan:v0.1\0"
"""Domain separation of :func:`plan_digest`."""

CallKind = Literal["answer", "judge"]


class Execution(msgspec.Struct, frozen=True, kw_only=True):
    """One repetition of one task under one strategy and budget.

    Fields:
        position: its place in the plan (0-based): the run's order.
        task_index: the task's place in the benchmark.
        task_id, strategy, budget (``None`` for the baseline), repetition (1-based).
        execution_id: a stable name, ``task_id|strategy|budget|repetition``
            digested (16 hex characters) so that any task id fits.
    """

    position: int
    task_index: int
    task_id: str
    strategy: Strategy
    budget: int | None
    repetition: int
    execution_id: str


class Call(msgspec.Struct, frozen=True, kw_only=True):
    """One paid or unpaid call of an execution: its ``answer`` or its
    ``judge`` call. ``call_id`` is ``execution_id + ":" + kind``."""

    execution: Execution
    kind: CallKind

    @property
    def call_id(self) -> str:
        """The call's name in the journal."""
        return f"{self.execution.execution_id}:{self.kind}"


def repetitions_of(task: Task, profile: RunProfile) -> int:
    """Repetitions of every group of ``task``: the profile's, else the task's ``required_repetitions``."""
    return profile.strategies.repetitions or task.required_repetitions


def _execution_id(task_id: str, strategy: str, budget: int | None, repetition: int) -> str:
    return digest_bytes(canonical_json([task_id, strategy, budget, repetition]))[:16]


def _groups(task: Task, profile: RunProfile) -> Iterator[tuple[Strategy, int | None]]:
    yield "full_permitted_context", None
    for budget in sorted(task.budget_ladder):
        yield "compiled", budget
    if profile.strategies.naive_top_k:
        for budget in sorted(task.budget_ladder):
            yield "naive_top_k", budget


def executions(benchmark: Benchmark, profile: RunProfile) -> Iterator[Execution]:
    """Every execution of the plan, in its order (see the module)."""
    position = 0
    for task_index, task in enumerate(benchmark.tasks):
        for strategy, budget in _groups(task, profile):
            for repetition in range(1, repetitions_of(task, profile) + 1):
                yield Execution(
                    position=position,
                    task_index=task_index,
                    task_id=task.task_id,
                    strategy=strategy,
                    budget=budget,
                    repetition=repetition,
                    execution_id=_execution_id(task.task_id, strategy, budget, repetition),
                )
                position += 1


def plan_size(benchmark: Benchmark, profile: RunProfile) -> int:
    """The number of executions :func:`executions` gives, without making them."""
    return sum(sum(1 for _ in _groups(task, profile)) * repetitions_of(task, profile) for task in benchmark.tasks)


def paid_calls(profile: RunProfile, execution_count: int) -> int:
    """Paid calls of a plan of ``execution_count`` executions: one answer
    each, and one judgment each with an LLM judge."""
    return execution_count * (2 if isinstance(profile.judge, LlmJudge) else 1)


def plan_digest(*, benchmark_digest: str, corpus_root: str, profile: RunProfile) -> str:
    """What a journal is bound to: the benchmark file's BLAKE3, the corpus
    root and the profile's canonical JSON (its spending limits left out:
    raising them to go on is allowed). 64 hex characters."""
    bound = msgspec.structs.replace(profile, spending=type(profile.spending)())
    return digest_bytes(PLAN_DOMAIN + canonical_json([benchmark_digest, corpus_root, bound]))
