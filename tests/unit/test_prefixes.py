"""Shards spread over S3 key prefixes: every shard exactly once, each
prefix's shards in their order, no run of ``w`` places holding more than
its share plus one of a prefix, and the GET rate per prefix within the
limit; ordering changes no verification byte."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eceb_worker.corpus.planning import plan_rehash
from eceb_worker.corpus.prefixes import (
    S3_PREFIX_GET_RATE,
    partition_prefix,
    prefix_cap,
    spread_order,
    spread_rehash,
    spread_shards,
    window_counts,
)
from eceb_worker.corpus.verification import Finding, ShardVerification, encode_verification, reduce_verification

PREFIX_LISTS = st.lists(st.sampled_from(["a/", "b/", "c/", "d/", "e/", "f/", ""]), max_size=120)


def brute_window_counts(prefixes: list[str], order: list[int], width: int) -> dict[str, int]:
    seen = [prefixes[i] for i in order]
    windows = [seen[start : start + width] for start in range(max(1, len(seen) - width + 1))]
    return {p: max(window.count(p) for window in windows) for p in set(prefixes)}


def test_the_prefix_is_the_top_directory_by_default() -> None:
    assert partition_prefix("code/d001/f00001.bin") == "code/"
    assert partition_prefix("code/d001/f00001.bin", 2) == "code/d001/"
    assert partition_prefix("code/d001/f00001.bin", 5) == "code/d001/"
    assert partition_prefix("top.txt") == ""
    assert partition_prefix("code/a.txt", 0) == ""
    with pytest.raises(ValueError, match="negative"):
        partition_prefix("a/b", -1)


def test_cap_is_the_workers_a_prefix_serves() -> None:
    assert prefix_cap(1_000) == 5
    assert prefix_cap(5_500) == 1
    assert prefix_cap(9_000) == 1  # one worker alone above the limit: it must issue fewer
    with pytest.raises(ValueError, match="positive"):
        prefix_cap(0)


def test_a_layout_in_registry_order_is_interleaved() -> None:
    prefixes = ["a/"] * 4 + ["b/"] * 4 + ["c/"] * 2
    order = spread_order(prefixes)
    assert [prefixes[i] for i in order] == ["a/", "b/", "c/", "a/", "b/", "a/", "b/", "c/", "a/", "b/"]


@settings(max_examples=300)
@given(PREFIX_LISTS)
def test_every_shard_exactly_once_each_prefix_in_its_order(prefixes: list[str]) -> None:
    order = spread_order(prefixes)
    assert sorted(order) == list(range(len(prefixes)))
    for prefix in set(prefixes):
        mine = [i for i in order if prefixes[i] == prefix]
        assert mine == sorted(mine)


@settings(max_examples=300)
@given(
    st.lists(st.integers(0, 12), min_size=1, max_size=300).map(lambda xs: [f"p{x:02d}/" for x in xs]),
    st.integers(1, 64),
)
def test_no_run_of_places_holds_more_than_its_share_plus_one(prefixes: list[str], width: int) -> None:
    order = spread_order(prefixes)
    total = len(prefixes)
    most = window_counts(prefixes, order, width)
    assert most == brute_window_counts(prefixes, order, min(width, total))
    for prefix, found in most.items():
        share = prefixes.count(prefix)
        assert found <= -(-min(width, total) * share // total) + 1


@settings(max_examples=200)
@given(PREFIX_LISTS.filter(bool), st.integers(1, 40), st.integers(1, 12_000))
def test_no_prefix_is_asked_for_more_than_it_serves(prefixes: list[str], workers: int, rate: int) -> None:
    spread = spread_shards(prefixes, workers=workers, worker_get_rate=rate)
    assert sorted(spread.order) == list(range(len(prefixes)))
    assert spread.cap == max(1, S3_PREFIX_GET_RATE // rate)
    assert spread.prefixes == tuple(sorted(set(prefixes)))
    assert spread.shards == tuple(prefixes.count(p) for p in spread.prefixes)
    for concurrent, shard_rate, peak in zip(
        spread.concurrent, spread.shard_get_rates, spread.peak_get_rates, strict=True
    ):
        assert peak == concurrent * shard_rate <= S3_PREFIX_GET_RATE
        assert shard_rate <= rate
        assert (shard_rate == rate) == (concurrent * rate <= S3_PREFIX_GET_RATE)
    for prefix in spread.throttled:
        assert dict(zip(spread.prefixes, spread.concurrent, strict=True))[prefix] > spread.cap


def test_enough_prefixes_keep_every_worker_at_full_rate() -> None:
    """32 workers at 1,000 GET/s, 16 equal prefixes: at most 3 shards of a
    prefix run at once (cap 5), each at the worker's full rate."""
    prefixes = [f"p{i % 16:02d}/" for i in range(4_000)]
    spread = spread_shards(sorted(prefixes), workers=32, worker_get_rate=1_000)
    assert spread.cap == 5
    assert max(spread.concurrent) <= 3
    assert set(spread.shard_get_rates) == {1_000}
    assert spread.throttled == ()


def test_one_prefix_holds_the_job_to_its_limit() -> None:
    spread = spread_shards(["corpus/"] * 100, workers=32, worker_get_rate=1_000)
    assert spread.concurrent == (32,)
    assert spread.shard_get_rates == (S3_PREFIX_GET_RATE // 32,)
    assert spread.peak_get_rates[0] <= S3_PREFIX_GET_RATE
    assert spread.throttled == ("corpus/",)


def test_invalid_arguments() -> None:
    with pytest.raises(ValueError, match="positive"):
        spread_shards(["a/"], workers=0, worker_get_rate=1)
    with pytest.raises(ValueError, match="positive"):
        window_counts(["a/"], [0], 0)
    assert spread_order([]) == []


def _shard(start: int, paths: list[str]) -> ShardVerification:
    findings = tuple(
        Finding(artifact_id=p, path=p, status="missing", expected_digest="0" * 64, expected_size=100)
        for p in paths
        if p.endswith("7.bin")
    )
    return ShardVerification(
        start=start, end=start + len(paths), checked=len(paths), bytes_hashed=100 * len(paths), findings=findings
    )


@settings(max_examples=50)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=40))
def test_the_spread_order_changes_no_verification_byte(dirs: list[int]) -> None:
    """Shards reduced in the spread order give the report of the plan order."""
    paths = sorted({f"d{d}/f{i}.bin" for i, d in enumerate(dirs)})
    shards = [paths[i : i + 3] for i in range(0, len(paths), 3)]
    answers = [_shard(3 * i, shard) for i, shard in enumerate(shards)]
    order = spread_order([partition_prefix(shard[0]) for shard in shards])

    def report(parts: list[ShardVerification]) -> bytes:
        return encode_verification(
            reduce_verification(parts, corpus_root="0" * 64, artifact_count=len(paths), source="s3://b/c")
        )

    assert report([answers[i] for i in order]) == report(answers)


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3_000)), max_size=150), st.integers(1, 20_000))
def test_a_plan_is_spread_with_its_shrinking_shards_last(files: list[tuple[int, int]], shard_bytes: int) -> None:
    """The full shards of a tapered plan are spread over their prefixes; the
    shrinking ones stay at the end in plan order."""
    paths = [f"d{d}/f{i:04d}.bin" for i, (d, _) in enumerate(sorted(files))]
    sizes = [size for _, size in sorted(files)]
    planned = plan_rehash(sizes, shard_bytes=shard_bytes, file_cost_bytes=100, taper=True)
    shards = [msgspec.structs.replace(s, first_path=paths[s.start]) for s in planned]
    order = spread_rehash(shards, shard_bytes, file_cost_bytes=100)
    assert sorted(order) == list(range(len(shards)))
    full = [s.index for s in shards if s.size_bytes + 100 * s.count >= shard_bytes]
    tail = len(shards)
    while tail and shards[tail - 1].index not in full:
        tail -= 1
    assert order[tail:] == list(range(tail, len(shards)))
    head = [partition_prefix(shard.first_path) for shard in shards[:tail]]
    assert order[:tail] == spread_order(head)
