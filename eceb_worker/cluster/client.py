"""The cluster as ``eceb-dist`` sees it: a Celery application, its broker and
result backend reachable, the job store, submitting a job, and the workers
that consume its queue.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Final

import msgspec
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

from eceb_worker.cluster.app import QUEUE, make_app
from eceb_worker.cluster.backend import policy_of
from eceb_worker.cluster.logs import task_label
from eceb_worker.cluster.retry import UNREACHABLE
from eceb_worker.cluster.state import JobRecord, JobStore, Phase
from eceb_worker.cluster.steps import COORDINATE, Step
from eceb_worker.cluster.tasks import COORDINATE_TASK
from eceb_worker.cluster.views import MakingStatus, StepState, waiting_steps
from eceb_worker.cluster.work import work_of
from eceb_worker.core.urls import redact_url, scrub
from eceb_worker.errors import StorageError
from eceb_worker.pipeline.messages import JobMessage

__all__ = ["CONSUMERS_TIMEOUT_S", "Cluster"]

_CONNECT_RETRIES: Final = 2
"""Attempts to reach the broker before giving up, so that an unreachable
cluster fails in about a second (Celery alone would retry for some 20 s)."""
CONSUMERS_TIMEOUT_S: Final = 1.0
"""How long the workers are given to answer who consumes the queue, in seconds."""


class Cluster:
    """The Celery application of ``broker_url`` and ``result_backend`` (by
    default from the environment), or ``app`` when given (one made already
    by :func:`~eceb_worker.cluster.app.make_app`), both reached once, and
    its job store.

    The broker is reached at once or not at all (an unreachable cluster
    fails in about a second); once reached, a lost connection is tried
    again for ``ECEB_REDIS_OUTAGE_S`` seconds (the retry policy), by every
    read and write of the job store and every message sent.

    Raises ValueError for a setting that does not parse or a URL that is
    not Redis's (never repeating a URL), ``StorageError`` (its URL
    redacted) when the broker or the result backend cannot be reached.
    """

    def __init__(self, broker_url: str | None = None, result_backend: str | None = None, *, app: Any = None) -> None:
        self.app: Any = app if app is not None else make_app(broker_url, result_backend)
        self.policy = policy_of(self.app)
        self.check_connection()
        self.store = JobStore.of(self.app)
        self.work = work_of(self.app)

    @property
    def broker(self) -> str:
        """The broker URL, redacted (no credential)."""
        return redact_url(str(self.app.conf.broker_url))

    @property
    def backend(self) -> str:
        """The result backend URL, redacted (no credential)."""
        return redact_url(str(self.app.conf.result_backend))

    def scrub(self, exc: BaseException) -> str:
        """``exc``'s type and text without any credential of the broker or backend URLs."""
        return scrub(f"{type(exc).__name__}: {exc}", (self.app.conf.broker_url, self.app.conf.result_backend))

    def check_connection(self) -> None:
        """Reach the broker and the result backend once; raises ``StorageError`` if either fails."""
        try:
            with self.app.connection_for_write() as connection:
                connection.ensure_connection(
                    max_retries=_CONNECT_RETRIES, interval_start=0.2, interval_step=0.3, interval_max=0.5
                )
        except UNREACHABLE as exc:
            raise StorageError(f"cannot reach the broker {self.broker}: {self.scrub(exc)}") from None
        backend = self.app.backend
        # One attempt, without the outage retry of the backend's own client: a
        # backend that cannot be reached (or refuses the URL's database) when a
        # command starts fails at once, as the broker does.
        client = backend._create_client(**{**backend.connparams, "retry": Retry(NoBackoff(), 0)})
        try:
            client.ping()
        except (*UNREACHABLE, RedisError) as exc:
            raise StorageError(f"cannot reach the result backend {self.backend}: {self.scrub(exc)}") from None
        finally:
            client.close()

    def submit(self, message: JobMessage, **fields: str | int) -> None:
        """Record a new job (phase ``queued`` and ``fields``) and its first
        step (so that the watch publishes it again should it be lost), then queue it."""
        task_id = str(uuid.uuid4())
        step = Step(
            task=COORDINATE_TASK, args=[msgspec.to_builtins(message)], task_id=task_id, label=task_label(message.job_id)
        )
        self.store.create(message.job_id, phase=Phase.QUEUED.value, kind=message.kind.value, **fields)
        self.work.record(message.job_id, COORDINATE, step)
        with self.policy.reaching(f"the broker {self.broker}"):
            self.app.send_task(step.task, args=tuple(step.args), task_id=task_id, argsrepr=step.label)
        self.store.update(message.job_id, coordinator=task_id)

    def waiting(self, job_id: str) -> tuple[list[StepState], list[str]]:
        """The steps job ``job_id`` waits for (published, not finished), and the workers alive."""
        steps = self.work.steps(job_id)
        progress = self.work.progress(job_id, steps)
        now_ms = time.time_ns() // 1_000_000
        return waiting_steps(steps, progress, now_ms), self.work.live_workers()

    def making_status(self, record: JobRecord) -> MakingStatus | None:
        """A made run's calls and spend as its journal holds them (``None``
        for another job, or when its journal is gone)."""
        from eceb_worker.cluster.run_journal import RedisRunJournal
        from eceb_worker.pipeline.messages import JobKind

        if record.kind is not JobKind.MAKE or not record.journal:
            return None
        journal = RedisRunJournal(self.app.backend.client, record.journal, reaching=self.policy.reaching)
        try:
            summary = journal.summary()
        except StorageError:
            return None
        unknown, count = journal.unknown_calls()
        return MakingStatus(
            journal=record.journal,
            made=summary.made,
            failed=summary.failed,
            spent_micro_usd=summary.spent_micro_usd,
            possible_micro_usd=summary.possible_micro_usd,
            unknown_calls=tuple(unknown),
            unknown_count=count,
        )

    def revoke(self, task_id: str) -> None:
        """Revoke task ``task_id`` on every worker (sent again through a
        broker outage, up to the retry policy's bound; ``StorageError`` beyond)."""
        self.policy.outlast(lambda: self.app.control.revoke(task_id), f"the broker {self.broker}")

    def consumers(self, timeout_s: float = CONSUMERS_TIMEOUT_S) -> list[str] | None:
        """The names of the workers that consume eceb's queue, as they answer
        Celery's remote control (``active_queues``) within ``timeout_s``
        seconds: the first answer is enough when it names the queue. None
        when the broker cannot be asked (nothing can be told)."""
        try:
            first = self._active_queues(timeout_s, limit=1)
            if first and not _consuming(first):
                first = self._active_queues(timeout_s, limit=None)
        except (*UNREACHABLE, RedisError):
            return None
        return _consuming(first)

    def _active_queues(self, timeout_s: float, limit: int | None) -> dict[str, Any]:
        answers = self.app.control.inspect(timeout=timeout_s, limit=limit).active_queues()
        return dict(answers or {})


def _consuming(answers: dict[str, Any]) -> list[str]:
    """The workers among ``answers`` (``active_queues``' replies) whose queues include eceb's."""
    return sorted(
        name
        for name, queues in answers.items()
        if any(isinstance(queue, dict) and queue.get("name") == QUEUE for queue in queues or ())
    )
