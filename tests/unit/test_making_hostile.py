"""The limits ``eceb run`` keeps for a provider (eceb_worker/pipeline/making/pacing.py),
attacked with the limits a real account has (README: ``requests_per_minute``
and ``tokens_per_minute`` are "kept by eceb"). Time is virtual: the pacer's clock and the ``limits``
library's in-memory storage read the same counter, which the pacer's sleep
advances."""

from __future__ import annotations

import types

import limits.storage.memory
import pytest

from eceb_worker.pipeline.making.pacing import PAUSE_MAX_S, PAUSE_READ_S, MemoryPauses, Pacer, Pauses

MINUTE_S = 60.0


@pytest.fixture
def virtual_pacer(monkeypatch: pytest.MonkeyPatch):
    """A factory of pacers on a virtual clock; returns ``(pacer, now)``."""
    now = [1_000_000.0]
    monkeypatch.setattr(limits.storage.memory, "time", types.SimpleNamespace(time=lambda: now[0]))

    def sleep(seconds: float) -> None:
        now[0] += seconds

    def make(pauses: Pauses | None = None, **limits_per_minute: int) -> tuple[Pacer, list[float]]:
        return Pacer(key="provider", clock=lambda: now[0], sleep=sleep, pauses=pauses, **limits_per_minute), now

    return make


def _sent_within_a_minute(pacer: Pacer, now: list[float], tokens: int) -> int:
    """Calls of ``tokens`` tokens the pacer lets start within one minute from now."""
    start = now[0]
    sent = 0
    while True:
        pacer.acquire(tokens)
        if now[0] - start >= MINUTE_S:
            return sent
        sent += 1


@pytest.mark.parametrize("per_minute", [1, 2, 5])
def test_a_request_limit_below_six_a_minute_is_kept(virtual_pacer, per_minute: int) -> None:
    """Attack: a ``requests_per_minute`` below six (1, 2 or 5). The pacer lets no more requests start
    within a minute than that limit."""
    pacer, now = virtual_pacer(requests_per_minute=per_minute)
    assert _sent_within_a_minute(pacer, now, tokens=1) <= per_minute


def test_a_token_limit_is_kept_for_calls_larger_than_a_window(virtual_pacer) -> None:
    """Attack: README's own profile-openai.json: ``tokens_per_minute`` 200,000 and baseline calls of
    about 128,000 tokens (the declared input window), each larger than a ten-second share of the limit.
    The pacer lets no more such calls start within a minute than fit in 200,000 tokens."""
    pacer, now = virtual_pacer(tokens_per_minute=200_000)
    calls = _sent_within_a_minute(pacer, now, tokens=128_000)
    assert calls * 128_000 <= 200_000


def test_a_request_limit_of_six_or_more_a_minute_is_kept(virtual_pacer) -> None:
    pacer, now = virtual_pacer(requests_per_minute=60)
    assert _sent_within_a_minute(pacer, now, tokens=1) <= 60


def test_equal_request_and_token_allowances_are_kept_apart(virtual_pacer) -> None:
    """Attack: 50 requests and 50 tokens a minute, calls of one token: both windows have the same
    allowance and length. Each call takes one entry of each, so 50 calls start within a minute, not 25."""
    pacer, now = virtual_pacer(requests_per_minute=50, tokens_per_minute=50)
    assert _sent_within_a_minute(pacer, now, tokens=1) == 50


def test_a_pause_holds_the_next_call_until_it_ends(virtual_pacer) -> None:
    pacer, now = virtual_pacer(requests_per_minute=600)
    start = now[0]
    pacer.pause(5.0)
    pacer.acquire(1)
    assert now[0] >= start + 5.0


def test_a_huge_pause_is_capped(virtual_pacer) -> None:
    """Attack: ``Retry-After: 3600``. The next call waits PAUSE_MAX_S, not an hour."""
    pacer, now = virtual_pacer()
    start = now[0]
    pacer.pause(3600.0)
    pacer.acquire(1)
    assert start + PAUSE_MAX_S <= now[0] <= start + PAUSE_MAX_S + 1.0


def test_a_pause_holds_a_call_already_waiting_for_its_window(virtual_pacer) -> None:
    """A call waiting for the request window to free up when a 429's pause comes: it is held until
    the pause ends, not only until the window frees up."""
    pacer, now = virtual_pacer(requests_per_minute=6)
    start = now[0]
    for _ in range(6):
        pacer.acquire(1)
    paused = []
    sleep = pacer._sleep

    def sleep_then_pause(seconds: float) -> None:
        sleep(seconds)
        if not paused and now[0] >= start + 59.0:
            paused.append(now[0])
            pacer.pause(30.0)

    pacer._sleep = sleep_then_pause
    pacer.acquire(1)
    assert paused
    assert now[0] >= paused[0] + 30.0


def test_a_pause_kept_in_shared_pauses_holds_another_pacer(virtual_pacer) -> None:
    """Two pacers of one key sharing their pauses: a pause set through one holds the other's next
    call, at the latest once that pacer's last read is PAUSE_READ_S old."""
    pauses = MemoryPauses()
    first, now = virtual_pacer(pauses=pauses)
    second, _ = virtual_pacer(pauses=pauses)
    start = now[0]
    assert second.paused_until() == 0.0  # read now: kept for PAUSE_READ_S
    first.pause(10.0)
    assert first.paused_until() == start + 10.0
    now[0] += PAUSE_READ_S + 0.001
    assert second.paused_until() == start + 10.0
    second.acquire(1)
    assert now[0] >= start + 10.0
