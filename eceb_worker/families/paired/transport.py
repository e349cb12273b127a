"""What a coding-agent CLI's captured event stream shows of one attempt
(task-context-benchmark-reference.md, "Paired inputs and retained outputs":
the captured provider JSONL; issue of the Codex adapter).

The stream is Codex CLI's ``codex exec --json`` output, one JSON object a
line, each with a ``type``:

- ``thread.started`` (``thread_id``), once, first;
- ``turn.started``, then ``item.started`` / ``item.updated`` /
  ``item.completed`` (``item``: an ``agent_message`` with its ``text``, a
  ``command_execution`` with its ``command``, ``aggregated_output``,
  ``exit_code`` and ``status``, and other item types: reasoning, file
  changes, tool calls, ...);
- ``turn.completed`` (``usage``: ``input_tokens``, ``cached_input_tokens``,
  ``output_tokens``, ``reasoning_output_tokens``), or ``turn.failed``
  (``error.message``): the end of the turn;
- ``error`` (``message``): an error the CLI reports while it works, e.g.
  ``Reconnecting... 1/5 (...)`` before it retries. Codex CLI 0.171.0
  writes it before ``turn.failed`` and while it retries a dropped
  connection, so it does not by itself end the turn
  (tests/fixtures/codex/network-failure.jsonl);
- items of type ``error`` (``message``): warnings, e.g. that the model's
  metadata is unknown; Codex CLI 0.171.0 writes one before
  ``turn.started``. They are the only items allowed outside a turn.

:func:`read_transport` reads the bytes as retained and never guesses: a line
that is not a JSON object, an unknown event type, an event of an unexpected
shape or an item other than a warning outside a turn makes the transport
``malformed``; more than one turn makes it ``incompatible`` (the comparison
is of single-turn attempts); a turn closed by ``turn.failed`` is ``failed``;
a stream that ends with its turn open is ``partial``, whatever errors it
reported on the way, and its usage, if any was seen, is never a total. A
stream that never started a turn is ``failed`` when it reported an
``error`` (the provider said it failed before any turn) and ``partial``
otherwise (e.g. an empty stream). An ``error`` after ``turn.completed``
makes the attempt ``failed``: the completed turn does not account for it.
The usage of ``turn.completed`` is the thread's running total: it is taken
once, from the completed turn, never summed. A counter it lacks, or
reports as no count (negative, not an integer), leaves the turn completed
and its answer judged like any other: that counter is unknown
(:meth:`Usage.unknown`, cause ``missing_counters``), and so is each metric
that needs it; a counter past :data:`COUNTER_MAX` is unknown the same way
(cause ``overflow``). A usage that is absent or ``null`` lacks every
counter; one of another shape makes the transport ``malformed``. Warnings and errors are kept as
evidence (:attr:`Transport.warnings`, :attr:`Transport.errors`) whatever the
status.

Pure: bytes in, a :class:`Transport` out.
"""

from __future__ import annotations

import enum
from typing import Any, Final

import msgspec

__all__ = [
    "COUNTERS",
    "COUNTER_MAX",
    "MISSING_COUNTERS",
    "OVERFLOW",
    "Command",
    "Transport",
    "TransportStatus",
    "Usage",
    "read_transport",
]


SYNTHETIC_THREAD: Final = "synthetic-"
"""How a substitute provider's stream labels itself: its ``thread_id`` starts so."""


class TransportStatus(enum.Enum):
    """How the captured stream ended.

    - ``completed``: one turn, closed by ``turn.completed`` with its usage.
    - ``failed``: the turn failed (``turn.failed``), or the stream reported an
      ``error`` without starting a turn or after completing it.
    - ``partial``: the stream ended with its turn still open, or without
      starting a turn or reporting an error.
    - ``incompatible``: well-formed, but not a single-turn attempt.
    - ``malformed``: a line that is not an event of a known type and shape.
    """

    COMPLETED = "completed"
    FAILED = "failed"
    PARTIAL = "partial"
    INCOMPATIBLE = "incompatible"
    MALFORMED = "malformed"


COUNTER_MAX: Final = 2**63 - 1
"""The largest token counter the product accepts (a signed 64-bit integer,
the provider's own width); a larger one is an overflow."""
COUNTERS: Final = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens")
"""The usage counters read, in order; the first three are required, the reasoning count may be missing."""
MISSING_COUNTERS: Final = "missing_counters"
"""The cause of a counter that is absent or not a count (the credit estimate's ``missing_counters``)."""
OVERFLOW: Final = "overflow"
"""The cause of a counter past :data:`COUNTER_MAX` (the credit estimate's ``overflow``)."""


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    """Token counts of a completed turn (the thread's running total).

    Fields (tokens): ``input_tokens`` (context included), ``cached_input_tokens``
    and ``reasoning_output_tokens`` (subsets of input and output),
    ``output_tokens``; each is ``None`` when the stream does not report it
    as a count (absent, ``null``, negative, or not an integer);
    ``not_counts``: the counters (names, in :data:`COUNTERS` order) the
    stream reported with a value that is not a count: their values are not
    kept. A missing counter makes the turn no less complete: each metric
    that needs it is unknown (:meth:`unknown`).
    """

    input_tokens: int | None
    cached_input_tokens: int | None
    output_tokens: int | None
    reasoning_output_tokens: int | None = None
    not_counts: tuple[str, ...] = ()

    def count(self, name: str) -> int | None:
        """The counter ``name`` (one of :data:`COUNTERS`) as reported, or ``None``."""
        value: int | None = getattr(self, name)
        return value

    @property
    def missing(self) -> tuple[str, ...]:
        """The required counters (input, cached input, output) without a count, in order."""
        return tuple(name for name in COUNTERS[:3] if self.count(name) is None)

    def unknown(self, name: str) -> tuple[str, str] | None:
        """Why the counter ``name`` (one of :data:`COUNTERS`) is no usable
        count, as ``(cause, reason)``: :data:`MISSING_COUNTERS` when it is
        absent or not a count, :data:`OVERFLOW` when it exceeds
        :data:`COUNTER_MAX`; ``None`` when it is usable. Reasons carry
        counter names and counts only."""
        value = self.count(name)
        if name in self.not_counts:
            return MISSING_COUNTERS, f"the completed turn's usage reports {name} as no count (not an integer >= 0)"
        if value is None:
            return MISSING_COUNTERS, f"the completed turn's usage lacks {name}"
        if value > COUNTER_MAX:
            return OVERFLOW, f"{name} {value} exceeds {COUNTER_MAX}"
        return None


class Command(msgspec.Struct, frozen=True, kw_only=True):
    """A command the agent executed, as its completed item recorded it.

    Fields: ``command`` (the command line as the provider ran it),
    ``aggregated_output`` (its complete output), ``exit_code`` (``None`` when
    not reported), ``status`` (the provider's word, e.g. ``"completed"``).
    """

    command: str
    aggregated_output: str
    exit_code: int | None
    status: str


class Transport(msgspec.Struct, frozen=True, kw_only=True):
    """What the stream shows of one attempt.

    Fields:
        status: :class:`TransportStatus`.
        problems: why the status is not ``completed``, each naming its line
            (``"line 3: unknown event type 'x'"``); empty when completed.
        thread_id: from ``thread.started``, or ``None``.
        turns: turns started.
        agent_messages: the text of each completed ``agent_message``, in order.
        warnings: the message of each completed item of type ``error``, in
            order, each naming its line (``"line 2: Model metadata ..."``).
        errors: the message of each ``error`` event, in order, each naming
            its line (``"line 4: Reconnecting... 1/2 (...)"``).
        commands: each completed ``command_execution``, in order.
        usage: the completed turn's usage; ``None`` unless ``completed``.
        partial_usage: a usage seen in a stream that is not ``completed``
            (e.g. with ``turn.failed``): kept as evidence, never a total.
    """

    status: TransportStatus
    problems: tuple[str, ...]
    thread_id: str | None
    turns: int
    agent_messages: tuple[str, ...]
    commands: tuple[Command, ...]
    usage: Usage | None
    partial_usage: Usage | None
    warnings: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    @property
    def synthetic(self) -> bool:
        """True when the stream labels itself synthetic (its thread id starts
        with :data:`SYNTHETIC_THREAD`, as a substitute provider's does): its
        usage verifies software handling only, and shows no provider's support."""
        return (self.thread_id or "").startswith(SYNTHETIC_THREAD)

    @property
    def answer(self) -> str | None:
        """The last agent message of a completed single turn, else ``None``."""
        if self.status is not TransportStatus.COMPLETED or not self.agent_messages:
            return None
        return self.agent_messages[-1]


_ITEM_EVENTS: Final = frozenset({"item.started", "item.updated", "item.completed"})
_KNOWN: Final = frozenset({"thread.started", "turn.started", "turn.completed", "turn.failed", "error", *_ITEM_EVENTS})


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _usage(value: Any) -> Usage | None:
    """The usage object of an event (``None`` or absent: no counter), or
    ``None`` when it is of another shape. A counter that is absent or not a
    count is ``None`` (:class:`Usage`), never a guess."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        return None
    raw = [value.get(name) for name in COUNTERS]
    counts = [count if _is_count(count) else None for count in raw]
    return Usage(
        input_tokens=counts[0],
        cached_input_tokens=counts[1],
        output_tokens=counts[2],
        reasoning_output_tokens=counts[3],
        not_counts=tuple(
            name for name, count in zip(COUNTERS, raw, strict=True) if not (count is None or _is_count(count))
        ),
    )


def _command(item: dict[str, Any]) -> Command | None:
    command, output, code, status = (item.get(k) for k in ("command", "aggregated_output", "exit_code", "status"))
    if not (isinstance(command, str) and isinstance(output, str) and isinstance(status, str)):
        return None
    if code is not None and type(code) is not int:
        return None
    return Command(command=command, aggregated_output=output, exit_code=code, status=status)


class _Reading:
    """The state of one pass over the stream's lines."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.malformed = False
        self.failed = False
        self.error_after_turn = False
        self.thread_id: str | None = None
        self.turns = 0
        self.open_turn = False
        self.closed = False
        self.messages: list[str] = []
        self.commands: list[Command] = []
        self.usage: Usage | None = None
        self.warnings: list[str] = []
        self.errors: list[str] = []

    def bad(self, line: int, message: str) -> None:
        self.malformed = True
        self.problems.append(f"line {line}: {message}")

    def event(self, line: int, event: dict[str, Any]) -> None:  # noqa: PLR0912 - one branch per event type of the provider's stream
        kind = event.get("type")
        if not isinstance(kind, str) or kind not in _KNOWN:
            self.bad(line, f"unknown event type {kind!r}")
            return
        if kind == "thread.started":
            if self.thread_id is not None or not isinstance(event.get("thread_id"), str):
                self.bad(line, "thread.started repeated or without a thread_id")
            else:
                self.thread_id = event["thread_id"]
        elif kind == "turn.started":
            self.turns += 1
            self.open_turn = True
        elif kind in _ITEM_EVENTS:
            self.item(line, kind, event.get("item"))
        elif kind == "turn.completed":
            usage = _usage(event.get("usage"))
            if not self.open_turn or usage is None:
                self.bad(line, "turn.completed without an open turn or with a usage that is not an object")
                return
            self.open_turn, self.closed, self.usage = False, True, usage
        elif kind == "turn.failed":
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            self.failed, self.open_turn = True, False
            self.problems.append(f"line {line}: the turn failed: {message if isinstance(message, str) else '?'}")
            if "usage" in event:
                self.usage = _usage(event["usage"])
        else:  # error: evidence; not by itself the end of the turn
            message = event.get("message")
            if not isinstance(message, str):
                self.bad(line, "error without its message")
                return
            self.errors.append(f"line {line}: {message}")
            self.problems.append(f"line {line}: error: {message}")
            if self.closed and not self.open_turn:
                self.error_after_turn = True

    def item(self, line: int, kind: str, item: Any) -> None:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            self.bad(line, f"{kind} without an item of a type")
            return
        if item["type"] == "error":
            if not isinstance(item.get("message"), str):
                self.bad(line, f"{kind} of type error without its message")
            elif kind == "item.completed":
                self.warnings.append(f"line {line}: {item['message']}")
            return
        if not self.open_turn:
            self.bad(line, f"{kind} of type {item['type']!r} outside a turn")
            return
        if kind != "item.completed":
            return
        if item["type"] == "agent_message":
            if not isinstance(item.get("text"), str):
                self.bad(line, "agent_message without its text")
                return
            self.messages.append(item["text"])
        elif item["type"] == "command_execution":
            command = _command(item)
            if command is None:
                self.bad(line, "command_execution without command, aggregated_output, status or an integer exit_code")
                return
            self.commands.append(command)

    def status(self) -> TransportStatus:
        """The status the stream shows (the first rule that holds), its reason added to the problems."""
        rules: tuple[tuple[bool, TransportStatus, str | None], ...] = (
            (self.malformed, TransportStatus.MALFORMED, None),
            (self.turns > 1, TransportStatus.INCOMPATIBLE, f"{self.turns} turns: an attempt is one turn"),
            (self.failed, TransportStatus.FAILED, None),
            (
                self.turns == 0 and bool(self.errors),
                TransportStatus.FAILED,
                "the stream reported an error without starting a turn",
            ),
            (self.turns == 0, TransportStatus.PARTIAL, "the stream ended before a turn started"),
            (not self.closed, TransportStatus.PARTIAL, "the stream ended before its turn completed"),
            (self.error_after_turn, TransportStatus.FAILED, "the stream reported an error after its turn completed"),
        )
        for holds, status, problem in rules:
            if holds:
                if problem is not None:
                    self.problems.append(problem)
                return status
        return TransportStatus.COMPLETED


def read_transport(data: bytes) -> Transport:
    """What ``data`` (a provider's captured JSONL stdout, as retained) shows
    of its attempt; see the module for the rules. Never raises on any bytes:
    what cannot be read is a ``malformed`` transport naming its lines. A last
    line without its newline is read like the others (a truncated line does
    not parse)."""
    reading = _Reading()
    for number, raw in enumerate(data.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            event = msgspec.json.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            reading.bad(number, "not a JSON value")
            continue
        if not isinstance(event, dict):
            reading.bad(number, "not a JSON object")
            continue
        reading.event(number, event)
    status = reading.status()
    completed = status is TransportStatus.COMPLETED
    return Transport(
        status=status,
        problems=() if completed else tuple(reading.problems),
        thread_id=reading.thread_id,
        turns=reading.turns,
        agent_messages=tuple(reading.messages),
        commands=tuple(reading.commands),
        usage=reading.usage if completed else None,
        partial_usage=None if completed else reading.usage,
        warnings=tuple(reading.warnings),
        errors=tuple(reading.errors),
    )
