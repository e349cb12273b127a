"""The model APIs' request bodies and the readings of their answers
(eceb_worker/io/models/wire.py): usage mapping, model revision, text, and
answers outside the protocol."""

from __future__ import annotations

import json
from typing import Any

import pytest

from eceb_worker.errors import ProviderError
from eceb_worker.families.eceb.making.exchange import ModelRequest, StructuredOutput, Usage
from eceb_worker.io.models import wire

SCHEMA = StructuredOutput(name="judgment", schema={"type": "object", "properties": {}, "required": []})


def request(**fields: Any) -> ModelRequest:
    values: dict[str, Any] = {"purpose": "answer", "prompt": "Q?", "max_output_tokens": 100, "temperature_milli": 700}
    return ModelRequest(**{**values, **fields})


def encoded(value: object) -> bytes:
    return json.dumps(value).encode()


def chat(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "gpt-x-2026-01-01",
        "system_fingerprint": "fp_1",
        "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "prompt_tokens_details": {"cached_tokens": 64},
            "completion_tokens_details": {"reasoning_tokens": 5},
        },
    }
    return {**body, **overrides}


def responses(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "gpt-x-2026-01-01",
        "status": "completed",
        "output": [
            {"type": "reasoning", "id": "rs", "summary": [], "content": [{"type": "reasoning_text", "text": "no"}]},
            {"type": "message", "content": [{"type": "output_text", "text": "a"}, {"type": "refusal", "refusal": "x"}]},
            {"type": "message", "content": [{"type": "output_text", "text": "b"}]},
        ],
        "usage": {
            "input_tokens": 100,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 20},
        },
    }
    return {**body, **overrides}


def messages(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-x-2026",
        "stop_reason": "end_turn",
        "content": [{"type": "thinking", "thinking": "t", "signature": "s"}, {"type": "text", "text": "c"}],
        "usage": {
            "input_tokens": 10,
            "cache_read_input_tokens": 80,
            "cache_creation_input_tokens": 30,
            "output_tokens": 9,
            "output_tokens_details": {"thinking_tokens": 4},
        },
    }
    return {**body, **overrides}


def test_chat_body() -> None:
    body = wire.chat_request("m", request(system="S", seed=7, top_p_milli=950, structured_output=SCHEMA))
    assert body == {
        "model": "m",
        "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Q?"}],
        "max_completion_tokens": 100,
        "temperature": 0.7,
        "top_p": 0.95,
        "seed": 7,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "judgment", "schema": SCHEMA.schema, "strict": True},
        },
    }
    assert wire.chat_request("m", request())["messages"] == [{"role": "user", "content": "Q?"}]
    assert "top_p" not in wire.chat_request("m", request()) and "seed" not in wire.chat_request("m", request())


def test_responses_body_sends_no_seed_and_asks_the_provider_to_store_nothing() -> None:
    body = wire.responses_request("m", request(system="S", seed=7, structured_output=SCHEMA))
    assert body == {
        "model": "m",
        "input": [{"role": "user", "content": "Q?"}],
        "instructions": "S",
        "max_output_tokens": 100,
        "temperature": 0.7,
        "store": False,
        "text": {"format": {"type": "json_schema", "name": "judgment", "schema": SCHEMA.schema, "strict": True}},
    }


def test_messages_body_sends_no_sampling_parameter() -> None:
    body = wire.messages_request("m", request(system="S", seed=7, top_p_milli=900, structured_output=SCHEMA))
    assert body == {
        "model": "m",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Q?"}],
        "system": "S",
        "output_config": {"format": {"type": "json_schema", "schema": SCHEMA.schema}},
    }


def test_readings_of_each_api() -> None:
    assert wire.read_chat(encoded(chat()), party="p") == (
        "hi",
        Usage(input_tokens=100, cached_input_tokens=64, output_tokens=20, reasoning_tokens=5),
        "gpt-x-2026-01-01",
    )
    assert wire.read_responses(encoded(responses()), party="p") == (
        "ab",
        Usage(input_tokens=100, cached_input_tokens=0, output_tokens=20, reasoning_tokens=20),
        "gpt-x-2026-01-01",
    )
    # Anthropic: the whole input is uncached + cache read + cache write; cached is the cache read.
    assert wire.read_messages(encoded(messages()), party="p") == (
        "c",
        Usage(input_tokens=120, cached_input_tokens=80, output_tokens=9, reasoning_tokens=4),
        "claude-x-2026",
    )


def test_details_not_reported_are_none_not_zero() -> None:
    bare_chat = chat(usage={"prompt_tokens": 3, "completion_tokens": 2, "prompt_tokens_details": None})
    assert wire.read_chat(encoded(bare_chat), party="p")[1] == Usage(input_tokens=3, output_tokens=2)
    bare_messages = messages(usage={"input_tokens": 3, "output_tokens": 2})
    assert wire.read_messages(encoded(bare_messages), party="p")[1] == Usage(input_tokens=3, output_tokens=2)
    assert wire.read_chat(encoded(chat(model=None)), party="p")[2] == ""


@pytest.mark.parametrize(
    ("reader", "body", "expected"),
    [
        (wire.read_chat, b"<html>busy</html>", "not the expected JSON"),
        (wire.read_chat, encoded(chat(usage=None)), "no usage"),
        (wire.read_chat, encoded({k: v for k, v in chat().items() if k != "usage"}), "no usage"),
        (wire.read_chat, encoded(chat(choices=[])), "no choices[0].message"),
        (wire.read_chat, encoded(chat(choices=[{"message": {"content": None}, "finish_reason": "length"}])), "length"),
        (wire.read_chat, encoded(chat(choices=[{"message": {"content": None, "refusal": "no"}}])), "refused"),
        (wire.read_chat, encoded(chat(usage={"prompt_tokens": -1, "completion_tokens": 2})), "prompt_tokens"),
        (wire.read_chat, encoded(chat(usage={"prompt_tokens": 1, "completion_tokens": "2"})), "completion_tokens"),
        (
            wire.read_chat,
            encoded(
                chat(usage={"prompt_tokens": 1, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 5}})
            ),
            "5 cached of 1 input",
        ),
        (wire.read_responses, encoded(responses(output=[])), "no output_text"),
        (wire.read_responses, encoded(responses(usage=None)), "no usage"),
        (
            wire.read_responses,
            encoded(
                responses(
                    usage={"input_tokens": 1, "output_tokens": 2, "output_tokens_details": {"reasoning_tokens": 3}}
                )
            ),
            "3 reasoning of 2 output",
        ),
        (wire.read_messages, encoded(messages(content=[{"type": "thinking", "thinking": "t"}])), "no text block"),
        (wire.read_messages, encoded(messages(usage={"output_tokens": 1})), "input_tokens"),
        (wire.read_messages, encoded([1, 2]), "not the expected JSON"),
    ],
)
def test_answers_outside_the_protocol_are_final_and_name_what_is_wrong(reader: Any, body: bytes, expected: str) -> None:
    with pytest.raises(ProviderError) as raised:
        reader(body, party="acme")
    error = raised.value
    assert (error.transient, error.fatal, error.maybe_billed, error.party) == (False, False, False, "acme")
    assert expected in str(error) and str(error).startswith("acme (")


def test_no_value_of_the_body_shows_in_a_protocol_error() -> None:
    secret = "restricted-context-text"
    bodies = [
        encoded(chat(usage={"prompt_tokens": secret, "completion_tokens": 1})),
        encoded(chat(choices=[{"message": {"content": None, "refusal": secret}}])),
        secret.encode(),
    ]
    for body in bodies:
        with pytest.raises(ProviderError) as raised:
            wire.read_chat(body, party="p")
        assert secret not in str(raised.value)
