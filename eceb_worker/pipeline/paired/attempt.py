"""One attempt of one arm, and its journal
(task-context-benchmark-reference.md, "Paired inputs and retained
outputs"; the files and their order: :data:`~eceb_worker.families.paired.journal.JOURNAL_ORDER`).

:func:`run_attempt` writes, each file atomically and bound by digests:
``cue`` (the arm's context), ``prompt.txt``, ``request.json``,
``submitted-prompt.txt`` (the exact bytes given on standard input),
``answer.schema.json`` (the pair's schema, its bytes checked against the
request's digest first: on a mismatch nothing is spawned and the ledger
records nothing) and ``invocation.json``, into a staging directory beside
the attempt's; then records the start in the ledger, renames the staging
directory to the attempt's and writes ``attempt-start.json`` (the commit
point: from here on the attempt is an execution); then spawns the provider
(:func:`eceb_worker.io.paired.provider.call_provider`: ``provider.jsonl`` and
``provider.stderr``), reads the repository's fingerprint again, reads the
captured stream, checks the answer, writes ``runner.stdout`` and
``runner.stderr`` (what the runner printed for the attempt) and last
``attempt.json`` by atomic rename; then records the outcome in the ledger,
and a spending stop when the freeze lists it.

A refusal or an error before the commit point removes the staging
directory: what never started leaves no journal. A runner killed after it
(SIGKILL) leaves an incomplete journal, which counts as an execution.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from eceb_worker.core.digests import digest_bytes
from eceb_worker.core.urls import redact_text
from eceb_worker.errors import ExecutionRefused, InputError, OutputError, Problem
from eceb_worker.families.paired.journal import (
    ATTEMPT_SCHEMA,
    ATTEMPT_START_SCHEMA,
    INVOCATION_SCHEMA,
    JOURNAL_ORDER,
    REQUEST_SCHEMA,
    Attempt,
    AttemptStart,
    AttemptStatus,
    Invocation,
    Request,
)
from eceb_worker.families.paired.outcome import answer_problems, attempt_status
from eceb_worker.families.paired.pairs import ANSWER_SCHEMA_NAME
from eceb_worker.families.paired.prompts import render_prompt
from eceb_worker.families.paired.records import ArmCommand, FileDigest
from eceb_worker.families.paired.transport import (
    COUNTERS,
    MISSING_COUNTERS,
    Transport,
    TransportStatus,
    read_transport,
)
from eceb_worker.io.files import atomic_write, read_input
from eceb_worker.io.paired.git import git_state
from eceb_worker.io.paired.provider import DeferredSignals, ProviderExit, call_provider, environment_names
from eceb_worker.pipeline.paired.checks import PairRun, attempt_id_of, link_problems
from eceb_worker.pipeline.paired.experiment import file_digest, utc_now, write_record
from eceb_worker.render.paired.status import usage_text

__all__ = ["AttemptReport", "RunnerLog", "run_attempt"]


@dataclass
class RunnerLog:
    """What the runner prints for one attempt: each line goes at once to the
    runner's own output (``out``/``err``) and is kept for ``runner.stdout``
    and ``runner.stderr``, every URL in it redacted (a provider's message
    may quote one with its credential: :func:`redact_text`)."""

    out: Callable[[str], None]
    err: Callable[[str], None]
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)

    def say(self, line: str) -> None:
        """Print ``line`` on standard output and keep it."""
        line = redact_text(line)
        self.stdout.append(line)
        self.out(line)

    def warn(self, line: str) -> None:
        """Print ``line`` on standard error and keep it."""
        line = redact_text(line)
        self.stderr.append(line)
        self.err(line)


@dataclass(frozen=True)
class AttemptReport:
    """How one attempt of :func:`run_attempt` ended: ``arm``, ``attempt_id``,
    ``status``, ``cancelled`` (the signal the runner received during it, or
    ``None``), ``stop`` (the spending stop it recorded, or ``None``)."""

    arm: str
    attempt_id: str
    status: AttemptStatus
    cancelled: int | None
    stop: str | None


class _Journal:
    """Writes the files of one attempt directory, keeping each one's digest."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.files: dict[str, FileDigest] = {}

    def write(self, name: str, data: bytes) -> FileDigest:
        path = self.directory / name
        if os.path.lexists(path):
            raise OutputError(f"{path}: exists; a journal file is never overwritten")
        atomic_write(path, [data])
        self.files[name] = FileDigest(path=name, blake3=digest_bytes(data), size=len(data))
        return self.files[name]

    def record(self, name: str, record: msgspec.Struct) -> str:
        digest = write_record(self.directory / name, record)
        self.files[name] = file_digest(self.directory / name, name)
        return digest

    def ordered(self) -> tuple[FileDigest, ...]:
        return tuple(self.files[name] for name in JOURNAL_ORDER if name in self.files)


def _checked_bytes(path: Path, expected: str, what: str) -> bytes:
    """The bytes at ``path``, whose BLAKE3 must be ``expected`` (InputError naming the file)."""
    data = read_input(path)
    if digest_bytes(data) != expected:
        message = f"changed since the pair was prepared: its BLAKE3 is not the {what} {expected}; nothing was spawned"
        raise InputError([Problem(file=str(path), message=message)])
    return data


def _stage(pair: PairRun, arm: ArmCommand, journal: _Journal, attempt_dir: Path, attempt_id: str) -> tuple[str, str]:
    """Write the files before the commit point; returns the request's and the invocation's digests."""
    context = _checked_bytes(pair.directory / arm.context.path, arm.context.blake3, "context digest")
    cue = journal.write("cue", context)
    task = pair.task
    prompt = render_prompt(
        kind=pair.manifest.pair.task,
        task_id=task.id,
        prompt=task.prompt,
        declaration=task.declaration,
        targets=task.targets,
        checks=pair.checks,
        arm=arm.arm,
        context=context,
    )
    prompt_file = journal.write("prompt.txt", prompt)
    freeze, manifest = pair.freeze, pair.manifest
    request = Request(
        schema=REQUEST_SCHEMA,
        attempt_id=attempt_id,
        freeze_digest=pair.freeze_digest,
        manifest_digest=pair.manifest_digest,
        pair=manifest.pair,
        arm=arm.arm,
        task_id=manifest.task_id,
        model=freeze.model,
        reasoning_effort=freeze.reasoning_effort,
        speed_tier=freeze.speed_tier,
        sandbox=freeze.sandbox,
        output_schema_digest=manifest.output_schema_digest,
        pair_schema_path=manifest.answer_schema,
        cue=cue.blake3,
        prompt=prompt_file.blake3,
    )
    request_digest = journal.record("request.json", request)
    stdin = journal.write("submitted-prompt.txt", prompt)
    schema = _checked_bytes(
        pair.directory / request.pair_schema_path, request.output_schema_digest, "request's output_schema_digest"
    )
    captured = journal.write(ANSWER_SCHEMA_NAME, schema)
    invocation = Invocation(
        schema=INVOCATION_SCHEMA,
        argv=arm.argv,
        cwd=freeze.repository.path,
        executable=freeze.provider,
        stdin=stdin,
        output_schema=FileDigest(
            path=str(attempt_dir / ANSWER_SCHEMA_NAME), blake3=captured.blake3, size=captured.size
        ),
        environment=environment_names(os.environ),
    )
    return request_digest, journal.record("invocation.json", invocation)


def _after(
    pair: PairRun, journal: _Journal, called: ProviderExit, fingerprint_before: str
) -> tuple[str | None, Transport | None, AttemptStatus, tuple[str, ...]]:
    """The fingerprint after, the transport and the status of a finished call."""
    try:
        fingerprint_after: str | None = git_state(Path(pair.freeze.repository.path)).fingerprint
        unreadable: tuple[str, ...] = ()
    except InputError as exc:
        fingerprint_after, unreadable = None, (f"the repository cannot be read after the attempt: {exc}",)
    transport = read_transport(read_input(journal.directory / "provider.jsonl")) if called.spawned else None
    answer: tuple[str, ...] = ()
    if transport is not None and transport.status is TransportStatus.COMPLETED:
        answer = answer_problems(transport.answer, read_input(journal.directory / ANSWER_SCHEMA_NAME))
    status, problems = attempt_status(
        mutated=fingerprint_after != fingerprint_before,
        cancelled=called.cancelled,
        timed_out=called.timed_out,
        timeout_s=pair.freeze.timeout_s,
        spawn_error=called.spawn_error,
        exit_code=called.exit_code,
        signal=called.signal,
        transport=transport,
        answer=answer,
    )
    return fingerprint_after, transport, status, (*unreadable, *problems)


def _discard(staging: Path, created: bool) -> None:
    """Remove the staging directory of an attempt that never started, and
    the ``attempts`` directory when this attempt created it and it is empty:
    a refused start leaves nothing behind."""
    shutil.rmtree(staging, ignore_errors=True)
    if created:
        with contextlib.suppress(OSError):
            staging.parent.rmdir()


def run_attempt(pair: PairRun, index: int, signals: DeferredSignals, log: RunnerLog) -> AttemptReport | None:  # noqa: C901, PLR0912, PLR0915 - the attempt's steps in their commit order, each journaled before the next; a candidate to split
    """Run arm ``index`` of the manifest's arms once (module), ``signals``
    entered by the caller. Returns ``None`` when a stop signal arrived
    before the commit point (nothing started, nothing kept). Raises
    :class:`ExecutionRefused` (the ledger refused the start: nothing
    spawned, nothing kept), :class:`InputError` (a changed context or
    answer schema, a symbolic link among the pair directory's entries:
    nothing spawned, the ledger untouched) or
    :class:`OutputError`."""
    arm = pair.manifest.arms[index]
    attempt_id = attempt_id_of(pair.directory, arm.arm.value)
    attempt_dir = pair.directory / arm.attempt
    if os.path.lexists(attempt_dir):
        raise ExecutionRefused(f"{attempt_dir} exists: the attempt started before, and nothing runs twice")
    if links := link_problems(pair.directory):  # again: one may have appeared during an earlier arm
        raise InputError(links)
    staging = attempt_dir.parent / f".{arm.arm.value}.staging-{secrets.token_hex(4)}"
    created = not os.path.lexists(attempt_dir.parent)
    try:
        attempt_dir.parent.mkdir(exist_ok=True)
        staging.mkdir()
    except OSError as exc:
        raise OutputError(f"{staging}: cannot create: {exc.strerror or exc}") from None
    journal = _Journal(staging)
    try:
        request_digest, invocation_digest = _stage(pair, arm, journal, attempt_dir, attempt_id)
        if signals.received is not None:
            _discard(staging, created)
            return None
        entry = pair.ledger.start(
            pair=pair.manifest.pair.position, arm=arm.arm.value, attempt_id=attempt_id, directory=pair.directory.name
        )
    except BaseException:
        _discard(staging, created)
        raise
    try:  # the ledger holds the start: this arm is ours alone, and attempt_dir was absent
        os.rename(staging, attempt_dir)
    except OSError as exc:
        raise OutputError(f"{attempt_dir}: cannot commit the attempt's journal: {exc.strerror or exc}") from None
    journal.directory = attempt_dir
    started_at = utc_now()
    fingerprint_before = pair.repository.fingerprint
    journal.record(
        "attempt-start.json",
        AttemptStart(
            schema=ATTEMPT_START_SCHEMA,
            attempt_id=attempt_id,
            ledger_position=entry.position,
            request=request_digest,
            invocation=invocation_digest,
            files=journal.ordered(),
            fingerprint_before=fingerprint_before,
            started_at=started_at,
        ),
    )
    position = pair.manifest.pair.position
    log.say(f"pair {position} arm {arm.arm.value}: attempt {attempt_id} started (execution {entry.position})")
    called = call_provider(
        arm.argv,
        cwd=Path(pair.freeze.repository.path),
        stdin=attempt_dir / "submitted-prompt.txt",
        stdout=attempt_dir / "provider.jsonl",
        stderr=attempt_dir / "provider.stderr",
        environment=os.environ,
        timeout_s=pair.freeze.timeout_s,
        signals=signals,
    )
    for name in ("provider.jsonl", "provider.stderr"):
        journal.files[name] = file_digest(attempt_dir / name, name)
    fingerprint_after, transport, status, problems = _after(pair, journal, called, fingerprint_before)
    synthetic_usage = transport is not None and transport.synthetic
    synthetic = " (synthetic)" if synthetic_usage else ""
    log.say(f"pair {position} arm {arm.arm.value}: {status.value}{synthetic}")
    if transport is not None and transport.usage is not None:
        log.say(f"pair {position} arm {arm.arm.value}: usage {usage_text(transport.usage)}{synthetic}")
        for name in COUNTERS:  # a reasoning count not reported at all is no problem
            unreported = name == COUNTERS[3] and name not in transport.usage.not_counts
            if (why := transport.usage.unknown(name)) is not None and not (unreported and why[0] == MISSING_COUNTERS):
                log.warn(
                    f"pair {position} arm {arm.arm.value}: {why[0]}: {why[1]}: each metric that needs it is unknown"
                )
    if transport is not None and transport.partial_usage is not None:
        shown = usage_text(transport.partial_usage)
        log.say(f"pair {position} arm {arm.arm.value}: partial usage, never a total: {shown}{synthetic}")
    for problem in problems:
        log.warn(f"pair {position} arm {arm.arm.value}: {problem}")
    journal.write("runner.stdout", "".join(f"{line}\n" for line in log.stdout).encode())
    journal.write("runner.stderr", "".join(f"{line}\n" for line in log.stderr).encode())
    answer = transport.answer if transport is not None else None
    attempt = Attempt(
        schema=ATTEMPT_SCHEMA,
        attempt_id=attempt_id,
        synthetic=synthetic_usage,
        status=status,
        transport=transport.status if transport is not None else None,
        problems=problems,
        exit_code=called.exit_code,
        signal=called.signal,
        usage=transport.usage if transport is not None else None,
        partial_usage=transport.partial_usage if transport is not None else None,
        answer=digest_bytes(answer.encode("utf-8", "surrogatepass")) if answer is not None else None,
        fingerprint_before=fingerprint_before,
        fingerprint_after=fingerprint_after,
        files=journal.ordered(),
        started_at=started_at,
        ended_at=utc_now(),
    )
    write_record(attempt_dir / "attempt.json", attempt)
    pair.ledger.finish(attempt_id, status.value)
    stop = None
    if status.value in pair.freeze.spending_stop_on:
        stop = f"attempt {attempt_id} ended {status.value}, which the freeze lists as a spending stop"
        pair.ledger.stop(stop)
        log.err(f"spending stopped: {stop}")
    return AttemptReport(arm=arm.arm.value, attempt_id=attempt_id, status=status, cancelled=called.cancelled, stop=stop)
