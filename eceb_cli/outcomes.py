"""What ``eceb-dist`` makes of a job's state: its status line, how it ended
(printed, and the exit code), and its result (the report, checked against
the digest the job recorded).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click
import msgspec

from eceb_cli import exit_codes
from eceb_cli.console import report_input_error
from eceb_cli.corpus import print_findings
from eceb_worker.core.digests import digest_bytes
from eceb_worker.errors import ErrorKind, InputError, Problem, StorageError

if TYPE_CHECKING:
    from eceb_worker.corpus.verification import VerificationReport
    from eceb_worker.io.s3 import ObjectStore

__all__ = ["exit_for", "is_verification", "result_bytes", "shards", "status_line", "verification_of"]


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
    if state.get("phase") == "done":
        if is_verification(state):
            report = verification_of(state)
            line += f"; {report.verified_count}/{report.artifact_count} artifacts verified"
            line += f"; report {state['out']}" if state.get("out") else ""
        else:
            line += f"; {state.get('passing_tasks')}/{state.get('total_tasks')} tasks pass; report {state.get('out')}"
    elif state.get("phase") == "failed":
        line += f"; {state.get('error_kind')} error: {state.get('error')}"
    return line


def exit_for(job_id: str, state: dict[str, str]) -> None:
    """Print a failed or cancelled job's reason and exit with its code; return when done."""
    phase = state.get("phase")
    if phase == "cancelled":
        click.echo(f"job {job_id} was cancelled; no report was written", err=True)
        sys.exit(exit_codes.JOB_CANCELLED)
    if phase != "failed":
        return
    try:
        kind = ErrorKind(state.get("error_kind", "internal"))
    except ValueError:
        kind = ErrorKind.INTERNAL
    if kind is ErrorKind.INPUT and state.get("problems"):
        report_input_error(InputError(msgspec.json.decode(state["problems"], type=list[Problem])))
    elif kind is ErrorKind.VERIFICATION and state.get("verification"):
        print_findings(verification_of(state))
        click.echo(f"error: {state.get('error')}", err=True)
    else:
        click.echo(f"error: {kind.value}: {state.get('error')}", err=True)
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
