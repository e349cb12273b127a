"""The evaluation plan (ECEB-0.1 §10-§14 in shards): a run's tasks, with
the benchmark's, cut into shards balanced by observations
(:class:`~eceb_worker.core.planning.RangeCutter`'s one rule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Final

import msgspec

from eceb_worker.core.planning import cut_ranges

if TYPE_CHECKING:
    from eceb_worker.families.eceb.benchmark import Benchmark
    from eceb_worker.families.eceb.run_index import IndexedRun

__all__ = [
    "DEFAULT_SHARD_OBSERVATIONS",
    "IN_PROCESS_SHARD_OBSERVATIONS",
    "EvaluationShard",
    "evaluation_task_ids",
    "plan_evaluation",
]

DEFAULT_SHARD_OBSERVATIONS: Final = 200_000
"""Default size of one evaluation shard, in observations: about two seconds of
decoding, checking and gating on one core (see docs/PERFORMANCE.md)."""

IN_PROCESS_SHARD_OBSERVATIONS: Final = 20_000
"""Default size of an evaluation shard run by the embedded executor (``eceb
evaluate``), in observations: about 0.15 s on one core. Handing a shard to a
helper process costs a few milliseconds, so shards are small enough for the
calling process and its helpers to finish within one of each other."""


class EvaluationShard(msgspec.Struct, frozen=True, kw_only=True):
    """A contiguous range of task ids (sorted, :func:`evaluation_task_ids`) to evaluate together.

    Fields:
        index: 0-based position of the shard in its plan.
        start: index of the first task id; ``end``: one past the last.
        observations: observations the shard decodes and gates.
    """

    index: Annotated[int, msgspec.Meta(ge=0)]
    start: Annotated[int, msgspec.Meta(ge=0)]
    end: Annotated[int, msgspec.Meta(ge=0)]
    observations: Annotated[int, msgspec.Meta(ge=0)]


def evaluation_task_ids(benchmark: Benchmark, run: IndexedRun) -> list[str]:
    """Every task id to evaluate, sorted: the benchmark's and the run's
    (:func:`plan_evaluation` cuts this list)."""
    return sorted({t.task_id for t in benchmark.tasks} | run.task_ids)


def plan_evaluation(
    observation_counts: list[int], *, shard_observations: int = DEFAULT_SHARD_OBSERVATIONS
) -> list[EvaluationShard]:
    """Cut tasks (given by their observation counts, in task id order) into
    shards balanced by observations; a task never spans two shards (its
    groups are evaluated together) and counts at least 1 (a task without
    observations is still evaluated). Raises ValueError for a non-positive
    ``shard_observations``.
    """
    costs = [max(count, 1) for count in observation_counts]
    ranges = cut_ranges(costs, shard_observations, name="shard_observations")
    return [
        EvaluationShard(index=index, start=start, end=end, observations=sum(observation_counts[start:end]))
        for index, (start, end) in enumerate(ranges)
    ]
