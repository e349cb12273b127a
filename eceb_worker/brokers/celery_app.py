"""The Celery application: configuration, the ``eceb.rehash_shard`` task and
the distributed evaluation job's tasks (:mod:`eceb_worker.brokers.jobs`).

Start workers with::

    ECEB_BROKER_URL=redis://127.0.0.1:6379/0 celery -A eceb_worker.brokers.celery_app worker

A task is a thin wrapper over an engine function. Its message is JSON (pickle
is refused, by workers and result consumers alike) and carries references
only: where the corpus is (:class:`~eceb_worker.storage.StorageSpec`), the
shard's paths and expected digests, and its position in the registry.

Configuration, from :func:`make_app`'s arguments or else the environment:

=============================  ==========================================================
``ECEB_BROKER_URL``            broker URL (default ``redis://127.0.0.1:6379/0``)
``ECEB_RESULT_BACKEND``        result backend URL (default: the broker URL)
``ECEB_VISIBILITY_TIMEOUT``    seconds a delivered, unacknowledged task may run before
                               the broker hands it to another worker (default 3600);
                               keep it above the longest shard, or shards run twice
``ECEB_MAX_TASKS_PER_CHILD``   tasks a worker process runs before it is replaced
                               (default 1000)
``ECEB_TASK_MAX_RETRIES``      retries of a shard whose storage failed as a whole
                               (default 3, with exponential back-off up to 60 s)
``ECEB_MAX_DELIVERIES``        starts of one attempt of a task whose worker process
                               died while running it, before it fails instead of
                               running again (default 3; see ``brokers.deliveries``)
``ECEB_REDIS_CA_CERTS``        PEM file of the certificate authorities that sign a TLS
                               Redis server's certificate (``rediss://`` URLs), trusted
                               besides the system's (default: the system's only)
=============================  ==========================================================

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
(``task_reject_on_worker_lost``). Re-hashing a shard twice is harmless, and
a job counts each shard once (:mod:`eceb_worker.brokers.jobs`). A task
running while the broker connection is lost (a Redis restart) runs to its
end; its message is delivered again after the visibility timeout.

Worker processes are forked (``--pool prefork``) from a parent that never
hashes: BLAKE3's thread pool, used for large files, does not survive a fork,
and the parent here only imports the code. Each child opens its own storage
adapter on its first task.
"""

from __future__ import annotations

import os
import ssl
import sys
from collections.abc import Sequence
from typing import Annotated, Any, Final
from urllib.parse import parse_qsl, urlsplit

import msgspec
from celery import Celery

from eceb_worker.brokers.deliveries import DEFAULT_MAX_DELIVERIES, MAX_DELIVERIES_SETTING, check_delivery
from eceb_worker.engine.verification import check_digests
from eceb_worker.errors import ShardLostError, StorageError
from eceb_worker.storage import StorageSpec, shared_storage

__all__ = [
    "DEFAULT_BROKER_URL",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MAX_TASKS_PER_CHILD",
    "DEFAULT_VISIBILITY_TIMEOUT_S",
    "QUEUE",
    "REDIS_CA_CERTS_ENV",
    "REHASH_TASK",
    "RESULT_EXPIRES_S",
    "RehashMessage",
    "app",
    "make_app",
    "redis_tls_options",
    "rehash_shard",
]

REHASH_TASK: Final = "eceb.rehash_shard"
QUEUE: Final = "eceb"
"""The queue eceb's tasks are sent to and its workers consume."""
DEFAULT_BROKER_URL: Final = "redis://127.0.0.1:6379/0"
DEFAULT_VISIBILITY_TIMEOUT_S: Final = 3600
DEFAULT_MAX_TASKS_PER_CHILD: Final = 1000
DEFAULT_MAX_RETRIES: Final = 3
RESULT_EXPIRES_S: Final = 24 * 3600
"""Results are kept one day: long enough for any caller to collect them,
short enough that an abandoned run does not fill the backend."""
RETRY_BACKOFF_MAX_S: Final = 60
REDIS_CA_CERTS_ENV: Final = "ECEB_REDIS_CA_CERTS"
"""The environment variable naming the CA bundle for ``rediss://`` URLs."""


class RehashMessage(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What an ``eceb.rehash_shard`` task is sent (as ``msgspec.to_builtins``).

    Fields:
        spec: where the corpus is.
        start: registry index of the shard's first artifact (for logs and
            error messages; the answer is positional).
        paths: the shard's artifact paths, in registry order.
        digests: their registered BLAKE3 digests (same positions).
    """

    spec: StorageSpec
    start: Annotated[int, msgspec.Meta(ge=0)]
    paths: list[str]
    digests: list[str]

    def __post_init__(self) -> None:
        if len(self.paths) != len(self.digests):
            raise ValueError(f"{len(self.paths)} paths but {len(self.digests)} digests")


def worker_command(*, concurrency: int | None = None, loglevel: str = "INFO", extra: Sequence[str] = ()) -> list[str]:
    """The command line of one eceb worker process (what ``eceb-dist worker`` runs):
    ``python -m celery -A eceb_worker.brokers.celery_app worker --pool prefork
    --queues eceb --loglevel LEVEL --without-gossip --without-mingle``, then
    ``--concurrency N`` when given, then ``extra``."""
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "eceb_worker.brokers.celery_app",
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


def rehash_shard(message: dict[str, Any]) -> Any:
    """Body of the ``eceb.rehash_shard`` task: re-hash a shard's paths against
    their expected digests (:func:`~eceb_worker.engine.verification.check_digests`).

    Returns the :class:`~eceb_worker.engine.verification.DigestCheck` as JSON
    builtins. Raises ``msgspec.ValidationError`` for a malformed message and
    ``StorageError`` when the storage fails as a whole (retried).
    """
    shard = msgspec.convert(message, RehashMessage)
    storage = shared_storage(shard.spec)
    checked = check_digests(storage, shard.paths, shard.digests, threads=storage.concurrency)
    return msgspec.to_builtins(checked)


def _rehash_shard_task(task: Any, message: dict[str, Any]) -> Any:
    """The ``eceb.rehash_shard`` task: :func:`rehash_shard`, unless this
    attempt was delivered too often (:func:`check_delivery`)."""
    check_delivery(task)
    return rehash_shard(message)


def _setting(value: str | None, name: str, default: str) -> str:
    if value:
        return value
    return os.environ.get(name) or default


def _positive(value: int | None, name: str, default: int) -> int:
    if value is None:
        text = os.environ.get(name, "").strip()
        if not text:
            return default
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{name} must be an integer, got {text!r}") from None
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return value


_VERIFYING_CERT_REQS: Final = frozenset({"required", "CERT_REQUIRED"})
_FALSE: Final = frozenset({"false", "0", "no", "off", ""})


def redis_tls_options(url: str, what: str, ca_certs: str | None) -> dict[str, Any] | None:
    """The TLS settings (``broker_use_ssl`` / ``redis_backend_use_ssl``) for
    ``url``: None unless it is a ``rediss://`` URL (or a ``;``-separated list
    holding one), else certificate verification on, with the CA bundle
    ``ca_certs`` when given.

    Raises ValueError, naming ``what`` but never repeating the URL (it holds
    the password), when the URL's query turns verification off or
    ``ca_certs`` is not a file.
    """
    parts = url.split(";")
    try:
        splits = [urlsplit(part) for part in parts]
    except ValueError:
        return None  # Celery reports the malformed URL (redacted) when it connects
    if not any(split.scheme == "rediss" for split in splits):
        return None
    for split in splits:
        for name, value in parse_qsl(split.query, keep_blank_values=True):
            if name == "ssl_cert_reqs" and value not in _VERIFYING_CERT_REQS:
                raise ValueError(
                    f"{what}: ssl_cert_reqs={value} would not verify the Redis server's certificate; "
                    f"use ssl_cert_reqs=required (or leave it out) and give the CA bundle in {REDIS_CA_CERTS_ENV}"
                )
            if name == "ssl_check_hostname" and value.strip().lower() in _FALSE:
                raise ValueError(
                    f"{what}: ssl_check_hostname={value} would accept a certificate issued to another host; "
                    "leave it out"
                )
    options: dict[str, Any] = {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    if ca_certs:
        if not os.path.isfile(ca_certs):
            raise ValueError(f"{REDIS_CA_CERTS_ENV}: no such file: {ca_certs}")
        options["ssl_ca_certs"] = ca_certs
    return options


def make_app(
    broker_url: str | None = None,
    backend_url: str | None = None,
    *,
    visibility_timeout: int | None = None,
    max_tasks_per_child: int | None = None,
    max_retries: int | None = None,
    redis_ca_certs: str | None = None,
    max_deliveries: int | None = None,
) -> Celery:
    """A configured Celery application with eceb's tasks registered.

    Each argument left out comes from the environment (see the module's
    documentation), then from the defaults; the backend defaults to the
    broker. ``redis_ca_certs`` (``ECEB_REDIS_CA_CERTS``) is the CA bundle
    that verifies a ``rediss://`` broker's and backend's certificate
    (:func:`redis_tls_options`). Raises ValueError for a setting that is not
    a positive integer, a CA bundle that is not a file, or a ``rediss://`` URL
    that turns certificate verification off.
    """
    broker = _setting(broker_url, "ECEB_BROKER_URL", DEFAULT_BROKER_URL)
    backend = _setting(backend_url, "ECEB_RESULT_BACKEND", broker)
    ca_certs = redis_ca_certs or os.environ.get(REDIS_CA_CERTS_ENV) or None
    tls: dict[str, Any] = {}
    broker_tls = redis_tls_options(broker, "the broker URL", ca_certs)
    if broker_tls is not None:
        tls["broker_use_ssl"] = broker_tls
    backend_tls = redis_tls_options(backend, "the result backend URL", ca_certs)
    if backend_tls is not None:
        tls["redis_backend_use_ssl"] = backend_tls
    visibility = _positive(visibility_timeout, "ECEB_VISIBILITY_TIMEOUT", DEFAULT_VISIBILITY_TIMEOUT_S)
    per_child = _positive(max_tasks_per_child, "ECEB_MAX_TASKS_PER_CHILD", DEFAULT_MAX_TASKS_PER_CHILD)
    if max_retries is None:
        text = os.environ.get("ECEB_TASK_MAX_RETRIES", "").strip()
        try:
            max_retries = int(text) if text else DEFAULT_MAX_RETRIES
        except ValueError:
            raise ValueError(f"ECEB_TASK_MAX_RETRIES must be an integer, got {text!r}") from None
    if max_retries < 0:
        raise ValueError(f"ECEB_TASK_MAX_RETRIES must not be negative, got {max_retries}")

    application = Celery("eceb", broker=broker, backend=backend, set_as_current=False)
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
        # A shard running while the broker connection drops runs to its end;
        # its message, not acknowledged, is delivered again after the
        # visibility timeout, and running a shard twice changes nothing.
        # (Cancelling it instead would fail the chord waiting for it.)
        worker_cancel_long_running_tasks_on_connection_loss=False,
        broker_transport_options={"visibility_timeout": visibility},
        broker_connection_retry_on_startup=True,
        result_expires=RESULT_EXPIRES_S,
        worker_max_tasks_per_child=per_child,
        task_default_queue=QUEUE,
        task_ignore_result=False,
        enable_utc=True,
        timezone="UTC",
        # Redis over TLS (rediss://): the server's certificate is verified.
        **tls,
    )
    application.conf[MAX_DELIVERIES_SETTING] = _positive(max_deliveries, "ECEB_MAX_DELIVERIES", DEFAULT_MAX_DELIVERIES)
    application.task(
        name=REHASH_TASK,
        bind=True,
        shared=False,
        lazy=False,
        autoretry_for=(StorageError,),
        dont_autoretry_for=(ShardLostError,),
        max_retries=max_retries,
        retry_backoff=True,
        retry_backoff_max=RETRY_BACKOFF_MAX_S,
        retry_jitter=True,
    )(_rehash_shard_task)
    from eceb_worker.brokers.jobs import register_job_tasks

    register_job_tasks(application, max_retries=max_retries)
    return application


app: Final = make_app()
"""The application ``celery -A eceb_worker.brokers.celery_app worker`` runs,
configured from the environment."""
