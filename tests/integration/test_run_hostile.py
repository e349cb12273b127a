"""``eceb run`` attacked as a hostile user, provider or context system would.

Each test asserts what the product promises (README "Make a run", "Exit
codes"): no internal error whatever the input, bad input named before
anything is sent, an output never replaces an input, nothing paid twice, no
job waits for ever, credentials never written.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support.making import answer_script, eceb_run, write_benchmark, write_corpus, write_profile

pytestmark = pytest.mark.integration

KEY = "sk-loopback-test-key"
EXECUTIONS = 1 + 2 + 2 + 1 + 1 + 1
"""Executions of the tiny benchmark with one repetition."""


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    write_corpus(tmp_path)
    write_benchmark(tmp_path, repetitions=1)
    return tmp_path


def _edit_profile(root: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    path = root / "profile.json"
    profile = json.loads(path.read_text())
    edit(profile)
    path.write_text(json.dumps(profile, indent=2))


def _command(root: Path, *args: str) -> list[str]:
    command = [sys.executable, "-m", "eceb_cli", "run", str(root / "benchmark.json"), str(root / "profile.json")]
    return [*command, "--corpus", str(root / "corpus"), *args]


def _environ() -> dict[str, str]:
    return {**os.environ, "ECEB_TEST_KEY": KEY}


def _no_internal_error(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode != 70, done.stderr
    assert "internal error" not in done.stderr
    assert "Traceback" not in done.stderr


def _journal_rows(path: Path, query: str) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(path)
    try:
        return list(db.execute(query))
    finally:
        db.close()


# --- outputs and inputs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["rubric.md", "corpus/rfc/raft.md"])
def test_the_run_never_replaces_an_input(tiny: Path, start_loopback_provider, target: str) -> None:
    """Attack: ``eceb run B P --corpus C -o rubric.md`` (or ``-o C/rfc/raft.md``), naming an input as the
    output. The run is refused with exit 6 before any call is sent, and the rubric (or the corpus
    artifact) is left byte for byte as it was."""
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url)
    before = (tiny / target).read_bytes()
    done = eceb_run(tiny, "-o", str(tiny / target))
    assert (tiny / target).read_bytes() == before
    assert done.returncode == 6, done.stderr
    assert provider.stats()["total"] == 0


def test_the_journal_is_never_the_run(tiny: Path, start_loopback_provider) -> None:
    """Attack: ``eceb run ... -o run.json --journal run.json``, the run and its journal at one path. The
    run is refused with exit 6 before any call is sent."""
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"), "--journal", str(tiny / "run.json"))
    assert done.returncode == 6, done.stderr
    assert provider.stats()["total"] == 0


def test_standard_output_never_replaces_a_file_beside_the_journal(tiny: Path, start_loopback_provider) -> None:
    """Attack: ``eceb run ... -o - --journal keep.journal`` with a user's file keep.json beside the
    journal. The run is written to standard output (exit 0) and keep.json is left untouched."""
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url)
    (tiny / "keep.json").write_text('{"precious": true}\n')
    done = eceb_run(tiny, "-o", "-", "--journal", str(tiny / "keep.journal"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["schema"] == "symgliph.eceb/run-v0.1"
    assert (tiny / "keep.json").read_text() == '{"precious": true}\n'


# --- the profile -------------------------------------------------------------------------------------------------


def test_a_bad_judge_base_url_is_bad_input_before_anything_is_paid(tiny: Path, start_loopback_provider) -> None:
    """Attack: the judge's ``model.base_url`` is ``file:///etc/passwd``. ``eceb run`` exits 3 naming the
    profile file, before any call is sent and without creating a journal."""
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url)
    _edit_profile(tiny, lambda p: p["judge"]["model"].update(base_url="file:///etc/passwd"))
    done = eceb_run(tiny, "-o", str(tiny / "run.json"))
    assert provider.stats()["total"] == 0
    assert not (tiny / "run.journal").exists()
    assert done.returncode == 3, done.stderr
    assert str(tiny / "profile.json") in done.stderr


def test_a_context_system_url_that_is_not_http_is_bad_input_before_anything_is_paid(
    tiny: Path, start_loopback_provider
) -> None:
    """Attack: ``"context_system": {"url": "ftp://127.0.0.1/x"}``, a context system URL that is not HTTP.
    ``eceb run`` exits 3 as bad input before any call is sent."""
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url)
    _edit_profile(tiny, lambda p: p.update(context_system={"url": "ftp://127.0.0.1/x"}))
    done = eceb_run(tiny, "-o", str(tiny / "run.json"))
    assert provider.stats()["total"] == 0
    assert done.returncode == 3, done.stderr


def test_an_api_key_file_that_is_a_fifo_is_bad_input(tiny: Path) -> None:
    """Attack: ``"api_key_file"`` naming a FIFO nobody writes to. ``eceb run`` does not wait on it: it
    exits 3 within seconds, naming the file."""
    write_profile(tiny, "http://127.0.0.1:9/v1")
    os.mkfifo(tiny / "key.fifo")
    _edit_profile(tiny, lambda p: p["model"].update(api_key_env="", api_key_file="key.fifo"))
    try:
        done = eceb_run(tiny, "-o", str(tiny / "run.json"), timeout=5)
    except subprocess.TimeoutExpired:
        pytest.fail("eceb run still waits on the FIFO after 5 s")
    assert done.returncode == 3, done.stderr
    assert "key.fifo" in done.stderr


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (768 << 20, 768 << 20))


def test_an_endless_api_key_file_is_bad_input(tiny: Path) -> None:
    """Attack: ``"api_key_file": "/dev/zero"`` (or any huge file), under a 768 MiB address-space limit.
    ``eceb run`` refuses it as bad input (exit 3) without running out of memory or ending in an
    internal error."""
    write_profile(tiny, "http://127.0.0.1:9/v1")
    _edit_profile(tiny, lambda p: p["model"].update(api_key_env="", api_key_file="/dev/zero"))
    done = subprocess.run(
        _command(tiny, "-o", str(tiny / "run.json")),
        capture_output=True,
        text=True,
        env=_environ(),
        timeout=120,
        check=False,
        preexec_fn=_limit_memory,
    )
    _no_internal_error(done)
    assert done.returncode == 3, done.stderr


def test_a_command_judge_printing_without_end_is_not_an_internal_error(tiny: Path, start_loopback_provider) -> None:
    """Attack: ``"judge": {"kind": "command", "command": ["yes", "900"], "timeout_s": 5}``, a judge whose
    standard output never ends, under a 768 MiB address-space limit. The run ends without running out
    of memory or ending in an internal error."""
    provider = start_loopback_provider(answer_script())
    judge = {"kind": "command", "profile": "endless", "command": ["yes", "900"], "timeout_s": 5}
    write_profile(tiny, provider.openai_base_url, judge=judge, in_flight=1)
    done = subprocess.run(
        _command(tiny, "-o", str(tiny / "run.json")),
        capture_output=True,
        text=True,
        env=_environ(),
        timeout=300,
        check=False,
        preexec_fn=_limit_memory,
    )
    _no_internal_error(done)


def test_huge_prices_and_allowances_are_not_an_internal_error(tiny: Path, start_loopback_provider) -> None:
    """Attack: a profile with ``max_output_tokens`` and ``output_micro_usd_per_mtok`` both 2**53-1, so that
    costs exceed what the journal can hold as integers. The run ends without an internal error."""
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url)

    def huge(profile: dict[str, Any]) -> None:
        profile["decoding"]["max_output_tokens"] = 2**53 - 1
        profile["pricing"]["output_micro_usd_per_mtok"] = 2**53 - 1

    _edit_profile(tiny, huge)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"))
    _no_internal_error(done)


# --- the journal -------------------------------------------------------------------------------------------------


def test_usage_beyond_safe_integers_does_not_poison_the_journal(tiny: Path, start_loopback_provider) -> None:
    """Attack: the provider reports ``prompt_tokens`` 2**54, beyond the safe integers. Neither the run nor
    a following ``--resume`` of its journal ends in an internal error."""
    provider = start_loopback_provider(answer_script(usage={"input_tokens": 2**54}))
    write_profile(tiny, provider.openai_base_url)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"))
    _no_internal_error(done)
    again = eceb_run(tiny, "-o", str(tiny / "run.json"), "--resume")
    _no_internal_error(again)


def test_an_edited_journal_record_is_bad_input(tiny: Path, start_loopback_provider) -> None:
    """Attack: make a run, set one row of ``results.record`` in its journal to ``{garbage``, and run again
    with ``--resume``. The damaged journal is bad input: exit 3 naming the journal file, with no
    internal error."""
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url)
    assert eceb_run(tiny, "-o", str(tiny / "run.json")).returncode == 0
    (tiny / "run.json").unlink()
    db = sqlite3.connect(tiny / "run.journal")
    with db:
        db.execute("UPDATE results SET record = ? WHERE rowid = 1", (b"{garbage",))
    db.close()
    done = eceb_run(tiny, "-o", str(tiny / "run.json"), "--resume")
    _no_internal_error(done)
    assert done.returncode == 3, done.stderr
    assert "run.journal" in done.stderr


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_journal_file_is_bad_input(tiny: Path, damage: str) -> None:
    write_profile(tiny, "http://127.0.0.1:9/v1")
    journal = tiny / "run.journal"
    if damage == "garbage":
        journal.write_bytes(os.urandom(20_000))
    else:
        journal.write_bytes(b"SQLite format 3\x00" + b"\x10\x00" + b"\x00" * 200)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"), "--resume")
    assert done.returncode == 3, done.stderr
    assert str(journal) in done.stderr


def test_a_second_run_on_a_journal_in_use_is_refused(tiny: Path, start_loopback_provider) -> None:
    provider = start_loopback_provider(answer_script(), delay_ms=300)
    write_profile(tiny, provider.openai_base_url, in_flight=1)
    first = subprocess.Popen(
        _command(tiny, "-o", str(tiny / "run.json")),
        env=_environ(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while provider.stats()["total"] < 1:
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        fresh = eceb_run(tiny, "-o", str(tiny / "run.json"))
        resumed = eceb_run(tiny, "-o", str(tiny / "run.json"), "--resume")
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(timeout=120)
    assert fresh.returncode == 6, fresh.stderr
    assert resumed.returncode == 6, resumed.stderr
    assert "in use by another eceb run" in resumed.stderr


# --- signals and stops -------------------------------------------------------------------------------------------


def test_sigterm_starts_no_further_paid_call(tiny: Path, start_loopback_provider) -> None:
    """Attack: a provider answering in 1 s, ``eceb run`` with several executions in flight, and SIGTERM
    sent once an answer came back. No further call reaches the provider after the signal, and the
    process exits 143 (128 + SIGTERM)."""
    provider = start_loopback_provider(answer_script(), delay_ms=1000)
    write_profile(tiny, provider.openai_base_url)
    process = subprocess.Popen(
        _command(tiny, "-o", str(tiny / "run.json")), env=_environ(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    while provider.stats()["answered"] < 1:
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)
    time.sleep(0.3)  # a call begun just before the signal reaches the provider
    at_signal = provider.stats()["total"]
    process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM
    assert provider.stats()["total"] == at_signal


def test_a_refused_credential_sends_nothing_more(tiny: Path, start_loopback_provider) -> None:
    """Attack: a key the provider refuses (401, fatal) with ``in_flight`` 1. Exactly one request reaches
    the provider and the run stops with exit 12."""
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url, in_flight=1)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"), key="sk-refused")
    assert done.returncode == 12, done.stderr
    assert provider.stats()["total"] == 1


def test_endless_429s_end_the_run_with_exit_12(tiny: Path, start_loopback_provider) -> None:
    faults = {str(n): "429" for n in range(1, 100)}
    provider = start_loopback_provider(answer_script(faults=faults, retry_after_s=0))
    write_profile(tiny, provider.openai_base_url, in_flight=1)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"), timeout=120)
    assert done.returncode == 12, done.stderr
    assert "429" in done.stderr and KEY not in done.stderr
    assert not (tiny / "run.json").exists()
    assert provider.stats()["answered"] == 0


# --- a hostile context system ------------------------------------------------------------------------------------

HOSTILE_SYSTEM = r"""
import json, os, sys, time
mode = sys.argv[1]
if mode == "banner":
    print("context system ready", flush=True)
if mode == "daemon":  # a helper started in its own session, inheriting standard output
    if os.fork() == 0:
        os.setsid()
        with open(sys.argv[2], "w") as pid:
            pid.write(str(os.getpid()))
        time.sleep(120)
        os._exit(0)
for line in sys.stdin:
    request = json.loads(line)
    out = {"schema": "symgliph.eceb/context-response-v0.1", "request_id": request["request_id"]}
    if mode == "wrong-schema":
        out = {"foo": 1}
    elif mode == "invalid-utf8":
        sys.stdout.buffer.write(b'{"request_id": "' + request["request_id"].encode() + b'", "context": "\xff"}\n')
        sys.stdout.flush()
        continue
    elif mode == "strange":
        out["context"] = "a\u0000b\u001b[2J\u202e\ufeff\U0010ffff"
        out["selected_artifacts"] = [{"artifact_id": "not/in/the/registry.md", "observed_digest": "0" * 64}]
    else:
        out["context"] = "plain"
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
"""


def _hostile_system(root: Path, *args: str) -> None:
    (root / "hostile_system.py").write_text(HOSTILE_SYSTEM)
    system = {"command": [sys.executable, "hostile_system.py", *args], "timeout_s": 5}
    _edit_profile(root, lambda p: p.update(context_system=system))


@pytest.mark.parametrize("mode", ["wrong-schema", "invalid-utf8", "banner", "strange"])
def test_a_hostile_context_system_fails_its_executions_only(tiny: Path, start_loopback_provider, mode: str) -> None:
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url)
    _hostile_system(tiny, mode)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"))
    _no_internal_error(done)
    assert done.returncode == (0 if mode == "strange" else 1), done.stderr
    run = json.loads((tiny / "run.json").read_text())
    compiled = [o for o in run["observations"] if o["strategy"] == "compiled"]
    assert len(compiled) == (3 if mode == "strange" else 0)
    if mode == "strange":  # the provenance gate judges the unknown artifact; the run itself is valid
        evaluated = subprocess.run(
            [
                *(sys.executable, "-m", "eceb_cli", "evaluate", str(tiny / "benchmark.json"), str(tiny / "run.json")),
                *("--corpus", str(tiny / "corpus"), "-o", str(tiny / "report.json")),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert evaluated.returncode == 1, evaluated.stderr


@pytest.mark.slow
def test_a_context_system_helper_keeping_its_output_open_does_not_hang_the_run(
    tiny: Path, start_loopback_provider
) -> None:
    """Attack: a context system that starts a helper in its own session (``setsid``) which inherits its
    standard output and outlives it. The run does not wait for the helper: it ends within 15 s with
    exit 0 and the run written."""
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url, strategies={"naive_top_k": False})
    pid_file = tiny / "helper.pid"
    _hostile_system(tiny, "daemon", str(pid_file))
    process = subprocess.Popen(
        _command(tiny, "-o", str(tiny / "run.json")), env=_environ(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        process.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"eceb run still runs 15 s later; run written: {(tiny / 'run.json').exists()}")
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert process.returncode == 0
    assert (tiny / "run.json").exists()


# --- a hostile model provider ------------------------------------------------------------------------------------


def _completion(body: dict[str, Any]) -> bytes:
    judge = "response_format" in body
    text = json.dumps({"score": 900, "rationale": "ok"}) if judge else "Promote the replica with pg_ctl promote."
    answer = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "hostile-1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
    }
    return json.dumps(answer).encode()


@contextlib.contextmanager
def _dribbling_provider(dribble_s: float) -> Iterator[str]:
    """An OpenAI-compatible server on 127.0.0.1 whose first answer trickles out over ``dribble_s``
    seconds (headers at once, then the body a few bytes at a time); the others come at once."""
    served = [0]
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                served[0] += 1
                first = served[0] == 1
            data = _completion(body)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if not first:
                self.wfile.write(data)
                return
            pieces = 20
            step = -(-len(data) // pieces)
            with contextlib.suppress(OSError):
                for start in range(0, len(data), step):
                    self.wfile.write(data[start : start + step])
                    self.wfile.flush()
                    time.sleep(dribble_s / pieces)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def test_a_dribbling_provider_is_abandoned_after_timeout_s(tiny: Path) -> None:
    """Attack: a provider sends the headers at once and then the body a few bytes every 0.15 s (3 s in
    all) to a model with ``timeout_s`` 1. The call is abandoned after 1 s and journaled as a transient
    failure ("no answer within 1 s"), and the run still ends with exit 0."""
    with _dribbling_provider(dribble_s=3.0) as base_url:
        write_profile(tiny, base_url, strategies={"naive_top_k": False}, in_flight=1)
        _edit_profile(tiny, lambda p: p["model"].update(timeout_s=1))
        done = eceb_run(tiny, "-o", str(tiny / "run.json"))
    assert done.returncode == 0, done.stderr
    details = _journal_rows(tiny / "run.journal", "SELECT detail FROM attempts WHERE outcome = 'transient'")
    assert any("no answer within 1 s" in str(detail) for (detail,) in details)


def test_a_huge_retry_after_is_capped(tiny: Path, start_loopback_provider, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack: a 429 answered with ``Retry-After: 3600``. The run waits no longer than WAIT_MAX_S in all
    and makes all 5 executions. Time is virtual here: the run is made in this process, its pacers'
    clock and the retry policy's sleep advanced by what they wait."""
    import tenacity.nap

    from eceb_worker.corpus.storage import StorageSpec
    from eceb_worker.io.storage import open_storage
    from eceb_worker.pipeline.making import session
    from eceb_worker.pipeline.making.inputs import load_making_inputs
    from eceb_worker.pipeline.making.pacing import Pacer
    from eceb_worker.pipeline.making.retry import WAIT_MAX_S
    from eceb_worker.pipeline.making.session import RunOutputs, SessionOptions, make_run

    now = [0.0]
    waited = [0.0]
    clock_lock = threading.Lock()

    def sleep(seconds: float) -> None:
        with clock_lock:
            now[0] += seconds
            waited[0] += seconds

    monkeypatch.setattr(tenacity.nap, "time", types.SimpleNamespace(sleep=sleep))
    monkeypatch.setattr(
        session, "pacers", lambda inputs, make=None: (Pacer(key="virtual", clock=lambda: now[0], sleep=sleep),) * 2
    )
    provider = start_loopback_provider(answer_script(faults={"1": "429"}, retry_after_s=3600))
    write_profile(tiny, provider.openai_base_url, strategies={"naive_top_k": False}, in_flight=1)
    inputs = load_making_inputs(tiny / "benchmark.json", tiny / "profile.json")
    made = make_run(
        inputs,
        storage=open_storage(StorageSpec(source=str(tiny / "corpus"))),
        options=SessionOptions(journal=tiny / "run.journal", environ={"ECEB_TEST_KEY": KEY}),
        outputs=RunOutputs.beside(tiny / "run.json"),
    )
    assert made.made == 5
    assert waited[0] <= WAIT_MAX_S


def test_a_provider_echoing_the_credential_never_gets_it_written(tiny: Path, start_loopback_provider) -> None:
    """Attack: a provider (or a proxy) whose response ``model`` field holds the API key it was sent. The
    run ends without an internal error, and the key appears in none of run.json, the transcripts, the
    judgments or the journal."""
    script = answer_script()
    script["model_revision"] = f"{KEY}\u001b[2J"
    provider = start_loopback_provider(script)
    write_profile(tiny, provider.openai_base_url)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"))
    _no_internal_error(done)
    for name in ("run.json", "run.transcripts.jsonl", "run.judgments.jsonl", "run.journal"):
        path = tiny / name
        assert not path.exists() or KEY.encode() not in path.read_bytes(), name


def test_judgments_that_are_not_scores_fail_their_executions(tiny: Path, start_loopback_provider) -> None:
    script = answer_script(judgment_text='{"score": "900", "rationale": "x"}')
    script["rules"] = [{"name": "half", "match": "Raft", "purpose": "judge", "judgment": {"score": 1000.5}}]
    provider = start_loopback_provider(script)
    write_profile(tiny, provider.openai_base_url)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"))
    _no_internal_error(done)
    assert done.returncode == 1, done.stderr
    assert f"0/{EXECUTIONS} executions made, {EXECUTIONS} failed" in done.stdout
    assert json.loads((tiny / "run.json").read_text())["observations"] == []


def test_credentials_in_base_url_are_never_shown(tiny: Path, start_loopback_provider) -> None:
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url.replace("http://", "http://someone:hunter2-secret@"))
    done = eceb_run(tiny, "-o", str(tiny / "run.json"))
    _no_internal_error(done)
    assert done.returncode in (0, 12), done.stderr  # 12: the SDK's basic authentication replaces the key
    assert "hunter2" not in done.stdout + done.stderr
    for path in tiny.glob("run*"):
        assert b"hunter2" not in path.read_bytes(), path


# --- inputs the run refuses well ---------------------------------------------------------------------------------


@pytest.mark.parametrize("rubric", ["fifo", "directory", "latin-1"])
def test_a_rubric_that_is_not_text_is_bad_input(tiny: Path, rubric: str) -> None:
    write_profile(tiny, "http://127.0.0.1:9/v1")
    path = tiny / "rubric.md"
    path.unlink()
    if rubric == "fifo":
        os.mkfifo(path)
    elif rubric == "directory":
        path.mkdir()
    else:
        path.write_bytes(b"caf\xe9\n")
    done = eceb_run(tiny, "-o", str(tiny / "run.json"), timeout=60)
    assert done.returncode == 3, done.stderr
    assert str(path) in done.stderr
    assert not (tiny / "run.journal").exists()


def test_every_problem_of_a_profile_is_listed_together(tiny: Path) -> None:
    write_profile(tiny, "http://127.0.0.1:9/v1")

    def wrong(profile: dict[str, Any]) -> None:
        profile["in_flight"] = 0
        profile["model"].update(api="nope", provider="", input_window_tokens=-1)
        profile["spending"] = {"stop_micro_usd": -5}

    _edit_profile(tiny, wrong)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"))
    assert done.returncode == 3, done.stderr
    for field in ("in_flight", "model.api", "model.provider", "model.input_window_tokens", "spending.stop_micro_usd"):
        assert f"field '{field}'" in done.stderr
    assert not (tiny / "run.journal").exists()


def test_a_reader_gone_from_standard_output_stops_quietly(tiny: Path, start_loopback_provider) -> None:
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url)
    command = _command(tiny, "-o", "-", "--journal", str(tiny / "x.journal"))
    process = subprocess.Popen(command, env=_environ(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    process.stdout.close()  # nobody reads the run
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr and "Broken pipe" not in stderr
