"""What ``eceb-dist status`` and ``eceb-dist jobs`` print: a job's state as
a line or as JSON (:class:`~eceb_worker.cluster.views.JobStatus`), a job
followed until it ends, and the recent jobs as a table or as JSON
(:class:`~eceb_worker.cluster.views.JobSummary`).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

import click
import msgspec

from eceb_cli.console import echo
from eceb_cli.outcomes import job_state, status_line, wait_until_ended

if TYPE_CHECKING:
    from eceb_worker.cluster.client import Cluster
    from eceb_worker.cluster.state import JobRecord
    from eceb_worker.cluster.views import MakingStatus

__all__ = ["DEFAULT_JOBS", "print_jobs", "print_status", "watch_status"]

DEFAULT_JOBS = 20
"""How many jobs ``eceb-dist jobs`` lists without ``--limit``."""


def print_status(cluster: Cluster, job_id: str, *, as_json: bool) -> None:
    """Print job ``job_id``'s state: its status line and each failure so far,
    or (``as_json``) its :class:`~eceb_worker.cluster.views.JobStatus` as
    one JSON object. Exit 7 when there is no such job."""
    from eceb_worker.cluster.views import job_status, waiting_lines

    state = job_state(cluster, job_id)
    failures = cluster.store.failures(job_id)
    waiting, live = cluster.waiting(job_id) if not state.phase.ended else ([], [])
    making = cluster.making_status(state)
    if as_json:
        status = job_status(state, failures, int(time.time()), waiting, live, making)
        click.echo(msgspec.json.encode(status).decode())
        return
    echo(status_line(job_id, state, failures))
    for failure in failures:
        echo(f"  failure: {failure}")
    if making is not None:
        _print_making(making)
    for line in waiting_lines(waiting, len(waiting), live, state.phase.value):
        echo(line)


def _print_making(making: MakingStatus) -> None:
    """A made run's calls and spend, and its calls of unknown outcome."""
    from eceb_worker.core.figures import usd

    line = f"  calls: {making.made} made, {making.failed} failed; spent {usd(making.spent_micro_usd)}"
    if making.possible_micro_usd:
        line += f" (and up to {usd(making.possible_micro_usd)} more, in flight or of unknown outcome)"
    echo(line)
    if making.unknown_count:
        shown = ", ".join(making.unknown_calls)
        more = (
            f" (and {making.unknown_count - len(making.unknown_calls)} more)"
            if making.unknown_count > len(making.unknown_calls)
            else ""
        )
        echo(
            f"  outcome unknown: {making.unknown_count} calls (their worker died; the provider may have billed "
            f"them): {shown}{more}; `eceb-dist run --resume JOB --rerun-unknown` sends them again"
        )


def watch_status(cluster: Cluster, job_id: str, *, as_json: bool) -> None:
    """Follow job ``job_id`` until it ends, then print its state
    (:func:`print_status`). On a terminal, progress bars show meanwhile;
    otherwise (and without ``as_json``) its status line is printed each
    time it changes, the last one being its final state."""
    lines = not as_json and not sys.stderr.isatty()
    last = [""]

    def each(state: JobRecord) -> None:
        line = status_line(job_id, state, cluster.store.failures(job_id))
        if lines and line != last[0]:
            echo(line)
            last[0] = line

    wait_until_ended(cluster, job_id, None, each=each)
    if not lines:
        print_status(cluster, job_id, as_json=as_json)


def print_jobs(cluster: Cluster, limit: int, *, as_json: bool) -> None:
    """Print up to ``limit`` recent jobs, the newest first: a table (id,
    kind, phase, age, shards done/planned), or (``as_json``) a JSON array of
    :class:`~eceb_worker.cluster.views.JobSummary`."""
    from eceb_worker.cluster.views import job_summary, jobs_lines

    now = int(time.time())
    summaries = [job_summary(record, now) for record in cluster.store.recent(limit)]
    if as_json:
        click.echo(msgspec.json.encode(summaries).decode())
        return
    if not summaries:
        click.echo("no jobs", err=True)
        return
    for line in jobs_lines(summaries):
        echo(line)
