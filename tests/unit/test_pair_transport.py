"""Reading a coding-agent CLI's captured ``exec --json`` stream
(eceb_worker.families.paired.transport): never a guess, usage taken once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.families.paired.transport import Command, TransportStatus, Usage, read_transport

USAGE = {"input_tokens": 1200, "cached_input_tokens": 300, "output_tokens": 80, "reasoning_output_tokens": 40}


def stream(*events: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(event).encode() + b"\n" for event in events)


def completed_turn(*items: dict[str, Any], usage: dict[str, Any] = USAGE) -> list[dict[str, Any]]:
    return [
        {"type": "thread.started", "thread_id": "th_1"},
        {"type": "turn.started"},
        *({"type": "item.completed", "item": {"id": f"item_{i}", **item}} for i, item in enumerate(items)),
        {"type": "turn.completed", "usage": usage},
    ]


COMMAND = {
    "type": "command_execution",
    "command": "bash -lc 'go test ./...'",
    "aggregated_output": "ok  \texample.com/fixture\t0.01s\n",
    "exit_code": 0,
    "status": "completed",
}


def test_a_completed_turn_gives_its_answer_commands_and_usage() -> None:
    data = stream(
        *completed_turn(
            {"type": "reasoning", "text": "thinking"},
            COMMAND,
            {"type": "agent_message", "text": "draft"},
            {"type": "agent_message", "text": '{"answer": 1}'},
        )
    )
    transport = read_transport(data)
    assert transport.status is TransportStatus.COMPLETED
    assert transport.problems == ()
    assert (transport.thread_id, transport.turns) == ("th_1", 1)
    assert transport.answer == '{"answer": 1}'
    assert transport.commands == (
        Command(
            command=COMMAND["command"], aggregated_output=COMMAND["aggregated_output"], exit_code=0, status="completed"
        ),
    )
    assert transport.usage == Usage(
        input_tokens=1200, cached_input_tokens=300, output_tokens=80, reasoning_output_tokens=40
    )
    assert transport.partial_usage is None


def test_usage_without_reasoning_tokens_is_still_complete() -> None:
    usage = {k: v for k, v in USAGE.items() if k != "reasoning_output_tokens"}
    transport = read_transport(stream(*completed_turn({"type": "agent_message", "text": "x"}, usage=usage)))
    assert transport.status is TransportStatus.COMPLETED
    assert transport.usage is not None and transport.usage.reasoning_output_tokens is None


@pytest.mark.parametrize(
    ("counters", "missing", "not_counts"),
    [
        ({"cached_input_tokens": None}, ("cached_input_tokens",), ()),
        ({"input_tokens": -1}, ("input_tokens",), ("input_tokens",)),
        (
            {"output_tokens": 1.5, "reasoning_output_tokens": "7"},
            ("output_tokens",),
            ("output_tokens", "reasoning_output_tokens"),
        ),
        ({"reasoning_output_tokens": -3}, (), ("reasoning_output_tokens",)),
    ],
    ids=["absent", "negative", "not-integers", "negative-reasoning"],
)
def test_a_missing_or_negative_counter_leaves_the_turn_completed_and_the_counter_unknown(
    counters: dict[str, Any], missing: tuple[str, ...], not_counts: tuple[str, ...]
) -> None:
    usage = {k: v for k, v in {**USAGE, **counters}.items() if v is not None}
    transport = read_transport(stream(*completed_turn({"type": "agent_message", "text": "a"}, usage=usage)))
    assert (transport.status, transport.answer, transport.problems) == (TransportStatus.COMPLETED, "a", ())
    assert transport.usage is not None and transport.partial_usage is None
    assert (transport.usage.missing, transport.usage.not_counts) == (missing, not_counts)
    for name in (*missing, *not_counts):
        assert transport.usage.count(name) is None
        why = transport.usage.unknown(name)
        assert why is not None and why[0] == "missing_counters" and name in why[1]
    assert transport.usage.unknown("input_tokens" if "input_tokens" not in counters else "output_tokens") is None


def test_a_completed_turn_without_a_usage_lacks_every_counter() -> None:
    events = completed_turn({"type": "agent_message", "text": "a"})
    del events[-1]["usage"]
    transport = read_transport(stream(*events))
    assert transport.status is TransportStatus.COMPLETED and transport.usage is not None
    assert transport.usage.missing == ("input_tokens", "cached_input_tokens", "output_tokens")


def test_a_counter_past_the_range_is_read_and_unknown_as_an_overflow() -> None:
    usage = {**USAGE, "input_tokens": 10**20, "output_tokens": 2**63}
    transport = read_transport(stream(*completed_turn({"type": "agent_message", "text": "a"}, usage=usage)))
    assert transport.status is TransportStatus.COMPLETED and transport.usage is not None
    assert transport.usage.count("input_tokens") == 10**20 and transport.usage.missing == ()
    assert transport.usage.unknown("input_tokens") == ("overflow", f"input_tokens {10**20} exceeds {2**63 - 1}")
    assert transport.usage.unknown("output_tokens") == ("overflow", f"output_tokens {2**63} exceeds {2**63 - 1}")
    assert transport.usage.unknown("cached_input_tokens") is None


def test_two_turns_are_incompatible_and_their_usage_is_never_a_total() -> None:
    events = completed_turn({"type": "agent_message", "text": "a"})
    events += [{"type": "turn.started"}, {"type": "turn.completed", "usage": USAGE}]
    transport = read_transport(stream(*events))
    assert transport.status is TransportStatus.INCOMPATIBLE
    assert transport.usage is None and transport.answer is None
    assert transport.problems == ("2 turns: an attempt is one turn",)


def test_a_stream_that_ends_mid_turn_is_partial() -> None:
    events = completed_turn({"type": "agent_message", "text": "a"})[:-1]
    transport = read_transport(stream(*events))
    assert transport.status is TransportStatus.PARTIAL
    assert transport.answer is None
    assert transport.problems == ("the stream ended before its turn completed",)


def test_a_failed_turn_keeps_its_usage_as_partial() -> None:
    events = [
        {"type": "thread.started", "thread_id": "th_1"},
        {"type": "turn.started"},
        {"type": "turn.failed", "error": {"message": "stream disconnected before completion"}, "usage": USAGE},
    ]
    transport = read_transport(stream(*events))
    assert transport.status is TransportStatus.FAILED
    assert transport.usage is None
    assert transport.partial_usage is not None and transport.partial_usage.input_tokens == 1200
    assert transport.problems == ("line 3: the turn failed: stream disconnected before completion",)


WARNING = {"type": "error", "message": "Model metadata for `gpt-5-codex` not found."}
RECONNECTING = {"type": "error", "message": "Reconnecting... 1/2 (stream disconnected before completion)"}


def test_a_warning_item_before_the_turn_is_kept_as_evidence() -> None:
    events = completed_turn({"type": "agent_message", "text": "a"})
    events.insert(1, {"type": "item.completed", "item": {"id": "item_0", **WARNING}})
    transport = read_transport(stream(*events))
    assert transport.status is TransportStatus.COMPLETED
    assert transport.warnings == ("line 2: Model metadata for `gpt-5-codex` not found.",)
    assert transport.answer == "a"


def test_any_other_item_outside_a_turn_is_malformed() -> None:
    events = completed_turn({"type": "agent_message", "text": "a"})
    events.insert(1, {"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": "b"}})
    transport = read_transport(stream(*events))
    assert transport.status is TransportStatus.MALFORMED
    assert transport.problems == ("line 2: item.completed of type 'agent_message' outside a turn",)
    no_message = read_transport(stream({"type": "item.completed", "item": {"id": "i", "type": "error"}}))
    assert no_message.status is TransportStatus.MALFORMED


def test_errors_during_a_turn_do_not_end_it() -> None:
    events = completed_turn({"type": "agent_message", "text": "a"})
    events.insert(2, RECONNECTING)
    transport = read_transport(stream(*events))
    assert transport.status is TransportStatus.COMPLETED
    assert transport.errors == ("line 3: Reconnecting... 1/2 (stream disconnected before completion)",)
    assert transport.problems == ()
    ended_open = read_transport(stream(*events[:-1]))
    assert ended_open.status is TransportStatus.PARTIAL
    assert ended_open.problems == (
        "line 3: error: Reconnecting... 1/2 (stream disconnected before completion)",
        "the stream ended before its turn completed",
    )


def test_a_stream_without_a_turn_failed_when_it_reported_an_error_else_partial() -> None:
    error = read_transport(stream({"type": "thread.started", "thread_id": "t"}, RECONNECTING))
    assert error.status is TransportStatus.FAILED
    assert error.problems == (
        "line 2: error: Reconnecting... 1/2 (stream disconnected before completion)",
        "the stream reported an error without starting a turn",
    )
    for data in (b"", stream({"type": "thread.started", "thread_id": "t"})):
        empty = read_transport(data)
        assert empty.status is TransportStatus.PARTIAL
        assert empty.problems == ("the stream ended before a turn started",)


def test_an_error_after_the_completed_turn_fails_the_attempt() -> None:
    events = [*completed_turn({"type": "agent_message", "text": "a"}), RECONNECTING]
    transport = read_transport(stream(*events))
    assert transport.status is TransportStatus.FAILED
    assert transport.usage is None and transport.partial_usage is not None
    assert transport.problems[-1] == "the stream reported an error after its turn completed"
    malformed = read_transport(stream({"type": "error", "message": 3}))
    assert malformed.status is TransportStatus.MALFORMED


@pytest.mark.parametrize(
    ("mangle", "problem"),
    [
        (lambda data: data[:-10], "line 4: not a JSON value"),
        (
            lambda data: data.replace(b'"turn.started"', b'"turn.rerouted"'),
            "line 2: unknown event type 'turn.rerouted'",
        ),
        (lambda data: data.replace(b'"usage": {', b'"usage": [{').replace(b"40}", b"40}]"), "line 4: turn.completed"),
        (lambda data: data.replace(b'"text": "a"', b'"text": 7'), "line 3: agent_message without its text"),
        (lambda data: b"[]\n" + data, "line 1: not a JSON object"),
    ],
)
def test_anything_unexpected_is_malformed_naming_its_line(mangle: Any, problem: str) -> None:
    data = stream(*completed_turn({"type": "agent_message", "text": "a"}))
    transport = read_transport(mangle(data))
    assert transport.status is TransportStatus.MALFORMED
    assert transport.usage is None and transport.answer is None
    assert any(p.startswith(problem) for p in transport.problems), transport.problems


@given(st.binary(max_size=400))
def test_any_bytes_give_a_transport_never_an_exception(data: bytes) -> None:
    transport = read_transport(data)
    assert (transport.usage is None) is (transport.status is not TransportStatus.COMPLETED)


def test_item_types_eceb_does_not_read_are_passed_over() -> None:
    items = (
        {"type": "todo_list", "items": []},
        {"type": "web_search", "query": "q"},
        {"type": "agent_message", "text": "a"},
    )
    transport = read_transport(stream(*completed_turn(*items)))
    assert transport.status is TransportStatus.COMPLETED
    assert (transport.agent_messages, transport.commands) == (("a",), ())
