"""The Celery application of the cluster: its configuration and its tasks
(:mod:`eceb_worker.cluster.tasks`).

Start workers with ``eceb-dist worker``, or::

    ECEB_BROKER_URL=redis://127.0.0.1:6379/0 celery -A eceb_worker.cluster.app worker -Q eceb

A task is a thin wrapper over a pipeline step (:mod:`eceb_worker.pipeline`).
Its message is JSON (pickle is refused, by workers and result consumers
alike) and carries references only (:mod:`eceb_worker.pipeline.messages`).
Its settings come from :func:`make_app`'s arguments or else the environment
(:mod:`eceb_worker.settings`: ``ECEB_BROKER_URL``, ``ECEB_RESULT_BACKEND``,
``ECEB_VISIBILITY_TIMEOUT``, ``ECEB_MAX_TASKS_PER_CHILD``,
``ECEB_TASK_MAX_RETRIES``, ``ECEB_MAX_DELIVERIES``, ``ECEB_REDIS_CA_CERTS``,
``ECEB_REDIS_OUTAGE_S``). The broker and the result backend are Redis
(``redis://`` or ``rediss://`` URLs, :func:`check_redis_url`).

Redis over TLS: give the broker and the result backend as ``rediss://`` URLs,
with the password in the URL (``rediss://:PASSWORD@host:6380/0``) and the CA
bundle in ``ECEB_REDIS_CA_CERTS`` (the URL's own ``?ssl_ca_certs=/path`` query
parameter works too). The server's certificate is always verified, and its
name must match the URL's host: kombu's default for a ``rediss://`` broker URL
without TLS settings would skip that check, so :func:`make_app` sets
``broker_use_ssl`` and ``redis_backend_use_ssl`` itself, and refuses a URL
whose query turns verification off (``ssl_cert_reqs`` other than
``required``, ``ssl_check_hostname=false``).

Delivery is at least once: a task is acknowledged only after it ran
(``task_acks_late``) and is redelivered when its worker process dies
(``task_reject_on_worker_lost``), a bounded number of times
(:mod:`eceb_worker.cluster.deliveries`). Running a shard twice is harmless,
and a job counts each shard once. A task running while the broker
connection is lost (a Redis restart) runs to its end; its message is
delivered again after the visibility timeout (a worker looks for such
messages every :func:`restore_interval_s` seconds).

Redis restarting (keeping its data): every command to the result backend
(:mod:`eceb_worker.cluster.backend`), every message published
(``task_publish_retry_policy``) and the workers' broker connection are tried
again through an outage of up to ``ECEB_REDIS_OUTAGE_S`` seconds
(:class:`~eceb_worker.cluster.retry.RetryPolicy`); a shard's answer and its
job's state are each written once it is back.

Worker processes are forked (``--pool prefork``) from a parent that never
hashes: BLAKE3's thread pool, used for large files, does not survive a fork,
and the parent here only imports the code. Each child opens its own storage
adapter on its first task.

Observing a worker: its log lines about a job name the job and the shard,
as text or JSON (``ECEB_LOG_FORMAT``, :mod:`eceb_worker.cluster.logs`); with
``ECEB_METRICS_PORT`` its parent serves Prometheus metrics summed over its
pool's children (:mod:`eceb_worker.cluster.metrics`). Both are hooked into
Celery's signals when this module is imported.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from typing import Any, Final

from celery import Celery

from eceb_worker.cluster.backend import POLICY_SETTING, RetryingRedisBackend, policy_of
from eceb_worker.cluster.deliveries import MAX_DELIVERIES_SETTING
from eceb_worker.cluster.logs import connect_logging
from eceb_worker.cluster.metrics import connect_metrics
from eceb_worker.cluster.redis_urls import check_redis_url, redis_tls_options
from eceb_worker.cluster.retry import RetryPolicy
from eceb_worker.cluster.steps import BOUNDS_SETTING, Bounds, queued_task_ids
from eceb_worker.cluster.tasks import register_tasks
from eceb_worker.cluster.work import sender as step_sender
from eceb_worker.cluster.work import work_of
from eceb_worker.settings import load_settings

__all__ = [
    "QUEUE",
    "REDIS_SOCKET_TIMEOUT_S",
    "check_redis_url",
    "make_app",
    "redis_tls_options",
    "restore_interval_s",
    "worker_app",
    "worker_command",
]

QUEUE: Final = "eceb"
"""The queue eceb's tasks are sent to and its workers consume."""
RESULT_EXPIRES_S: Final = 24 * 3600
"""Results are kept one day: long enough for any caller to collect them,
short enough that an abandoned run does not fill the backend."""
_APP_MODULE: Final = "eceb_worker.cluster.app"


def worker_command(*, concurrency: int | None = None, loglevel: str = "INFO", extra: Sequence[str] = ()) -> list[str]:
    """The command line of one eceb worker process (what ``eceb-dist worker`` runs):
    ``python -m celery -A eceb_worker.cluster.app worker --pool prefork
    --queues eceb --loglevel LEVEL --without-gossip --without-mingle``, then
    ``--concurrency N`` when given, then ``extra``."""
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        _APP_MODULE,
        "worker",
        "--pool",
        "prefork",
        "--queues",
        QUEUE,
        "--loglevel",
        loglevel,
        "--without-gossip",
        "--without-mingle",
    ]
    if concurrency is not None:
        command += ["--concurrency", str(concurrency)]
    return command + list(extra)


REDIS_SOCKET_TIMEOUT_S: Final = 10
"""Seconds a Redis command (broker or result backend) or connection waits
for the server before it counts as lost. Longer than the broker's blocking
reads (kombu's BRPOP waits 1 s)."""


def restore_interval_s(visibility_timeout_s: int) -> int:
    """Seconds between two of a worker's scans for messages delivered but not
    acknowledged within ``visibility_timeout_s`` (which it puts back on the
    queue): half the timeout, at least 1 s and at most 10 s, so that such a
    message comes back at most about 10 s after its timeout ran out."""
    return max(1, min(10, visibility_timeout_s // 2))


def make_app(
    broker_url: str | None = None,
    backend_url: str | None = None,
    *,
    visibility_timeout: int | None = None,
    max_tasks_per_child: int | None = None,
    max_retries: int | None = None,
    redis_ca_certs: str | None = None,
    max_deliveries: int | None = None,
    redis_outage_s: int | None = None,
    bounds: Bounds | None = None,
) -> Celery:
    """A configured Celery application with eceb's tasks registered.

    Each argument left out comes from the environment
    (:func:`~eceb_worker.settings.load_settings`), then from the defaults;
    the backend defaults to the broker. ``redis_ca_certs``
    (``ECEB_REDIS_CA_CERTS``) is the CA bundle that verifies a ``rediss://``
    broker's and backend's certificate (:func:`redis_tls_options`). Raises
    ValueError for a setting that is not a positive integer, a broker or
    backend URL that is not Redis's, a CA bundle that is not a file, or a
    ``rediss://`` URL that turns certificate verification off, and a
    heartbeat not shorter than the lease. ``bounds`` (how soon a lost step
    runs again) defaults to ``ECEB_LEASE_S``, ``ECEB_HEARTBEAT_S``,
    ``ECEB_WATCH_S``, ``ECEB_UNTAKEN_S`` and ``ECEB_MAX_DELIVERIES``.
    """
    settings = load_settings(
        broker_url=broker_url,
        result_backend=backend_url,
        visibility_timeout_s=visibility_timeout,
        max_tasks_per_child=max_tasks_per_child,
        task_max_retries=max_retries,
        redis_ca_certs=redis_ca_certs,
        max_deliveries=max_deliveries,
        redis_outage_s=redis_outage_s,
    )
    broker = settings.broker_url
    backend = settings.result_backend or broker
    check_redis_url(broker, "ECEB_BROKER_URL")
    check_redis_url(backend, "ECEB_RESULT_BACKEND")
    policy = RetryPolicy(max_retries=settings.task_max_retries, outage_s=settings.redis_outage_s)
    tls: dict[str, Any] = {}
    broker_tls = redis_tls_options(broker, "the broker URL", settings.redis_ca_certs)
    if broker_tls is not None:
        tls["broker_use_ssl"] = broker_tls
    backend_tls = redis_tls_options(backend, "the result backend URL", settings.redis_ca_certs)
    if backend_tls is not None:
        tls["redis_backend_use_ssl"] = backend_tls
    visibility = settings.visibility_timeout_s
    per_child = settings.max_tasks_per_child

    application = Celery("eceb", broker=broker, backend=backend, set_as_current=False)
    application.backend_cls = RetryingRedisBackend
    application.conf.update(
        # JSON only: a pickled message would run code while being decoded.
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_accept_content=["json"],
        event_serializer="json",
        # At least once: acknowledged after running, redelivered when the process running it dies.
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        # A shard running while the broker connection drops runs to its end
        # and answers (holding its lease); its message, should its
        # acknowledgement be lost, comes back after the visibility timeout
        # and finds the shard finished.
        worker_cancel_long_running_tasks_on_connection_loss=False,
        # kombu scans for messages past their visibility timeout every
        # unacked_restore_interval s, on every unacked_restore_throttle-th
        # timer (by default 10 and 10: about 100 s whatever the timeout).
        # A server that accepts connections but never answers fails a command
        # after REDIS_SOCKET_TIMEOUT_S (then the outage policy applies)
        # instead of holding it for ever.
        broker_transport_options={
            "socket_timeout": REDIS_SOCKET_TIMEOUT_S,
            "socket_connect_timeout": REDIS_SOCKET_TIMEOUT_S,
            "visibility_timeout": visibility,
            "unacked_restore_interval": restore_interval_s(visibility),
            "unacked_restore_throttle": 1,
        },
        broker_connection_retry_on_startup=True,
        # Through a Redis restart: messages published (a stage's shards, a
        # reduce, a retry) are sent again for ECEB_REDIS_OUTAGE_S; the
        # result backend's client retries each command as long
        # (RetryingRedisBackend), so Celery's own retries of a result,
        # which would multiply that bound, are left out.
        task_publish_retry=True,
        task_publish_retry_policy=policy.publish_retry_policy(),
        result_backend_transport_options={"retry_policy": {"max_retries": 0}},
        redis_socket_timeout=REDIS_SOCKET_TIMEOUT_S,
        redis_socket_connect_timeout=REDIS_SOCKET_TIMEOUT_S,
        result_expires=RESULT_EXPIRES_S,
        worker_max_tasks_per_child=per_child,
        task_default_queue=QUEUE,
        task_ignore_result=False,
        enable_utc=True,
        timezone="UTC",
        # Redis over TLS (rediss://): the server's certificate is verified.
        **tls,
    )
    application.conf[MAX_DELIVERIES_SETTING] = settings.max_deliveries
    application.conf[POLICY_SETTING] = policy
    if bounds is None:
        bounds = Bounds(
            lease_s=settings.lease_s,
            heartbeat_s=settings.heartbeat_s,
            watch_s=settings.watch_s,
            untaken_s=settings.untaken_s,
            republish_limit=settings.max_deliveries,
        )
    if bounds.heartbeat_s >= bounds.lease_s:
        raise ValueError("ECEB_HEARTBEAT_S must be less than ECEB_LEASE_S (a lease is renewed before it lapses)")
    application.conf[BOUNDS_SETTING] = bounds
    register_tasks(application, policy)
    return application


@functools.cache
def worker_app() -> Celery:
    """The application ``celery -A eceb_worker.cluster.app worker`` runs (this
    module's ``app``), configured from the environment: made once, on first
    use (a process that makes its own, ``eceb-dist submit``, makes no other).
    Raises ValueError as :func:`make_app`."""
    return make_app()


def __getattr__(name: str) -> Any:
    """``app``: :func:`worker_app` (what ``celery -A`` looks up)."""
    if name == "app":
        return worker_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


connect_logging()
connect_metrics()


def _start_watch(sender: Any = None, **_: Any) -> None:
    """``worker_ready``: start the worker's watch over the jobs in flight
    (:mod:`eceb_worker.cluster.watch`), in its main process."""
    from eceb_worker.cluster.state import JobStore
    from eceb_worker.cluster.watch import Watcher

    application = getattr(sender, "app", None) or worker_app()
    name = str(getattr(sender, "hostname", "") or "eceb-worker")
    policy = policy_of(application)

    def queued() -> set[str]:
        with application.connection_for_read() as connection:
            return queued_task_ids(connection.default_channel.client, QUEUE)

    watcher = Watcher(work_of(application), JobStore.of(application), name, step_sender(application, policy), queued)
    _WATCHERS.append(watcher)
    watcher.start()


def _stop_watch(**_: Any) -> None:
    """``worker_shutdown``: stop the watch, saying the worker is gone."""
    while _WATCHERS:
        _WATCHERS.pop().stop()


_WATCHERS: Final[list[Any]] = []


def connect_watch() -> None:
    """Hook the watch into Celery's worker signals (once)."""
    from celery.signals import worker_ready, worker_shutdown

    worker_ready.connect(_start_watch, weak=False, dispatch_uid="eceb-watch-start")
    worker_shutdown.connect(_stop_watch, weak=False, dispatch_uid="eceb-watch-stop")


connect_watch()
