"""A job on the cluster: the steps of :class:`~eceb_worker.pipeline.jobs.Job`
as Celery tasks, each map stage one task a shard.

The submitter may disconnect: no task waits for another (no ``.get()`` in a
task); the job advances by the steps publishing the next::

    eceb.coordinate                      Job.start: check the inputs, scanning the
                                         registry as a stream; plan the re-hash
      eceb.job_rehash_shard x N          Workspace.run: read its lines, re-hash them;
                                         its answer kept in Redis; the last to answer
                                         publishes
        eceb.job_verified                Job.after over the answers: reduce the
                                         verification; a verification job ends here;
                                         else plan
          eceb.evaluate_shard x M        likewise, the last publishing
            eceb.job_finish              Job.after: reduce into the report, written
                                         atomically

Messages carry references only (:mod:`eceb_worker.pipeline.messages`). Job
state lives in the result backend's Redis (:class:`~eceb_worker.cluster.state.JobStore`),
and so does its work (:class:`~eceb_worker.cluster.work.WorkStore`): every
step published, kept with its task id before it is sent; a step runs only
with its lease, renewed by a heartbeat while it runs; each shard's answer.
Every worker watches the jobs in flight (:mod:`eceb_worker.cluster.watch`)
and publishes again a step whose lease lapsed or that no worker took: no job
waits for ever on a worker that died or a message Redis lost.

Every task has the one retry policy (:class:`~eceb_worker.cluster.retry.RetryPolicy`):
a ``StorageError`` runs the task again, with back-off, up to its bound. A
shard that fails (after its retries) answers
:class:`~eceb_worker.pipeline.messages.ShardFailed` and the stage's reduce
ends the job as failed; so does a shard an operator revoked.

Delivery is at least once, so every step is idempotent: a step starts only
with its lease (a copy finding it held, or finished, acknowledges itself and
does nothing), a shard's first answer stays, a job counts a shard index once
(:meth:`~eceb_worker.cluster.state.JobStore.advance`), planning a stage twice
records and sends it once, and a step of a job that has ended does nothing.

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

import contextlib
import functools
import logging
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

import msgspec

from eceb_worker.cluster import metrics
from eceb_worker.cluster.deliveries import check_delivery
from eceb_worker.cluster.logs import task_label
from eceb_worker.cluster.retry import RetryPolicy
from eceb_worker.cluster.state import TOTAL_FIELDS, JobStore, Phase
from eceb_worker.cluster.steps import COORDINATE, REDUCE_TASKS, SHARD_TASKS, Step, reduce_step, shard_step, this_host
from eceb_worker.cluster.watch import publish_reduce, shard_revoked
from eceb_worker.cluster.work import WorkStore, sender, work_of
from eceb_worker.core.digests import digest_bytes
from eceb_worker.core.urls import redact_text
from eceb_worker.corpus.prefixes import spread_rehash
from eceb_worker.corpus.verification import encode_verification
from eceb_worker.errors import ErrorKind, InputError, Problem, StorageError, VerificationError
from eceb_worker.families.eceb.report import encode_report
from eceb_worker.pipeline.jobs import Finished, Job, MapStage
from eceb_worker.pipeline.messages import (
    HashRangeAnswer,
    JobKind,
    JobMessage,
    ListAnswer,
    RehashAnswer,
    RehashTask,
    ShardAnswer,
    ShardFailed,
    Stage,
    job_message,
    shard_index,
    shard_task,
    stage_of,
    with_endpoint,
)
from eceb_worker.pipeline.shards import Workspace
from eceb_worker.settings import read_setting

__all__ = ["COORDINATE_TASK", "SHARD_TASKS", "register_tasks"]

COORDINATE_TASK: Final = "eceb.coordinate"

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


def _retry(task: Any, policy: RetryPolicy, exc: BaseException, step: str = "", job_id: str = "") -> None:
    """Run ``task`` again later when ``exc`` is a passing storage failure and
    the policy allows another attempt (raises Celery's ``Retry``, the task's
    label kept; counted for the metrics; its step noted as published then,
    so the watch does not take it for lost); otherwise return."""
    retries = task.request.retries
    if policy.retries(exc, retries):
        metrics.task_retried(task.name)
        countdown = policy.countdown(retries)
        if step and job_id:
            work_of(task.app).delay(job_id, step, countdown)
        raise task.retry(exc=exc, countdown=countdown, **_labels(task))


def _labels(task: Any) -> dict[str, Any]:
    """The label a task was sent with, for its retry (Celery's retry would
    otherwise show and log the whole message)."""
    return {"argsrepr": task.request.get("argsrepr"), "kwargsrepr": task.request.get("kwargsrepr")}


@contextmanager
def _leased(task: Any, job_id: str, step: str) -> Iterator[WorkStore]:
    """Hold ``step``'s lease while the block runs (renewed by a heartbeat).
    A step of a job that ended, a step finished already, or one a live
    process holds, raises Celery's ``Ignore``: this copy is acknowledged and
    does nothing (the holder answers; a lease that lapses is published
    again by the watch)."""
    from celery.exceptions import Ignore

    work = work_of(task.app)
    if JobStore.of(task.app).finished(job_id) or work.finished(job_id, step):
        raise Ignore()
    lease = work.take(job_id, step, str(task.request.hostname or this_host()))
    if lease is None:
        _logger.info("already running elsewhere: %s", step)
        raise Ignore()
    with work.holding(job_id, step, lease):
        yield work


def _step(task: Any, policy: RetryPolicy, message: dict[str, Any], step: str, body: Any) -> None:
    """Run one coordinating step of a job (``body(job)`` returns what
    follows) holding its lease, then publish what follows and mark the step
    finished; any failure beyond the retries ends the job, a message this
    worker cannot read included (sent by another version of eceb)."""
    store = JobStore.of(task.app)
    job_id = str(message.get("job_id", "")) if isinstance(message, dict) else ""
    job: Job | None = None
    with _leased(task, job_id, step) as work:
        try:
            check_delivery(task)
            job = Job(with_endpoint(job_message(message), _own_endpoint()), WORKSPACE)
            _dispatch(task.app, policy, store, work, job, body(job))
        except Exception as exc:
            _retry(task, policy, exc, step, job_id)
            _fail(store, job_id, exc)
            if job is not None and job.message.kind is JobKind.REGISTER:
                _discard_parts(job.message)  # a failed registration leaves no partial
        work.finish(job_id, step)


def _dispatch(
    app: Any, policy: RetryPolicy, store: JobStore, work: WorkStore, job: Job, step: MapStage | Finished
) -> None:
    """Record a map stage's shards and its reduce, then publish its shards
    (a re-hash of an S3 corpus in the order of :func:`spread_rehash`); or
    write a finished job's result. A stage recorded already (this step ran
    twice) is not published again. Raises ``StorageError`` when the broker
    stays unreachable beyond ``policy``'s bound (the step runs again)."""
    message = job.message
    if isinstance(step, Finished):
        _finish(store, message, step)
        return
    fields = {"phase": Phase.of_stage(step.stage).value, TOTAL_FIELDS[step.stage]: len(step.tasks)}
    if not store.update(message.job_id, **fields):
        return  # cancelled meanwhile
    stage = step.stage.value
    count = len(step.tasks)
    tasks = step.tasks
    if step.stage is Stage.REHASH and message.corpus.is_s3:
        # Spread over the corpus's key prefixes (S3 serves each at a bounded rate).
        shards = [task.shard for task in tasks if isinstance(task, RehashTask)]
        tasks = [tasks[position] for position in spread_rehash(shards, message.shard_bytes)]
    records: dict[str, tuple[Step, bool]] = {}
    for shard in tasks:
        index = shard_index(shard)
        label = task_label(message.job_id, stage, index, count)
        record = Step(
            task=SHARD_TASKS[step.stage], args=[msgspec.to_builtins(shard)], task_id=str(uuid.uuid4()), label=label
        )
        records[shard_step(stage, index)] = (record, True)
    reduce = Step(
        task=REDUCE_TASKS[step.stage],
        args=[msgspec.to_builtins(message)],
        task_id=str(uuid.uuid4()),
        label=task_label(message.job_id),
    )
    records[reduce_step(stage)] = (reduce, False)
    if not work.record_stage(message.job_id, stage, count, records):
        return  # planned and published by an earlier run of this step
    _logger.info("planned %d %ss", count, step.stage.shard_name)
    send = sender(app, policy)
    for step_name, (record, _) in records.items():
        if step_name != reduce_step(stage):
            send(record)
    if not count:
        publish_reduce(work, send, message.job_id, stage)


def _finish(store: JobStore, message: JobMessage, finished: Finished) -> None:
    """Write a finished job's result: the report atomically to ``out`` and
    its digest in the job's state (an evaluation), or the verification
    report in the state and, with ``out``, in storage (a verification)."""
    job_id = message.job_id
    fields: dict[str, str | int] = {}
    if message.kind is JobKind.MAKE:
        _made(store, message, finished)
        return
    if message.kind is JobKind.REGISTER:
        _registered(store, message, finished)
        return
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


def _made(store: JobStore, message: JobMessage, finished: Finished) -> None:
    """A made run's end: its run, transcripts and judgments are written (by
    the reduce, the run last); record its digest and spend, then delete the
    shards' partials (the run holds what they held). A job cancelled
    meanwhile leaves no run, and keeps its partials for ``--resume``."""
    from eceb_worker.io.objects import ObjectStore
    from eceb_worker.pipeline.making.shards import discard, outputs_of

    made = finished.made
    assert made is not None
    fields: dict[str, str | int] = {
        "report_digest": made.run_digest,
        "executions": made.executions,
        "observations": made.observations,
        "spent_micro_usd": made.spent_micro_usd,
        "possible_micro_usd": made.possible_micro_usd,
    }
    _logger.info("job done: %d observations of %d executions", made.observations, made.executions)
    objects = ObjectStore(message.inputs.endpoint_url)
    if store.update(message.job_id, phase=Phase.DONE.value, **fields):
        discard(objects.delete, made.partials)
    elif _cancelled(store, message.job_id):
        for url in outputs_of(message.out):
            objects.delete(url)


def _registered(store: JobStore, message: JobMessage, finished: Finished) -> None:
    """A registration's end: its registry is written (by the reduce);
    record its digest and figures, then delete the partials. A job
    cancelled meanwhile leaves no registry."""
    registered = finished.registered
    assert registered is not None
    fields: dict[str, str | int] = {
        "report_digest": registered.registry_digest,
        "artifact_count": registered.artifact_count,
        "registered_bytes": registered.size_bytes,
        "corpus_root": registered.corpus_root,
        "reused": registered.reused,
    }
    _logger.info("job done: %d artifacts registered", registered.artifact_count)
    if not store.update(message.job_id, phase=Phase.DONE.value, **fields) and _cancelled(store, message.job_id):
        WORKSPACE.object_store(message.corpus.endpoint_url).delete(message.out)
    _discard_parts(message)


def _discard_parts(message: JobMessage) -> None:
    """Delete a registration's partials, as far as storage lets."""
    from eceb_worker.pipeline.register_job import discard_parts

    discard_parts(WORKSPACE.object_store(message.corpus.endpoint_url).client, message.out, message.job_id)


def _discard_partial(store: JobStore, job_id: str, shard: Any, answer: ShardAnswer) -> None:
    """Delete the partial a registration's shard wrote when its job ended
    meanwhile: cancelled (``eceb-dist cancel`` deletes those written before
    it: between the two, none is left), failed, or done (a copy of the
    shard that ran late: the registry was merged without it)."""
    partial = answer.partial if isinstance(answer, (ListAnswer, HashRangeAnswer)) else ""
    if partial and store.finished(job_id):
        from eceb_worker.errors import OutputError

        with contextlib.suppress(StorageError, OutputError):
            WORKSPACE.object_store(shard.corpus.endpoint_url).delete(partial)


def _cancelled(store: JobStore, job_id: str) -> bool:
    return store.phase(job_id) is Phase.CANCELLED


def coordinate(task: Any, policy: RetryPolicy, message: dict[str, Any]) -> None:
    """``eceb.coordinate``: :meth:`Job.start` (check the inputs, scanning the
    registry as a stream: memory does not grow with its artifacts), then
    publish the re-hash shards."""
    store = JobStore.of(task.app)
    job_id = str(message.get("job_id", "")) if isinstance(message, dict) else ""
    if not store.finished(job_id):
        store.update(job_id, phase=Phase.LOADING.value)
    _step(task, policy, message, COORDINATE, lambda job: job.start())


def run_shard(task: Any, policy: RetryPolicy, message: dict[str, Any]) -> None:
    """A shard task (``eceb.job_rehash_shard``, ``eceb.evaluate_shard``):
    :meth:`Workspace.run` holding the shard's lease; its answer kept (a
    :class:`~eceb_worker.pipeline.messages.ShardFailed` once its retries are
    spent); the last shard of its stage to answer publishes the reduce."""
    shard = with_endpoint(shard_task(message), _own_endpoint())
    index, stage = shard_index(shard), stage_of(shard)
    job_id = getattr(shard, "job_id", "")
    store = JobStore.of(task.app)
    started = time.monotonic()
    answer: ShardAnswer
    with _leased(task, job_id, shard_step(stage.value, index)) as work:
        try:
            check_delivery(task)
            answer = WORKSPACE.run(shard)
        except Exception as exc:
            _retry(task, policy, exc, shard_step(stage.value, index), job_id)
            reason = str(exc) if isinstance(exc, (InputError, StorageError)) else f"{type(exc).__name__}: {exc}"
            answer = ShardFailed(index=index, kind=ErrorKind.of(exc), message=f"{stage.shard_name} {index}: {reason}")
            store.add_failure(job_id, answer.message)
        else:
            store.advance(job_id, stage, index)
        work.answer(job_id, stage.value, index, msgspec.json.encode(answer))
    _discard_partial(store, job_id, shard, answer)
    hashed = answer.verification.bytes_hashed if isinstance(answer, RehashAnswer) else 0
    hashed = answer.bytes_hashed if isinstance(answer, HashRangeAnswer) else hashed
    failed = isinstance(answer, ShardFailed)
    metrics.shard_answered(stage.value, failed=failed, bytes_hashed=hashed, seconds=time.monotonic() - started)
    publish_reduce(work, sender(task.app, policy), job_id, stage.value)


def reduce_stage(task: Any, policy: RetryPolicy, message: dict[str, Any], stage: str) -> None:
    """A reduce step (``eceb.job_verified``, ``eceb.job_finish``, published by
    the last shard of its stage to answer): :meth:`Job.after` over the
    shards' answers kept in Redis, then what follows; the answers are then
    dropped."""
    job_id = str(message.get("job_id", "")) if isinstance(message, dict) else ""
    work = work_of(task.app)

    def after(job: Job) -> MapStage | Finished:
        answers = [_ANSWER.decode(raw) for raw in work.answers(job_id, stage)]
        if job.message.kind is JobKind.REGISTER and stage == Stage.HASH.value:
            JobStore.of(task.app).update(job_id, phase=Phase.WRITING.value)  # the merge writes the registry
        return job.after(Stage(stage), answers)

    _step(task, policy, message, reduce_step(stage), after)
    work.drop_answers(job_id, stage)


_ANSWER: Final = msgspec.json.Decoder(ShardAnswer)


def register_tasks(app: Any, policy: RetryPolicy) -> None:
    """Register every task of a job on ``app``, each with ``policy`` (their
    results are not stored: answers are kept in the job's work), and the
    handler of a revoked shard."""
    options: dict[str, Any] = {
        "shared": False,
        "lazy": False,
        "bind": True,
        "max_retries": policy.max_retries,
        "ignore_result": True,
    }

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
    from celery.signals import task_revoked

    from eceb_worker.cluster.making import lend_making

    lend_making(WORKSPACE, app)

    task_revoked.connect(shard_revoked, weak=False, dispatch_uid="eceb-shard-revoked")
