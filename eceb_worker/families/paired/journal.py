"""The journal of one attempt (task-context-benchmark-reference.md, "Paired
inputs and retained outputs": attempts retain attempt-start.json,
attempt.json, cue, prompt, request, submitted prompt, captured answer
schema, invocation, provider JSONL/stderr and runner stdout/stderr).

The files of an attempt directory, in the order they are written, are
listed in :data:`JOURNAL_ORDER`; the records among them are the Structs
below, and :func:`seconds_between` gives an attempt's wall-clock time
from its timestamps. The layout of the whole experiment is in
:mod:`eceb_worker.families.paired.records`. Pure.
"""

from __future__ import annotations

import enum
import re
from datetime import date
from fractions import Fraction
from typing import Final, Literal

import msgspec

from eceb_worker.core.digests import Digest
from eceb_worker.families.paired.records import Executable, FileDigest, PairPosition, Timestamp
from eceb_worker.families.paired.schedule import Arm
from eceb_worker.families.paired.transport import TransportStatus, Usage

__all__ = [
    "ATTEMPT_SCHEMA",
    "ATTEMPT_START_SCHEMA",
    "INVOCATION_SCHEMA",
    "JOURNAL_ORDER",
    "REQUEST_SCHEMA",
    "Attempt",
    "AttemptStart",
    "AttemptStatus",
    "Invocation",
    "Request",
    "seconds_between",
]

REQUEST_SCHEMA: Final = "symgliph.eceb/pair-request-v0.1"
INVOCATION_SCHEMA: Final = "symgliph.eceb/pair-invocation-v0.1"
ATTEMPT_START_SCHEMA: Final = "symgliph.eceb/pair-attempt-start-v0.1"
ATTEMPT_SCHEMA: Final = "symgliph.eceb/pair-attempt-v0.1"

JOURNAL_ORDER: Final = (
    "cue",
    "prompt.txt",
    "request.json",
    "submitted-prompt.txt",
    "answer.schema.json",
    "invocation.json",
    "attempt-start.json",
    "provider.jsonl",
    "provider.stderr",
    "runner.stdout",
    "runner.stderr",
    "attempt.json",
)
"""The files of an attempt directory in the order they are written;
``attempt-start.json`` is the commit point, ``attempt.json`` comes last by
atomic rename."""


class Request(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``request.json``: what the runner asks the adapter to run
    (``schema``: :data:`REQUEST_SCHEMA`).

    Fields: ``attempt_id``, ``freeze_digest``, ``manifest_digest``, ``pair``,
    ``arm``, ``task_id``; the shared settings (``model``, ``reasoning_effort``,
    ``speed_tier``, ``sandbox``); ``output_schema_digest`` and
    ``pair_schema_path`` (relative to the pair directory); ``cue`` and
    ``prompt`` by digest.
    """

    schema: Literal["symgliph.eceb/pair-request-v0.1"]
    attempt_id: str
    freeze_digest: Digest
    manifest_digest: Digest
    pair: PairPosition
    arm: Arm
    task_id: str
    model: str
    reasoning_effort: str
    speed_tier: str
    sandbox: str
    output_schema_digest: Digest
    pair_schema_path: str
    cue: Digest
    prompt: Digest


class Invocation(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``invocation.json``: exactly what is spawned (``schema``: :data:`INVOCATION_SCHEMA`).

    Fields: ``argv`` (``argv[0]`` the executable's real path), ``cwd``,
    ``executable`` (:class:`Executable`), ``stdin`` (the submitted prompt's
    file and digest), ``output_schema`` (the captured attempt-local schema:
    path and digest; equal to the request's ``output_schema_digest``),
    ``environment`` (the names of the variables passed, never their values).
    """

    schema: Literal["symgliph.eceb/pair-invocation-v0.1"]
    argv: tuple[str, ...]
    cwd: str
    executable: Executable
    stdin: FileDigest
    output_schema: FileDigest
    environment: tuple[str, ...]


class AttemptStart(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``attempt-start.json``, the commit point (``schema``: :data:`ATTEMPT_START_SCHEMA`):
    written after the ledger recorded the start and before the provider is
    spawned. From here on the attempt counts as an execution.

    Fields: ``attempt_id``, ``ledger_position``, ``request`` and
    ``invocation`` by digest, ``files`` (the journal so far), ``repository``
    (the tree fingerprint before), ``started_at``.
    """

    schema: Literal["symgliph.eceb/pair-attempt-start-v0.1"]
    attempt_id: str
    ledger_position: int
    request: Digest
    invocation: Digest
    files: tuple[FileDigest, ...]
    fingerprint_before: Digest
    started_at: Timestamp


class AttemptStatus(enum.Enum):
    """How an attempt ended, as its journal records it.

    ``completed`` (a completed single turn), ``failed`` (the turn failed or
    the provider exited non-zero), ``partial`` (the stream ended with its
    turn open), ``malformed`` / ``incompatible`` (see
    :class:`~eceb_worker.families.paired.transport.TransportStatus`),
    ``mutated`` (the repository changed: this outranks every other),
    ``cancelled`` (SIGINT or SIGTERM), ``timed_out``, ``spawn_failed`` (the
    provider could not be started). A journal with ``attempt-start.json`` and
    no valid ``attempt.json`` is *incomplete*, which is not a status: its
    attempt counts as an execution and its usage is never a total.
    """

    COMPLETED = "completed"
    FAILED = "failed"
    PARTIAL = "partial"
    MALFORMED = "malformed"
    INCOMPATIBLE = "incompatible"
    MUTATED = "mutated"
    CANCELLED = "cancelled"
    TIMED_OUT = "timed_out"
    SPAWN_FAILED = "spawn_failed"


class Attempt(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``attempt.json``, written last by atomic rename (``schema``: :data:`ATTEMPT_SCHEMA`).

    Fields:
        attempt_id; synthetic (the provider's stream labels itself
        synthetic, as a substitute provider's does: its usage verifies
        software handling only), status (:class:`AttemptStatus`), transport (the stream's
        :class:`~eceb_worker.families.paired.transport.TransportStatus`),
        problems (why not completed, each naming its evidence).
        exit_code: the provider's exit code, or ``None`` when it was killed by a signal.
        signal: the signal number that ended it, or ``None``.
        usage: the completed turn's usage (``None`` unless the transport completed).
        partial_usage: usage seen without a completed turn: never a total.
        answer: the last agent message's digest (``None`` without one).
        fingerprint_before, fingerprint_after: the repository's tree fingerprints.
        files: every other file of the journal by digest and size.
        started_at, ended_at.
    """

    schema: Literal["symgliph.eceb/pair-attempt-v0.1"]
    attempt_id: str
    synthetic: bool
    status: AttemptStatus
    transport: TransportStatus | None
    problems: tuple[str, ...]
    exit_code: int | None
    signal: int | None
    usage: Usage | None
    partial_usage: Usage | None
    answer: Digest | None
    fingerprint_before: Digest
    fingerprint_after: Digest | None
    files: tuple[FileDigest, ...]
    started_at: Timestamp
    ended_at: Timestamp


_TIMESTAMP: Final = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,9}))?Z")


def seconds_between(start: str, end: str) -> Fraction | None:
    """``end`` − ``start`` in seconds, exact, for two RFC 3339 UTC timestamps
    (``2026-12-01T15:04:05.123456Z``, up to nine fraction digits); ``None``
    when either is not such a timestamp."""

    def seconds(text: str) -> Fraction | None:
        found = _TIMESTAMP.fullmatch(text)
        if found is None:
            return None
        day, hours, minutes, secs, fraction = found.groups()
        try:
            days = date.fromisoformat(day).toordinal()
        except ValueError:
            return None
        if int(hours) > 23 or int(minutes) > 59 or int(secs) > 59:
            return None
        part = Fraction(int(fraction), 10 ** len(fraction)) if fraction else Fraction(0)
        return Fraction(((days * 24 + int(hours)) * 60 + int(minutes)) * 60 + int(secs)) + part

    first, last = seconds(start), seconds(end)
    return None if first is None or last is None else last - first
