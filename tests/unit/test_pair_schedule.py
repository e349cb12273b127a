"""The fixed paid comparison schedule and the plan counted from it
(task-context-benchmark-reference.md, "Fixed paid comparison schedule")."""

from __future__ import annotations

import pytest

from eceb_worker.families.paired.schedule import SCHEDULE, Arm, TaskKind, plan

A_B = (Arm.A, Arm.B)
B_A = (Arm.B, Arm.A)


def test_the_seeds_schedule_counts_nine_pairs_and_eighteen_executions_pilot_included() -> None:
    seed = plan()
    assert (seed.pair_count, seed.execution_count, seed.pilot_executions, seed.repeats) == (9, 18, 2, 3)
    assert [(i.task, i.a_first, i.b_first, i.ratio) for i in seed.imbalance] == [
        (TaskKind.EXPLANATION, 2, 1, "2:1"),
        (TaskKind.DISCOVERY, 1, 2, "2:1"),
        (TaskKind.VERIFICATION, 2, 1, "2:1"),
        (None, 5, 4, "5:4"),
    ]


def test_execution_order_is_repeat_by_repeat_with_the_pilot_first() -> None:
    seed = plan()
    assert [(p.task.value, p.repeat, "/".join(a.value for a in p.order)) for p in seed.pairs] == [
        ("explanation", 1, "A/B"),
        ("discovery", 1, "B/A"),
        ("verification", 1, "A/B"),
        ("explanation", 2, "B/A"),
        ("discovery", 2, "A/B"),
        ("verification", 2, "B/A"),
        ("explanation", 3, "A/B"),
        ("discovery", 3, "B/A"),
        ("verification", 3, "A/B"),
    ]
    assert [p.pilot for p in seed.pairs] == [True] + [False] * 8
    assert [(p.executions_before, p.cumulative_executions) for p in seed.pairs] == [
        (2 * k, 2 * k + 2) for k in range(9)
    ]
    assert [(e.position, e.pair, e.arm.value) for e in seed.executions[:4]] == [
        (1, 1, "A"),
        (2, 1, "B"),
        (3, 2, "B"),
        (4, 2, "A"),
    ]
    assert [e.pilot for e in seed.executions] == [True, True] + [False] * 16


def test_every_figure_is_counted_from_the_table() -> None:
    """Another table gives other figures: none of them is a constant."""
    other = ((TaskKind.EXPLANATION, (A_B, A_B)), (TaskKind.DISCOVERY, (A_B, B_A)))
    counted = plan(other)
    assert (counted.pair_count, counted.execution_count, counted.pilot_executions, counted.repeats) == (4, 8, 2, 2)
    assert [(i.a_first, i.b_first, i.ratio) for i in counted.imbalance] == [(2, 0, "2:0"), (1, 1, "1:1"), (3, 1, "3:1")]
    assert [p.task for p in plan(((TaskKind.DISCOVERY, (B_A,)),)).pairs if p.pilot] == [TaskKind.DISCOVERY]
    assert plan(SCHEDULE) == plan()


@pytest.mark.parametrize(
    "schedule",
    [(), ((TaskKind.EXPLANATION, ()),), ((TaskKind.EXPLANATION, (A_B,)), (TaskKind.DISCOVERY, (A_B, B_A)))],
)
def test_a_schedule_with_uneven_or_no_repeats_is_refused(schedule: tuple) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValueError, match="same, non-zero number of repeats"):
        plan(schedule)
