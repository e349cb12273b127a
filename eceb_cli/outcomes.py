"""What ``eceb-dist`` makes of a job's state: its status line, its
progress while it runs (bars on a terminal), how it ended (printed, and the
exit code), its result (the report, checked against the digest the job
recorded), and a warning when no worker would run it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING

import click
import msgspec

from eceb_cli import exit_codes
from eceb_cli.console import echo, progress, report_input_error
from eceb_cli.conventions import Stopped
from eceb_cli.corpus import print_findings
from eceb_worker.cluster.state import TERMINAL_PHASES, Phase
from eceb_worker.core.digests import digest_bytes
from eceb_worker.errors import ErrorKind, InputError, Problem, StorageError
from eceb_worker.render.text import artifacts_verified, tasks_pass

if TYPE_CHECKING:
    from eceb_worker.cluster.client import Cluster
    from eceb_worker.corpus.verification import VerificationReport
    from eceb_worker.io.objects import ObjectStore

__all__ = [
    "POLL_S",
    "exit_for",
    "exit_for_verdict",
    "is_verification",
    "job_state",
    "result_bytes",
    "shards",
    "status_line",
    "verification_of",
    "wait_until_ended",
    "warn_without_workers",
]

POLL_S = 0.2
"""How often a job's state is read while waiting for it, in seconds."""


def is_verification(state: dict[str, str]) -> bool:
    """True for a job of ``eceb-dist verify``."""
    return state.get("kind") == "verify"


def verification_of(state: dict[str, str]) -> VerificationReport:
    """The verification report a job recorded (a verification, or an
    evaluation whose corpus did not verify)."""
    from eceb_worker.corpus.verification import VerificationReport

    return msgspec.json.decode(state["verification"], type=VerificationReport)


def shards(state: dict[str, str]) -> tuple[int, int]:
    """Shards done and planned so far, every stage together."""
    done = int(state.get("rehash_done", 0)) + int(state.get("eval_done", 0))
    total = int(state.get("rehash_total", 0)) + int(state.get("eval_total", 0))
    return done, total


def status_line(job_id: str, state: dict[str, str], failures: list[str]) -> str:
    """One line: the job's phase, shards done of each stage, failures, how it ended."""
    line = (
        f"{job_id}: {state.get('phase', '?')}; re-hash shards {state.get('rehash_done', 0)}/"
        f"{state.get('rehash_total', '?')}"
    )
    if not is_verification(state):
        line += f"; evaluation shards {state.get('eval_done', 0)}/{state.get('eval_total', '?')}"
    line += f"; failures {len(failures)}"
    if state.get("phase") == Phase.DONE.value:
        if is_verification(state):
            report = verification_of(state)
            line += f"; {artifacts_verified(report)}"
            line += f"; report {state['out']}" if state.get("out") else ""
        else:
            line += f"; {tasks_pass(state.get('passing_tasks'), state.get('total_tasks'))}; report {state.get('out')}"
    elif state.get("phase") == Phase.FAILED.value:
        line += f"; {state.get('error_kind')} error: {state.get('error')}"
    return line


def exit_for(job_id: str, state: dict[str, str]) -> None:
    """Print a failed or cancelled job's reason and exit with its code; return when done."""
    phase = state.get("phase")
    if phase == Phase.CANCELLED.value:
        click.echo(f"job {job_id} was cancelled; no report was written", err=True)
        sys.exit(exit_codes.JOB_CANCELLED)
    if phase != Phase.FAILED.value:
        return
    try:
        kind = ErrorKind(state.get("error_kind", "internal"))
    except ValueError:
        kind = ErrorKind.INTERNAL
    if kind is ErrorKind.INPUT and state.get("problems"):
        report_input_error(InputError(msgspec.json.decode(state["problems"], type=list[Problem])))
    elif kind is ErrorKind.VERIFICATION and state.get("verification"):
        print_findings(verification_of(state))
        echo(f"error: {state.get('error')}", err=True)
    else:
        echo(f"error: {kind.value}: {state.get('error')}", err=True)
    click.echo(f"job {job_id} failed; no report was written", err=True)
    sys.exit(exit_codes.for_kind(kind))


def result_bytes(job_id: str, state: dict[str, str], objects: ObjectStore | None) -> bytes:
    """The report a finished job wrote: the object at its ``--out``, checked
    against the digest it recorded, or a verification's report kept in its
    state. Raises ``StorageError`` when the object is gone or holds other
    bytes (another job or writer replaced it)."""
    url = state.get("out", "")
    if not url:
        return state["verification"].encode()
    assert objects is not None
    try:
        data, _ = objects.get(url)
    except InputError:
        raise StorageError(f"{url}: the report of job {job_id} is gone (deleted after the job wrote it)") from None
    expected = state.get("report_digest")
    if expected and digest_bytes(data) != expected:
        raise StorageError(
            f"{url}: no longer holds the report of job {job_id} (another job or writer replaced it; run the job again)"
        )
    return data


def job_state(cluster: Cluster, job_id: str) -> dict[str, str]:
    """The job's state; exit 7 (no such job) when it has none."""
    state = cluster.store.get(job_id)
    if state is None:
        click.echo(f"error: no such job {job_id} (unknown, or expired)", err=True)
        sys.exit(exit_codes.NO_SUCH_JOB)
    return state


_STAGES = (("rehash_done", "rehash_total", "re-hash"), ("eval_done", "eval_total", "evaluation"))
"""The stages of a job in their order: the fields of their shards done and planned, their name."""


class _StageBars:
    """The bar of the stage a job runs now, and how many of its shards it shows."""

    def __init__(self, job_id: str, stack: ExitStack) -> None:
        self._job_id = job_id
        self._stack = stack
        self._stage = -1
        self._advance: Callable[[int], object] = lambda _: None
        self._shown = 0

    def show(self, state: dict[str, str]) -> None:
        """Bring the bars up to ``state``: a later stage planned closes the
        earlier stage's bar and opens its own."""
        for index, (done_field, total_field, name) in enumerate(_STAGES):
            total = int(state.get(total_field) or 0)
            if not total or index < self._stage:
                continue
            if index > self._stage:
                self._stack.close()
                self._advance = self._stack.enter_context(progress(f"{self._job_id[:8]} {name}", total, unit="shard"))
                self._stage, self._shown = index, 0
            done = int(state.get(done_field) or 0)
            if done > self._shown:
                self._advance(done - self._shown)
                self._shown = done


@contextmanager
def stage_progress(job_id: str) -> Iterator[Callable[[dict[str, str]], None]]:
    """Progress bars of a job's stages on standard error when it is a
    terminal (:func:`~eceb_cli.console.progress`; nothing otherwise): a bar
    per stage, shards done of planned, from the moment it is planned. Yields
    ``show(state)``, given each state read."""
    with ExitStack() as stack:
        yield _StageBars(job_id, stack).show


def wait_until_ended(
    cluster: Cluster, job_id: str, timeout: float | None, *, each: Callable[[dict[str, str]], object] | None = None
) -> dict[str, str]:
    """The job's state once it ended, its progress shown on a terminal
    meanwhile (:func:`stage_progress`), ``each`` called with every state
    read; exit 75 when ``timeout`` (seconds) passes first, 7 when the job
    vanishes meanwhile. Stopped by a signal meanwhile, it says first that
    the job goes on in the cluster (only the waiting stops)."""
    try:
        with stage_progress(job_id) as show:
            return _wait(cluster, job_id, timeout, lambda state: (show(state), each and each(state)))
    except (KeyboardInterrupt, Stopped):
        click.echo(f"job {job_id} goes on in the cluster; `eceb-dist cancel {job_id}` stops it", err=True)
        raise


def _wait(
    cluster: Cluster, job_id: str, timeout: float | None, seen: Callable[[dict[str, str]], object]
) -> dict[str, str]:
    deadline = None if timeout is None else time.monotonic() + timeout
    state = job_state(cluster, job_id)
    seen(state)
    while state.get("phase") not in TERMINAL_PHASES:
        if deadline is not None and time.monotonic() >= deadline:
            done, total = shards(state)
            click.echo(
                f"job {job_id} not finished within {timeout:g} s ({state.get('phase')}, {done}/{total} shards)"
                f"{_waiting_for(cluster, job_id)}",
                err=True,
            )
            sys.exit(exit_codes.JOB_NOT_FINISHED)
        time.sleep(POLL_S)
        found = cluster.store.get(job_id)
        if found is None:
            click.echo(
                f"error: job {job_id} vanished from Redis while it ran (was the server restarted without "
                "persistence?); no report was written",
                err=True,
            )
            sys.exit(exit_codes.NO_SUCH_JOB)
        state = found
        seen(state)
    return state


def _waiting_for(cluster: Cluster, job_id: str) -> str:
    """``; waiting for ...``: what an unfinished job waits for (a few of its
    steps), and whether any worker is alive; ``""`` when it cannot be read."""
    from eceb_worker.cluster.views import waiting_lines

    try:
        waiting, live = cluster.waiting(job_id)
    except StorageError:
        return ""
    lines = [line.strip() for line in waiting_lines(waiting[:3], len(waiting), live, "")]
    return "; " + "; ".join(lines) if lines else ""


def warn_without_workers(cluster: Cluster) -> None:
    """Warn on standard error when no worker consumes eceb's queue (none
    answered :meth:`~eceb_worker.cluster.client.Cluster.consumers` in time):
    a job queued then waits until one starts. Says nothing when one does,
    or when the broker cannot be asked; changes no exit code."""
    from eceb_worker.cluster.app import QUEUE
    from eceb_worker.cluster.client import CONSUMERS_TIMEOUT_S

    if cluster.consumers() == []:
        click.echo(
            f"warning: no worker consumes the queue {QUEUE!r} on {cluster.broker} (none answered within "
            f"{CONSUMERS_TIMEOUT_S:g} s): the job waits until one starts (eceb-dist worker)",
            err=True,
        )


def exit_for_verdict(state: dict[str, str]) -> None:
    """Exit as the finished job's verdict says: 1 for failing tasks, 4 for a
    corpus that did not verify; return when everything passed."""
    if is_verification(state):
        if not verification_of(state).ok:
            sys.exit(exit_codes.VERIFICATION_FAILED)
    elif state.get("passing_tasks") != state.get("total_tasks"):
        sys.exit(exit_codes.TASKS_FAILED)
