"""Celery's Redis result backend, with every command retried through a
Redis outage (:meth:`~eceb_worker.cluster.retry.RetryPolicy.redis_retry`).

Celery retries storing a task's result, but not the other commands a job
sends (its state, its steps' leases and answers, Celery's own scripts): a
shard finishing while Redis restarts would otherwise lose its answer. Here
the result backend's client itself retries each command, script and pipeline for
``ECEB_REDIS_OUTAGE_S`` seconds; Celery's own retries of a result are left
out (they would multiply that bound).
"""

from __future__ import annotations

from typing import Any, Final

from celery.backends.redis import RedisBackend

from eceb_worker.cluster.retry import RetryPolicy

__all__ = ["POLICY_SETTING", "RetryingRedisBackend", "policy_of"]

POLICY_SETTING: Final = "eceb_retry_policy"
"""The Celery configuration key holding the application's
:class:`~eceb_worker.cluster.retry.RetryPolicy` (set by ``make_app``)."""


def policy_of(app: Any) -> RetryPolicy:
    """The retry policy of Celery application ``app`` (the default one when it has none)."""
    policy = app.conf.get(POLICY_SETTING)
    return policy if isinstance(policy, RetryPolicy) else RetryPolicy(max_retries=0)


class RetryingRedisBackend(RedisBackend):  # type: ignore[misc]
    """The Redis result backend of the application's ``result_backend``
    URL (``redis://`` or ``rediss://``), its client's connections retrying
    as the application's retry policy says."""

    def __init__(self, *args: Any, app: Any, url: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, app=app, url=url or app.conf.result_backend, **kwargs)
        self.connparams["retry"] = policy_of(app).redis_retry()
