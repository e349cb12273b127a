"""The model providers of ``eceb run`` (eceb_worker/io/models) through the
real ``openai`` and ``anthropic`` SDKs, against the loopback provider
(examples/run/loopback_provider.py, a real process speaking the real wire
protocols): each API answers, usage is mapped (cached and reasoning tokens
included), a judgment round-trips as structured output, every fault becomes
the ProviderError the retry policy expects, the credential never leaks, and
32 calls in flight at once all succeed, each counted once by the server."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eceb_worker.errors import InputError, ProviderError
from eceb_worker.families.eceb.making.exchange import ModelProvider, ModelRequest, ModelResponse, StructuredOutput
from eceb_worker.families.eceb.making.profile import ModelSpec
from eceb_worker.io.models import open_model
from tests.support.helpers import refusing_loopback_port
from tests.support.loopback_provider import LOOPBACK_PROVIDER, LoopbackProvider, running_loopback_provider

APIS = ("openai-chat", "openai-responses", "anthropic-messages")
KEY = "sk-loopback-models-0001"
PLANTED = "sk-planted-SECRET-1234"
REVISION = "gpt-test-2026-01-01"
SCRIPTED = "A scripted answer from the loopback provider."  # a rule's answer when it gives none

SCRIPT: dict[str, Any] = {
    "model_revision": REVISION,
    "rules": [
        {
            "name": "usage",
            "match": "USAGE-CASE",
            "answer": "Promote the replica, then repoint the writers.",
            "usage": {"input_tokens": 1200, "cached_tokens": 1024, "output_tokens": 60, "reasoning_tokens": 32},
            "model_revision": "gpt-test-2026-02-02",
        },
        {
            "name": "cache-write",
            "match": "CACHE-WRITE",
            "usage": {"input_tokens": 1200, "cached_tokens": 1000, "cache_creation_tokens": 150, "output_tokens": 9},
        },
        {"name": "judge", "match": "JUDGE-CASE", "purpose": "judge", "score": 850, "rationale": "covers the steps"},
        {"name": "rate", "match": "RATE-LIMIT", "retry_after_s": 2, "faults": {"1": "429"}},
        {"name": "rate-ms", "match": "RATE-MS", "retry_after_ms": 1500, "faults": {"1": "429"}},
        {"name": "server", "match": "SERVER-ERROR", "faults": {"1": "500", "2": "503"}},
        {"name": "hold", "match": "HOLD-ME", "hold_s": 30, "faults": {"1": "timeout"}},
        {"name": "drop", "match": "DROP-ME", "faults": {"1": "drop"}},
        {"name": "bad", "match": "BAD-REQUEST", "faults": {"1": "400"}},
        {"name": "forbidden", "match": "FORBIDDEN", "faults": {"1": "403"}},
        {"name": "no-usage", "match": "NO-USAGE", "faults": {"1": "no_usage"}},
        {"name": "no-text", "match": "NO-TEXT", "faults": {"1": "no_text"}},
        {"name": "crowd", "match": "CROWD", "delay_ms": 300},
    ],
    "default": {"answer": "A default answer."},
}

JUDGMENT = StructuredOutput(
    name="judgment",
    schema={
        "type": "object",
        "properties": {"score": {"type": "integer"}, "rationale": {"type": "string"}},
        "required": ["score", "rationale"],
        "additionalProperties": False,
    },
)


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackProvider]:
    with running_loopback_provider(tmp_path_factory.mktemp("provider"), SCRIPT, api_key=KEY) as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh_counts(provider: LoopbackProvider) -> None:
    provider.reset()


def spec_for(provider: LoopbackProvider | str, api: str, *, timeout_s: int = 30, **fields: Any) -> ModelSpec:
    base_url = provider if isinstance(provider, str) else provider.base_url_for(api)
    return ModelSpec(
        api=api,  # type: ignore[arg-type]
        provider="loopback",
        name="test-model",
        base_url=base_url,
        input_window_tokens=128_000,
        timeout_s=timeout_s,
        **fields,
    )


@pytest.fixture
def model(provider: LoopbackProvider, request: pytest.FixtureRequest) -> Iterator[ModelProvider]:
    opened = open_model(spec_for(provider, request.param), base_dir=Path("."), environ=_environ(KEY))
    yield opened
    opened.close()


def _environ(key: str) -> dict[str, str]:
    return {"OPENAI_API_KEY": key, "ANTHROPIC_API_KEY": key}


def ask(prompt: str, *, system: str = "", judge: bool = False) -> ModelRequest:
    return ModelRequest(
        purpose="judge" if judge else "answer",
        system=system,
        prompt=prompt,
        max_output_tokens=512,
        temperature_milli=0 if judge else 700,
        structured_output=JUDGMENT if judge else None,
    )


def failure(model: ModelProvider, prompt: str) -> ProviderError:
    with pytest.raises(ProviderError) as raised:
        model.complete(ask(prompt))
    return raised.value


each_api = pytest.mark.parametrize("model", APIS, indirect=True)


@each_api
def test_each_api_answers_with_its_default_usage(model: ModelProvider, provider: LoopbackProvider) -> None:
    system, prompt = "You answer from the context.", "What is the failover procedure? é"
    answer = model.complete(ask(prompt, system=system))
    assert answer.text == "A default answer."
    assert answer.model_revision == REVISION
    # The loopback provider's default input count: every message's text, system included, in bytes / 4.
    assert answer.usage.input_tokens == math.ceil(len((system + prompt).encode()) / 4)
    assert answer.usage.output_tokens == math.ceil(len(answer.text.encode()) / 4)
    assert (answer.usage.cached_input_tokens, answer.usage.reasoning_tokens) == (0, 0)
    sent = json.loads(answer.request_body)
    assert sent["model"] == "test-model"
    assert prompt in answer.request_body.decode()
    assert json.loads(answer.response_body)["model"] == REVISION
    assert provider.stats()["rules"] == {"default": 1}


@each_api
def test_usage_maps_cached_and_reasoning_tokens(model: ModelProvider) -> None:
    answer = model.complete(ask("USAGE-CASE: fail over the database"))
    assert answer.text == "Promote the replica, then repoint the writers."
    assert (answer.usage.input_tokens, answer.usage.cached_input_tokens) == (1200, 1024)
    assert (answer.usage.output_tokens, answer.usage.reasoning_tokens) == (60, 32)
    assert answer.model_revision == "gpt-test-2026-02-02"


@pytest.mark.parametrize("model", ["anthropic-messages"], indirect=True)
def test_anthropic_input_is_uncached_plus_cache_read_plus_cache_write(model: ModelProvider) -> None:
    answer = model.complete(ask("CACHE-WRITE"))
    usage = json.loads(answer.response_body)["usage"]
    assert (usage["input_tokens"], usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]) == (
        50,
        1000,
        150,
    )
    assert (answer.usage.input_tokens, answer.usage.cached_input_tokens) == (1200, 1000)


@each_api
def test_a_judgment_round_trips_as_structured_output(model: ModelProvider, provider: LoopbackProvider) -> None:
    answer = model.complete(ask("JUDGE-CASE: the answer to judge", judge=True))
    assert json.loads(answer.text) == {"score": 850, "rationale": "covers the steps"}
    sent = json.loads(answer.request_body)
    schemas = [
        sent.get("response_format", {}).get("json_schema", {}).get("schema"),
        sent.get("text", {}).get("format", {}).get("schema"),
        sent.get("output_config", {}).get("format", {}).get("schema"),
    ]
    assert JUDGMENT.schema in schemas
    # The judge rule answers judge requests only: an answer request falls to the default.
    assert model.complete(ask("JUDGE-CASE: not a judge request")).text == "A default answer."
    assert provider.stats()["rules"] == {"default": 1, "judge": 1}


@each_api
def test_429_is_transient_with_retry_after_and_the_retry_succeeds(
    model: ModelProvider, provider: LoopbackProvider
) -> None:
    error = failure(model, "RATE-LIMIT")
    assert (error.transient, error.status, error.retry_after_s, error.maybe_billed, error.fatal) == (
        True,
        429,
        2.0,
        False,
        False,
    )
    assert "429" in str(error) and "loopback" in str(error)
    assert model.complete(ask("RATE-LIMIT")).text == SCRIPTED
    stats = provider.stats()
    assert (stats["rules"], stats["faults"], stats["answered"]) == ({"rate": 2}, {"429": 1}, 1)


@pytest.mark.parametrize("model", ["openai-chat"], indirect=True)
def test_retry_after_ms_is_read_before_retry_after(model: ModelProvider) -> None:
    assert failure(model, "RATE-MS").retry_after_s == 1.5


@each_api
def test_5xx_is_transient_and_maybe_billed(model: ModelProvider, provider: LoopbackProvider) -> None:
    for status in (500, 503):
        error = failure(model, "SERVER-ERROR")
        assert (error.transient, error.maybe_billed, error.status, error.fatal) == (True, True, status, False)
    model.complete(ask("SERVER-ERROR"))
    assert provider.stats()["faults"] == {"500": 1, "503": 1}


@pytest.mark.parametrize("api", APIS)
def test_a_timeout_is_transient_and_maybe_billed(provider: LoopbackProvider, api: str) -> None:
    impatient = open_model(spec_for(provider, api, timeout_s=1), base_dir=Path("."), environ=_environ(KEY))
    try:
        error = failure(impatient, "HOLD-ME")
    finally:
        impatient.close()
    assert (error.transient, error.maybe_billed, error.status, error.fatal) == (True, True, None, False)
    assert "no answer within 1 s" in str(error)
    # The retry (with a timeout a busy machine always meets) is the rule's second match: answered.
    patient = open_model(spec_for(provider, api), base_dir=Path("."), environ=_environ(KEY))
    try:
        assert patient.complete(ask("HOLD-ME")).text == SCRIPTED
    finally:
        patient.close()
    assert provider.stats()["faults"] == {"timeout": 1}


@each_api
def test_a_dropped_connection_is_transient_and_maybe_billed(model: ModelProvider, provider: LoopbackProvider) -> None:
    error = failure(model, "DROP-ME")
    assert (error.transient, error.maybe_billed, error.status, error.fatal) == (True, True, None, False)
    assert "lost" in str(error)
    assert model.complete(ask("DROP-ME")).text == SCRIPTED
    assert provider.stats()["faults"] == {"drop": 1}


@each_api
def test_4xx_is_final_and_403_fatal(model: ModelProvider) -> None:
    error = failure(model, "BAD-REQUEST")
    assert (error.transient, error.fatal, error.status, error.maybe_billed) == (False, False, 400, False)
    assert "invalid_request_error" in str(error)
    error = failure(model, "FORBIDDEN")
    assert (error.transient, error.fatal, error.status) == (False, True, 403)


@each_api
def test_an_answer_outside_the_protocol_is_final_and_names_what_is_missing(model: ModelProvider) -> None:
    error = failure(model, "NO-USAGE")
    assert (error.transient, error.fatal, error.maybe_billed) == (False, False, False)
    assert "no usage" in str(error)
    error = failure(model, "NO-TEXT")
    assert not error.transient
    assert "no text" in str(error) or "no output_text" in str(error)


@pytest.mark.parametrize("api", APIS)
def test_a_refused_connection_was_not_billed(api: str) -> None:
    with refusing_loopback_port() as port:
        model = open_model(spec_for(f"http://127.0.0.1:{port}/v1", api), base_dir=Path("."), environ=_environ(KEY))
        try:
            error = failure(model, "anything")
        finally:
            model.close()
    assert (error.transient, error.maybe_billed, error.fatal) == (True, False, False)
    assert "could not send" in str(error)


@pytest.mark.parametrize("api", APIS)
def test_a_refused_key_is_fatal_and_the_planted_key_never_shows(
    provider: LoopbackProvider, api: str, tmp_path: Path
) -> None:
    (tmp_path / "key.txt").write_text(f"{PLANTED}\nsecond line\n", encoding="utf-8")
    model = open_model(spec_for(provider, api, api_key_file="key.txt"), base_dir=tmp_path, environ={})
    try:
        error = failure(model, "USAGE-CASE")
        assert (error.fatal, error.transient, error.status) == (True, False, 401)
        for shown in (str(error), repr(error), repr(error.args), repr(model), repr(vars(error))):
            assert PLANTED not in shown and "SECRET" not in shown
        assert error.__cause__ is None and error.__suppress_context__
    finally:
        model.close()
    stats = provider.stats()
    assert (stats["unauthorized"], stats["rules"]) == (1, {})


@pytest.mark.parametrize("api", APIS)
def test_the_planted_key_appears_in_no_body_repr_or_message(api: str, tmp_path: Path) -> None:
    with running_loopback_provider(tmp_path / "server", SCRIPT, api_key=PLANTED) as planted:
        spec = spec_for(planted, api, api_key_env="PLANTED_KEY")
        model = open_model(spec, base_dir=tmp_path, environ={"PLANTED_KEY": PLANTED})
        try:
            answers: list[ModelResponse] = [model.complete(ask("USAGE-CASE")), model.complete(ask("J", judge=True))]
            errors = [failure(model, prompt) for prompt in ("RATE-LIMIT", "SERVER-ERROR", "DROP-ME", "NO-USAGE")]
        finally:
            model.close()
        assert planted.stats()["answered"] == 3
    texts = [repr(model), repr(spec)]
    texts += [str(error) for error in errors] + [repr(vars(error)) for error in errors]
    texts += [answer.request_body.decode() + answer.response_body.decode() + repr(answer) for answer in answers]
    assert not [text for text in texts if PLANTED in text or "SECRET" in text]


@each_api
def test_32_calls_in_flight_at_once_all_succeed_each_counted_once(
    model: ModelProvider, provider: LoopbackProvider
) -> None:
    start = threading.Barrier(32)
    answers: dict[int, ModelResponse] = {}
    errors: list[BaseException] = []

    def call(number: int) -> None:
        start.wait(timeout=60)
        try:
            answers[number] = model.complete(ask(f"CROWD {number}"))
        except BaseException as exc:  # collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(number,)) for number in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    assert sorted(answers) == list(range(32))
    assert all(f"CROWD {number}" in answers[number].request_body.decode() for number in answers)
    stats = provider.stats()
    assert (stats["total"], stats["answered"], stats["rules"]) == (32, 32, {"crowd": 32})


# --- credentials and base URLs ------------------------------------------------


@pytest.mark.parametrize(
    ("api", "variable"), [("openai-chat", "OPENAI_API_KEY"), ("anthropic-messages", "ANTHROPIC_API_KEY")]
)
def test_a_missing_variable_is_an_input_error_naming_it(provider: LoopbackProvider, api: str, variable: str) -> None:
    with pytest.raises(InputError) as raised:
        open_model(spec_for(provider, api), base_dir=Path("."), environ={"OTHER": PLANTED})
    assert variable in str(raised.value)
    with pytest.raises(InputError, match="MY_KEY"):
        open_model(spec_for(provider, api, api_key_env="MY_KEY"), base_dir=Path("."), environ={variable: "k"})


def test_key_files_missing_empty_or_unusable_are_input_errors_without_their_content(
    provider: LoopbackProvider, tmp_path: Path
) -> None:
    (tmp_path / "empty.txt").write_text("\n\nsk-not-first\n", encoding="utf-8")
    (tmp_path / "spaced.txt").write_text("sk-planted SECRET-1234\n", encoding="utf-8")
    (tmp_path / "binary.txt").write_bytes(b"\xff\xfe" + PLANTED.encode())
    cases = {"absent.txt": "cannot read", "empty.txt": "first line is empty", "spaced.txt": "space"}
    cases["binary.txt"] = "not UTF-8"
    for name, expected in cases.items():
        with pytest.raises(InputError) as raised:
            open_model(spec_for(provider, "openai-chat", api_key_file=name), base_dir=tmp_path, environ={})
        message = str(raised.value)
        assert name in message and expected in message
        assert "SECRET" not in message and "sk-not-first" not in message


def test_a_base_url_that_is_not_http_is_an_input_error_shown_redacted(tmp_path: Path) -> None:
    for url in ("ftp://h/v1", "http://", "https://user:SECRET@:x/v1", "not a url"):
        with pytest.raises(InputError) as raised:
            open_model(spec_for(url, "openai-chat"), base_dir=tmp_path, environ=_environ(KEY))
        assert "SECRET" not in str(raised.value)


# --- the loopback provider itself --------------------------------------------


def test_the_loopback_provider_refuses_a_bad_script_and_stops_quietly(tmp_path: Path) -> None:
    script = tmp_path / "bad.json"
    script.write_text(json.dumps({"rules": [{"faults": {"1": "explode"}}]}), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(LOOPBACK_PROVIDER), "--script", str(script), "--api-key", "k"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "faults" in done.stderr


def test_the_loopback_provider_answers_401_in_each_providers_error_shape(provider: LoopbackProvider) -> None:
    import urllib.error
    import urllib.request

    for path, headers in (
        ("/v1/chat/completions", {"Authorization": f"Bearer {PLANTED}"}),
        ("/v1/messages", {"x-api-key": PLANTED}),
    ):
        request = urllib.request.Request(provider.base_url + path, data=b"{}", headers=headers, method="POST")
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(request, timeout=30)
        assert raised.value.code == 401
        body = json.loads(raised.value.read())
        assert body["error"]["type"] in ("invalid_request_error", "authentication_error")
        assert PLANTED not in json.dumps(body)
    assert provider.stats()["unauthorized"] == 2
