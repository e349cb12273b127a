"""The one retry policy of cluster tasks: what runs again, how often and
after how long (eceb_worker/cluster/retry.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.cluster.retry import BACKOFF_MAX_S, RetryPolicy
from eceb_worker.errors import InputError, OutputError, Problem, ShardFailedError, ShardLostError, StorageError


def test_only_a_passing_storage_failure_runs_again_within_the_bound() -> None:
    policy = RetryPolicy(max_retries=3)
    assert [policy.retries(StorageError("throttled"), n) for n in range(5)] == [True, True, True, False, False]
    for final in (
        ShardFailedError("shard 1 failed"),
        ShardLostError("lost"),
        InputError([Problem(file="run.json", message="bad")]),
        OutputError("x"),
    ):
        assert not policy.retries(final, 0)
    assert not policy.retries(ValueError("bug"), 0)
    assert not RetryPolicy(max_retries=0).retries(StorageError("throttled"), 0)


@given(st.integers(0, 40), st.floats(0.01, 10))
def test_the_back_off_is_jittered_below_a_doubling_capped_bound(retries: int, first_s: float) -> None:
    wait = RetryPolicy(max_retries=50, first_s=first_s).countdown(retries)
    assert 0 <= wait <= min(BACKOFF_MAX_S, first_s * 2**retries)
