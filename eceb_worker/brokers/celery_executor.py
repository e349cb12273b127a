"""A shard executor that runs re-hash shards on Celery workers.

Consecutive shards of the plan are sent together as one ``eceb.rehash_shard``
task of up to ``task_bytes`` of work (:func:`~eceb_worker.engine.plan.group_shards`),
its message holding the paths and expected digests (never corpus bytes).
Workers answer with a :class:`~eceb_worker.engine.verification.DigestCheck`
(a byte count and the failures); this process splits each answer back into
its shards and turns them into the shards' findings with
:func:`~eceb_worker.engine.verification.shard_verification`, exactly as the
embedded executor does, so the results, and the report, are the same bytes.
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
from eceb_worker.engine.plan import DEFAULT_TASK_BYTES, RehashShard, group_shards
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
_ARGSREPR: Final = "(<shard message>)"
"""What Celery logs and shows for a task's arguments, instead of building a
printable copy of its path list for every message sent."""


def _shard_name(first: int, shards: Sequence[RehashShard]) -> str:
    """``shard 3 (artifacts 10..19)``, or ``shards 3..5 (artifacts 10..59)`` for a task of several."""
    start, end = shards[0].start, shards[-1].end
    last = f"..{end - 1}" if end - start > 1 else ""
    named = f"shards {first}..{first + len(shards) - 1}" if len(shards) > 1 else f"shard {first}"
    return f"{named} (artifacts {start}{last})"


def _split(artifacts: Sequence[Artifact], shards: Sequence[RehashShard], checked: DigestCheck) -> list[DigestCheck]:
    """One task's answer for ``shards`` (consecutive) as one answer per shard.

    A path absent from the failures matched its digest, so its bytes are its
    registered size; a failure hashed ``outcome.size_bytes`` (0 unless ``ok``).
    Should the registry's sizes not add up to what the worker counted, the
    first shard takes the difference, so the total is always the worker's.
    """
    offset = shards[0].start
    split: list[DigestCheck] = []
    rest = sorted(checked.failures, key=lambda failure: failure[0])
    index = 0
    counted = 0
    for shard in shards:
        end = shard.end - offset
        mine: list[tuple[int, HashOutcome]] = []
        while index < len(rest) and rest[index][0] < end:
            position, outcome = rest[index]
            mine.append((position - (shard.start - offset), outcome))
            index += 1
        failed = {position for position, _ in mine}
        size = sum(a.size_bytes for i, a in enumerate(artifacts[shard.start : shard.end]) if i not in failed)
        size += sum(outcome.size_bytes for _, outcome in mine)
        counted += size
        split.append(DigestCheck(bytes_hashed=size, failures=tuple(mine)))
    if counted != checked.bytes_hashed:
        split[0] = DigestCheck(
            bytes_hashed=split[0].bytes_hashed + checked.bytes_hashed - counted, failures=split[0].failures
        )
    return split


class CeleryExecutor:
    """Runs re-hash shards as Celery tasks (see :class:`~eceb_worker.executors.ShardExecutor`).

    ``app`` is a Celery application from
    :func:`~eceb_worker.brokers.celery_app.make_app` (by default, one
    configured from the environment). ``timeout`` bounds, in seconds, the wait
    for all shards of one call (None: wait as long as it takes; with no
    worker running, that is forever).

    ``task_bytes`` is the most work, in byte-equivalents, sent as one task:
    consecutive shards of the plan are sent together up to it (see
    :func:`~eceb_worker.engine.plan.group_shards`), since each task costs some
    milliseconds of broker and backend round trips whatever its size. None
    sends one task per shard. ``workers``, the number of worker processes
    consuming the queue when known, makes tasks shrink towards the end of the
    plan so that the workers finish together. Results still come back one
    per shard, the same as the embedded executor's.

    Raises ``StorageError`` when the broker cannot be reached, when a shard
    fails after its retries (naming the shard), or when the timeout passes.
    Shards still queued are then revoked. Raises ValueError for a
    non-positive ``timeout``, ``task_bytes`` or ``workers``.
    """

    def __init__(
        self,
        app: Celery | None = None,
        *,
        timeout: float | None = None,
        task_bytes: int | None = DEFAULT_TASK_BYTES,
        workers: int | None = None,
    ) -> None:
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        if task_bytes is not None and task_bytes <= 0:
            raise ValueError(f"task_bytes must be positive, got {task_bytes}")
        if workers is not None and workers <= 0:
            raise ValueError(f"workers must be positive, got {workers}")
        self.app = app if app is not None else make_app()
        self.timeout = timeout
        self.task_bytes = task_bytes
        self.workers = workers

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
        if self.task_bytes is None:
            groups = [(position, position + 1) for position in range(len(shards))]
        else:
            groups = group_shards(shards, task_bytes=self.task_bytes, workers=self.workers)
        handles = self._send(spec, artifacts, shards, groups)
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
                first, end = groups[position[task_id]]
                for offset, result in enumerate(self._results(first, shards[first:end], artifacts, meta)):
                    results[first + offset] = result
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

    def _send(
        self,
        spec: StorageSpec,
        artifacts: Sequence[Artifact],
        shards: Sequence[RehashShard],
        groups: Sequence[tuple[int, int]],
    ) -> list[Any]:
        """Send one task per group of shards; returns their ``AsyncResult`` handles, in group order."""
        handles: list[Any] = []
        try:
            with self.app.producer_or_acquire() as producer:
                for first, end in groups:
                    start, stop = shards[first].start, shards[end - 1].end
                    part = artifacts[start:stop]
                    message = RehashMessage(
                        spec=spec,
                        start=start,
                        paths=[a.path for a in part],
                        digests=[a.source_digest for a in part],
                    )
                    handles.append(
                        self.app.send_task(
                            REHASH_TASK,
                            args=(msgspec.to_builtins(message),),
                            producer=producer,
                            argsrepr=_ARGSREPR,
                            kwargsrepr="{}",
                        )
                    )
        except (*_UNREACHABLE, RuntimeError) as exc:
            if isinstance(exc, RuntimeError) and str(exc) != E_RETRY_LIMIT_EXCEEDED:
                raise
            if handles:
                with contextlib.suppress(Exception):
                    self.app.control.revoke([handle.id for handle in handles])
            raise StorageError(f"cannot send shards to the broker {self.broker}: {self._scrub(exc)}") from None
        return handles

    def _results(
        self, first: int, shards: Sequence[RehashShard], artifacts: Sequence[Artifact], meta: dict[str, Any]
    ) -> list[ShardVerification]:
        """The verifications of ``shards`` (consecutive, from plan position ``first``) from their task's final state."""
        if meta.get("status") != states.SUCCESS:
            error = meta.get("result")
            reason = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error)
            raise StorageError(f"{_shard_name(first, shards)} failed on its worker: {self._scrub_text(reason)}")
        start, stop = shards[0].start, shards[-1].end
        try:
            checked = msgspec.convert(meta.get("result"), DigestCheck)
        except msgspec.ValidationError as exc:
            raise StorageError(f"{_shard_name(first, shards)}: malformed answer from its worker ({exc})") from None
        if any(not 0 <= position < stop - start for position, _ in checked.failures):
            raise StorageError(f"{_shard_name(first, shards)}: its worker answered for artifacts outside the shard")
        if len(shards) == 1:
            return [shard_verification(artifacts[start:stop], checked, start=start)]
        return [
            shard_verification(artifacts[shard.start : shard.end], part, start=shard.start)
            for shard, part in zip(shards, _split(artifacts, shards, checked), strict=True)
        ]

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
