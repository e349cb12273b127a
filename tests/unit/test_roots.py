"""Task root and run digest: order-independent, value-sensitive."""

from __future__ import annotations

import msgspec

from eceb_worker.families.eceb.benchmark import normalized_task, task_root
from tests.support.evaluation_builders import task


def test_task_root_ignores_task_and_set_order() -> None:
    a = task(task_id="a", required_artifacts=("req", "extra"), allowed_classifications=("public", "internal"))
    b = task(task_id="b")
    swapped = msgspec.structs.replace(
        a, required_artifacts=("extra", "req"), allowed_classifications=("internal", "public")
    )
    assert task_root([a, b]) == task_root([b, swapped])
    assert normalized_task(swapped) == normalized_task(a)


def test_task_root_changes_with_any_value() -> None:
    a = task(task_id="a")
    for change in (
        {"query": "other"},
        {"budget_ladder": (100, 200, 301)},
        {"minimum_quality_milli": 701},
        {"required_repetitions": 3},
        {"denied_artifacts": ()},
    ):
        assert task_root([msgspec.structs.replace(a, **change)]) != task_root([a])
