"""Re-hash shard plans: contiguous, complete, balanced by bytes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.engine.plan import GUIDED_TASKS_PER_WORKER, RehashShard, group_shards, plan_rehash


@given(st.lists(st.integers(0, 10_000), max_size=200), st.integers(1, 50_000), st.integers(0, 500))
def test_shards_tile_the_registry(sizes: list[int], shard_bytes: int, file_cost: int) -> None:
    shards = plan_rehash(sizes, shard_bytes=shard_bytes, file_cost_bytes=file_cost)
    position = 0
    for index, shard in enumerate(shards):
        assert shard.index == index
        assert shard.start == position < shard.end
        assert shard.size_bytes == sum(sizes[shard.start : shard.end])
        cost = shard.size_bytes + file_cost * (shard.end - shard.start)
        if shard.end < len(sizes):
            assert cost >= shard_bytes
            assert cost - (sizes[shard.end - 1] + file_cost) < shard_bytes
        position = shard.end
    assert position == len(sizes)


def test_balanced_by_bytes_not_by_count() -> None:
    sizes = [100] * 10 + [1000] + [100] * 10
    shards = plan_rehash(sizes, shard_bytes=1000, file_cost_bytes=0)
    assert [(s.start, s.end) for s in shards] == [(0, 10), (10, 11), (11, 21)]


def test_invalid_parameters() -> None:
    with pytest.raises(ValueError, match="positive"):
        plan_rehash([1], shard_bytes=0)
    with pytest.raises(ValueError, match="negative"):
        plan_rehash([1], file_cost_bytes=-1)


@given(
    st.lists(st.integers(0, 10_000), max_size=200),
    st.integers(1, 5_000),
    st.integers(1, 100_000),
    st.one_of(st.none(), st.integers(1, 8)),
)
def test_groups_tile_the_plan(sizes: list[int], shard_bytes: int, task_bytes: int, workers: int | None) -> None:
    shards = plan_rehash(sizes, shard_bytes=shard_bytes, file_cost_bytes=10)
    groups = group_shards(shards, task_bytes=task_bytes, workers=workers, file_cost_bytes=10)
    cost = [s.size_bytes + 10 * (s.end - s.start) for s in shards]
    position = 0
    remaining = sum(cost)
    for first, end in groups:
        assert first == position < end
        total = sum(cost[first:end])
        target = task_bytes
        if workers is not None:
            target = min(task_bytes, max(1, remaining // (GUIDED_TASKS_PER_WORKER * workers)))
        if end < len(shards):
            assert total >= target
        assert total - cost[end - 1] < target  # closed as soon as the target was reached
        remaining -= total
        position = end
    assert position == len(shards)


def test_groups_shrink_towards_the_end_with_workers() -> None:
    shards = plan_rehash([1000] * 100, shard_bytes=1000, file_cost_bytes=0)
    fixed = group_shards(shards, task_bytes=10_000, file_cost_bytes=0)
    assert fixed == [(i, i + 10) for i in range(0, 100, 10)]
    guided = group_shards(shards, task_bytes=10_000, workers=2, file_cost_bytes=0)
    lengths = [end - first for first, end in guided]
    assert lengths[:3] == [10, 10, 10]  # capped: 100,000/4 left would be 25 shards
    assert lengths == sorted(lengths, reverse=True)
    assert lengths[-4:] == [1, 1, 1, 1]
    assert group_shards([], workers=2) == []


def test_groups_never_join_shards_apart() -> None:
    shards = plan_rehash([10] * 6, shard_bytes=10, file_cost_bytes=0)
    subset = [shards[0], shards[1], shards[3], shards[4], shards[5]]  # shard 2 left out
    assert group_shards(subset, task_bytes=10**6, file_cost_bytes=0) == [(0, 2), (2, 5)]


def test_grouping_invalid_parameters() -> None:
    shard = [RehashShard(index=0, start=0, end=1, size_bytes=1)]
    with pytest.raises(ValueError, match="task_bytes"):
        group_shards(shard, task_bytes=0)
    with pytest.raises(ValueError, match="workers"):
        group_shards(shard, workers=0)
    with pytest.raises(ValueError, match="negative"):
        group_shards(shard, file_cost_bytes=-1)
