"""A bound on redeliveries of one task (late acknowledgement and
redelivery when a worker process is lost, but not for ever).

A task is acknowledged after it ran and delivered again when the worker
process running it dies, so a shard that kills its process every time (say,
one that runs it out of memory) would be delivered for ever. Each start of a
task's attempt is counted in the result backend's Redis, under
``eceb:deliveries:<task id>:<retry number>`` (kept :data:`COUNT_TTL_S`); the
start after the :data:`DEFAULT_MAX_DELIVERIES`-th (setting
``ECEB_MAX_DELIVERIES``) ends the task with :class:`ShardLostError` instead
of running it again.
"""

from __future__ import annotations

from typing import Any, Final

from eceb_worker.cluster.backend import policy_of
from eceb_worker.errors import ShardLostError

__all__ = ["MAX_DELIVERIES_SETTING", "check_delivery"]

DEFAULT_MAX_DELIVERIES: Final = 3
MAX_DELIVERIES_SETTING: Final = "eceb_max_deliveries"
"""The Celery configuration key holding the bound (set by ``make_app``)."""
COUNT_TTL_S: Final = 24 * 3600


def check_delivery(task: Any) -> None:
    """Count this start of ``task``'s current attempt (a bound Celery task).

    Raises :class:`ShardLostError` when the attempt has already started the
    configured number of times (its worker process died each time), and
    ``StorageError`` when the result backend stays unreachable beyond the
    retry policy's bound. (Sent again through a Redis outage, a start may
    count twice.)
    """
    limit = int(task.app.conf.get(MAX_DELIVERIES_SETTING) or DEFAULT_MAX_DELIVERIES)
    key = f"eceb:deliveries:{task.request.id}:{task.request.retries}"
    pipe = task.app.backend.client.pipeline()
    pipe.incr(key)
    pipe.expire(key, COUNT_TTL_S)
    with policy_of(task.app).reaching("the result backend (delivery count)"):
        started, _ = pipe.execute()
    if int(started) > limit:
        raise ShardLostError(
            f"delivered {int(started)} times and the worker process running it was lost each time "
            f"(killed, or out of memory?); not run again (ECEB_MAX_DELIVERIES={limit})"
        )
