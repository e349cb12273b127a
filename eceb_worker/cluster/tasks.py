"""A job on the cluster: the steps of :class:`~eceb_worker.pipeline.jobs.Job`
as Celery tasks, each map stage a chord of shard tasks.

The submitter may disconnect: no task waits for another (no ``.get()`` in a
task); the job advances by Celery canvas::

    eceb.coordinate                      Job.start: check the inputs, scanning the
                                         registry as a stream; plan the re-hash
      chord(eceb.job_rehash_shard x N)   Workspace.run: read its lines, re-hash them
        -> eceb.job_verified             Job.after: reduce the verification; a
                                         verification job ends here; else plan
             chord(eceb.evaluate_shard x M)
               -> eceb.job_finish        Job.after: reduce into the report, written
                                         atomically

Messages carry references only (:mod:`eceb_worker.pipeline.messages`). Job
state lives in the result backend's Redis (:class:`~eceb_worker.cluster.state.JobStore`).

Every task has the one retry policy (:class:`~eceb_worker.cluster.retry.RetryPolicy`):
a ``StorageError`` runs the task again, with back-off, up to its bound.
Shard tasks never raise into a chord: a shard that fails (after its
retries) answers :class:`~eceb_worker.pipeline.messages.ShardFailed` and the
next step ends the job as failed. A shard task that ends some other way
(revoked, or lost beyond what redelivery covers) fails the chord; its error
callback, ``eceb.job_shard_lost``, ends the job as failed. A job that fails
never writes a report.

Delivery is at least once, so every step is idempotent: the chord counts a
task id once, a job counts a shard index once (:meth:`~eceb_worker.cluster.state.JobStore.advance`),
and a step of a job that has ended does nothing.

Every task of a job is sent with a label naming the job and the shard
(:func:`~eceb_worker.cluster.logs.task_label`, kept through retries): the
worker's log lines about it name both (:mod:`eceb_worker.cluster.logs`).
Shards answered, their durations, bytes hashed and retries are counted for
the worker's metrics (:mod:`eceb_worker.cluster.metrics`).

S3: a worker reads and writes through its own endpoint
(``ECEB_S3_ENDPOINT_URL``, ``eceb-dist worker --endpoint-url``) whatever
endpoint the submitter used (:func:`~eceb_worker.pipeline.messages.with_endpoint`);
a worker configured with none uses the one that came with the job.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import Any, Final

import msgspec

from eceb_worker.cluster import metrics
from eceb_worker.cluster.deliveries import check_delivery
from eceb_worker.cluster.logs import task_label
from eceb_worker.cluster.retry import CAUSE_LOOKUPS, RetryPolicy
from eceb_worker.cluster.state import TOTAL_FIELDS, JobStore, Phase
from eceb_worker.core.digests import digest_bytes
from eceb_worker.core.urls import redact_text
from eceb_worker.corpus.prefixes import spread_rehash
from eceb_worker.corpus.verification import encode_verification
from eceb_worker.errors import ErrorKind, InputError, Problem, StorageError, VerificationError
from eceb_worker.families.eceb.report import encode_report
from eceb_worker.pipeline.jobs import Finished, Job, MapStage
from eceb_worker.pipeline.messages import (
    JobKind,
    JobMessage,
    RehashAnswer,
    RehashTask,
    ShardAnswer,
    ShardFailed,
    ShardTask,
    Stage,
    shard_index,
    stage_of,
    with_endpoint,
)
from eceb_worker.pipeline.shards import Workspace
from eceb_worker.settings import read_setting

__all__ = [
    "COORDINATE_TASK",
    "REDUCE_TASKS",
    "SHARD_LOST_TASK",
    "SHARD_TASKS",
    "register_tasks",
]

COORDINATE_TASK: Final = "eceb.coordinate"
SHARD_TASKS: Final = {Stage.REHASH: "eceb.job_rehash_shard", Stage.EVALUATE: "eceb.evaluate_shard"}
"""The task that runs one shard of each stage."""
REDUCE_TASKS: Final = {Stage.REHASH: "eceb.job_verified", Stage.EVALUATE: "eceb.job_finish"}
"""The task that reduces each stage's answers (a chord's callback)."""
SHARD_LOST_TASK: Final = "eceb.job_shard_lost"

_logger = logging.getLogger("eceb.cluster.jobs")

WORKSPACE: Final = Workspace()
"""This worker process's workspace: decoded inputs and S3 clients, kept between tasks."""


def _problems_json(error: InputError) -> str:
    """The problems of ``error`` as JSON, every URL quoted in them redacted (:func:`redact_text`)."""
    problems = [
        Problem(
            file=redact_text(p.file),
            record=redact_text(p.record),
            field=redact_text(p.field),
            message=redact_text(p.message),
        )
        for p in error.problems
    ]
    return msgspec.json.encode(problems).decode()


@functools.cache
def _own_endpoint() -> str | None:
    """The S3 endpoint of this worker (``ECEB_S3_ENDPOINT_URL``), None when it has none."""
    endpoint: str | None = read_setting("s3_endpoint_url")
    return endpoint


def _fail(store: JobStore, job_id: str, exc: BaseException) -> None:
    """End the job as failed with ``exc``'s reason and kind (logged when it ends it)."""
    kind = ErrorKind.of(exc)
    fields: dict[str, str] = {}
    if isinstance(exc, InputError):
        error, fields["problems"] = redact_text(str(exc)), _problems_json(exc)
    elif isinstance(exc, VerificationError):
        error, fields["verification"] = str(exc), encode_verification(exc.report).decode()  # type: ignore[arg-type]
    elif kind is ErrorKind.INTERNAL:
        error = redact_text(f"{type(exc).__name__}: {exc}")
    else:
        error = redact_text(str(exc))
    if store.fail(job_id, kind, error, **fields):
        _logger.warning("job failed: %s error: %s", kind.value, error)


def _retry(task: Any, policy: RetryPolicy, exc: BaseException) -> None:
    """Run ``task`` again later when ``exc`` is a passing storage failure and
    the policy allows another attempt (raises Celery's ``Retry``, the task's
    label kept; counted for the metrics); otherwise return."""
    retries = task.request.retries
    if policy.retries(exc, retries):
        metrics.task_retried(task.name)
        raise task.retry(exc=exc, countdown=policy.countdown(retries), **_labels(task))


def _labels(task: Any) -> dict[str, Any]:
    """The label a task was sent with, for its retry (Celery's retry would
    otherwise show and log the whole message)."""
    return {"argsrepr": task.request.get("argsrepr"), "kwargsrepr": task.request.get("kwargsrepr")}


def _step(task: Any, policy: RetryPolicy, message: dict[str, Any], body: Any) -> None:
    """Run one job step (``body(job)`` returns what follows), then dispatch
    what follows; any failure beyond the retries ends the job, a message
    this worker cannot read included (sent by another version of eceb)."""
    store = JobStore.of(task.app)
    job_id = str(message.get("job_id", "")) if isinstance(message, dict) else ""
    if store.finished(job_id):
        return
    try:
        check_delivery(task)
        job = Job(with_endpoint(msgspec.convert(message, JobMessage), _own_endpoint()), WORKSPACE)
        _dispatch(task.app, policy, store, job, body(job))
    except Exception as exc:
        _retry(task, policy, exc)
        _fail(store, job_id, exc)


def _dispatch(app: Any, policy: RetryPolicy, store: JobStore, job: Job, step: MapStage | Finished) -> None:
    """Start a map stage as a chord of its shard tasks, then its reduce
    step (a re-hash of an S3 corpus in the order of :func:`spread_rehash`);
    or write a finished job's result. Raises ``StorageError`` when
    the broker stays unreachable beyond ``policy``'s bound (the step runs
    again: a second chord of the same shards changes no answer)."""
    message = job.message
    if isinstance(step, Finished):
        _finish(store, message, step)
        return
    fields = {"phase": Phase.of_stage(step.stage).value, TOTAL_FIELDS[step.stage]: len(step.tasks)}
    if not store.update(message.job_id, **fields):
        return  # cancelled meanwhile
    _logger.info("planned %d %ss", len(step.tasks), step.stage.shard_name)
    label = task_label(message.job_id)
    callback = app.signature(REDUCE_TASKS[step.stage], args=(msgspec.to_builtins(message),), argsrepr=label)
    if not step.tasks:
        with policy.reaching("the broker"):
            callback.apply_async(args=([],))
        return
    from celery import chord

    count = len(step.tasks)
    tasks = step.tasks
    if step.stage is Stage.REHASH and message.corpus.is_s3:
        # Spread over the corpus's key prefixes (S3 serves each at a bounded rate).
        shards = [task.shard for task in tasks if isinstance(task, RehashTask)]
        tasks = [tasks[position] for position in spread_rehash(shards, message.shard_bytes)]
    header = [
        app.signature(
            SHARD_TASKS[step.stage],
            args=(msgspec.to_builtins(shard),),
            argsrepr=task_label(message.job_id, step.stage.value, shard_index(shard), count),
            kwargsrepr="{}",
        )
        for shard in tasks
    ]
    callback.on_error(app.signature(SHARD_LOST_TASK, args=(message.job_id,), argsrepr=label))
    with policy.reaching("the broker"):
        chord(header, app=app)(callback)


def _finish(store: JobStore, message: JobMessage, finished: Finished) -> None:
    """Write a finished job's result: the report atomically to ``out`` and
    its digest in the job's state (an evaluation), or the verification
    report in the state and, with ``out``, in storage (a verification)."""
    job_id = message.job_id
    fields: dict[str, str | int] = {}
    if message.kind is JobKind.EVALUATE:
        assert finished.report is not None
        data = encode_report(finished.report)
        summary = finished.report.summary
        fields.update(passing_tasks=summary.passing_tasks, total_tasks=summary.total_tasks)
        _logger.info("job done: %d/%d tasks pass", summary.passing_tasks, summary.total_tasks)
    else:
        assert finished.verification is not None
        data = encode_verification(finished.verification)
        fields.update(verification=data.decode(), verified=int(finished.verification.ok))
        _logger.info(
            "job done: %d of %d artifacts verified",
            finished.verification.verified_count,
            finished.verification.artifact_count,
        )
    if message.out:
        if not store.update(job_id, phase=Phase.WRITING.value):
            return  # cancelled meanwhile
        from eceb_worker.io.objects import ObjectStore

        objects = ObjectStore(message.inputs.endpoint_url)
        objects.put_atomic(message.out, data)
        fields["report_digest"] = digest_bytes(data)
        if not store.update(job_id, phase=Phase.DONE.value, **fields) and _cancelled(store, job_id):
            objects.delete(message.out)  # cancelled while it was written: a cancelled job leaves no report
        # (Done meanwhile: the same step delivered twice wrote the same bytes, kept.)
        return
    store.update(job_id, phase=Phase.DONE.value, **fields)


def _cancelled(store: JobStore, job_id: str) -> bool:
    state = store.get(job_id)
    return state is not None and state.get("phase") == Phase.CANCELLED.value


def coordinate(task: Any, policy: RetryPolicy, message: dict[str, Any]) -> None:
    """``eceb.coordinate``: :meth:`Job.start` (check the inputs, scanning the
    registry as a stream: memory does not grow with its artifacts), then the
    re-hash chord."""
    store = JobStore.of(task.app)
    job_id = str(message.get("job_id", "")) if isinstance(message, dict) else ""
    if not store.finished(job_id):
        store.update(job_id, phase=Phase.LOADING.value)
    _step(task, policy, message, lambda job: job.start())


def run_shard(task: Any, policy: RetryPolicy, message: dict[str, Any]) -> Any:
    """A shard task (``eceb.job_rehash_shard``, ``eceb.evaluate_shard``):
    :meth:`Workspace.run`; its answer as JSON builtins, a
    :class:`~eceb_worker.pipeline.messages.ShardFailed` once its retries are
    spent (never an exception into the chord)."""
    shard = with_endpoint(msgspec.convert(message, ShardTask), _own_endpoint())
    index, stage = shard_index(shard), stage_of(shard)
    job_id = getattr(shard, "job_id", "")
    store = JobStore.of(task.app)
    if job_id and store.finished(job_id):
        return msgspec.to_builtins(ShardFailed(index=index, kind=ErrorKind.STORAGE, message="the job has ended"))
    started = time.monotonic()
    answer: ShardAnswer
    try:
        check_delivery(task)
        answer = WORKSPACE.run(shard)
    except Exception as exc:
        _retry(task, policy, exc)
        reason = str(exc) if isinstance(exc, (InputError, StorageError)) else f"{type(exc).__name__}: {exc}"
        answer = ShardFailed(index=index, kind=ErrorKind.of(exc), message=f"{stage.shard_name} {index}: {reason}")
        if job_id:
            store.add_failure(job_id, answer.message)
    else:
        if job_id:
            store.advance(job_id, stage, index)
    hashed = answer.verification.bytes_hashed if isinstance(answer, RehashAnswer) else 0
    failed = isinstance(answer, ShardFailed)
    metrics.shard_answered(stage.value, failed=failed, bytes_hashed=hashed, seconds=time.monotonic() - started)
    return msgspec.to_builtins(answer)


def reduce_stage(task: Any, policy: RetryPolicy, results: list[Any], message: dict[str, Any], stage: str) -> None:
    """A reduce step (``eceb.job_verified``, ``eceb.job_finish``, a chord's
    callback): :meth:`Job.after` over the shards' answers, then what follows."""
    _step(task, policy, message, lambda job: job.after(Stage(stage), msgspec.convert(results, list[ShardAnswer])))


def job_shard_lost(task: Any, policy: RetryPolicy, failed_task_id: str, job_id: str) -> None:
    """``eceb.job_shard_lost``: a chord's error callback (Celery puts the id of
    the failed task first). A shard's task ended without an answer (revoked,
    or its process lost for good): end the job as failed, naming the cause
    Celery recorded (it may be stored just after this callback is sent: it is
    looked for again, :data:`~eceb_worker.cluster.retry.CAUSE_LOOKUPS` times, with the retry policy's back-off)."""
    reason = task.app.AsyncResult(failed_task_id).result
    retries = task.request.retries
    if reason is None and retries < CAUSE_LOOKUPS:
        raise task.retry(countdown=policy.countdown(retries), max_retries=CAUSE_LOOKUPS, **_labels(task))
    error = f"a shard ended without an answer ({reason or 'revoked or lost'}); submit the job again"
    _logger.warning("job failed: %s error: %s", ErrorKind.STORAGE.value, error)
    JobStore.of(task.app).fail(job_id, ErrorKind.STORAGE, error)


def register_tasks(app: Any, policy: RetryPolicy) -> None:
    """Register every task of a job on ``app``, each with ``policy``."""
    options: dict[str, Any] = {"shared": False, "lazy": False, "bind": True, "max_retries": policy.max_retries}

    def bound(body: Any, *fixed: Any) -> Any:
        def task(self: Any, *args: Any) -> Any:
            return body(self, policy, *args, *fixed)

        task.__doc__ = body.__doc__
        task.__name__ = task.__qualname__ = body.__name__
        return task

    app.task(name=COORDINATE_TASK, **options)(bound(coordinate))
    for name in SHARD_TASKS.values():
        app.task(name=name, **options)(bound(run_shard))
    for stage, name in REDUCE_TASKS.items():
        app.task(name=name, **options)(bound(reduce_stage, stage.value))
    app.task(name=SHARD_LOST_TASK, **options)(bound(job_shard_lost))
