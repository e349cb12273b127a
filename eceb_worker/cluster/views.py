"""A job's state as ``eceb-dist status --json`` and ``eceb-dist jobs``
show it: frozen Structs made from its record
(:class:`~eceb_worker.cluster.state.JobRecord`, as
:class:`~eceb_worker.cluster.state.JobStore` reads it), and their text. Pure: the
time now is an argument, in whole Unix seconds, and every figure is an
integer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Final, Literal

import msgspec

from eceb_worker.cluster.state import TERMINAL_PHASES, JobRecord
from eceb_worker.cluster.steps import COORDINATE, Progress, Step, step_stage
from eceb_worker.pipeline.messages import Stage

__all__ = [
    "JobStatus",
    "JobSummary",
    "StepState",
    "age_text",
    "job_status",
    "job_summary",
    "jobs_lines",
    "progress_text",
    "rfc3339",
    "step_name",
    "waiting_lines",
    "waiting_steps",
]

SHOWN_STEPS: Final = 100
"""The unfinished steps a status lists (the rest are counted)."""


class JobSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One job, as ``eceb-dist jobs --json`` lists it.

    Fields:
        job_id: its id (32 hex characters).
        kind: ``evaluate`` (``eceb-dist submit``), ``verify``, ``make``
            (``eceb-dist run``) or ``register``.
        phase: where it stands (``queued``, ``loading``, ``verifying``,
            ``evaluating``, ``making``, ``listing``, ``hashing``,
            ``writing``, ``done``, ``failed``, ``cancelled``).
        started_at: when it was submitted (its clock starts when it is
            queued), RFC 3339 UTC (``2025-01-31T02:00:00Z``); None when not recorded.
        ended_at: when it ended, likewise; None while it runs.
        age_s: seconds since it was submitted.
        elapsed_s: seconds from its start to its end, or to now while it runs.
        shards_done, shards_total: shards done and planned so far, every stage
            together (a stage not yet planned counts none).
    """

    job_id: str
    kind: str
    phase: str
    started_at: str | None
    ended_at: str | None
    age_s: int | None
    elapsed_s: int | None
    shards_done: int
    shards_total: int


class StepState(msgspec.Struct, frozen=True, kw_only=True):
    """A step of a job that has not finished, as ``eceb-dist status`` shows it.

    Fields:
        step: the step (``coordinate``, ``rehash:7``, ``reduce:evaluate``).
        name: what messages call it (``re-hash shard 7``).
        state: ``queued`` (published, not started yet), ``running`` (its
            lease held), or ``lost`` (started and its lease lapsed: it is
            published again at the next watch).
        since_s: seconds it has been queued (since it was last published) or running.
        worker, pid: who runs it (``running`` only).
        republished: how often it was published again.
    """

    step: str
    name: str
    state: Literal["queued", "running", "lost"]
    since_s: int | None
    worker: str | None = None
    pid: int | None = None
    republished: int = 0


class MakingStatus(msgspec.Struct, frozen=True, kw_only=True):
    """A made run's calls as its journal holds them (``eceb-dist status``).

    Fields:
        journal: the journal's id.
        made, failed: calls made, failed finally.
        spent_micro_usd, possible_micro_usd: spend known, and possible
            beyond it (upper bounds of calls in flight or of unknown outcome).
        unknown_calls: the first calls of unknown outcome (their worker
            died; the provider may have billed them), sorted;
            ``unknown_count`` counts them all.
    """

    journal: str
    made: int
    failed: int
    spent_micro_usd: int
    possible_micro_usd: int
    unknown_calls: tuple[str, ...] = ()
    unknown_count: int = 0


class JobStatus(JobSummary, frozen=True, kw_only=True):
    """One job's state, as ``eceb-dist status --json`` prints it: its
    :class:`JobSummary`, then:

    Fields:
        rehash_done, rehash_total, eval_done, eval_total: shards done and
            planned of each stage (a total is None until the stage is planned).
        benchmark, run, registry, corpus, out: its locations as submitted
            (``""`` where the kind has none).
        failures: shard failures seen so far.
        passing_tasks, total_tasks: an evaluation's outcome once done.
        verified: a verification's outcome once done.
        error_kind, error: why it failed.
        report_digest: BLAKE3 of the report it wrote.
        waiting: the steps it waits for (published, not finished), the
            first :data:`SHOWN_STEPS` of them; ``waiting_count`` counts them all.
        live_workers: the workers heard from lately (none: nothing runs it).
        make_done, make_total: a made run's execution shards done and planned.
        making: a made run's calls and spend (``None`` for other jobs).
        rules: a registration's rules file, as submitted.
        list_done, list_total, hash_done, hash_total: a registration's
            listing and hash shards done and planned.
        artifact_count, registered_bytes, corpus_root: a registration's
            registry once done.
    """

    rehash_done: int
    rehash_total: int | None
    eval_done: int
    eval_total: int | None
    benchmark: str
    run: str
    registry: str
    corpus: str
    out: str
    failures: tuple[str, ...]
    passing_tasks: int | None
    total_tasks: int | None
    verified: bool | None
    error_kind: str | None
    error: str | None
    report_digest: str | None
    waiting: tuple[StepState, ...] = ()
    waiting_count: int = 0
    live_workers: tuple[str, ...] = ()
    make_done: int = 0
    make_total: int | None = None
    making: MakingStatus | None = None
    rules: str = ""
    list_done: int = 0
    list_total: int | None = None
    hash_done: int = 0
    hash_total: int | None = None
    artifact_count: int | None = None
    registered_bytes: int | None = None
    corpus_root: str | None = None


def rfc3339(seconds: int) -> str:
    """Unix time ``seconds`` as RFC 3339 UTC: ``2025-01-31T02:00:00Z``."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def job_summary(record: JobRecord, now_s: int) -> JobSummary:
    """The summary of a job from its ``record``
    (:meth:`~eceb_worker.cluster.state.JobStore.get`), at Unix time ``now_s``."""
    created = record.created
    ended = record.ended
    if ended is None and record.phase.ended:
        ended = record.updated
    done, total = record.shards
    return JobSummary(
        job_id=record.job_id,
        kind=record.kind.value,
        phase=record.phase.value,
        started_at=None if created is None else rfc3339(created),
        ended_at=None if ended is None else rfc3339(ended),
        age_s=None if created is None else max(0, now_s - created),
        elapsed_s=None if created is None else max(0, (now_s if ended is None else ended) - created),
        shards_done=done,
        shards_total=total,
    )


def step_name(step: str) -> str:
    """What messages call a step: ``re-hash shard 7``, ``evaluation shard 0``,
    ``listing shard 2``, ``the first step``, ``the reduce of the re-hash``."""
    shard = step_stage(step)
    if shard is not None:
        try:
            return f"{Stage(shard[0]).shard_name} {shard[1]}"
        except ValueError:  # a stage of another version of eceb
            return f"{shard[0]} shard {shard[1]}"
    if step == COORDINATE:
        return "the first step"
    return "the reduce of the " + _REDUCED.get(step.removeprefix("reduce:"), step.removeprefix("reduce:"))


_REDUCED: Final = {
    "rehash": "re-hash",
    "evaluate": "evaluation",
    "make": "executions",
    "list": "listing",
    "hash": "hashing",
}
"""What the reduce of each stage is called in messages."""
_STAGE_ORDER: Final = ("rehash", "evaluate", "make", "list", "hash")
"""The stages in the order a job runs them (a job runs some of them)."""


def waiting_steps(steps: Mapping[str, Step], progress: Progress, now_ms: int) -> list[StepState]:
    """The steps published and not finished (shards in index order, then
    the reduces), and where each stands at Unix time ``now_ms``."""
    found = []
    for step in sorted(steps, key=_step_order):
        published = progress.published.get(step)
        if step in progress.finished or published is None:
            continue
        lease = progress.leases.get(step)
        republished = progress.republished.get(step, 0)
        name = step_name(step)
        if lease is not None:
            since = max(0, (now_ms - lease.since_ms) // 1000)
            found.append(
                StepState(
                    step=step,
                    name=name,
                    state="running",
                    since_s=since,
                    worker=lease.worker,
                    pid=lease.pid,
                    republished=republished,
                )
            )
            continue
        waited = max(0, (now_ms - published) // 1000)
        state: Literal["queued", "lost"] = "lost" if step in progress.started else "queued"
        found.append(StepState(step=step, name=name, state=state, since_s=waited, republished=republished))
    return found


def _step_order(step: str) -> tuple[int, int, str]:
    """Steps in the order a job runs them: the first step, then each
    stage's shards (by index) and its reduce."""
    shard = step_stage(step)
    if step == COORDINATE:
        return (0, 0, step)
    stage = shard[0] if shard is not None else step.removeprefix("reduce:")
    rank = _STAGE_ORDER.index(stage) if stage in _STAGE_ORDER else len(_STAGE_ORDER)
    if shard is not None:
        return (1 + 2 * rank, shard[1], step)
    return (2 + 2 * rank, 0, step)


def waiting_lines(waiting: Iterable[StepState], count: int, live_workers: Iterable[str], phase: str) -> list[str]:
    """The lines of ``eceb-dist status`` under a running job's status line:
    each step it waits for (at most a few), and when no worker is alive."""
    if phase in TERMINAL_PHASES:
        return []
    shown = list(waiting)
    lines = [f"  waiting for {_step_text(state)}" for state in shown[:10]]
    if count > len(lines):
        lines.append(f"  ... and {count - len(lines)} more step(s)")
    if not list(live_workers):
        lines.append("  no live worker: the job waits until a worker starts (eceb-dist worker)")
    return lines


def _step_text(state: StepState) -> str:
    if state.state == "running":
        text = f"{state.name}: running on {state.worker} (pid {state.pid}) for {age_text(state.since_s)}"
    elif state.state == "queued":
        text = f"{state.name}: queued for {age_text(state.since_s)}"
    else:
        text = (
            f"{state.name}: lost (published {age_text(state.since_s)} ago, not running); "
            "it is published again at the next watch"
        )
    if state.republished:
        text += f" (published {state.republished + 1} times in all)"
    return text


def job_status(
    record: JobRecord,
    failures: Iterable[str],
    now_s: int,
    waiting: Iterable[StepState] = (),
    live_workers: Iterable[str] = (),
    making: MakingStatus | None = None,
) -> JobStatus:
    """The status of a job from its ``record`` and ``failures`` at Unix time
    ``now_s``, with the steps it waits for, the workers alive, and a made
    run's calls (``making``)."""
    summary = job_summary(record, now_s)
    pending = list(waiting)
    return JobStatus(
        **msgspec.structs.asdict(summary),
        rehash_done=record.rehash_done,
        rehash_total=record.rehash_total,
        eval_done=record.eval_done,
        eval_total=record.eval_total,
        benchmark=record.benchmark,
        run=record.run,
        registry=record.registry,
        corpus=record.corpus,
        out=record.out,
        failures=tuple(failures),
        passing_tasks=record.passing_tasks,
        total_tasks=record.total_tasks,
        verified=record.verified,
        error_kind=record.error_kind,
        error=record.error,
        report_digest=record.report_digest,
        waiting=tuple(pending[:SHOWN_STEPS]),
        waiting_count=len(pending),
        make_done=record.make_done,
        make_total=record.make_total,
        making=making,
        rules=record.rules,
        list_done=record.list_done,
        list_total=record.list_total,
        hash_done=record.hash_done,
        hash_total=record.hash_total,
        artifact_count=record.artifact_count,
        registered_bytes=record.registered_bytes,
        corpus_root=record.corpus_root,
        live_workers=tuple(live_workers),
    )


def age_text(seconds: int | None) -> str:
    """A duration as people read it: ``42s``, ``3m 07s``, ``2h 05m``,
    ``3d 04h``; ``?`` for None."""
    if seconds is None:
        return "?"
    seconds = max(0, seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    if seconds < 86400:
        return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d {seconds % 86400 // 3600:02d}h"


def progress_text(done: int, total: int) -> str:
    """Shards done of those planned: ``12/25``; ``-`` before any is planned."""
    return f"{done}/{total}" if total else "-"


def jobs_lines(summaries: Iterable[JobSummary]) -> list[str]:
    """``eceb-dist jobs``: a header, then one line a job (id, kind, phase,
    age, shards done/planned), in the order given."""
    rows = [("JOB", "KIND", "PHASE", "AGE", "SHARDS")]
    rows += [
        (s.job_id, s.kind, s.phase, age_text(s.age_s), progress_text(s.shards_done, s.shards_total)) for s in summaries
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]
