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
(:func:`~eceb_worker.evaluate.scan_inputs`) and passes on its corpus root,
artifact count and plan size (:class:`RegistryRef`); each re-hash shard
decodes its own lines and answers its findings. Workers decode the
benchmark and run once per process and version (keyed by URL and ETag), and
an evaluation shard's process keeps only the artifacts the run and the
benchmark refer to (:func:`~eceb_worker.evaluate.load_referenced_artifacts`).

Job state lives in the result backend's Redis, in the hash ``eceb:job:<id>``
(see :class:`JobStore`), and expires :data:`JOB_TTL_S` after its last change.
Shard tasks never raise into a chord: a shard that fails (after its retries,
for storage failures) answers ``{"index": i, "error": "..."}`` and the reduce
step ends the job as failed. A shard task that ends some other way (revoked,
or lost beyond what redelivery covers) fails the chord; its error callback,
``eceb.job_shard_lost``, ends the job as failed. A job that fails never
writes a report.

Delivery is at least once, so every step is idempotent: the chord counts a
task id once, the job counts a shard index once (:meth:`JobStore.advance`),
and a step of a job that has ended does nothing.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from typing import Annotated, Any, Final

import msgspec

from eceb_worker.engine.artifacts import Artifact
from eceb_worker.engine.benchmark import Benchmark, Task
from eceb_worker.engine.plan import plan_evaluation
from eceb_worker.engine.registry_scan import registry_range_artifacts
from eceb_worker.engine.report import encode_report
from eceb_worker.engine.run_evaluation import TaskOutcome, evaluate_tasks_of_run
from eceb_worker.engine.run_stream import IndexedRun
from eceb_worker.engine.verification import ShardVerification, check_digests, reduce_verification, shard_verification
from eceb_worker.errors import InputError, OutputError, Problem, StorageError
from eceb_worker.evaluate import (
    InputReader,
    RunInputs,
    evaluation_task_ids,
    load_benchmark,
    load_referenced_artifacts,
    load_run,
    reduce_outcomes,
    scan_inputs,
)
from eceb_worker.storage import StorageSpec, shared_storage

__all__ = [
    "COORDINATE_TASK",
    "EVALUATE_TASK",
    "FINISH_TASK",
    "JOB_REHASH_TASK",
    "JOB_TTL_S",
    "SHARD_LOST_TASK",
    "TERMINAL_PHASES",
    "VERIFIED_TASK",
    "EvaluateMessage",
    "JobInputs",
    "JobMessage",
    "JobRehashMessage",
    "JobStore",
    "RegistryRef",
    "job_key",
    "register_job_tasks",
]

COORDINATE_TASK: Final = "eceb.coordinate"
JOB_REHASH_TASK: Final = "eceb.job_rehash_shard"
VERIFIED_TASK: Final = "eceb.job_verified"
EVALUATE_TASK: Final = "eceb.evaluate_shard"
FINISH_TASK: Final = "eceb.job_finish"
SHARD_LOST_TASK: Final = "eceb.job_shard_lost"
JOB_TTL_S: Final = 7 * 24 * 3600
"""A job's state is kept a week after its last change."""
TERMINAL_PHASES: Final = frozenset({"done", "failed", "cancelled"})
_CACHED_INPUTS: Final = 4
_CAUSE_LOOKUPS: Final = 5
_DONE_FIELDS: Final = ("rehash_done", "eval_done")
_LISTS: Final = ("failures", *_DONE_FIELDS)


class JobInputs(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Where a job's benchmark and run are (``s3://bucket/key``) and which
    versions were checked: ``etags`` holds ``(url, ETag)`` of every object
    read (the registry included), so workers decode exactly those.
    """

    benchmark: str
    run: str
    endpoint_url: str | None = None
    etags: tuple[tuple[str, str], ...] = ()


class RegistryRef(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The registry a job checked (ECEB-0.1 §5), as ``eceb.coordinate`` found it.

    Fields:
        location: where it is (``s3://bucket/key``, or a path every worker sees).
        etag: the version checked (``""`` for a local file).
        corpus_root: its corpus root, 64 lowercase hex characters.
        artifact_count: how many artifacts it lists.
        rehash_shards: how many re-hash shards were planned over it.
    """

    location: str
    etag: str = ""
    corpus_root: str
    artifact_count: Annotated[int, msgspec.Meta(ge=0)]
    rehash_shards: Annotated[int, msgspec.Meta(ge=0)]


class JobMessage(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What ``eceb.coordinate`` (and each reduce step) is sent; ``registry``
    is set by ``eceb.coordinate`` for the steps after it."""

    job_id: str
    inputs: JobInputs
    corpus: StorageSpec
    out: str
    shard_bytes: Annotated[int, msgspec.Meta(gt=0)]
    shard_observations: Annotated[int, msgspec.Meta(gt=0)]
    registry: RegistryRef | None = None


class JobRehashMessage(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What an ``eceb.job_rehash_shard`` task is sent: a re-hash shard
    (ECEB-0.1 §5) by reference (:class:`~eceb_worker.engine.registry_scan.RegistryShard`).

    Fields:
        spec: where the corpus is.
        registry, endpoint_url, etag: the registry object (or local path) and
            the version the job checked.
        byte_start, byte_end: the shard's lines, ``[byte_start, byte_end)`` of the registry file.
        start: ordinal of the shard's first artifact (file order); ``count``: its artifacts.
        first_path: the first artifact's path (names the shard in logs;
            checked against what the range holds).
    """

    spec: StorageSpec
    registry: str
    endpoint_url: str | None = None
    etag: str = ""
    byte_start: Annotated[int, msgspec.Meta(ge=0)]
    byte_end: Annotated[int, msgspec.Meta(ge=0)]
    start: Annotated[int, msgspec.Meta(ge=0)]
    count: Annotated[int, msgspec.Meta(gt=0)]
    first_path: str


class EvaluateMessage(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What an ``eceb.evaluate_shard`` task is sent: the inputs and a range
    ``start..end`` of the sorted task ids (:func:`evaluation_task_ids`).
    """

    inputs: JobInputs
    index: Annotated[int, msgspec.Meta(ge=0)]
    start: Annotated[int, msgspec.Meta(ge=0)]
    end: Annotated[int, msgspec.Meta(ge=0)]
    job_id: str | None = None


def job_key(job_id: str) -> str:
    """The Redis hash holding a job's state."""
    return f"eceb:job:{job_id}"


class JobStore:
    """A job's state in Redis.

    ``eceb:job:<id>`` is a hash of strings: ``phase`` (``queued``,
    ``loading``, ``verifying``, ``evaluating``, ``writing``, then ``done``,
    ``failed`` or ``cancelled``), ``benchmark``, ``run``, ``corpus``, ``out``,
    ``created``/``updated`` (Unix seconds), ``rehash_total`` and
    ``eval_total`` (shards planned), ``coordinator`` (its task id), and
    on failure ``error_kind`` (``input``, ``verification``, ``storage``,
    ``output``, ``internal``), ``error``, ``problems`` (JSON list of
    problems), ``verification`` (the JSON verification report); when done,
    ``passing_tasks``/``total_tasks``. ``eceb:job:<id>:failures`` lists the
    shard failures seen so far; the sets ``eceb:job:<id>:rehash_done`` and
    ``eceb:job:<id>:eval_done`` hold the indexes of the shards done, so a
    shard delivered twice counts once (:meth:`get` reports their sizes as
    the fields ``rehash_done`` and ``eval_done``). All expire
    :data:`JOB_TTL_S` after the last change.
    """

    def __init__(self, client: Any) -> None:
        self.client = client

    def _touch(self, job_id: str, pipe: Any) -> None:
        pipe.hset(job_key(job_id), "updated", str(int(time.time())))
        pipe.expire(job_key(job_id), JOB_TTL_S)
        for suffix in _LISTS:
            pipe.expire(f"{job_key(job_id)}:{suffix}", JOB_TTL_S)

    def update(self, job_id: str, **fields: str | int) -> None:
        """Set fields of the job's hash."""
        pipe = self.client.pipeline()
        pipe.hset(job_key(job_id), mapping={name: str(value) for name, value in fields.items()})
        self._touch(job_id, pipe)
        pipe.execute()

    def advance(self, job_id: str, field: str, index: int) -> None:
        """Count shard ``index`` done in ``field`` (``rehash_done`` or
        ``eval_done``); counting it again changes nothing."""
        pipe = self.client.pipeline()
        pipe.sadd(f"{job_key(job_id)}:{field}", index)
        self._touch(job_id, pipe)
        pipe.execute()

    def add_failure(self, job_id: str, text: str) -> None:
        """Record a shard failure."""
        pipe = self.client.pipeline()
        pipe.rpush(f"{job_key(job_id)}:failures", text)
        self._touch(job_id, pipe)
        pipe.execute()

    def get(self, job_id: str) -> dict[str, str] | None:
        """The job's fields, or None for an unknown, expired or lost job."""
        pipe = self.client.pipeline()
        pipe.hgetall(job_key(job_id))
        for field in _DONE_FIELDS:
            pipe.scard(f"{job_key(job_id)}:{field}")
        raw, *done = pipe.execute()
        if b"phase" not in raw and "phase" not in raw:
            # Unknown, expired, or lost (what a shard still running wrote
            # after Redis lost its data holds no phase).
            return None
        state = {_text(name): _text(value) for name, value in raw.items()}
        state.update((field, str(count)) for field, count in zip(_DONE_FIELDS, done, strict=True))
        return state

    def failures(self, job_id: str) -> list[str]:
        """Shard failures seen so far."""
        return [_text(item) for item in self.client.lrange(f"{job_key(job_id)}:failures", 0, -1)]

    def finished(self, job_id: str) -> bool:
        """True when the job is done, failed or cancelled (or unknown)."""
        phase = self.client.hget(job_key(job_id), "phase")
        return phase is None or _text(phase) in TERMINAL_PHASES

    def fail(self, job_id: str, kind: str, error: str, **fields: str) -> None:
        """End the job as failed (unless it already ended)."""
        if not self.finished(job_id):
            self.update(job_id, phase="failed", error_kind=kind, error=error, **fields)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


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
        answer = {"index": index, "ok": body()}
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
    stream (:func:`~eceb_worker.evaluate.scan_inputs`: memory does not grow
    with its artifacts); plan the re-hash as byte ranges of the registry and
    start it."""
    job = msgspec.convert(message, JobMessage)
    store = JobStore(task.app.backend.client)
    if store.finished(job.job_id):
        return
    store.update(job.job_id, phase="loading")
    try:
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
                    msgspec.to_builtins(
                        JobRehashMessage(
                            spec=job.corpus,
                            registry=registry.location,
                            endpoint_url=refs.endpoint_url,
                            etag=registry.etag,
                            byte_start=shard.byte_start,
                            byte_end=shard.byte_end,
                            start=shard.start,
                            count=shard.end - shard.start,
                            first_path=shard.first_path,
                        )
                    ),
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
        store.update(job.job_id, phase="writing")
        from eceb_worker.storage.objects import ObjectStore

        if store.finished(job.job_id):  # cancelled meanwhile
            return
        ObjectStore(job.inputs.endpoint_url).put_atomic(job.out, data)
        store.update(
            job.job_id,
            phase="done",
            passing_tasks=report.summary.passing_tasks,
            total_tasks=report.summary.total_tasks,
            report_digest=_digest(data),
        )
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
