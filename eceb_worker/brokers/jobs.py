"""Distributed evaluation jobs: one ``eceb evaluate`` run as Celery tasks.

A job is driven inside the cluster, so its submitter may disconnect. No task
waits for another (no ``.get()`` in a task); the job advances by Celery canvas::

    eceb.coordinate           load and check the inputs, plan re-hash shards
      chord(eceb.job_rehash_shard x N)
        -> eceb.job_verified   reduce the verification; plan evaluation shards
             chord(eceb.evaluate_shard x M)
               -> eceb.job_finish   reduce into the report, write it atomically

Messages carry references only: object URLs and their ETags, the corpus's
:class:`~eceb_worker.storage.StorageSpec`, artifact paths and digests, task
index ranges. Workers decode the inputs once per process and version
(:func:`prepared_inputs`, keyed by URL and ETag).

Job state lives in the result backend's Redis, in the hash ``eceb:job:<id>``
(see :class:`JobStore`), and expires :data:`JOB_TTL_S` after its last change.
Shard tasks never raise into a chord: a shard that fails (after its retries,
for storage failures) answers ``{"index": i, "error": "..."}`` and the reduce
step ends the job as failed. A job that fails never writes a report.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any, Final

import msgspec

from eceb_worker.engine.plan import plan_evaluation, plan_rehash
from eceb_worker.engine.report import encode_report
from eceb_worker.engine.run_evaluation import TaskOutcome, evaluate_tasks_of_run
from eceb_worker.engine.verification import DigestCheck, check_digests, reduce_verification, shard_verification
from eceb_worker.errors import InputError, OutputError, Problem, StorageError
from eceb_worker.evaluate import EvaluationInputs, InputReader, evaluation_task_ids, load_inputs, reduce_outcomes
from eceb_worker.storage import StorageSpec, shared_storage

__all__ = [
    "COORDINATE_TASK",
    "EVALUATE_TASK",
    "FINISH_TASK",
    "JOB_REHASH_TASK",
    "JOB_TTL_S",
    "TERMINAL_PHASES",
    "VERIFIED_TASK",
    "EvaluateMessage",
    "JobInputs",
    "JobMessage",
    "JobStore",
    "job_key",
    "prepared_inputs",
    "register_job_tasks",
]

COORDINATE_TASK: Final = "eceb.coordinate"
JOB_REHASH_TASK: Final = "eceb.job_rehash_shard"
VERIFIED_TASK: Final = "eceb.job_verified"
EVALUATE_TASK: Final = "eceb.evaluate_shard"
FINISH_TASK: Final = "eceb.job_finish"
JOB_TTL_S: Final = 7 * 24 * 3600
"""A job's state is kept a week after its last change."""
TERMINAL_PHASES: Final = frozenset({"done", "failed", "cancelled"})
_CACHED_INPUTS: Final = 4


class JobInputs(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Where a job's benchmark and run are (``s3://bucket/key``) and which
    versions were checked: ``etags`` holds ``(url, ETag)`` of every object
    read (the registry included), so workers decode exactly those.
    """

    benchmark: str
    run: str
    endpoint_url: str | None = None
    etags: tuple[tuple[str, str], ...] = ()


class JobMessage(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What ``eceb.coordinate`` (and each reduce step) is sent."""

    job_id: str
    inputs: JobInputs
    corpus: StorageSpec
    out: str
    shard_bytes: Annotated[int, msgspec.Meta(gt=0)]
    shard_observations: Annotated[int, msgspec.Meta(gt=0)]


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
    ``created``/``updated`` (Unix seconds), ``rehash_total``/``rehash_done``,
    ``eval_total``/``eval_done`` (shards), ``coordinator`` (its task id), and
    on failure ``error_kind`` (``input``, ``verification``, ``storage``,
    ``output``, ``internal``), ``error``, ``problems`` (JSON list of
    problems), ``verification`` (the JSON verification report); when done,
    ``passing_tasks``/``total_tasks``. ``eceb:job:<id>:failures`` lists the
    shard failures seen so far. Both expire :data:`JOB_TTL_S` after the last change.
    """

    def __init__(self, client: Any) -> None:
        self.client = client

    def _touch(self, job_id: str, pipe: Any) -> None:
        pipe.hset(job_key(job_id), "updated", str(int(time.time())))
        pipe.expire(job_key(job_id), JOB_TTL_S)
        pipe.expire(f"{job_key(job_id)}:failures", JOB_TTL_S)

    def update(self, job_id: str, **fields: str | int) -> None:
        """Set fields of the job's hash."""
        pipe = self.client.pipeline()
        pipe.hset(job_key(job_id), mapping={name: str(value) for name, value in fields.items()})
        self._touch(job_id, pipe)
        pipe.execute()

    def advance(self, job_id: str, field: str) -> None:
        """Count one more shard done in ``field``."""
        pipe = self.client.pipeline()
        pipe.hincrby(job_key(job_id), field, 1)
        self._touch(job_id, pipe)
        pipe.execute()

    def add_failure(self, job_id: str, text: str) -> None:
        """Record a shard failure."""
        pipe = self.client.pipeline()
        pipe.rpush(f"{job_key(job_id)}:failures", text)
        self._touch(job_id, pipe)
        pipe.execute()

    def get(self, job_id: str) -> dict[str, str] | None:
        """The job's fields, or None for an unknown (or expired) job."""
        raw = self.client.hgetall(job_key(job_id))
        if not raw:
            return None
        return {_text(name): _text(value) for name, value in raw.items()}

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


class _Prepared(msgspec.Struct, frozen=True, kw_only=True):
    inputs: EvaluationInputs
    task_ids: list[str]
    tasks: dict[str, Any]
    artifacts: dict[str, Any]


_PREPARED: dict[JobInputs, _Prepared] = {}


def _remember(refs: JobInputs, inputs: EvaluationInputs) -> _Prepared:
    prepared = _Prepared(
        inputs=inputs,
        task_ids=evaluation_task_ids(inputs),
        tasks={t.task_id: t for t in inputs.benchmark.tasks},
        artifacts={a.artifact_id: a for a in inputs.registry.artifacts},
    )
    while len(_PREPARED) >= _CACHED_INPUTS:
        del _PREPARED[next(iter(_PREPARED))]
    _PREPARED[refs] = prepared
    return prepared


def prepared_inputs(refs: JobInputs) -> _Prepared:
    """The decoded, checked inputs ``refs`` names, decoded once per process
    and version (URL and ETag). Raises :class:`InputError` (including when an
    object changed since the coordinator read it) or ``StorageError``.
    """
    cached = _PREPARED.get(refs)
    if cached is not None:
        return cached
    reader = InputReader(refs.endpoint_url, expected=dict(refs.etags))
    return _remember(refs, load_inputs(refs.benchmark, refs.run, reader))


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
            store.advance(job_id, "rehash_done" if what == "re-hash shard" else "eval_done")
        return answer
    if job_id is not None:
        store.add_failure(job_id, error)
    return {"index": index, "error": error}


def _chord(app: Any, header: list[Any], callback: Any) -> None:
    """Start ``header`` then ``callback`` with their results (at once when empty)."""
    if not header:
        callback.apply_async(args=([],))
        return
    from celery import chord

    chord(header, app=app)(callback)


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
    """``eceb.coordinate``: load and check the inputs, plan and start the re-hash."""
    job = msgspec.convert(message, JobMessage)
    store = JobStore(task.app.backend.client)
    if store.finished(job.job_id):
        return
    store.update(job.job_id, phase="loading")
    try:
        reader = InputReader(job.inputs.endpoint_url)
        inputs = load_inputs(job.inputs.benchmark, job.inputs.run, reader)
        refs = msgspec.structs.replace(job.inputs, etags=tuple(sorted(reader.etags.items())))
        _remember(refs, inputs)
        job = msgspec.structs.replace(job, inputs=refs)
        artifacts = inputs.registry.artifacts
        shards = plan_rehash([a.size_bytes for a in artifacts], shard_bytes=job.shard_bytes)
        from eceb_worker.brokers.celery_app import RehashMessage

        header = [
            task.app.signature(
                JOB_REHASH_TASK,
                args=(
                    job.job_id,
                    shard.index,
                    msgspec.to_builtins(
                        RehashMessage(
                            spec=job.corpus,
                            start=shard.start,
                            paths=[a.path for a in artifacts[shard.start : shard.end]],
                            digests=[a.source_digest for a in artifacts[shard.start : shard.end]],
                        )
                    ),
                ),
            )
            for shard in shards
        ]
        store.update(job.job_id, phase="verifying", rehash_total=len(shards), rehash_done=0)
        _chord(task.app, header, task.app.signature(VERIFIED_TASK, args=(msgspec.to_builtins(job),)))
    except Exception as exc:
        _fail_from(store, job.job_id, exc)


def job_rehash_shard(task: Any, job_id: str, index: int, message: dict[str, Any]) -> dict[str, Any]:
    """``eceb.job_rehash_shard``: :func:`check_digests` of one shard, as JSON builtins."""
    from eceb_worker.brokers.celery_app import RehashMessage

    def body() -> Any:
        shard = msgspec.convert(message, RehashMessage)
        storage = shared_storage(shard.spec)
        return msgspec.to_builtins(check_digests(storage, shard.paths, shard.digests, threads=storage.concurrency))

    return _guarded(task, job_id, index, "re-hash shard", body)


def job_verified(task: Any, results: list[dict[str, Any]], message: dict[str, Any]) -> None:
    """``eceb.job_verified``: reduce the verification; fail the job or start the evaluation."""
    job = msgspec.convert(message, JobMessage)
    store = JobStore(task.app.backend.client)
    if store.finished(job.job_id):
        return
    try:
        prepared = prepared_inputs(job.inputs)
        artifacts = prepared.inputs.registry.artifacts
        shards = plan_rehash([a.size_bytes for a in artifacts], shard_bytes=job.shard_bytes)
        answers, error = _answers(results, len(shards), "re-hash shard")
        if error is not None:
            store.fail(job.job_id, "storage", error)
            return
        checks = {index: msgspec.convert(answer, DigestCheck) for index, answer in answers.items()}
        verification = reduce_verification(
            (shard_verification(artifacts[s.start : s.end], checks[s.index], start=s.start) for s in shards),
            corpus_root=prepared.inputs.registry.corpus_root,
            artifact_count=len(artifacts),
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
        run = prepared.inputs.run
        counts = [len(run.observations.get(task_id, ())) for task_id in prepared.task_ids]
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
        store.update(job.job_id, phase="evaluating", eval_total=len(plan), eval_done=0)
        callback = task.app.signature(FINISH_TASK, args=(msgspec.to_builtins(job), verification.verified_count))
        _chord(task.app, header, callback)
    except Exception as exc:
        _fail_from(store, job.job_id, exc)


def evaluate_shard(task: Any, message: dict[str, Any]) -> dict[str, Any]:
    """``eceb.evaluate_shard``: :func:`evaluate_tasks_of_run` over a range of
    task ids; ``{"index", "ok": [TaskOutcome as JSON builtins, ...]}``."""
    shard = msgspec.convert(message, EvaluateMessage)

    def body() -> Any:
        prepared = prepared_inputs(shard.inputs)
        outcomes = evaluate_tasks_of_run(
            prepared.task_ids[shard.start : shard.end], prepared.inputs.run, prepared.tasks, prepared.artifacts
        )
        return msgspec.to_builtins(outcomes)

    return _guarded(task, shard.job_id, shard.index, "evaluation shard", body)


def job_finish(task: Any, results: list[dict[str, Any]], message: dict[str, Any], artifact_count: int) -> None:
    """``eceb.job_finish``: reduce the outcomes into the report and write it atomically."""
    job = msgspec.convert(message, JobMessage)
    store = JobStore(task.app.backend.client)
    if store.finished(job.job_id):
        return
    try:
        prepared = prepared_inputs(job.inputs)
        total = int((store.get(job.job_id) or {}).get("eval_total", len(results)))
        answers, error = _answers(results, total, "evaluation shard")
        if error is not None:
            store.fail(job.job_id, "storage", error)
            return
        outcomes = [
            outcome for index in sorted(answers) for outcome in msgspec.convert(answers[index], list[TaskOutcome])
        ]
        report = reduce_outcomes(prepared.inputs, outcomes, artifact_count)
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
