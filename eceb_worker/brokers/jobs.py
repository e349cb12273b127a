"""Distributed evaluation jobs: one ``eceb evaluate`` run as Celery tasks.

A job is driven inside the cluster, so its submitter may disconnect. No task
waits for another (no ``.get()`` in a task); the job advances by Celery canvas::

    eceb.coordinate           check the inputs, scanning the registry as a stream;
                              plan re-hash shards (byte ranges of the registry file)
      chord(eceb.job_rehash_shard x N)
                              read and decode its range, re-hash, find the failures
        -> eceb.job_verified   reduce the verification; plan evaluation shards
             chord(eceb.evaluate_shard x M)
               -> eceb.job_finish   reduce into the report, write it atomically

Messages carry references only: object URLs and their ETags, the corpus's
:class:`~eceb_worker.storage.StorageSpec`, byte ranges of the registry,
task index ranges. The coordinating steps never hold the registry's
artifacts: ``eceb.coordinate`` scans it
(:func:`~eceb_worker.inputs.scan_inputs`) and passes on its corpus root,
artifact count and plan size (:class:`~eceb_worker.brokers.job_messages.RegistryRef`); each re-hash shard
decodes its own lines and answers its findings. Workers decode the
benchmark and run once per process and version (keyed by URL and ETag), and
an evaluation shard's process keeps only the artifacts the run and the
benchmark refer to (:func:`~eceb_worker.inputs.load_referenced_artifacts`).

Job state lives in the result backend's Redis, in the hash ``eceb:job:<id>``
(see :class:`~eceb_worker.brokers.job_state.JobStore`). The messages are in
:mod:`eceb_worker.brokers.job_messages`.
Shard tasks never raise into a chord: a shard that fails (after its retries,
for storage failures) answers ``{"index": i, "error": "..."}`` and the reduce
step ends the job as failed. A shard task that ends some other way (revoked,
or lost beyond what redelivery covers) fails the chord; its error callback,
``eceb.job_shard_lost``, ends the job as failed. A job that fails never
writes a report.

Delivery is at least once, so every step is idempotent: the chord counts a
task id once, the job counts a shard index once (:meth:`~eceb_worker.brokers.job_state.JobStore.advance`),
and a step of a job that has ended does nothing.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from typing import Any, Final

import msgspec

from eceb_worker.brokers.deliveries import check_delivery
from eceb_worker.brokers.job_messages import EvaluateMessage, JobInputs, JobMessage, JobRehashMessage, RegistryRef
from eceb_worker.brokers.job_state import JobStore
from eceb_worker.engine.artifacts import Artifact
from eceb_worker.engine.benchmark import Benchmark, Task
from eceb_worker.engine.plan import plan_evaluation
from eceb_worker.engine.registry_scan import registry_range_artifacts
from eceb_worker.engine.report import encode_report
from eceb_worker.engine.run_evaluation import TaskOutcome, evaluate_tasks_of_run
from eceb_worker.engine.run_stream import IndexedRun
from eceb_worker.engine.verification import ShardVerification, check_digests, reduce_verification, shard_verification
from eceb_worker.errors import InputError, OutputError, Problem, ShardLostError, StorageError
from eceb_worker.evaluate import evaluation_task_ids, reduce_outcomes
from eceb_worker.inputs import InputReader, RunInputs, load_benchmark, load_referenced_artifacts, load_run, scan_inputs
from eceb_worker.storage import shared_storage

__all__ = [
    "COORDINATE_TASK",
    "EVALUATE_TASK",
    "FINISH_TASK",
    "JOB_REHASH_TASK",
    "SHARD_LOST_TASK",
    "VERIFIED_TASK",
    "register_job_tasks",
]

COORDINATE_TASK: Final = "eceb.coordinate"
JOB_REHASH_TASK: Final = "eceb.job_rehash_shard"
VERIFIED_TASK: Final = "eceb.job_verified"
EVALUATE_TASK: Final = "eceb.evaluate_shard"
FINISH_TASK: Final = "eceb.job_finish"
SHARD_LOST_TASK: Final = "eceb.job_shard_lost"
_CACHED_INPUTS: Final = 4
_CAUSE_LOOKUPS: Final = 5


def _evict(cache: dict[Any, Any]) -> None:
    while len(cache) >= _CACHED_INPUTS:
        del cache[next(iter(cache))]


class _RunPrepared(msgspec.Struct, frozen=True, kw_only=True):
    """A job's benchmark and run, decoded (checked by ``eceb.coordinate``)."""

    benchmark: Benchmark
    run: IndexedRun
    task_ids: list[str]
    tasks: dict[str, Task]


_RUNS: dict[JobInputs, _RunPrepared] = {}
_REFERENCED: dict[JobInputs, dict[str, Artifact]] = {}
_OBJECT_STORES: dict[str | None, Any] = {}


def _reader(endpoint_url: str | None, etags: tuple[tuple[str, str], ...] = ()) -> InputReader:
    """A reader of a job's inputs, pinned to the versions ``etags`` names
    (``(url, ETag)`` pairs), sharing one S3 client per endpoint in this process."""
    store = _OBJECT_STORES.get(endpoint_url)
    if store is None:
        from eceb_worker.storage.objects import ObjectStore

        store = _OBJECT_STORES[endpoint_url] = ObjectStore(endpoint_url)
    return InputReader(endpoint_url, expected=dict(etags), store=store)


def _remember_run(refs: JobInputs, benchmark: Benchmark, run: IndexedRun) -> _RunPrepared:
    prepared = _RunPrepared(benchmark=benchmark, run=run, task_ids=[], tasks={t.task_id: t for t in benchmark.tasks})
    prepared = msgspec.structs.replace(prepared, task_ids=evaluation_task_ids(prepared))
    _evict(_RUNS)
    _RUNS[refs] = prepared
    return prepared


def _run_prepared(refs: JobInputs) -> _RunPrepared:
    """The job's benchmark and run (decoded once per process and version);
    no registry. Raises :class:`InputError` (an object changed since the
    coordinator checked it) or ``StorageError``."""
    cached = _RUNS.get(refs)
    if cached is not None:
        return cached
    reader = _reader(refs.endpoint_url, refs.etags)
    return _remember_run(refs, load_benchmark(refs.benchmark, reader), load_run(refs.run, reader))


def _referenced(refs: JobInputs) -> tuple[_RunPrepared, dict[str, Artifact]]:
    """The job's benchmark and run, and the registry's artifacts they refer
    to (read once per process and version; never the whole registry)."""
    prepared = _run_prepared(refs)
    artifacts = _REFERENCED.get(refs)
    if artifacts is None:
        artifacts = load_referenced_artifacts(refs.benchmark, prepared, _reader(refs.endpoint_url, refs.etags))
        _evict(_REFERENCED)
        _REFERENCED[refs] = artifacts
    return prepared, artifacts


def _problems_json(problems: list[Problem]) -> str:
    return msgspec.json.encode(problems).decode()


def _fail_from(store: JobStore, job_id: str, exc: BaseException) -> None:
    """End the job as failed with ``exc``'s reason and kind."""
    if isinstance(exc, InputError):
        store.fail(job_id, "input", str(exc), problems=_problems_json(exc.problems))
    elif isinstance(exc, OutputError):
        store.fail(job_id, "output", str(exc))
    elif isinstance(exc, StorageError):
        store.fail(job_id, "storage", str(exc))
    else:
        store.fail(job_id, "internal", f"{type(exc).__name__}: {exc}")


def _guarded(task: Any, job_id: str | None, index: int, what: str, body: Callable[[], Any]) -> dict[str, Any]:
    """Run a shard's body; ``{"index", "ok"}`` or, once retries are spent,
    ``{"index", "error"}`` (never an exception into the chord)."""
    store = JobStore(task.app.backend.client)
    if job_id is not None and store.finished(job_id):
        return {"index": index, "error": "the job has ended"}
    try:
        check_delivery(task)
        answer = {"index": index, "ok": body()}
    except ShardLostError as exc:
        error = f"{what} {index}: {exc}"
    except StorageError as exc:
        if task.request.retries < task.max_retries:
            raise task.retry(exc=exc, countdown=min(60, 2**task.request.retries)) from None
        error = f"{what} {index}: {exc}"
    except Exception as exc:
        error = f"{what} {index}: {exc if isinstance(exc, InputError) else f'{type(exc).__name__}: {exc}'}"
    else:
        if job_id is not None:
            store.advance(job_id, "rehash_done" if what == "re-hash shard" else "eval_done", index)
        return answer
    if job_id is not None:
        store.add_failure(job_id, error)
    return {"index": index, "error": error}


def _chord(app: Any, job_id: str, header: list[Any], callback: Any) -> None:
    """Start ``header`` then ``callback`` with their results (at once when
    empty); if a header task fails the chord, ``eceb.job_shard_lost`` ends the job."""
    if not header:
        callback.apply_async(args=([],))
        return
    from celery import chord

    callback.on_error(app.signature(SHARD_LOST_TASK, args=(job_id,)))
    chord(header, app=app)(callback)


def job_shard_lost(task: Any, failed_task_id: str, job_id: str) -> None:
    """``eceb.job_shard_lost``: a chord's error callback (Celery puts the id of
    the failed task first). A shard's task ended without an answer (revoked,
    or its process lost for good): end the job as failed, naming the cause
    Celery recorded (it may be stored just after this callback is sent: it is
    looked for again, :data:`_CAUSE_LOOKUPS` times a second)."""
    reason = task.app.AsyncResult(failed_task_id).result
    if reason is None and task.request.retries < _CAUSE_LOOKUPS:
        raise task.retry(countdown=1, max_retries=_CAUSE_LOOKUPS)
    JobStore(task.app.backend.client).fail(
        job_id,
        "storage",
        f"a shard ended without an answer ({reason or 'revoked or lost'}); submit the job again",
    )


def _answers(results: list[dict[str, Any]], total: int, what: str) -> tuple[dict[int, Any], str | None]:
    """Each shard's answer by index (a shard answered twice counts once), and
    the reason to fail the job, if any: a failed shard, or a shard missing."""
    errors = [str(r["error"]) for r in results if "error" in r]
    if errors:
        return {}, f"{len(errors)} of {total} {what}s failed; first: {errors[0]}"
    answers: dict[int, Any] = {}
    for r in results:
        answers.setdefault(int(r["index"]), r["ok"])
    if sorted(answers) != list(range(total)):
        return {}, f"{what} results do not cover the plan ({len(answers)} of {total} answered)"
    return answers, None


def coordinate(task: Any, message: dict[str, Any]) -> None:
    """``eceb.coordinate``: check the inputs, scanning the registry as a
    stream (:func:`~eceb_worker.inputs.scan_inputs`: memory does not grow
    with its artifacts); plan the re-hash as byte ranges of the registry and
    start it."""
    job = msgspec.convert(message, JobMessage)
    store = JobStore(task.app.backend.client)
    if store.finished(job.job_id):
        return
    store.update(job.job_id, phase="loading")
    try:
        check_delivery(task)
        reader = _reader(job.inputs.endpoint_url)
        with tempfile.TemporaryDirectory(prefix="eceb-coordinate-") as spill:
            scanned = scan_inputs(
                job.inputs.benchmark, job.inputs.run, reader, shard_bytes=job.shard_bytes, spill_dir=spill
            )
        refs = msgspec.structs.replace(job.inputs, etags=tuple(sorted(reader.etags.items())))
        _remember_run(refs, scanned.benchmark, scanned.run)
        scan = scanned.registry
        registry = RegistryRef(
            location=scanned.registry_location,
            etag=reader.etags.get(scanned.registry_location, ""),
            corpus_root=scan.corpus_root,
            artifact_count=scan.artifact_count,
            rehash_shards=len(scan.shards),
        )
        job = msgspec.structs.replace(job, inputs=refs, registry=registry)
        header = [
            task.app.signature(
                JOB_REHASH_TASK,
                args=(
                    job.job_id,
                    shard.index,
                    msgspec.to_builtins(JobRehashMessage.for_shard(job.corpus, registry, shard, refs.endpoint_url)),
                ),
            )
            for shard in scan.shards
        ]
        store.update(job.job_id, phase="verifying", rehash_total=len(header))
        _chord(task.app, job.job_id, header, task.app.signature(VERIFIED_TASK, args=(msgspec.to_builtins(job),)))
    except Exception as exc:
        _fail_from(store, job.job_id, exc)


def job_rehash_shard(task: Any, job_id: str, index: int, message: dict[str, Any]) -> dict[str, Any]:
    """``eceb.job_rehash_shard``: read the shard's lines of the registry (one
    ranged read, pinned to the version checked), decode them, re-hash their
    artifacts (:func:`check_digests`) and answer the shard's
    :class:`~eceb_worker.engine.verification.ShardVerification` (counts and
    findings only) as JSON builtins."""

    def body() -> Any:
        shard = msgspec.convert(message, JobRehashMessage)
        reader = _reader(shard.endpoint_url, ((shard.registry, shard.etag),) if shard.etag else ())
        data = reader.read_range(shard.registry, shard.byte_start, shard.byte_end)
        artifacts = registry_range_artifacts(
            data, start=shard.start, count=shard.count, first_path=shard.first_path, name=shard.registry
        )
        del data
        storage = shared_storage(shard.spec)
        checked = check_digests(
            storage, [a.path for a in artifacts], [a.source_digest for a in artifacts], threads=storage.concurrency
        )
        return msgspec.to_builtins(shard_verification(artifacts, checked, start=shard.start))

    return _guarded(task, job_id, index, "re-hash shard", body)


def _registry(job: JobMessage) -> RegistryRef:
    if job.registry is None:
        raise ValueError("the job's message names no checked registry (sent by an older eceb.coordinate?)")
    return job.registry


def job_verified(task: Any, results: list[dict[str, Any]], message: dict[str, Any]) -> None:
    """``eceb.job_verified``: reduce the shards' verifications (counts and
    findings: no artifact list); fail the job, or plan and start the evaluation."""
    job = msgspec.convert(message, JobMessage)
    store = JobStore(task.app.backend.client)
    if store.finished(job.job_id):
        return
    try:
        check_delivery(task)
        registry = _registry(job)
        answers, error = _answers(results, registry.rehash_shards, "re-hash shard")
        if error is not None:
            store.fail(job.job_id, "storage", error)
            return
        verification = reduce_verification(
            (msgspec.convert(answer, ShardVerification) for answer in answers.values()),
            corpus_root=registry.corpus_root,
            artifact_count=registry.artifact_count,
            source=shared_storage(job.corpus).location,
        )
        if not verification.ok:
            store.fail(
                job.job_id,
                "verification",
                f"corpus verification failed: {len(verification.findings)} of {verification.artifact_count} "
                "artifacts do not match the registry",
                verification=msgspec.json.encode(verification).decode(),
            )
            return
        prepared = _run_prepared(job.inputs)
        counts = [len(prepared.run.observations.get(task_id, ())) for task_id in prepared.task_ids]
        plan = plan_evaluation(counts, shard_observations=job.shard_observations)
        header = [
            task.app.signature(
                EVALUATE_TASK,
                args=(
                    msgspec.to_builtins(
                        EvaluateMessage(
                            inputs=job.inputs, index=shard.index, start=shard.start, end=shard.end, job_id=job.job_id
                        )
                    ),
                ),
            )
            for shard in plan
        ]
        store.update(job.job_id, phase="evaluating", eval_total=len(plan))
        callback = task.app.signature(FINISH_TASK, args=(msgspec.to_builtins(job), verification.verified_count))
        _chord(task.app, job.job_id, header, callback)
    except Exception as exc:
        _fail_from(store, job.job_id, exc)


def evaluate_shard(task: Any, message: dict[str, Any]) -> dict[str, Any]:
    """``eceb.evaluate_shard``: :func:`evaluate_tasks_of_run` over a range of
    task ids, with the registry's artifacts the run and benchmark refer to;
    ``{"index", "ok": [TaskOutcome as JSON builtins, ...]}``."""
    shard = msgspec.convert(message, EvaluateMessage)

    def body() -> Any:
        prepared, artifacts = _referenced(shard.inputs)
        outcomes = evaluate_tasks_of_run(
            prepared.task_ids[shard.start : shard.end], prepared.run, prepared.tasks, artifacts
        )
        return msgspec.to_builtins(outcomes)

    return _guarded(task, shard.job_id, shard.index, "evaluation shard", body)


def job_finish(task: Any, results: list[dict[str, Any]], message: dict[str, Any], artifact_count: int) -> None:
    """``eceb.job_finish``: reduce the outcomes into the report (with the
    registry's corpus root: no artifact list) and write it atomically."""
    job = msgspec.convert(message, JobMessage)
    store = JobStore(task.app.backend.client)
    if store.finished(job.job_id):
        return
    try:
        check_delivery(task)
        registry = _registry(job)
        prepared = _run_prepared(job.inputs)
        total = int((store.get(job.job_id) or {}).get("eval_total", len(results)))
        answers, error = _answers(results, total, "evaluation shard")
        if error is not None:
            store.fail(job.job_id, "storage", error)
            return
        outcomes = [
            outcome for index in sorted(answers) for outcome in msgspec.convert(answers[index], list[TaskOutcome])
        ]
        inputs = RunInputs(benchmark=prepared.benchmark, run=prepared.run, corpus_root=registry.corpus_root)
        report = reduce_outcomes(inputs, outcomes, artifact_count)
        data = encode_report(report)
        if not store.update(job.job_id, phase="writing"):
            return  # cancelled meanwhile
        from eceb_worker.storage.objects import ObjectStore

        objects = ObjectStore(job.inputs.endpoint_url)
        objects.put_atomic(job.out, data)
        done = store.update(
            job.job_id,
            phase="done",
            passing_tasks=report.summary.passing_tasks,
            total_tasks=report.summary.total_tasks,
            report_digest=_digest(data),
        )
        if not done:  # cancelled while the report was written: a cancelled job leaves no report
            objects.delete(job.out)
    except Exception as exc:
        _fail_from(store, job.job_id, exc)


def _digest(data: bytes) -> str:
    from blake3 import blake3

    return str(blake3(data).hexdigest())


def register_job_tasks(app: Any, *, max_retries: int) -> None:
    """Register the job tasks on ``app``."""
    options: dict[str, Any] = {"shared": False, "lazy": False, "bind": True}
    app.task(name=COORDINATE_TASK, **options)(coordinate)
    app.task(name=JOB_REHASH_TASK, max_retries=max_retries, **options)(job_rehash_shard)
    app.task(name=VERIFIED_TASK, **options)(job_verified)
    app.task(name=EVALUATE_TASK, max_retries=max_retries, **options)(evaluate_shard)
    app.task(name=FINISH_TASK, **options)(job_finish)
    app.task(name=SHARD_LOST_TASK, **options)(job_shard_lost)
