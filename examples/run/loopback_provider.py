"""A loopback stand-in for a paid model API, speaking the real wire protocols.

It answers, on 127.0.0.1 only, the three APIs ``eceb run`` can drive, each
non-streaming, the way the providers answer them:

- OpenAI Chat Completions, ``POST /v1/chat/completions`` (credential:
  ``Authorization: Bearer KEY``); structured output through
  ``response_format`` of type ``json_schema``;
- OpenAI Responses, ``POST /v1/responses`` (``Authorization: Bearer KEY``);
  structured output through ``text.format`` of type ``json_schema``;
- Anthropic Messages, ``POST /v1/messages`` (``x-api-key: KEY``, or
  ``Authorization: Bearer KEY`` as the ``anthropic`` SDK 2.x sends it); structured
  output through ``output_config.format`` of type ``json_schema`` (what the
  installed ``anthropic`` SDK sends; the older ``output_format`` is read too).

A request whose credential is not ``--api-key`` is answered 401 with the
provider's own error JSON. A request asking for structured output is a
*judge* request: it is answered with the judgment's JSON text; any other is an
*answer* request. Everything is the standard library: it runs from a fresh
clone with nothing installed.

Usage (from the repository root)::

    python examples/run/loopback_provider.py --port 0 --port-file /tmp/port \\
        --script examples/run/script.json --api-key sk-loopback [--delay-ms 20]

It binds 127.0.0.1 (``--port 0``: a free port), writes the port it listens on
to ``--port-file`` once listening, and runs until SIGTERM or SIGINT (exit 0,
quietly). Base URLs for the SDKs: ``http://127.0.0.1:PORT/v1`` for OpenAI,
``http://127.0.0.1:PORT`` for Anthropic.

The script (``--script``, JSON; without it every request gets the default
rule below)::

    {
      "model_revision": "gpt-test-2026-01-01",   // default revision of every rule
      "rules": [                                  // the first rule that matches wins
        {
          "name": "failover",                     // its name in /_stats (default "rule-N", N from 1)
          "match": "fail over",                   // a substring of the last user message
                                                  //   ("" or absent: every request)
          "purpose": "answer",                    // only "answer" or only "judge" requests (absent: both)
          "answer": "Promote the replica ...",    // the answer text of an answer request
          "score": 850,                           // a judge request's judgment:
          "rationale": "covers the steps",        //   {"score": 850, "rationale": "covers the steps"}
          "judgment": {"score": 850, "rationale": "..."},   // or the whole judgment object
          "judgment_text": "not json",            // or the judgment's raw text, as it is
          "usage": {                              // the usage reported (every field optional)
            "input_tokens": 1200,                 //   default: ceil(UTF-8 bytes of every message's
                                                  //   text, system included / 4); cached included
            "cached_tokens": 1024,                //   default 0 (Anthropic: cache_read_input_tokens)
            "cache_creation_tokens": 0,           //   Anthropic's cache_creation_input_tokens, default 0
            "output_tokens": 60,                  //   default: ceil(bytes of the text / 4) + reasoning
            "reasoning_tokens": 32                //   default 0 (Anthropic: thinking tokens)
          },
          "model_revision": "gpt-test-2026-02-02",
          "delay_ms": 50,                         // wait before answering (added to --delay-ms)
          "retry_after_s": 2,                     // Retry-After of a 429 fault (default 1)
          "retry_after_ms": 1500,                 // also send retry-after-ms (absent: not sent)
          "hold_s": 600,                          // how long a "timeout" fault holds the request
          "faults": {"1": "429", "2": "500"}      // by the rule's Nth match, counted from 1
        }
      ],
      "default": { ... }                          // a rule used when none matches ("match" ignored)
    }

Faults (the value in ``faults``): ``"429"`` (with ``Retry-After``), any other
HTTP status from 400 to 599 as a string (``"500"``, ``"503"``, ``"529"``,
``"400"``, ...: the provider's error JSON with that status), ``"timeout"``
(the request is read, then held ``hold_s`` seconds, longer than the client
waits, then the connection is closed unanswered), ``"drop"`` (the whole request
body is read, then the connection is closed without an answer),
``"no_usage"`` and ``"no_text"`` (a 200 answer without usage, or without any
text: answers outside the protocol). Faults apply to the Nth time a rule
matches, so that a retry of the same request succeeds: with
``{"1": "429", "2": "500"}`` the first match is answered 429, the second 500,
the third is answered normally.

Counters: ``GET /_stats`` returns JSON ``{"total": N, "endpoints": {PATH: N},
"rules": {NAME: N}, "faults": {FAULT: N}, "unauthorized": N, "answered": N,
"per_second": {UNIX_SECOND: N}}``: ``total`` counts every request to an API
path (401s included), ``rules`` the matches of each rule (the counts faults
are keyed by), ``answered`` the 200 answers, ``per_second`` the requests
received in each second. ``POST /_reset`` sets them all to zero (rule match counts included:
faults start again from the first match). Neither needs the credential.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import signal
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HOST = "127.0.0.1"

CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
MESSAGES = "/v1/messages"
ENDPOINTS = (CHAT, RESPONSES, MESSAGES)

DEFAULT_REVISION = "loopback-model-2026-01-01"
STATUS_FAULTS = {str(status) for status in range(400, 600)}
OTHER_FAULTS = {"timeout", "drop", "no_usage", "no_text"}
MAX_BODY_BYTES = 64 * 1024 * 1024

_OPENAI_ERRORS = {
    400: ("invalid_request_error", None, "The request is invalid."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided: {masked}."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Permission denied."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}
_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


class ScriptError(ValueError):
    """The script file is not what the module docstring describes."""


@dataclass(frozen=True)
class Rule:
    """One rule of the script (see the module docstring)."""

    name: str
    match: str = ""
    purpose: str = ""
    answer: str = "A scripted answer from the loopback provider."
    judgment_text: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    model_revision: str = DEFAULT_REVISION
    delay_ms: int = 0
    retry_after_s: int = 1
    retry_after_ms: int | None = None
    hold_s: float = 600.0
    faults: dict[str, str] = field(default_factory=dict)

    def matches(self, last_user: str, purpose: str) -> bool:
        """Whether this rule answers a request (its last user message, its purpose)."""
        return self.match in last_user and self.purpose in ("", purpose)


_USAGE_KEYS = {"input_tokens", "cached_tokens", "cache_creation_tokens", "output_tokens", "reasoning_tokens"}
_RULE_KEYS = {
    "name",
    "match",
    "purpose",
    "answer",
    "score",
    "rationale",
    "judgment",
    "judgment_text",
    "usage",
    "model_revision",
    "delay_ms",
    "retry_after_s",
    "retry_after_ms",
    "hold_s",
    "faults",
}


def _integer(raw: dict[str, Any], key: str, default: int | None, where: str) -> int | None:
    value = raw.get(key, default)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise ScriptError(f"{where}: {key!r} must be a non-negative integer")
    return value


def parse_rule(raw: object, *, name: str, revision: str) -> Rule:
    """One rule of the script; raises :class:`ScriptError` naming what is wrong."""
    if not isinstance(raw, dict):
        raise ScriptError(f"{name}: a rule must be a JSON object")
    unknown = sorted(set(raw) - _RULE_KEYS)
    if unknown:
        raise ScriptError(f"{name}: unknown keys {unknown}")
    name = str(raw.get("name", name))
    usage = raw.get("usage", {})
    if not isinstance(usage, dict) or set(usage) - _USAGE_KEYS:
        raise ScriptError(f"{name}: 'usage' must be an object with keys among {sorted(_USAGE_KEYS)}")
    for key in usage:
        _integer(usage, key, None, f"{name}.usage")
    faults = raw.get("faults", {})
    if not isinstance(faults, dict) or not all(
        isinstance(value, str) and value in STATUS_FAULTS | OTHER_FAULTS and key.isdigit()
        for key, value in faults.items()
    ):
        raise ScriptError(
            f'{name}: \'faults\' maps match numbers ("1", "2", ...) to 4xx/5xx statuses or one of '
            f"{sorted(OTHER_FAULTS)}"
        )
    purpose = raw.get("purpose", "")
    if purpose not in ("", "answer", "judge"):
        raise ScriptError(f"{name}: 'purpose' is 'answer' or 'judge'")
    if "judgment_text" in raw:
        judgment_text = str(raw["judgment_text"])
    else:
        judgment = raw.get("judgment", {"score": raw.get("score", 1000), "rationale": raw.get("rationale", "scripted")})
        judgment_text = json.dumps(judgment)
    hold_s = raw.get("hold_s", 600)
    if not isinstance(hold_s, int | float) or hold_s < 0:
        raise ScriptError(f"{name}: 'hold_s' must be a non-negative number")
    return Rule(
        name=name,
        match=str(raw.get("match", "")),
        purpose=purpose,
        answer=str(raw.get("answer", Rule.answer)),
        judgment_text=judgment_text,
        usage=dict(usage),
        model_revision=str(raw.get("model_revision", revision)),
        delay_ms=_integer(raw, "delay_ms", 0, name) or 0,
        retry_after_s=_integer(raw, "retry_after_s", 1, name) or 0,
        retry_after_ms=_integer(raw, "retry_after_ms", None, name),
        hold_s=float(hold_s),
        faults=dict(faults),
    )


def parse_script(raw: object) -> tuple[list[Rule], Rule]:
    """The rules and the default rule of a decoded script."""
    if not isinstance(raw, dict) or set(raw) - {"model_revision", "rules", "default"}:
        raise ScriptError("the script is an object with keys 'model_revision', 'rules' and 'default'")
    revision = str(raw.get("model_revision", DEFAULT_REVISION))
    rules_raw = raw.get("rules", [])
    if not isinstance(rules_raw, list):
        raise ScriptError("'rules' must be a list")
    rules = [parse_rule(rule, name=f"rule-{index}", revision=revision) for index, rule in enumerate(rules_raw, 1)]
    default = parse_rule(raw.get("default", {}), name="default", revision=revision)
    default = replace(default, match="", purpose="")
    names = [rule.name for rule in [*rules, default]]
    if len(set(names)) != len(names):
        raise ScriptError(f"rule names must be distinct: {names}")
    return rules, default


class State:
    """The script and the counters, shared by the request threads."""

    def __init__(self, rules: list[Rule], default: Rule) -> None:
        self.rules = rules
        self.default = default
        self._lock = threading.Lock()
        self._sequence = 0
        self.reset()

    def reset(self) -> None:
        """Zero every counter (``POST /_reset``)."""
        with self._lock:
            self.total = 0
            self.endpoints: Counter[str] = Counter()
            self.matches: Counter[str] = Counter()
            self.faults: Counter[str] = Counter()
            self.unauthorized = 0
            self.answered = 0
            self.per_second: Counter[int] = Counter()

    def received(self, path: str, *, authorized: bool) -> int:
        """Count one API request; its sequence number (ids of the answer)."""
        with self._lock:
            self.total += 1
            self.endpoints[path] += 1
            self.unauthorized += int(not authorized)
            self.per_second[int(time.time())] += 1
            self._sequence += 1
            return self._sequence

    def match(self, last_user: str, purpose: str) -> tuple[Rule, str | None]:
        """The first rule matching, and the fault of this match (if any)."""
        rule = next((rule for rule in self.rules if rule.matches(last_user, purpose)), self.default)
        with self._lock:
            self.matches[rule.name] += 1
            fault = rule.faults.get(str(self.matches[rule.name]))
            if fault is not None:
                self.faults[fault] += 1
        return rule, fault

    def count_answer(self) -> None:
        """Count one 200 answer."""
        with self._lock:
            self.answered += 1

    def stats(self) -> dict[str, Any]:
        """The counters (``GET /_stats``)."""
        with self._lock:
            return {
                "total": self.total,
                "endpoints": dict(sorted(self.endpoints.items())),
                "rules": dict(sorted(self.matches.items())),
                "faults": dict(sorted(self.faults.items())),
                "unauthorized": self.unauthorized,
                "answered": self.answered,
                "per_second": {str(second): count for second, count in sorted(self.per_second.items())},
            }


# --- reading requests -------------------------------------------------------


def _texts(content: object) -> list[str]:
    """Every text of a message content (a string, or a list of parts/items)."""
    if isinstance(content, str):
        return [content]
    found: list[str] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                found.append(part)
            elif isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    found.append(part["text"])
                elif "content" in part:
                    found.extend(_texts(part["content"]))
    return found


@dataclass(frozen=True)
class Parsed:
    """What the fake needs of one API request."""

    last_user: str
    message_bytes: int
    judge: bool


def _json_schema_asked(fmt: object) -> bool:
    return isinstance(fmt, dict) and fmt.get("type") == "json_schema"


def parse_request(path: str, body: dict[str, Any]) -> Parsed:
    """The last user message, the bytes of every message's text and whether
    structured output is asked, for each API's request body."""
    messages = body.get("messages")
    system: list[str] = []
    if path == RESPONSES:
        items = body.get("input", [])
        messages = [{"role": "user", "content": items}] if isinstance(items, str) else items
        system = _texts(body.get("instructions") or "")
        text = body.get("text")
        judge = _json_schema_asked(text.get("format") if isinstance(text, dict) else None)
    elif path == MESSAGES:
        system = _texts(body.get("system") or "")
        output_config = body.get("output_config")
        judge = _json_schema_asked(output_config.get("format") if isinstance(output_config, dict) else None)
        judge = judge or _json_schema_asked(body.get("output_format"))
    else:
        judge = _json_schema_asked(body.get("response_format"))
    if not isinstance(messages, list):
        messages = []
    all_texts = list(system)
    last_user = ""
    for message in messages:
        if not isinstance(message, dict):
            continue
        texts = _texts(message.get("content", ""))
        all_texts.extend(texts)
        if message.get("role", "user") == "user":
            last_user = "".join(texts)
    return Parsed(last_user=last_user, message_bytes=sum(len(t.encode("utf-8")) for t in all_texts), judge=judge)


# --- writing answers --------------------------------------------------------


@dataclass(frozen=True)
class Tokens:
    """The usage one answer reports."""

    input: int
    cached: int
    cache_creation: int
    output: int
    reasoning: int


def tokens_for(rule: Rule, parsed: Parsed, text: str) -> Tokens:
    """The scripted usage, with the defaults of the module docstring."""
    usage = rule.usage
    reasoning = usage.get("reasoning_tokens", 0)
    cached = usage.get("cached_tokens", 0)
    creation = usage.get("cache_creation_tokens", 0)
    input_tokens = usage.get("input_tokens", math.ceil(parsed.message_bytes / 4))
    input_tokens = max(input_tokens, cached + creation)
    output = usage.get("output_tokens", math.ceil(len(text.encode("utf-8")) / 4) + reasoning)
    return Tokens(input=input_tokens, cached=cached, cache_creation=creation, output=output, reasoning=reasoning)


FIXED_CREATED: list[int] = []
"""With ``--deterministic``, the one creation time every answer gives."""


def _created() -> int:
    """An answer's creation time (Unix seconds): now, or the fixed one."""
    return FIXED_CREATED[0] if FIXED_CREATED else int(time.time())


def chat_answer(number: int, revision: str, text: str | None, tokens: Tokens | None) -> dict[str, Any]:
    """A Chat Completions response body."""
    answer: dict[str, Any] = {
        "id": f"chatcmpl-loopback{number:08d}",
        "object": "chat.completion",
        "created": _created(),
        "model": revision,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None, "annotations": []},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "service_tier": "default",
        "system_fingerprint": "fp_loopback",
    }
    if tokens is not None:
        answer["usage"] = {
            "prompt_tokens": tokens.input,
            "completion_tokens": tokens.output,
            "total_tokens": tokens.input + tokens.output,
            "prompt_tokens_details": {"cached_tokens": tokens.cached, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": tokens.reasoning,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }
    return answer


def responses_answer(
    number: int, revision: str, text: str | None, tokens: Tokens | None, request: dict[str, Any]
) -> dict[str, Any]:
    """A Responses response body."""
    output: list[dict[str, Any]] = []
    if tokens is not None and tokens.reasoning:
        output.append({"type": "reasoning", "id": f"rs_loopback{number:08d}", "summary": []})
    content = [] if text is None else [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
    output.append(
        {
            "type": "message",
            "id": f"msg_loopback{number:08d}",
            "status": "completed",
            "role": "assistant",
            "content": content,
        }
    )
    answer: dict[str, Any] = {
        "id": f"resp_loopback{number:08d}",
        "object": "response",
        "created_at": _created(),
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "model": revision,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "store": request.get("store", True),
        "temperature": request.get("temperature", 1.0),
        "text": request.get("text", {"format": {"type": "text"}}),
        "tool_choice": "auto",
        "tools": [],
        "top_p": request.get("top_p", 1.0),
        "truncation": "disabled",
        "metadata": {},
    }
    if tokens is not None:
        answer["usage"] = {
            "input_tokens": tokens.input,
            "input_tokens_details": {"cached_tokens": tokens.cached},
            "output_tokens": tokens.output,
            "output_tokens_details": {"reasoning_tokens": tokens.reasoning},
            "total_tokens": tokens.input + tokens.output,
        }
    return answer


def messages_answer(number: int, revision: str, text: str | None, tokens: Tokens | None) -> dict[str, Any]:
    """An Anthropic Messages response body: ``input_tokens`` is the uncached
    part, so that input + cache read + cache creation is the scripted input."""
    content: list[dict[str, Any]] = []
    if tokens is not None and tokens.reasoning:
        content.append({"type": "thinking", "thinking": "", "signature": "loopback"})
    if text is not None:
        content.append({"type": "text", "text": text})
    answer: dict[str, Any] = {
        "id": f"msg_loopback{number:08d}",
        "type": "message",
        "role": "assistant",
        "model": revision,
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
    }
    if tokens is not None:
        answer["usage"] = {
            "input_tokens": tokens.input - tokens.cached - tokens.cache_creation,
            "cache_read_input_tokens": tokens.cached,
            "cache_creation_input_tokens": tokens.cache_creation,
            "output_tokens": tokens.output,
            "output_tokens_details": {"thinking_tokens": tokens.reasoning},
            "service_tier": "standard",
        }
    return answer


def _masked(key: str) -> str:
    return f"{key[:3]}{'*' * 8}{key[-4:]}" if len(key) > 8 else "*" * 8


def error_body(path: str, status: int, *, presented_key: str = "") -> dict[str, Any]:
    """The provider's error JSON for ``status`` on ``path``."""
    if path == MESSAGES:
        kind = _ANTHROPIC_ERRORS.get(status, "api_error" if status >= 500 else "invalid_request_error")
        message = "invalid x-api-key" if status == 401 else f"loopback fault {status}"
        return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_loopback"}
    default = (
        ("server_error", None, "The server had an error.") if status >= 500 else ("invalid_request_error", None, "")
    )
    kind, code, message = _OPENAI_ERRORS.get(status, default)
    message = message.format(masked=_masked(presented_key)) or f"loopback fault {status}"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


# --- the server -------------------------------------------------------------


class LoopbackServer(ThreadingHTTPServer):
    """The HTTP server: one thread per connection, keep-alive."""

    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True

    def __init__(self, port: int, state: State, api_key: str, delay_ms: int) -> None:
        super().__init__((HOST, port), Handler)
        self.state = state
        self.api_key = api_key
        self.delay_ms = delay_ms
        self.deterministic = False
        self.stopping = threading.Event()


class Handler(BaseHTTPRequestHandler):
    """One connection: HTTP/1.1 keep-alive, each response written in one send."""

    protocol_version = "HTTP/1.1"
    server_version = "loopback-provider/1"
    disable_nagle_algorithm = True
    server: LoopbackServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: nothing is logged."""

    # -- plumbing --

    def _send(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode("utf-8")
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Overloaded" if status == 529 else "Error"
        lines = [
            f"HTTP/1.1 {status} {reason}",
            f"Server: {self.server_version}",
            f"Date: {self.date_time_string()}",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
            *(f"{name}: {value}" for name, value in (headers or {}).items()),
        ]
        if self.close_connection:
            lines.append("Connection: close")
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)

    def _read_body(self) -> bytes | None:
        """The request body (Content-Length or chunked); None when unreadable."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length", "0") or "0")
        if length < 0 or length > MAX_BODY_BYTES:
            return None
        return self.rfile.read(length)

    def _authorized(self, path: str) -> tuple[bool, str]:
        """Whether the request carries the key (``Authorization: Bearer``;
        for Messages ``x-api-key`` too: the ``anthropic`` SDK 2.x sends its
        API key as a bearer token), and the key it carries."""
        scheme, _, presented = self.headers.get("Authorization", "").partition(" ")
        presented = presented.strip() if scheme.lower() == "bearer" else ""
        if path == MESSAGES and "x-api-key" in self.headers:
            presented = self.headers.get("x-api-key", "")
        return presented == self.server.api_key, presented

    # -- routes --

    def do_GET(self) -> None:
        """``GET /_stats``."""
        path = urlsplit(self.path).path
        if path == "/_stats":
            self._send(200, self.server.state.stats())
        else:
            self._send(404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        """The three APIs, and ``POST /_reset``."""
        path = urlsplit(self.path).path
        try:
            raw = self._read_body()
        except ValueError:
            raw = None
        if raw is None:
            self.close_connection = True
            self._send(400, {"error": {"message": "unreadable request body", "type": "invalid_request_error"}})
            return
        if path == "/_reset":
            self.server.state.reset()
            self._send(200, self.server.state.stats())
            return
        if path not in ENDPOINTS:
            self._send(404, error_body(path, 404))
            return
        self._api(path, raw)

    def _api(self, path: str, raw: bytes) -> None:
        state = self.server.state
        authorized, presented = self._authorized(path)
        number = state.received(path, authorized=authorized)
        if self.server.deterministic:  # ids from the request's bytes, not from the order of arrival
            number = int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big") % 10**8
        if not authorized:
            self._send(401, error_body(path, 401, presented_key=presented))
            return
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._send(400, error_body(path, 400))
            return
        parsed = parse_request(path, body)
        rule, fault = state.match(parsed.last_user, "judge" if parsed.judge else "answer")
        delay_s = (rule.delay_ms + self.server.delay_ms) / 1000
        if delay_s and fault != "drop":
            self.server.stopping.wait(delay_s)
        if fault == "drop":
            self.close_connection = True
            return
        if fault == "timeout":
            self.server.stopping.wait(rule.hold_s)
            self.close_connection = True
            return
        if fault in STATUS_FAULTS:
            self._fault(path, int(fault), rule)
            return
        self._answer(path, number, rule, parsed, body, fault)

    def _fault(self, path: str, status: int, rule: Rule) -> None:
        headers: dict[str, str] = {}
        if status == 429:
            headers["Retry-After"] = str(rule.retry_after_s)
        if rule.retry_after_ms is not None:
            headers["retry-after-ms"] = str(rule.retry_after_ms)
        self._send(status, error_body(path, status), headers)

    def _answer(
        self, path: str, number: int, rule: Rule, parsed: Parsed, body: dict[str, Any], fault: str | None
    ) -> None:
        text = rule.judgment_text if parsed.judge else rule.answer
        tokens: Tokens | None = tokens_for(rule, parsed, text)
        shown: str | None = text
        if fault == "no_usage":
            tokens = None
        elif fault == "no_text":
            shown = None
        if path == CHAT:
            answer = chat_answer(number, rule.model_revision, shown, tokens)
            headers = {"x-request-id": f"req_loopback{number:08d}", "openai-processing-ms": "1"}
        elif path == RESPONSES:
            answer = responses_answer(number, rule.model_revision, shown, tokens, body)
            headers = {"x-request-id": f"req_loopback{number:08d}", "openai-processing-ms": "1"}
        else:
            answer = messages_answer(number, rule.model_revision, shown, tokens)
            headers = {"request-id": f"req_loopback{number:08d}"}
        self.server.state.count_answer()
        self._send(200, answer, headers)


def load_script(path: Path | None) -> State:
    """The state of a script file (none: the default rule alone)."""
    raw: object = {}
    if path is not None:
        raw = json.loads(path.read_text(encoding="utf-8"))
    rules, default = parse_script(raw)
    return State(rules, default)


def _write_port(port_file: Path, port: int) -> None:
    partial = port_file.with_name(port_file.name + ".partial")
    partial.write_text(f"{port}\n", encoding="utf-8")
    os.replace(partial, port_file)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--port-file", type=Path, help="write the port here once listening")
    parser.add_argument("--script", type=Path, help="the JSON script (see the module docstring)")
    parser.add_argument("--api-key", required=True, help="the credential every API request must carry")
    parser.add_argument("--delay-ms", type=int, default=0, help="wait before every answer, in milliseconds")
    parser.add_argument(
        "--deterministic",
        action="store_true",
        help="answer the same request with the same bytes (ids from the request, a fixed creation time)",
    )
    args = parser.parse_args(argv)
    if args.deterministic:
        FIXED_CREATED.append(1767225600)
    try:
        state = load_script(args.script)
    except (OSError, ValueError) as exc:
        print(f"loopback_provider: {args.script}: {exc}", file=sys.stderr)
        return 2
    stop_signals: list[int] = []

    def request_stop(signum: int, frame: object) -> None:
        # No lock here: the handler runs in the main thread, which may hold one
        # (an Event's, inside Event.wait) when the signal comes: it would never return.
        stop_signals.append(signum)

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    try:
        server = LoopbackServer(args.port, state, args.api_key, max(args.delay_ms, 0))
        server.deterministic = args.deterministic
    except OSError as exc:
        print(f"loopback_provider: cannot listen on {HOST}:{args.port}: {exc}", file=sys.stderr)
        return 2
    port = server.server_address[1]
    if args.port_file is not None:
        _write_port(args.port_file, port)
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    serving.start()
    while not stop_signals:
        time.sleep(0.2)
    server.stopping.set()
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
