"""The limits ``eceb run`` keeps for a provider (eceb_worker/pipeline/making/pacing.py),
attacked with the limits a real account has (README: ``requests_per_minute``
and ``tokens_per_minute`` are "kept by eceb"). Time is virtual: the pacer's clock and the ``limits``
library's in-memory storage read the same counter, which the pacer's sleep
advances."""

from __future__ import annotations

import types

import limits.storage.memory
import pytest

from eceb_worker.pipeline.making.pacing import Pacer

MINUTE_S = 60.0


@pytest.fixture
def virtual_pacer(monkeypatch: pytest.MonkeyPatch):
    """A factory of pacers on a virtual clock; returns ``(pacer, now)``."""
    now = [1_000_000.0]
    monkeypatch.setattr(limits.storage.memory, "time", types.SimpleNamespace(time=lambda: now[0]))

    def sleep(seconds: float) -> None:
        now[0] += seconds

    def make(**limits_per_minute: int) -> tuple[Pacer, list[float]]:
        return Pacer(key="provider", clock=lambda: now[0], sleep=sleep, **limits_per_minute), now

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
