"""A worker's Prometheus metrics, served at ``http://ADDRESS:PORT/metrics``
when ``ECEB_METRICS_PORT`` is set (``eceb-dist worker --metrics-port``).

The worker runs its tasks in forked pool processes (prefork): each counts in
prometheus_client's multiprocess mode, in files under a fresh directory the
worker's parent process makes when it starts (``PROMETHEUS_MULTIPROC_DIR``,
under the temporary directory, removed when it stops); the parent serves the
sum over every child, children that were replaced included (counts never go
down while the worker runs).

Metrics (names as exposed):

- ``eceb_shards_done_total{kind}``: shards answered, by stage (``rehash``,
  ``evaluate``); ``eceb_shards_failed_total{kind}``: shards that failed after
  their retries.
- ``eceb_shard_duration_seconds{kind}``: a histogram of the time each shard
  answered in (done or failed).
- ``eceb_bytes_hashed_total``: corpus bytes read and hashed by re-hash shards.
- ``eceb_s3_requests_total{operation}``: S3 requests sent, every attempt
  (``GetObject``, ``HeadObject``, ``PutObject``, ``ListObjectsV2``, ...).
- ``eceb_s3_retries_total{kind}``: what S3 storage tried again (``request``:
  botocore sent a request again; ``resume``: a body resumed after its
  connection broke; ``reread``: an object read again whole after a checksum
  mismatch).
- ``eceb_s3_throttles_total``: answers asking to slow down (``SlowDown``, ...).
- ``eceb_task_retries_total{task}``: tasks run again by the retry policy
  (:mod:`eceb_worker.cluster.retry`) after a passing storage failure.

S3 requests are seen through the storage observer of
:mod:`eceb_worker.io.observers` (the I/O layer knows no metrics library);
the rest is counted by the tasks (:mod:`eceb_worker.cluster.tasks`).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from typing import Any, Final

from eceb_worker.io.observers import RetryKind, observe_storage
from eceb_worker.settings import read_setting

__all__ = ["connect_metrics", "shard_answered", "task_retried"]

DURATION_BUCKETS_S: Final = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)
"""Upper bounds of the shard duration histogram's buckets, in seconds."""
METRICS_DIRECTORY_PREFIX: Final = "eceb-metrics-"
"""How the directory of a worker's multiprocess counts is named (under the temporary directory)."""

_logger = logging.getLogger("eceb.cluster.metrics")


class _Metrics:
    """The counters of a process (prometheus_client's multiprocess mode when
    the worker's parent set its directory); the storage observer of its S3
    clients."""

    def __init__(self) -> None:
        from prometheus_client import Counter, Histogram

        self.shards_done = Counter("eceb_shards_done", "Shards answered, by stage.", ["kind"])
        self.shards_failed = Counter("eceb_shards_failed", "Shards failed after their retries, by stage.", ["kind"])
        self.shard_seconds = Histogram(
            "eceb_shard_duration_seconds", "Time a shard took to answer.", ["kind"], buckets=DURATION_BUCKETS_S
        )
        self.bytes_hashed = Counter("eceb_bytes_hashed", "Corpus bytes read and hashed.")
        self.s3_requests = Counter("eceb_s3_requests", "S3 requests sent (every attempt), by operation.", ["operation"])
        self.s3_retries = Counter("eceb_s3_retries", "What S3 storage tried again, by kind.", ["kind"])
        self.s3_throttles = Counter("eceb_s3_throttles", "S3 answers asking to slow down.")
        self.task_retries = Counter("eceb_task_retries", "Tasks run again after a storage failure.", ["task"])

    def request(self, operation: str) -> None:
        """One S3 request sent."""
        self.s3_requests.labels(operation).inc()

    def retried(self, kind: RetryKind) -> None:
        """S3 storage tried something again."""
        self.s3_retries.labels(kind.value).inc()

    def throttled(self) -> None:
        """A throttling answer."""
        self.s3_throttles.inc()


_state: dict[str, Any] = {}
"""This process's metrics (``"metrics"``: a :class:`_Metrics`, or None when
metrics are off) and, in a worker's parent, what it serves (``"server"``,
``"directory"``)."""


def _metrics() -> _Metrics | None:
    """The metrics of this process, made (and observing S3) on first use; None when metrics are off."""
    if "metrics" not in _state:
        metrics = _Metrics() if read_setting("metrics_port") is not None else None
        _state["metrics"] = metrics
        if metrics is not None:
            observe_storage(metrics)
    found: _Metrics | None = _state["metrics"]
    return found


def shard_answered(kind: str, *, failed: bool, bytes_hashed: int, seconds: float) -> None:
    """Count a shard of stage ``kind`` that answered (``failed``: after its
    retries) in ``seconds``, having hashed ``bytes_hashed`` bytes."""
    metrics = _metrics()
    if metrics is None:
        return
    (metrics.shards_failed if failed else metrics.shards_done).labels(kind).inc()
    metrics.shard_seconds.labels(kind).observe(seconds)
    if bytes_hashed:
        metrics.bytes_hashed.inc(bytes_hashed)


def task_retried(task: str) -> None:
    """Count task ``task`` (its name) run again by the retry policy."""
    metrics = _metrics()
    if metrics is not None:
        metrics.task_retries.labels(task).inc()


def _serve(**_: Any) -> None:
    """Celery's ``celeryd_after_setup``, in the worker's parent before its
    pool starts: make the counts' directory (the children inherit it) and
    serve their sum. A port that cannot be listened on stops the worker."""
    port = read_setting("metrics_port")
    if port is None or "server" in _state:
        return
    address: str = read_setting("metrics_address")
    directory = tempfile.mkdtemp(prefix=METRICS_DIRECTORY_PREFIX)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory  # before prometheus_client is imported, and before the fork
    from prometheus_client import CollectorRegistry, start_http_server
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    try:
        server, _thread = start_http_server(port, addr=address, registry=registry)
    except OSError as exc:
        shutil.rmtree(directory, ignore_errors=True)
        _logger.critical("cannot serve metrics on %s port %d: %s", address, port, exc.strerror or exc)
        raise SystemExit(1) from None
    _state.update(server=server, directory=directory)
    _logger.info("serving metrics on http://%s:%d/metrics", address, port)


def _start_process(**_: Any) -> None:
    """Celery's ``worker_process_init``, in each process that runs tasks: its
    counters, observing S3 before its first task sends a request."""
    _metrics()


def _stop(**_: Any) -> None:
    """Celery's ``worker_shutdown``, in the worker's parent: stop serving and remove the counts."""
    server = _state.pop("server", None)
    if server is not None:
        server.shutdown()
        server.server_close()
    directory = _state.pop("directory", None)
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


def connect_metrics() -> None:
    """Hook the metrics server into a worker's start and stop (once per process)."""
    from celery import signals

    signals.celeryd_after_setup.connect(_serve, weak=False, dispatch_uid="eceb-metrics-serve")
    signals.worker_process_init.connect(_start_process, weak=False, dispatch_uid="eceb-metrics-process")
    signals.worker_shutdown.connect(_stop, weak=False, dispatch_uid="eceb-metrics-stop")
