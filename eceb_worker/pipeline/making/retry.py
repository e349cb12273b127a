"""The one retry policy of paid calls (``eceb run``): what is sent again,
how often and after how long.

A call failing with a transient :class:`~eceb_worker.errors.ProviderError`
(HTTP 408, 409, 429, 5xx, a timeout, a connection lost) is sent again up to
:data:`MAX_ATTEMPTS` attempts in all; the wait before the next attempt is the
provider's ``Retry-After`` when it gave one (capped at :data:`WAIT_MAX_S`),
else an exponential back-off with jitter from :data:`WAIT_FIRST_S` to
:data:`WAIT_MAX_S`. A final or fatal error is never retried. Every attempt
is journaled before it is sent (:mod:`eceb_worker.io.run_journal`); one that
may have been billed counts as an auxiliary cost of its group (ECEB-0.1 §8).
The back-off itself is tenacity's.
"""

from __future__ import annotations

from typing import Final

import tenacity

from eceb_worker.errors import ProviderError

__all__ = ["MAX_ATTEMPTS", "WAIT_FIRST_S", "WAIT_MAX_S", "is_transient", "retrying"]

MAX_ATTEMPTS: Final = 5
"""Attempts of one call in one run, the first included."""
WAIT_FIRST_S: Final = 1.0
"""The first back-off wait, in seconds (doubling, with jitter)."""
WAIT_MAX_S: Final = 60.0
"""The longest wait between two attempts, in seconds."""


def is_transient(error: BaseException) -> bool:
    """True for a failure another attempt may cure (see the module)."""
    return isinstance(error, ProviderError) and error.transient and not error.fatal


class _ProviderWait(tenacity.wait.wait_base):
    """The provider's ``Retry-After`` when given, else exponential back-off with jitter."""

    def __init__(self, first_s: float, max_s: float) -> None:
        self._backoff = tenacity.wait_random_exponential(multiplier=first_s, max=max_s)
        self._max_s = max_s

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        outcome = retry_state.outcome
        error = outcome.exception() if outcome is not None else None
        if isinstance(error, ProviderError) and error.retry_after_s is not None:
            return min(max(error.retry_after_s, 0.0), self._max_s)
        return float(self._backoff(retry_state))


def retrying(
    *, max_attempts: int = MAX_ATTEMPTS, first_s: float = WAIT_FIRST_S, max_s: float = WAIT_MAX_S
) -> tenacity.Retrying:
    """A tenacity ``Retrying`` applying the policy: iterate it and run one
    attempt in each ``with attempt:`` block; the last error is raised as it is."""
    return tenacity.Retrying(
        retry=tenacity.retry_if_exception(is_transient),
        stop=tenacity.stop_after_attempt(max_attempts),
        wait=_ProviderWait(first_s, max_s),
        reraise=True,
    )
