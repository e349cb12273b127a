"""A shard executor that runs re-hash shards on Celery workers.

One ``eceb.rehash_shard`` task is sent per shard, its message holding the
shard's paths and expected digests (never corpus bytes). Workers answer with
a :class:`~eceb_worker.engine.verification.DigestCheck` (a byte count and the
failures); this process turns each answer into the shard's findings with
:func:`~eceb_worker.engine.verification.shard_verification`, exactly as the
embedded executor does, so the report is the same bytes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, Final
from urllib.parse import unquote, urlsplit

import msgspec
from celery import Celery, states
from celery.backends.asynchronous import E_RETRY_LIMIT_EXCEEDED
from celery.exceptions import TimeoutError as CeleryTimeout
from celery.result import ResultSet
from kombu.exceptions import OperationalError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeout

from eceb_worker.brokers import REDACTED, redact_url
from eceb_worker.brokers.celery_app import REHASH_TASK, RehashMessage, make_app
from eceb_worker.engine.artifacts import Artifact
from eceb_worker.engine.plan import RehashShard
from eceb_worker.engine.verification import DigestCheck, HashOutcome, ShardVerification, shard_verification
from eceb_worker.errors import StorageError
from eceb_worker.storage import StorageSpec

__all__ = ["CeleryExecutor"]

_UNREACHABLE = (OperationalError, RedisConnectionError, RedisTimeout, OSError)
_FIRST_POLL_S: Final = 0.01
_CONNECT_RETRIES: Final = 2
"""Attempts to reach the broker and result backend before any shard is sent,
so that an unreachable cluster fails in about a second (the result consumer
alone would retry for some 20 s)."""
_BACKEND_LOST: Final = "reconnection attempts exhausted"


def _shard_name(index: int, shard: RehashShard) -> str:
    last = f"..{shard.end - 1}" if shard.end - shard.start > 1 else ""
    return f"shard {index} (artifacts {shard.start}{last})"


class CeleryExecutor:
    """Runs re-hash shards as Celery tasks (see :class:`~eceb_worker.executors.ShardExecutor`).

    ``app`` is a Celery application from
    :func:`~eceb_worker.brokers.celery_app.make_app` (by default, one
    configured from the environment). ``timeout`` bounds, in seconds, the wait
    for all shards of one call (None: wait as long as it takes; with no
    worker running, that is forever).

    Raises ``StorageError`` when the broker cannot be reached, when a shard
    fails after its retries (naming the shard), or when the timeout passes.
    Shards still queued are then revoked.
    """

    def __init__(self, app: Celery | None = None, *, timeout: float | None = None) -> None:
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.app = app if app is not None else make_app()
        self.timeout = timeout

    @property
    def broker(self) -> str:
        """The broker URL, redacted (no credential)."""
        return redact_url(str(self.app.conf.broker_url))

    @property
    def backend(self) -> str:
        """The result backend URL, redacted (no credential)."""
        return redact_url(str(self.app.conf.result_backend))

    def check_connection(self) -> None:
        """Reach the broker and the result backend once; raises ``StorageError`` if either fails."""
        try:
            with self.app.connection_for_write() as connection:
                connection.ensure_connection(
                    max_retries=_CONNECT_RETRIES, interval_start=0.2, interval_step=0.3, interval_max=0.5
                )
        except _UNREACHABLE as exc:
            raise StorageError(f"cannot reach the broker {self.broker}: {self._scrub(exc)}") from None
        client = getattr(self.app.backend, "client", None)  # a Redis result backend's client
        if client is not None:
            try:
                client.ping()
            except _UNREACHABLE as exc:
                raise StorageError(f"cannot reach the result backend {self.backend}: {self._scrub(exc)}") from None

    def rehash(
        self,
        spec: StorageSpec,
        artifacts: Sequence[Artifact],
        shards: Sequence[RehashShard],
        on_result: Callable[[ShardVerification], object] | None = None,
    ) -> list[ShardVerification]:
        """Verify every shard on the workers; see :class:`ShardExecutor`."""
        if not shards:
            return []
        self.check_connection()
        handles = self._send(spec, artifacts, shards)
        position = {handle.id: index for index, handle in enumerate(handles)}
        results: list[ShardVerification | None] = [None] * len(shards)
        finished: set[str] = set()
        try:
            # ``interval``: the first look at the backend, for answers that
            # came before the subscription, naps this long (0.5 s by default).
            answers = ResultSet(handles, app=self.app).iter_native(timeout=self.timeout, interval=_FIRST_POLL_S)
            for task_id, meta in answers:
                if task_id in finished:  # delivered twice: the first answer stands
                    continue
                finished.add(task_id)
                index = position[task_id]
                result = results[index] = self._result(index, shards[index], artifacts, meta)
                if on_result is not None:
                    on_result(result)
        except CeleryTimeout:
            missing = sum(done is None for done in results)
            raise StorageError(
                f"{missing} of {len(shards)} shards not finished within {self.timeout:g} s (broker {self.broker})"
            ) from None
        except _UNREACHABLE as exc:
            raise StorageError(f"lost the result backend: {self._scrub(exc)}") from None
        except RuntimeError as exc:
            if str(exc) != E_RETRY_LIMIT_EXCEEDED:
                raise
            raise StorageError(f"lost the result backend {self.backend}: {_BACKEND_LOST}") from None
        finally:
            pending = [handle.id for handle in handles if handle.id not in finished]
            if pending:
                with contextlib.suppress(Exception):  # best effort: the error being raised matters more
                    self.app.control.revoke(pending)
        done = [result for result in results if result is not None]
        if len(done) != len(shards):
            raise StorageError(f"{len(shards) - len(done)} of {len(shards)} shards were never answered")
        return done

    def hash_paths(
        self,
        spec: StorageSpec,
        batches: Sequence[Sequence[str]],
        on_result: Callable[[list[HashOutcome]], object] | None = None,
    ) -> list[list[HashOutcome]]:
        """Not available on Celery yet: register a corpus with the embedded executor."""
        raise NotImplementedError("registering a corpus on Celery workers is not supported yet")

    def _send(self, spec: StorageSpec, artifacts: Sequence[Artifact], shards: Sequence[RehashShard]) -> list[Any]:
        """Send one task per shard; returns their ``AsyncResult`` handles, in shard order."""
        handles: list[Any] = []
        try:
            with self.app.producer_or_acquire() as producer:
                for shard in shards:
                    part = artifacts[shard.start : shard.end]
                    message = RehashMessage(
                        spec=spec,
                        start=shard.start,
                        paths=[a.path for a in part],
                        digests=[a.source_digest for a in part],
                    )
                    handles.append(
                        self.app.send_task(REHASH_TASK, args=(msgspec.to_builtins(message),), producer=producer)
                    )
        except (*_UNREACHABLE, RuntimeError) as exc:
            if isinstance(exc, RuntimeError) and str(exc) != E_RETRY_LIMIT_EXCEEDED:
                raise
            if handles:
                with contextlib.suppress(Exception):
                    self.app.control.revoke([handle.id for handle in handles])
            raise StorageError(f"cannot send shards to the broker {self.broker}: {self._scrub(exc)}") from None
        return handles

    def _result(
        self, index: int, shard: RehashShard, artifacts: Sequence[Artifact], meta: dict[str, Any]
    ) -> ShardVerification:
        """The shard's verification from its task's final state."""
        if meta.get("status") != states.SUCCESS:
            error = meta.get("result")
            reason = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error)
            raise StorageError(f"{_shard_name(index, shard)} failed on its worker: {self._scrub_text(reason)}")
        part = artifacts[shard.start : shard.end]
        try:
            checked = msgspec.convert(meta.get("result"), DigestCheck)
        except msgspec.ValidationError as exc:
            raise StorageError(f"{_shard_name(index, shard)}: malformed answer from its worker ({exc})") from None
        if any(not 0 <= position < len(part) for position, _ in checked.failures):
            raise StorageError(f"{_shard_name(index, shard)}: its worker answered for artifacts outside the shard")
        return shard_verification(part, checked, start=shard.start)

    def _scrub(self, exc: BaseException) -> str:
        return self._scrub_text(f"{type(exc).__name__}: {exc}")

    def _scrub_text(self, text: str) -> str:
        """``text`` without any credential of the broker or backend URLs."""
        for url in (self.app.conf.broker_url, self.app.conf.result_backend):
            if not isinstance(url, str):
                continue
            for part in url.split(";"):
                text = text.replace(part, redact_url(part))
                try:
                    split = urlsplit(part)
                    secrets = (split.password,) if split.password is not None else (split.username,)
                except ValueError:
                    continue
                for secret in secrets:
                    for form in {secret, unquote(secret)} if secret else ():
                        text = text.replace(form, REDACTED)
        return text
