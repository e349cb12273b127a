"""A job's state as ``eceb-dist status --json`` and ``eceb-dist jobs``
show it: frozen Structs made from the strings of its Redis hash
(:class:`~eceb_worker.cluster.state.JobStore`), and their text. Pure: the
time now is an argument, in whole Unix seconds, and every figure is an
integer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

import msgspec

from eceb_worker.cluster.state import TERMINAL_PHASES

__all__ = [
    "JobStatus",
    "JobSummary",
    "age_text",
    "job_status",
    "job_summary",
    "jobs_lines",
    "progress_text",
    "rfc3339",
]


class JobSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One job, as ``eceb-dist jobs --json`` lists it.

    Fields:
        job_id: its id (32 hex characters).
        kind: ``evaluate`` (``eceb-dist submit``) or ``verify``.
        phase: where it stands (``queued``, ``loading``, ``verifying``,
            ``evaluating``, ``writing``, ``done``, ``failed``, ``cancelled``).
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


def rfc3339(seconds: int) -> str:
    """Unix time ``seconds`` as RFC 3339 UTC: ``2025-01-31T02:00:00Z``."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _number(state: Mapping[str, str], field: str) -> int | None:
    text = state.get(field, "")
    return int(text) if text.strip().lstrip("-").isdigit() else None


def job_summary(job_id: str, state: Mapping[str, str], now_s: int) -> JobSummary:
    """The summary of job ``job_id`` from its ``state`` (the hash's fields,
    :meth:`~eceb_worker.cluster.state.JobStore.get`), at Unix time ``now_s``."""
    created = _number(state, "created")
    phase = state.get("phase", "")
    ended = _number(state, "ended")
    if ended is None and phase in TERMINAL_PHASES:
        ended = _number(state, "updated")
    done = sum(_number(state, field) or 0 for field in ("rehash_done", "eval_done"))
    total = sum(_number(state, field) or 0 for field in ("rehash_total", "eval_total"))
    return JobSummary(
        job_id=job_id,
        kind=state.get("kind", "evaluate"),
        phase=phase,
        started_at=None if created is None else rfc3339(created),
        ended_at=None if ended is None else rfc3339(ended),
        age_s=None if created is None else max(0, now_s - created),
        elapsed_s=None if created is None else max(0, (now_s if ended is None else ended) - created),
        shards_done=done,
        shards_total=total,
    )


def job_status(job_id: str, state: Mapping[str, str], failures: Iterable[str], now_s: int) -> JobStatus:
    """The status of job ``job_id`` from its ``state`` and ``failures`` at Unix time ``now_s``."""
    summary = job_summary(job_id, state, now_s)
    verified = _number(state, "verified")
    return JobStatus(
        **msgspec.structs.asdict(summary),
        rehash_done=_number(state, "rehash_done") or 0,
        rehash_total=_number(state, "rehash_total"),
        eval_done=_number(state, "eval_done") or 0,
        eval_total=_number(state, "eval_total"),
        benchmark=state.get("benchmark", ""),
        run=state.get("run", ""),
        registry=state.get("registry", ""),
        corpus=state.get("corpus", ""),
        out=state.get("out", ""),
        failures=tuple(failures),
        passing_tasks=_number(state, "passing_tasks"),
        total_tasks=_number(state, "total_tasks"),
        verified=None if verified is None else verified == 1,
        error_kind=state.get("error_kind"),
        error=state.get("error"),
        report_digest=state.get("report_digest"),
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
