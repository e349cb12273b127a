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

from eceb_cli import exit_codes
from eceb_cli.console import echo, progress, report_input_error
from eceb_cli.conventions import Stopped
from eceb_worker.cluster.state import Phase
from eceb_worker.core.digests import digest_bytes
from eceb_worker.core.figures import usd
from eceb_worker.errors import ErrorKind, InputError, StorageError
from eceb_worker.pipeline.messages import JobKind
from eceb_worker.render.text import artifacts_verified, tasks_pass

if TYPE_CHECKING:
    from eceb_worker.cluster.client import Cluster
    from eceb_worker.cluster.state import JobRecord
    from eceb_worker.corpus.verification import VerificationReport
    from eceb_worker.io.objects import ObjectStore

__all__ = [
    "POLL_S",
    "exit_for",
    "exit_for_verdict",
    "job_state",
    "registered_verdict",
    "result_bytes",
    "status_line",
    "verification_of",
    "wait_until_ended",
    "warn_without_workers",
]

POLL_S = 0.2
"""How often a job's state is read while waiting for it, in seconds."""


def verification_of(state: JobRecord) -> VerificationReport:
    """The verification report a job recorded (a verification, or an
    evaluation whose corpus did not verify); ``StorageError`` when it
    recorded none."""
    if state.verification is None:
        raise StorageError(f"job {state.job_id} recorded no verification report")
    return state.verification


def status_line(job_id: str, state: JobRecord, failures: list[str]) -> str:
    """One line: the job's phase, shards done of each stage, failures, how it ended."""
    if state.kind is JobKind.MAKE:
        return _making_line(job_id, state, failures)
    if state.kind is JobKind.REGISTER:
        return _registering_line(job_id, state, failures)
    line = f"{job_id}: {state.phase.value}; re-hash shards {state.rehash_done}/{_total(state.rehash_total)}"
    if not state.is_verification:
        line += f"; evaluation shards {state.eval_done}/{_total(state.eval_total)}"
    line += f"; failures {len(failures)}"
    if state.phase is Phase.DONE:
        if state.is_verification:
            report = verification_of(state)
            line += f"; {artifacts_verified(report)}"
            line += f"; report {state.out}" if state.out else ""
        else:
            line += f"; {tasks_pass(state.passing_tasks, state.total_tasks)}; report {state.out}"
    elif state.phase is Phase.FAILED:
        line += f"; {state.error_kind} error: {state.error}"
    return line


def _making_line(job_id: str, state: JobRecord, failures: list[str]) -> str:
    """A made run's status line: execution shards, failures, how it ended (its spend once done)."""
    line = f"{job_id}: {state.phase.value}; execution shards {state.make_done}/{_total(state.make_total)}"
    line += f"; failures {len(failures)}"
    if state.phase is Phase.DONE:
        line += f"; {made_verdict(state)}; run {state.out}"
    elif state.phase is Phase.FAILED:
        line += f"; {state.error_kind} error: {state.error}"
    return line


def _registering_line(job_id: str, state: JobRecord, failures: list[str]) -> str:
    """A registration's status line: listing and hash shards, failures, how it ended."""
    line = (
        f"{job_id}: {state.phase.value}; listing shards {state.list_done}/{_total(state.list_total)}"
        f"; hash batches {state.hash_done}/{_total(state.hash_total)}; failures {len(failures)}"
    )
    if state.phase is Phase.DONE:
        line += f"; {registered_verdict(state)}; registry {state.out}"
    elif state.phase is Phase.FAILED:
        line += f"; {state.error_kind} error: {state.error}"
    return line


def registered_verdict(state: JobRecord) -> str:
    """What a finished registration registered, as ``eceb corpus register`` says it."""
    line = f"registered {state.artifact_count} artifacts ({state.registered_bytes} bytes) from {state.corpus}"
    if state.reused:
        hashed = (state.artifact_count or 0) - state.reused
        line += f" (hashed {hashed}, took the digests of {state.reused} from the previous registry)"
    return f"{line}; corpus root {state.corpus_root}"


def made_verdict(state: JobRecord) -> str:
    """What a finished made run holds and cost: observations of executions,
    the spend known (and possible, of calls of unknown outcome)."""
    line = (
        f"{state.observations} observations of {state.executions} executions; spent {usd(state.spent_micro_usd or 0)}"
    )
    if state.possible_micro_usd:
        line += f" (and up to {usd(state.possible_micro_usd)} more, of calls whose outcome is unknown)"
    return line


def _total(total: int | None) -> str:
    """Shards planned of a stage: ``?`` before it is planned."""
    return "?" if total is None else str(total)


def exit_for(job_id: str, state: JobRecord) -> None:
    """Print a failed or cancelled job's reason and exit with its code; return when done."""
    written = {JobKind.MAKE: "no run was written", JobKind.REGISTER: "no registry was written"}.get(
        state.kind, "no report was written"
    )
    if state.phase is Phase.CANCELLED:
        click.echo(f"job {job_id} was cancelled; {written}", err=True)
        sys.exit(exit_codes.JOB_CANCELLED)
    if state.phase is not Phase.FAILED:
        return
    try:
        kind = ErrorKind(state.error_kind or "internal")
    except ValueError:
        kind = ErrorKind.INTERNAL
    if kind is ErrorKind.INPUT and state.problems is not None:
        report_input_error(InputError(list(state.problems)))
    elif kind is ErrorKind.VERIFICATION and state.verification is not None:
        from eceb_cli.corpus import print_findings  # the corpus commands' imports, only when used

        print_findings(state.verification)
        echo(f"error: {state.error}", err=True)
    else:
        echo(f"error: {kind.value}: {state.error}", err=True)
    click.echo(f"job {job_id} failed; {written}", err=True)
    sys.exit(exit_codes.for_kind(kind))


def result_bytes(job_id: str, state: JobRecord, objects: ObjectStore | None) -> bytes:
    """The report a finished job wrote: the object at its ``--out``, checked
    against the digest it recorded, or a verification's report kept in its
    state. Raises ``StorageError`` when the object is gone or holds other
    bytes (another job or writer replaced it)."""
    url = state.out
    if not url:
        if state.verification_json is None:
            raise StorageError(f"job {job_id} recorded no report (no --out, no verification report)")
        return state.verification_json.encode()
    assert objects is not None
    try:
        data, _ = objects.get(url)
    except InputError:
        raise StorageError(f"{url}: the report of job {job_id} is gone (deleted after the job wrote it)") from None
    expected = state.report_digest
    if expected and digest_bytes(data) != expected:
        raise StorageError(
            f"{url}: no longer holds the report of job {job_id} (another job or writer replaced it; run the job again)"
        )
    return data


def job_state(cluster: Cluster, job_id: str) -> JobRecord:
    """The job's state; exit 7 (no such job) when it has none, ``StorageError``
    when it is malformed (:func:`~eceb_worker.cluster.state.decode_job`)."""
    state = cluster.store.get(job_id)
    if state is None:
        click.echo(f"error: no such job {job_id} (unknown, or expired)", err=True)
        sys.exit(exit_codes.NO_SUCH_JOB)
    return state


def _stages(state: JobRecord) -> tuple[tuple[int, int, str], ...]:
    """The stages of a job in their order: their shards done and planned (0 before it is planned), their name."""
    return (
        (state.rehash_done, state.rehash_total or 0, "re-hash"),
        (state.eval_done, state.eval_total or 0, "evaluation"),
        (state.make_done, state.make_total or 0, "execution"),
        (state.list_done, state.list_total or 0, "listing"),
        (state.hash_done, state.hash_total or 0, "hash"),
    )


class _StageBars:
    """The bar of the stage a job runs now, and how many of its shards it shows."""

    def __init__(self, job_id: str, stack: ExitStack) -> None:
        self._job_id = job_id
        self._stack = stack
        self._stage = -1
        self._advance: Callable[[int], object] = lambda _: None
        self._shown = 0

    def show(self, state: JobRecord) -> None:
        """Bring the bars up to ``state``: a later stage planned closes the
        earlier stage's bar and opens its own."""
        for index, (done, total, name) in enumerate(_stages(state)):
            if not total or index < self._stage:
                continue
            if index > self._stage:
                self._stack.close()
                self._advance = self._stack.enter_context(progress(f"{self._job_id[:8]} {name}", total, unit="shard"))
                self._stage, self._shown = index, 0
            if done > self._shown:
                self._advance(done - self._shown)
                self._shown = done


@contextmanager
def stage_progress(job_id: str) -> Iterator[Callable[[JobRecord], None]]:
    """Progress bars of a job's stages on standard error when it is a
    terminal (:func:`~eceb_cli.console.progress`; nothing otherwise): a bar
    per stage, shards done of planned, from the moment it is planned. Yields
    ``show(state)``, given each state read."""
    with ExitStack() as stack:
        yield _StageBars(job_id, stack).show


def wait_until_ended(
    cluster: Cluster, job_id: str, timeout: float | None, *, each: Callable[[JobRecord], object] | None = None
) -> JobRecord:
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


def _wait(cluster: Cluster, job_id: str, timeout: float | None, seen: Callable[[JobRecord], object]) -> JobRecord:
    deadline = None if timeout is None else time.monotonic() + timeout
    state = job_state(cluster, job_id)
    seen(state)
    while not state.phase.ended:
        if deadline is not None and time.monotonic() >= deadline:
            done, total = state.shards
            click.echo(
                f"job {job_id} not finished within {timeout:g} s ({state.phase.value}, {done}/{total} shards)"
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


def exit_for_verdict(state: JobRecord) -> None:
    """Exit as the finished job's verdict says: 1 for failing tasks (a made
    run: executions that failed), 4 for a corpus that did not verify;
    return when everything passed."""
    if state.is_verification:
        if not verification_of(state).ok:
            sys.exit(exit_codes.VERIFICATION_FAILED)
    elif state.kind is JobKind.MAKE:
        if state.observations != state.executions:
            sys.exit(exit_codes.TASKS_FAILED)
    elif state.kind is JobKind.REGISTER:
        return
    elif state.passing_tasks != state.total_tasks:
        sys.exit(exit_codes.TASKS_FAILED)
