"""Re-hash shard plans: contiguous, complete, balanced by bytes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.engine.plan import plan_rehash


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
