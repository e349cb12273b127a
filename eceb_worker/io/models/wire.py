"""The three model APIs' request bodies and the reading of their response
bodies: what :mod:`eceb_worker.io.models` sends through the official SDKs
and what it takes from the raw JSON the provider answered.

No I/O and no SDK here. A response body that is not what its protocol says
(no JSON, no usage, no text, a usage that does not add up) raises
:class:`~eceb_worker.errors.ProviderError`, final, naming what is missing or
wrong (the field's path, never a value read from the body).

Readings (pinned by ``tests/unit/test_model_wire.py``):

- OpenAI Chat Completions: input = ``usage.prompt_tokens`` (cached ones are
  a part of it), cached = ``prompt_tokens_details.cached_tokens``, output =
  ``completion_tokens`` (reasoning included), reasoning =
  ``completion_tokens_details.reasoning_tokens``; the text is
  ``choices[0].message.content``.
- OpenAI Responses: input = ``usage.input_tokens``, cached =
  ``input_tokens_details.cached_tokens``, output = ``output_tokens``,
  reasoning = ``output_tokens_details.reasoning_tokens``; the text is every
  ``output_text`` part of every ``message`` item of ``output``, joined.
- Anthropic Messages: ``usage.input_tokens`` counts only the uncached input,
  so the whole input is ``input_tokens + cache_read_input_tokens +
  cache_creation_input_tokens``; cached = ``cache_read_input_tokens`` (tokens
  read from the cache, billed at the cache-read price; tokens written to it
  are billed input, not cached); reasoning =
  ``output_tokens_details.thinking_tokens`` (within ``output_tokens``); the
  text is every ``text`` block of ``content``, joined (``thinking`` blocks are
  not the answer).
- The model revision is the response's ``model`` field for every API (the
  dated model the provider ran, e.g. ``gpt-4o-2024-08-06``). OpenAI's
  ``system_fingerprint`` names a backend configuration, not the model, is
  absent from the Responses API and null on many compatible servers: it is
  kept in the response body, not in the revision.
- A field that is absent and one that is ``null`` read alike (an
  OpenAI-compatible server often sends ``null`` details); a detail that is
  not reported is ``None`` in :class:`Usage`, never 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import msgspec

from eceb_worker.core.arithmetic import SAFE_INTEGER_MAX
from eceb_worker.errors import ProviderError
from eceb_worker.families.eceb.making.exchange import ModelRequest, Usage

__all__ = [
    "ReadAnswer",
    "chat_request",
    "messages_request",
    "protocol_error",
    "read_chat",
    "read_messages",
    "read_responses",
    "responses_request",
]

Count = Annotated[int, msgspec.Meta(ge=0)]
_T = TypeVar("_T")

ReadAnswer = tuple[str, Usage, str]
"""What a response body says: the answer's text, the usage, the model revision."""


def _temperature(request: ModelRequest) -> float:
    return request.temperature_milli / 1000


def _top_p(request: ModelRequest) -> dict[str, float]:
    """``top_p``, sent only when it is not 1 (the APIs' default)."""
    return {} if request.top_p_milli == 1000 else {"top_p": request.top_p_milli / 1000}


def chat_request(model: str, request: ModelRequest) -> dict[str, Any]:
    """The Chat Completions body (``client.chat.completions.create`` keyword
    arguments): the system text as a ``system`` message when not empty, the
    prompt as the one ``user`` message, ``max_completion_tokens``,
    ``temperature`` (thousandths / 1000), ``top_p`` when not 1, ``seed``
    when set, and structured output as ``response_format`` of type
    ``json_schema`` (strict)."""
    messages = [{"role": "system", "content": request.system}] if request.system else []
    messages.append({"role": "user", "content": request.prompt})
    body: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "max_completion_tokens": request.max_output_tokens,
        "temperature": _temperature(request),
        **_top_p(request),
    }
    if request.seed is not None:
        body["seed"] = request.seed
    if request.structured_output is not None:
        schema = request.structured_output
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema.name, "schema": schema.schema, "strict": True},
        }
    return body


def responses_request(model: str, request: ModelRequest) -> dict[str, Any]:
    """The Responses body (``client.responses.create`` keyword arguments):
    the system text as ``instructions`` when not empty, the prompt as one
    ``user`` input message, ``max_output_tokens``, ``temperature``, ``top_p``
    when not 1, ``store: false`` (the provider keeps no copy of the
    exchange), structured output as ``text.format`` of type ``json_schema``
    (strict). The Responses API takes no seed: ``seed`` is not sent."""
    body: dict[str, Any] = {
        "model": model,
        "input": [{"role": "user", "content": request.prompt}],
        "max_output_tokens": request.max_output_tokens,
        "temperature": _temperature(request),
        **_top_p(request),
        "store": False,
    }
    if request.system:
        body["instructions"] = request.system
    if request.structured_output is not None:
        schema = request.structured_output
        body["text"] = {"format": {"type": "json_schema", "name": schema.name, "schema": schema.schema, "strict": True}}
    return body


def messages_request(model: str, request: ModelRequest) -> dict[str, Any]:
    """The Anthropic Messages body (``client.messages.create`` keyword
    arguments): ``system`` when not empty, the prompt as the one ``user``
    message, ``max_tokens``, structured output as ``output_config.format``
    of type ``json_schema`` (the installed SDK's mechanism).

    The Messages API of the installed SDK (``anthropic`` 2.x) takes no
    sampling parameter: no ``temperature``, ``top_p`` or seed. They are not
    sent; the decoding the run records is then the one asked for, not one
    the provider applied."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_output_tokens,
        "messages": [{"role": "user", "content": request.prompt}],
    }
    if request.system:
        body["system"] = request.system
    if request.structured_output is not None:
        body["output_config"] = {"format": {"type": "json_schema", "schema": request.structured_output.schema}}
    return body


def protocol_error(party: str, api: str, what: str) -> ProviderError:
    """A final failure: the answer of ``party`` is outside ``api``'s protocol."""
    return ProviderError(f"{party} ({api}): the answer is outside the protocol: {what}", party=party, transient=False)


# --- Chat Completions -------------------------------------------------------


class _ChatPromptDetails(msgspec.Struct):
    cached_tokens: Count | None = None


class _ChatCompletionDetails(msgspec.Struct):
    reasoning_tokens: Count | None = None


class _ChatUsage(msgspec.Struct):
    prompt_tokens: Count
    completion_tokens: Count
    prompt_tokens_details: _ChatPromptDetails | None = None
    completion_tokens_details: _ChatCompletionDetails | None = None


class _ChatMessage(msgspec.Struct):
    content: str | None = None
    refusal: str | None = None


class _ChatChoice(msgspec.Struct):
    message: _ChatMessage | None = None
    finish_reason: str | None = None


class _ChatCompletion(msgspec.Struct):
    model: str | None = None
    choices: list[_ChatChoice] | None = None
    usage: _ChatUsage | None = None


# --- Responses ---------------------------------------------------------------


class _ResponsesInputDetails(msgspec.Struct):
    cached_tokens: Count | None = None


class _ResponsesOutputDetails(msgspec.Struct):
    reasoning_tokens: Count | None = None


class _ResponsesUsage(msgspec.Struct):
    input_tokens: Count
    output_tokens: Count
    input_tokens_details: _ResponsesInputDetails | None = None
    output_tokens_details: _ResponsesOutputDetails | None = None


class _Response(msgspec.Struct):
    model: str | None = None
    status: str | None = None
    output: list[dict[str, Any]] | None = None
    usage: _ResponsesUsage | None = None


# --- Anthropic Messages ------------------------------------------------------


class _MessagesOutputDetails(msgspec.Struct):
    thinking_tokens: Count | None = None


class _MessagesUsage(msgspec.Struct):
    input_tokens: Count
    output_tokens: Count
    cache_read_input_tokens: Count | None = None
    cache_creation_input_tokens: Count | None = None
    output_tokens_details: _MessagesOutputDetails | None = None


class _Message(msgspec.Struct):
    model: str | None = None
    stop_reason: str | None = None
    content: list[dict[str, Any]] | None = None
    usage: _MessagesUsage | None = None


def _decode(body: bytes, kind: type[_T], party: str, api: str) -> _T:
    try:
        return msgspec.json.decode(body, type=kind)
    except msgspec.DecodeError as exc:
        # msgspec names the path and the expected type, never the value.
        raise protocol_error(party, api, f"the body is not the expected JSON ({exc})") from None


def _usage(party: str, api: str, *, input_tokens: int, cached: int | None, output: int, reasoning: int | None) -> Usage:
    counts = (input_tokens, cached or 0, output, reasoning or 0)
    if any(count < 0 or count > SAFE_INTEGER_MAX for count in counts):
        raise protocol_error(party, api, f"usage reports a count outside 0..{SAFE_INTEGER_MAX} (2^53 - 1)")
    if cached is not None and cached > input_tokens:
        raise protocol_error(party, api, f"usage reports {cached} cached of {input_tokens} input tokens")
    if reasoning is not None and reasoning > output:
        raise protocol_error(party, api, f"usage reports {reasoning} reasoning of {output} output tokens")
    return Usage(
        input_tokens=input_tokens, cached_input_tokens=cached, output_tokens=output, reasoning_tokens=reasoning
    )


def read_chat(body: bytes, *, party: str, api: str = "openai-chat") -> ReadAnswer:
    """Text, usage and model revision of a Chat Completions response body."""
    answer = _decode(body, _ChatCompletion, party, api)
    if answer.usage is None:
        raise protocol_error(party, api, "no usage")
    if not answer.choices or answer.choices[0].message is None:
        raise protocol_error(party, api, "no choices[0].message")
    choice = answer.choices[0]
    message = choice.message
    assert message is not None
    if message.content is None:
        why = "the model refused (message.refusal)" if message.refusal else f"finish_reason {choice.finish_reason!r}"
        raise protocol_error(party, api, f"no text in choices[0].message.content ({why})")
    usage = answer.usage
    prompt, completion = usage.prompt_tokens_details, usage.completion_tokens_details
    return (
        message.content,
        _usage(
            party,
            api,
            input_tokens=usage.prompt_tokens,
            cached=prompt.cached_tokens if prompt else None,
            output=usage.completion_tokens,
            reasoning=completion.reasoning_tokens if completion else None,
        ),
        answer.model or "",
    )


def _texts(items: list[dict[str, Any]], keep: Callable[[dict[str, Any]], list[Any]], kind: str) -> list[str] | None:
    """The ``text`` of every part of type ``kind`` among the parts ``keep``
    takes from each item; None when there is none."""
    found = [
        part["text"]
        for item in items
        if isinstance(item, dict)
        for part in keep(item)
        if isinstance(part, dict) and part.get("type") == kind and isinstance(part.get("text"), str)
    ]
    return found or None


def _message_parts(item: dict[str, Any]) -> list[Any]:
    content = item.get("content")
    return content if item.get("type") == "message" and isinstance(content, list) else []


def read_responses(body: bytes, *, party: str, api: str = "openai-responses") -> ReadAnswer:
    """Text, usage and model revision of a Responses response body."""
    answer = _decode(body, _Response, party, api)
    if answer.usage is None:
        raise protocol_error(party, api, "no usage")
    texts = _texts(answer.output or [], _message_parts, "output_text")
    if texts is None:
        raise protocol_error(party, api, f"no output_text in output[] message items (status {answer.status!r})")
    usage = answer.usage
    details_in, details_out = usage.input_tokens_details, usage.output_tokens_details
    return (
        "".join(texts),
        _usage(
            party,
            api,
            input_tokens=usage.input_tokens,
            cached=details_in.cached_tokens if details_in else None,
            output=usage.output_tokens,
            reasoning=details_out.reasoning_tokens if details_out else None,
        ),
        answer.model or "",
    )


def read_messages(body: bytes, *, party: str, api: str = "anthropic-messages") -> ReadAnswer:
    """Text, usage and model revision of an Anthropic Messages response body
    (input = uncached + cache read + cache creation; cached = cache read)."""
    answer = _decode(body, _Message, party, api)
    if answer.usage is None:
        raise protocol_error(party, api, "no usage")
    texts = _texts([{"blocks": answer.content or []}], lambda item: item["blocks"], "text")
    if texts is None:
        raise protocol_error(party, api, f"no text block in content (stop_reason {answer.stop_reason!r})")
    usage = answer.usage
    read, written = usage.cache_read_input_tokens, usage.cache_creation_input_tokens
    details = usage.output_tokens_details
    return (
        "".join(texts),
        _usage(
            party,
            api,
            input_tokens=usage.input_tokens + (read or 0) + (written or 0),
            cached=read,
            output=usage.output_tokens,
            reasoning=details.thinking_tokens if details else None,
        ),
        answer.model or "",
    )
