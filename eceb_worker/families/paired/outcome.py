"""How an attempt ended, decided from its evidence
(task-context-benchmark-reference.md, "Paired inputs and retained
outputs" and "Local verification boundary": failed arms, malformed output,
cancellation, mutations, partial output).

:func:`answer_problems` checks an answer (the last agent message of a
completed single turn) against the captured answer schema;
:func:`attempt_status` ranks everything an attempt shows into one
:class:`~eceb_worker.families.paired.journal.AttemptStatus` and the problems
that explain it. The ranking (docs/INTERPRETATIONS.md, "How an attempt's
status is decided"): ``mutated`` outranks every other status, then
``cancelled``, ``timed_out``, ``spawn_failed``; then the transport's own
status (``malformed``, ``incompatible``, ``failed``, and ``partial`` unless
the provider exited non-zero or by a signal: then ``failed``); then a
completed stream of a provider that exited non-zero or by a signal
(``failed``); then the answer
(``malformed`` when it is not one JSON value valid against the schema);
else ``completed``. Pure.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from eceb_worker.families.paired.journal import AttemptStatus
from eceb_worker.families.paired.transport import Transport, TransportStatus

__all__ = ["MAX_ANSWER_PROBLEMS", "answer_problems", "attempt_status", "signal_name"]

MAX_ANSWER_PROBLEMS: Final = 20
"""At most this many schema problems of one answer are recorded (then a count)."""

_SIGNAL_NAMES: Final = {
    1: "SIGHUP",
    2: "SIGINT",
    3: "SIGQUIT",
    6: "SIGABRT",
    9: "SIGKILL",
    14: "SIGALRM",
    15: "SIGTERM",
}
"""The POSIX signals whose numbers are the same on every system."""

_BY_TRANSPORT: Final = {
    TransportStatus.MALFORMED: AttemptStatus.MALFORMED,
    TransportStatus.INCOMPATIBLE: AttemptStatus.INCOMPATIBLE,
    TransportStatus.FAILED: AttemptStatus.FAILED,
    TransportStatus.PARTIAL: AttemptStatus.PARTIAL,
}


def signal_name(number: int) -> str:
    """``"SIGTERM"`` for 15, ``"signal 10"`` for a number whose name differs between systems."""
    return _SIGNAL_NAMES.get(number, f"signal {number}")


def _schema_document(schema: bytes) -> tuple[Any, str | None]:
    """The captured answer schema decoded and checked against the metaschema,
    or why it cannot check an answer."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        document: Any = msgspec.json.decode(schema)
        Draft202012Validator.check_schema(document)
    except (msgspec.DecodeError, RecursionError) as exc:
        return None, f"answer: the captured answer schema is not JSON ({exc})"
    except SchemaError as exc:
        return None, f"answer: the captured answer schema is not a JSON Schema: {exc.message}"
    except Exception as exc:
        # E.g. a pattern whose repetition overflows the regex engine.
        return None, f"answer: the captured answer schema cannot be checked ({type(exc).__name__}: {str(exc)[:300]})"
    return document, None


def answer_problems(answer: str | None, schema: bytes) -> tuple[str, ...]:
    """Why ``answer`` (an agent message's text, or ``None`` without one) is
    not exactly one JSON value valid against ``schema`` (the captured answer
    schema's bytes, a JSON Schema 2020-12); empty when it is.

    Each problem starts with ``answer`` and names the JSON pointer of what
    is wrong (``"answer /claims/0: 'path' is a required property"``); at most
    :data:`MAX_ANSWER_PROBLEMS` are given, then how many more there were.
    """
    from jsonschema import Draft202012Validator

    document, unusable = _schema_document(schema)
    if unusable is not None:
        return (unusable,)
    if answer is None:
        return ("answer: the completed turn has no agent message",)
    try:
        value = msgspec.json.decode(answer.encode("utf-8", "surrogatepass"))
    except (msgspec.DecodeError, UnicodeEncodeError, RecursionError) as exc:
        return (f"answer: not exactly one JSON value ({exc})",)
    try:
        found = list(Draft202012Validator(document).iter_errors(value))
    except Exception as exc:
        # The validator on hostile data (a schema, the model's answer) raises more than its own errors
        # (a reference to a non-schema, an integer too large for a float under multipleOf, ...): the
        # answer is then unchecked, a problem named, never an internal error.
        shown = str(exc)[:300]
        return (f"answer: the captured answer schema cannot check it ({type(exc).__name__}: {shown})",)
    errors = sorted(found, key=lambda e: list(map(str, e.absolute_path)))
    problems = []
    for error in errors[:MAX_ANSWER_PROBLEMS]:
        pointer = "".join(f"/{part}" for part in error.absolute_path) or "/"
        problems.append(f"answer {pointer}: {error.message}")
    if len(errors) > MAX_ANSWER_PROBLEMS:
        problems.append(f"answer: {len(errors) - MAX_ANSWER_PROBLEMS} more problems against the schema")
    return tuple(problems)


def attempt_status(
    *,
    mutated: bool,
    cancelled: int | None,
    timed_out: bool,
    timeout_s: int,
    spawn_error: str | None,
    exit_code: int | None,
    signal: int | None,
    transport: Transport | None,
    answer: tuple[str, ...],
) -> tuple[AttemptStatus, tuple[str, ...]]:
    """The status of an attempt and every problem it shows, in rank order
    (module). ``cancelled``: the signal number the runner stopped the call
    for; ``transport``: the reading of the captured stream (``None`` when
    the provider never ran); ``answer``: :func:`answer_problems` (only
    looked at when everything else is in order)."""
    problems: list[str] = []
    if mutated:
        problems.append("the repository changed during the attempt (its tree fingerprint differs)")
    if cancelled is not None:
        problems.append(f"the runner received {signal_name(cancelled)}: the provider was stopped")
    if timed_out:
        problems.append(f"the provider ran past the timeout of {timeout_s} s and was stopped")
    if spawn_error is not None:
        problems.append(f"the provider could not be started: {spawn_error}")
    if signal is not None and cancelled is None and not timed_out:
        problems.append(f"the provider was ended by {signal_name(signal)}")
    elif exit_code not in (None, 0):
        problems.append(f"the provider exited with {exit_code}")
    if transport is not None:
        problems.extend(f"provider.jsonl {problem}" for problem in transport.problems)
        if transport.status is TransportStatus.COMPLETED:
            problems.extend(answer)
    if transport is None and spawn_error is None and cancelled is None:
        problems.append("no provider output")
    shown = transport.status if transport is not None else None
    by_transport = _BY_TRANSPORT.get(shown) if shown is not None else None
    ended_badly = exit_code != 0  # a non-zero exit, or a signal
    ranked = (
        (mutated, AttemptStatus.MUTATED),
        (cancelled is not None, AttemptStatus.CANCELLED),
        (timed_out, AttemptStatus.TIMED_OUT),
        (spawn_error is not None, AttemptStatus.SPAWN_FAILED),
        (shown is None, AttemptStatus.FAILED),  # never ran, for no reason above: nothing to read
        (shown is TransportStatus.PARTIAL and ended_badly, AttemptStatus.FAILED),  # failed before closing its turn
        (by_transport is not None, by_transport or AttemptStatus.FAILED),
        (ended_badly, AttemptStatus.FAILED),  # a completed stream from a provider that did not exit 0
        (bool(answer), AttemptStatus.MALFORMED),
    )
    status = next((status for condition, status in ranked if condition), AttemptStatus.COMPLETED)
    return status, tuple(problems)
