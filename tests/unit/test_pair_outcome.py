"""How an attempt's status is decided (eceb_worker.families.paired.outcome):
the ranking, and the answer checked against the captured schema."""

from __future__ import annotations

import json
from typing import Any

import pytest

from eceb_worker.families.paired.journal import AttemptStatus
from eceb_worker.families.paired.outcome import MAX_ANSWER_PROBLEMS, answer_problems, attempt_status
from eceb_worker.families.paired.transport import Transport, read_transport

SCHEMA = json.dumps(
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["ids"],
        "properties": {"ids": {"type": "array", "items": {"type": "string"}}},
    }
).encode()
USAGE = {"input_tokens": 100, "cached_input_tokens": 0, "output_tokens": 10}


def transport(*events: dict[str, Any]) -> Transport:
    return read_transport(b"".join(json.dumps(event).encode() + b"\n" for event in events))


COMPLETED = transport(
    {"type": "thread.started", "thread_id": "synthetic-1"},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "i", "type": "agent_message", "text": '{"ids": []}'}},
    {"type": "turn.completed", "usage": USAGE},
)
PARTIAL = transport({"type": "thread.started", "thread_id": "synthetic-1"}, {"type": "turn.started"})
MALFORMED = transport({"type": "surprise"})


def status(**given: Any) -> tuple[AttemptStatus, tuple[str, ...]]:
    settings: dict[str, Any] = {
        "mutated": False,
        "cancelled": None,
        "timed_out": False,
        "timeout_s": 60,
        "spawn_error": None,
        "exit_code": 0,
        "signal": None,
        "transport": COMPLETED,
        "answer": (),
    }
    return attempt_status(**{**settings, **given})


def test_a_completed_turn_with_a_valid_answer_is_completed() -> None:
    assert status() == (AttemptStatus.COMPLETED, ())


def test_a_mutation_outranks_every_other_status_and_keeps_every_problem() -> None:
    shown, problems = status(mutated=True, cancelled=2, exit_code=None, signal=15, transport=MALFORMED)
    assert shown is AttemptStatus.MUTATED
    assert problems[0].startswith("the repository changed")
    assert "the runner received SIGINT: the provider was stopped" in problems
    assert any(problem.startswith("provider.jsonl line 1: unknown event type") for problem in problems)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"cancelled": 15, "timed_out": True, "exit_code": None, "signal": 15}, AttemptStatus.CANCELLED),
        ({"timed_out": True, "exit_code": None, "signal": 9, "transport": PARTIAL}, AttemptStatus.TIMED_OUT),
        ({"spawn_error": "codex: Exec format error", "exit_code": None, "transport": None}, AttemptStatus.SPAWN_FAILED),
        ({"transport": MALFORMED, "exit_code": 1}, AttemptStatus.MALFORMED),
        ({"transport": PARTIAL}, AttemptStatus.PARTIAL),
        ({"transport": PARTIAL, "exit_code": 1}, AttemptStatus.FAILED),
        ({"transport": PARTIAL, "exit_code": None, "signal": 11}, AttemptStatus.FAILED),
        ({"exit_code": 3}, AttemptStatus.FAILED),
        ({"answer": ("answer: not exactly one JSON value",)}, AttemptStatus.MALFORMED),
    ],
)
def test_the_ranking(given: dict[str, Any], expected: AttemptStatus) -> None:
    assert status(**given)[0] is expected


def test_a_signal_the_runner_did_not_send_is_named() -> None:
    shown, problems = status(exit_code=None, signal=11)
    assert shown is AttemptStatus.FAILED and "the provider was ended by signal 11" in problems
    assert "the provider was ended by SIGKILL" in status(exit_code=None, signal=9)[1]


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (None, "answer: the completed turn has no agent message"),
        ("Here it is: {}", "answer: not exactly one JSON value"),
        ('{"ids": []} {"ids": []}', "answer: not exactly one JSON value"),
        ('{"ids": [NaN]}', "answer: not exactly one JSON value"),
        ('{"ids": [1]}', "answer /ids/0: 1 is not of type 'string'"),
        ('{"ids": [], "more": 1}', "answer /: Additional properties are not allowed ('more' was unexpected)"),
    ],
)
def test_an_answer_is_exactly_one_json_value_valid_against_the_schema(answer: str | None, problem: str) -> None:
    problems = answer_problems(answer, SCHEMA)
    assert problems and problems[0].startswith(problem), problems


def test_a_valid_answer_has_no_problems_and_many_problems_are_counted() -> None:
    assert answer_problems('{"ids": ["REQ-1"]}', SCHEMA) == ()
    many = answer_problems(json.dumps({"ids": list(range(MAX_ANSWER_PROBLEMS + 5))}), SCHEMA)
    assert len(many) == MAX_ANSWER_PROBLEMS + 1 and many[-1] == "answer: 5 more problems against the schema"


def test_a_captured_schema_that_is_not_a_schema_is_named() -> None:
    assert answer_problems("{}", b"{not json")[0].startswith("answer: the captured answer schema is not JSON")
    assert answer_problems("{}", b'{"type": 3}')[0].startswith(
        "answer: the captured answer schema is not a JSON Schema"
    )
