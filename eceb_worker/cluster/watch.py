"""The watch over the jobs in flight: no step of a job waits for ever
(docs/DISTRIBUTED.md, "No job waits for ever").

Every worker runs a :class:`Watcher` thread in its main process (the one
that consumes the queue, never a pool process): every
:attr:`~eceb_worker.cluster.work.Bounds.heartbeat_s` it says the worker is
alive, and every :attr:`~eceb_worker.cluster.work.Bounds.watch_s` one
worker of the cluster (whichever takes ``eceb:watch`` first) looks over the
steps of every job in flight (:func:`watch_jobs`) and publishes again, with
its own task id, each step

* started whose lease lapsed (its process killed, its worker gone, frozen
  beyond its lease), or
* published :attr:`~eceb_worker.cluster.work.Bounds.untaken_s` ago that no
  process started and that no longer waits in the queue (prefetched by a
  worker that died; lost by Redis between the queue and a worker),

and the reduce of a stage whose every shard answered (its last shard's
process died before publishing it). A step published again
:attr:`~eceb_worker.cluster.work.Bounds.republish_limit` times that still
did not finish fails its job, saying so. Running a step twice changes
nothing: a step starts only with its lease, a shard's first answer stays,
and a job counts each shard once.

Why a thread in every worker, and not Celery beat or a periodic task: beat
is one more process to deploy and keep alive (the watch would wait on it),
and a periodic task waits in the queue behind the shards it should watch
over; a thread in each worker's main process runs whatever the pool does,
and the first worker to start after every other died watches at once.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any, Final

import msgspec

from eceb_worker.cluster.backend import policy_of
from eceb_worker.cluster.retry import LOST
from eceb_worker.cluster.state import JobStore
from eceb_worker.cluster.steps import SHARD_TASKS, Progress, Step, reduce_step, shard_step
from eceb_worker.cluster.views import step_name
from eceb_worker.cluster.work import WorkStore, work_of
from eceb_worker.errors import ErrorKind, StorageError
from eceb_worker.pipeline.messages import ShardFailed, ShardTask, shard_index, stage_of

__all__ = ["WATCH_KEY", "Watcher", "publish_reduce", "shard_revoked", "watch_jobs"]

GONE_WAIT_S: Final = 2.0
"""How long a stopping worker tries to say it is gone, in seconds."""

WATCH_KEY: Final = "eceb:watch"
"""Held by the worker looking over the jobs, for one watch interval."""

_logger = logging.getLogger("eceb.cluster.watch")


Send = Callable[[Step], None]
"""Publishes a step's task (its name, arguments and task id)."""


def publish_step(work: WorkStore, send: Send, job_id: str, step: str, record: Step, *, again: bool) -> bool:
    """Publish ``step`` unless another process claimed it within
    :attr:`~eceb_worker.cluster.work.Bounds.untaken_s`: True when published."""
    if not work.claim(job_id, step, work.bounds.untaken_s):
        return False
    send(record)
    work.published(job_id, step, again=again)
    return True


def publish_reduce(work: WorkStore, send: Send, job_id: str, stage: str) -> bool:
    """Publish the reduce of ``stage`` when every shard planned answered and
    it was not published yet: True when published now."""
    planned = work.planned(job_id, stage)
    if planned is None or work.answered(job_id, stage) < planned:
        return False
    step = reduce_step(stage)
    progress = work.progress(job_id, ())
    if step in progress.published or step in progress.finished:
        return False
    record = work.step(job_id, step)
    return record is not None and publish_step(work, send, job_id, step, record, again=False)


def due(
    step: str, progress: Progress, now_ms: int, untaken_ms: int, queued: Callable[[], set[str]], task_id: str
) -> str:
    """Why ``step`` (not finished, holding no lease) is due to be
    published again, ``""`` when it is not: ``lapsed`` (started since its
    last publication, its lease gone), ``untaken`` (published ``untaken_ms``
    ago, never started, not waiting in the queue)."""
    published = progress.published.get(step)
    if published is None:
        return ""  # a reduce not published yet: publish_reduce decides
    if step in progress.started:
        return "lapsed"
    if now_ms - published >= untaken_ms and task_id not in queued():
        return "untaken"
    return ""


def watch_job(work: WorkStore, jobs: JobStore, send: Send, job_id: str, queued: Callable[[], set[str]]) -> list[str]:
    """Look over one job's steps; publish again each one due, the reduce of
    a stage complete. The steps published, with why."""
    steps = work.steps(job_id)
    pending = sorted(steps)
    progress = work.progress(job_id, pending)
    now_ms = time.time_ns() // 1_000_000
    done: list[str] = []
    for step in pending:
        if step in progress.finished or step in progress.leases:
            continue
        why = due(step, progress, now_ms, work.bounds.untaken_s * 1000, queued, steps[step].task_id)
        if not why:
            continue
        count = progress.republished.get(step, 0)
        if count >= work.bounds.republish_limit:
            error = (
                f"{step_name(step)} was published {count + 1} times and never finished (revoked, or lost with "
                f"its worker each time); submit the job again"
            )
            if jobs.fail(job_id, ErrorKind.STORAGE, error):
                _logger.warning("job failed: %s error: %s", ErrorKind.STORAGE.value, error)
            return done
        if publish_step(work, send, job_id, step, steps[step], again=True):
            _logger.warning("job %s: %s published again (%s)", job_id, step_name(step), why)
            done.append(f"{step} ({why})")
    for stage in (planned.value for planned in SHARD_TASKS):
        if publish_reduce(work, send, job_id, stage):
            done.append(f"{reduce_step(stage)} (complete)")
    return done


def watch_jobs(work: WorkStore, jobs: JobStore, send: Send, queued: Callable[[], set[str]]) -> dict[str, list[str]]:
    """Look over every job in flight (:func:`watch_job`); jobs that ended
    leave the set of jobs in flight. What was published again, by job."""
    published: dict[str, list[str]] = {}
    for job_id in jobs.active():
        if jobs.finished(job_id):
            jobs.retire(job_id)
            continue
        found = watch_job(work, jobs, send, job_id, _once(queued))
        if found:
            published[job_id] = found
    return published


def _once(compute: Callable[[], set[str]]) -> Callable[[], set[str]]:
    """``compute``, called at most once (the queue is read only when a step may be untaken)."""
    cache: list[set[str]] = []

    def value() -> set[str]:
        if not cache:
            cache.append(compute())
        return cache[0]

    return value


def shard_revoked(
    sender: Any = None, request: Any = None, terminated: bool = False, signum: Any = None, **_: Any
) -> None:
    """A shard an operator revoked (Celery's ``task_revoked``, in the
    worker's main process; ``sender`` the task, ``request`` its context): it
    answers as failed, naming it, so the job ends at once, failed, instead
    of waiting for the watch to give up on it."""
    task = sender
    if task is None or getattr(task, "name", "") not in SHARD_TASKS.values() or request is None:
        return
    try:
        shard = msgspec.convert(next(iter(request.args)), ShardTask)
    except (StopIteration, TypeError, msgspec.ValidationError):
        return
    index, stage = shard_index(shard), stage_of(shard)
    job_id = getattr(shard, "job_id", "")
    work = work_of(task.app)
    step = shard_step(stage.value, index)
    if not job_id or work.finished(job_id, step):
        return
    how = f"terminated by signal {signum}" if terminated else "before it ran"
    failed = ShardFailed(
        index=index,
        kind=ErrorKind.STORAGE,
        message=f"{stage.shard_name} {index}: revoked ({how}); submit the job again",
    )
    JobStore.of(task.app).add_failure(job_id, failed.message)
    work.answer(job_id, stage.value, index, msgspec.json.encode(failed))
    publish_reduce(work, sender(task.app, policy_of(task.app)), job_id, stage.value)


class Watcher:
    """The watch thread of one worker's main process (``name``: its Celery
    node name). ``send`` publishes a step; ``queued`` reads the task ids
    waiting in the queue."""

    def __init__(self, work: WorkStore, jobs: JobStore, name: str, send: Send, queued: Callable[[], set[str]]) -> None:
        self.work = work
        self.jobs = jobs
        self.name = name
        self._send = send
        self._queued = queued
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="eceb-watch", daemon=True)

    def start(self) -> None:
        """Start watching (a first look at once: the first worker back watches at once)."""
        self._thread.start()

    def stop(self) -> None:
        """Stop, and say the worker is gone: tried for :data:`GONE_WAIT_S` at
        most (Redis may be stopping too; a worker not heard from is taken
        for gone soon enough), so that the worker's shutdown never waits
        for an outage to end."""
        self._stop.set()

        def say_gone() -> None:
            try:
                self.work.gone(self.name)
            except Exception:
                _logger.debug("could not say %s stopped", self.name)

        saying = threading.Thread(target=say_gone, name="eceb-watch-gone", daemon=True)
        saying.start()
        saying.join(timeout=GONE_WAIT_S)

    def _run(self) -> None:
        bounds = self.work.bounds
        next_watch = 0.0
        while not self._stop.is_set():
            try:
                self.work.alive(self.name)
                if time.monotonic() >= next_watch:
                    next_watch = time.monotonic() + bounds.watch_s
                    self.watch_once()
            except (StorageError, *LOST) as exc:  # Redis away: one line each time, no traceback
                _logger.warning("the watch over the jobs in flight cannot reach Redis; it tries again: %s", exc)
            except Exception:
                _logger.exception("the watch over the jobs in flight failed; it goes on")
            self._stop.wait(bounds.heartbeat_s * random.uniform(0.8, 1.0))  # noqa: S311 - spreading the workers

    def watch_once(self) -> dict[str, list[str]]:
        """Look over the jobs now, when no other worker does (one a watch interval)."""
        ttl_ms = max(1000, self.work.bounds.watch_s * 1000 - 500)
        client: Any = self.work.client
        with self.work.reaching("the result backend (watch)"):
            if not client.set(WATCH_KEY, self.name.encode(), nx=True, px=ttl_ms):
                return {}
        return watch_jobs(self.work, self.jobs, self._send, self._queued)
