"""The one retry policy of the cluster: what runs again, how often and
after how long, tasks and lost Redis connections (eceb_worker/cluster/retry.py)."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.exceptions import ConnectionError as RedisConnectionError

from eceb_worker.cluster.retry import BACKOFF_MAX_S, OUTAGE_STEP_MAX_S, RetryPolicy
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


def test_a_lost_redis_connection_is_tried_again_until_the_outage_bound() -> None:
    """``outlast``: back-off capped at a second, then StorageError naming the bound."""
    policy = RetryPolicy(max_retries=0, outage_s=5)
    now = [0.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    calls: list[float] = []

    def back_at(when: float) -> Callable[[], str]:
        def call() -> str:
            calls.append(now[0])
            if now[0] < when:
                raise RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
            return "answer"

        return call

    assert policy.outlast(back_at(3.0), "the broker", sleep=sleep, clock=lambda: now[0]) == "answer"
    assert waits[:5] == [0.05, 0.1, 0.2, 0.4, 0.8] and max(waits) == OUTAGE_STEP_MAX_S
    now[0], waits[:], calls[:] = 0.0, [], []
    with pytest.raises(StorageError, match=r"the broker unreachable for more than 5 s \(ECEB_REDIS_OUTAGE_S\): "):
        policy.outlast(back_at(99.0), "the broker", sleep=sleep, clock=lambda: now[0])
    assert 5 <= calls[-1] < 5 + OUTAGE_STEP_MAX_S
    # Anything else is not an outage: raised as it is, at once.
    with pytest.raises(ValueError, match="bug"):
        policy.outlast(lambda: int("bug"), "the broker", sleep=sleep)


def test_kombu_publishing_retries_cover_the_outage_bound() -> None:
    for outage_s in (1, 10, 60, 600):
        policy = RetryPolicy(max_retries=0, outage_s=outage_s).publish_retry_policy()
        waits = [
            min(policy["interval_start"] + policy["interval_step"] * n, policy["interval_max"])
            for n in range(int(policy["max_retries"]))
        ]
        assert outage_s <= sum(waits) <= outage_s + 2


def test_redis_commands_are_retried_for_the_bound_then_raise() -> None:
    """The retry of redis-py (every command of the result backend's client) is bounded by time."""
    retry = RetryPolicy(max_retries=0, outage_s=0.3).redis_retry()
    attempts: list[float] = []
    failures: list[Exception] = []

    def refused() -> None:
        attempts.append(time.monotonic())
        raise RedisConnectionError("refused")

    started = time.monotonic()
    with pytest.raises(RedisConnectionError):
        retry.call_with_retry(refused, failures.append)
    assert 0.3 <= time.monotonic() - started < 0.3 + 2 * OUTAGE_STEP_MAX_S
    assert len(attempts) >= 3 and len(failures) == len(attempts) - 1  # the last one is raised
    answers = iter([RedisConnectionError("refused"), "PONG"])

    def blinking() -> object:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert retry.call_with_retry(blinking, failures.append) == "PONG"
    assert copy.deepcopy(retry) == retry  # as each connection of a pool holds it
