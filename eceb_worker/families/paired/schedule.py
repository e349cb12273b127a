"""The fixed paid comparison schedule of the paired task-context benchmark
(task-context-benchmark-reference.md, "Fixed paid comparison schedule"),
and the plan computed from it: execution order, cumulative execution
counts and order imbalance.

The table is the only constant: :data:`SCHEDULE` holds, for each task kind,
the arm order of each repeat (``A`` the frozen overview, ``B`` the task
cue). Every figure of a :class:`Plan` (pairs, executions, the pilot's
executions, A-first and B-first counts per task and overall) is counted
from it by :func:`plan`.

Execution order (docs/INTERPRETATIONS.md, "Execution order of the
schedule"): repeat by repeat, and within a repeat in the table's task order
(explanation, discovery, verification); within a pair, the arm its order
names first runs first. The pilot is the first explanation pair, so it is
the first pair of the order.
"""

from __future__ import annotations

import enum
from math import gcd
from typing import Final

import msgspec

__all__ = [
    "PLAN_SCHEMA",
    "SCHEDULE",
    "Arm",
    "Execution",
    "Imbalance",
    "Plan",
    "ScheduledPair",
    "TaskKind",
    "imbalance_of",
    "pair_at",
    "plan",
]

PLAN_SCHEMA: Final = "symgliph.eceb/pair-plan-v0.1"
"""The ``schema`` field of a plan printed by ``eceb pair plan --json``."""


class Arm(enum.Enum):
    """A context arm: ``A`` the frozen repository overview, ``B`` the task cue
    (``repocue/task-cue-1``)."""

    A = "A"
    B = "B"


class TaskKind(enum.Enum):
    """The three task kinds of the seed, in the schedule table's order."""

    EXPLANATION = "explanation"
    DISCOVERY = "discovery"
    VERIFICATION = "verification"


_A_B: Final = (Arm.A, Arm.B)
_B_A: Final = (Arm.B, Arm.A)

SCHEDULE: Final[tuple[tuple[TaskKind, tuple[tuple[Arm, Arm], ...]], ...]] = (
    (TaskKind.EXPLANATION, (_A_B, _B_A, _A_B)),
    (TaskKind.DISCOVERY, (_B_A, _A_B, _B_A)),
    (TaskKind.VERIFICATION, (_A_B, _B_A, _A_B)),
)
"""The seed's table: each task kind's arm order in repeats 1, 2 and 3. The
pilot is the explanation pair of repeat 1."""


class ScheduledPair(msgspec.Struct, frozen=True, kw_only=True):
    """One pair of the schedule, in execution order.

    Fields:
        position: 1-based place in the execution order.
        task: the task kind.
        repeat: 1-based repeat of that task.
        order: the arms in the order they run, e.g. ``["A", "B"]``.
        pilot: True for the pilot pair (the first explanation pair).
        executions_before: executions of the pairs before this one.
        cumulative_executions: executions once this pair has run (its two included).
    """

    position: int
    task: TaskKind
    repeat: int
    order: tuple[Arm, Arm]
    pilot: bool
    executions_before: int
    cumulative_executions: int


class Execution(msgspec.Struct, frozen=True, kw_only=True):
    """One execution (one arm of one pair) in execution order.

    Fields:
        position: 1-based place among all executions.
        pair: the position of its pair.
        task: the task kind.
        repeat: the repeat of that task.
        arm: the arm run.
        pilot: True when it belongs to the pilot pair.
    """

    position: int
    pair: int
    task: TaskKind
    repeat: int
    arm: Arm
    pilot: bool


class Imbalance(msgspec.Struct, frozen=True, kw_only=True):
    """How often A ran first against how often B ran first.

    Fields:
        task: the task kind, or ``None`` for every task together.
        a_first: pairs whose order is A/B.
        b_first: pairs whose order is B/A.
        ratio: the larger count to the smaller, reduced (``"2:1"``, ``"5:4"``;
            ``"1:1"`` when balanced; ``"n:0"``, unreduced, when one order never occurs).
    """

    task: TaskKind | None
    a_first: int
    b_first: int
    ratio: str


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """The schedule as ``eceb pair plan`` prints it.

    Fields:
        schema: :data:`PLAN_SCHEMA`.
        pairs: every pair in execution order.
        executions: every execution in execution order.
        pair_count: number of pairs.
        execution_count: number of executions, the pilot's included.
        pilot_executions: executions of the pilot pair.
        repeats: repeats per task kind.
        imbalance: per task kind, in the table's order, then overall (``task`` null).
        notes: what the seed says the schedule supports, in its words.
    """

    schema: str
    pairs: tuple[ScheduledPair, ...]
    executions: tuple[Execution, ...]
    pair_count: int
    execution_count: int
    pilot_executions: int
    repeats: int
    imbalance: tuple[Imbalance, ...]
    notes: tuple[str, ...]


NOTES: Final = (
    "The two-execution pilot is the first explanation pair; continuation requires explicit approval.",
    "Order imbalance stays visible: it is not corrected for.",
    "Three repeats support descriptive values only.",
    "One pair bounds the execution count, not the charges; the adapter has no hard billing ceiling.",
)


def _ratio(first: int, second: int) -> str:
    high, low = max(first, second), min(first, second)
    divisor = gcd(high, low) if low else 1  # "2:0" keeps its count
    return f"{high // divisor}:{low // divisor}"


def imbalance_of(task: TaskKind | None, orders: list[tuple[Arm, Arm]]) -> Imbalance:
    """The :class:`Imbalance` of ``orders`` (pairs' arm orders) for ``task`` (``None``: every task)."""
    a_first = sum(1 for order in orders if order[0] is Arm.A)
    b_first = len(orders) - a_first
    return Imbalance(task=task, a_first=a_first, b_first=b_first, ratio=_ratio(a_first, b_first))


def plan(
    schedule: tuple[tuple[TaskKind, tuple[tuple[Arm, Arm], ...]], ...] = SCHEDULE,
) -> Plan:
    """The plan of ``schedule`` (by default the seed's :data:`SCHEDULE`):
    pairs and executions in execution order (repeat by repeat, tasks in table
    order), cumulative counts and order imbalance, all counted from the
    table. Raises ``ValueError`` when a task's repeats differ in number
    from the others' or the schedule is empty."""
    repeats = {len(orders) for _, orders in schedule}
    if len(repeats) != 1 or 0 in repeats:
        raise ValueError("every task of a schedule needs the same, non-zero number of repeats")
    (repeat_count,) = repeats
    pilot_task = schedule[0][0]
    pairs: list[ScheduledPair] = []
    executions: list[Execution] = []
    for repeat in range(1, repeat_count + 1):
        for task, orders in schedule:
            order = orders[repeat - 1]
            position = len(pairs) + 1
            pilot = task is pilot_task and repeat == 1
            before = len(executions)
            for arm in order:
                executions.append(
                    Execution(
                        position=len(executions) + 1, pair=position, task=task, repeat=repeat, arm=arm, pilot=pilot
                    )
                )
            pairs.append(
                ScheduledPair(
                    position=position,
                    task=task,
                    repeat=repeat,
                    order=order,
                    pilot=pilot,
                    executions_before=before,
                    cumulative_executions=len(executions),
                )
            )
    imbalance = [imbalance_of(task, list(orders)) for task, orders in schedule]
    imbalance.append(imbalance_of(None, [order for _, orders in schedule for order in orders]))
    return Plan(
        schema=PLAN_SCHEMA,
        pairs=tuple(pairs),
        executions=tuple(executions),
        pair_count=len(pairs),
        execution_count=len(executions),
        pilot_executions=sum(1 for execution in executions if execution.pilot),
        repeats=repeat_count,
        imbalance=tuple(imbalance),
        notes=NOTES,
    )


def pair_at(position: int) -> ScheduledPair | None:
    """The fixed schedule's pair at ``position`` (1-based execution order), or ``None``."""
    return next((pair for pair in plan().pairs if pair.position == position), None)
