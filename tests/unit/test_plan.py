"""Shard plans: contiguous, complete, balanced by cost; the re-hash plan by bytes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.core.planning import RangeCutter, cut_ranges
from eceb_worker.corpus.planning import TAPER_PARTS, RehashPlanner, plan_rehash


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


@given(st.lists(st.integers(0, 100), max_size=60), st.integers(1, 300), st.lists(st.integers(1, 20), max_size=8))
def test_costs_cut_as_they_come_as_all_at_once(costs: list[int], limit: int, batches: list[int]) -> None:
    """Feeding the cutter in batches of any sizes closes the same ranges."""
    cutter = RangeCutter(limit)
    ends: list[int] = []
    position = 0
    for size in [*batches, len(costs)]:
        batch = costs[position : position + size]
        ends += [position + end for end in cutter.add(batch)]
        position += len(batch)
    if (ends[-1] if ends else 0) < len(costs):
        ends.append(len(costs))  # the range still open
    assert ends == [end for _, end in cut_ranges(costs, limit)]


@given(st.lists(st.integers(0, 10_000), max_size=100), st.integers(1, 50_000), st.integers(1, 30))
def test_planner_in_batches_is_plan_rehash(sizes: list[int], shard_bytes: int, batch: int) -> None:
    planner = RehashPlanner(shard_bytes, 100)
    for start in range(0, len(sizes), batch):
        part = sizes[start : start + batch]
        planner.add(part, [start + i + 1 for i in range(len(part))], [f"p{start + i}" for i in range(len(part))])
    shards = planner.finish()
    assert [(s.index, s.start, s.end, s.size_bytes) for s in shards] == [
        (s.index, s.start, s.end, s.size_bytes)
        for s in plan_rehash(sizes, shard_bytes=shard_bytes, file_cost_bytes=100)
    ]
    assert [s.first_path for s in shards] == [f"p{s.start}" for s in shards]
    assert [(s.byte_start, s.byte_end) for s in shards] == [(s.start, s.end) for s in shards]


@given(st.lists(st.integers(0, 10_000), max_size=200), st.integers(1, 50_000), st.integers(0, 500))
def test_a_tapered_plan_tiles_and_its_shards_only_shrink(sizes: list[int], shard_bytes: int, file_cost: int) -> None:
    """With the count known, shards still tile the artifacts in order, none
    costs more than an untapered one would, and none is cut before reaching
    ``shard_bytes / TAPER_PARTS``."""
    shards = plan_rehash(sizes, shard_bytes=shard_bytes, file_cost_bytes=file_cost, taper=True)
    position = 0
    for index, shard in enumerate(shards):
        assert (shard.index, shard.start) == (index, position)
        assert shard.end > shard.start
        assert shard.size_bytes == sum(sizes[shard.start : shard.end])
        cost = shard.size_bytes + file_cost * shard.count
        if shard.end < len(sizes):
            assert cost >= max(1, shard_bytes // TAPER_PARTS)
            assert cost - (sizes[shard.end - 1] + file_cost) < shard_bytes
        position = shard.end
    assert position == len(sizes)


def test_the_last_shards_shrink_when_the_count_is_known() -> None:
    """9.2 shards' worth of equal files: 8 full shards, then about half of
    what is left each time, down to an eighth of a shard."""
    sizes = [100] * 92
    plain = plan_rehash(sizes, shard_bytes=1000, file_cost_bytes=0)
    tapered = plan_rehash(sizes, shard_bytes=1000, file_cost_bytes=0, taper=True)
    assert [s.count for s in plain] == [10] * 9 + [2]
    assert [s.count for s in tapered] == [10] * 8 + [6, 3, 2, 1]


@given(st.lists(st.integers(0, 10_000), max_size=100), st.integers(1, 50_000), st.integers(1, 30), st.integers(0, 150))
def test_a_tapered_planner_in_batches_is_plan_rehash(sizes: list[int], shard_bytes: int, batch: int, told: int) -> None:
    """Fed in batches of any size, a planner expecting the right count cuts
    plan_rehash's tapered plan; a wrong count changes sizes only."""
    for expected, same in ((len(sizes), True), (told, told == len(sizes))):
        planner = RehashPlanner(shard_bytes, 100)
        planner.expect(expected)
        for start in range(0, len(sizes), batch):
            planner.add(sizes[start : start + batch])
        shards = [(s.index, s.start, s.end, s.size_bytes) for s in planner.finish()]
        assert shards[-1][2] == len(sizes) if sizes else shards == []
        if same:
            tapered = plan_rehash(sizes, shard_bytes=shard_bytes, file_cost_bytes=100, taper=True)
            assert shards == [(s.index, s.start, s.end, s.size_bytes) for s in tapered]
