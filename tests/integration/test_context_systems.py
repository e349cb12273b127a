"""The context-system transports (``eceb_worker.io.context_systems``) with
real processes and a real loopback HTTP server: the example system of
``examples/run`` over the public corpus, and systems that misbehave
(garbage, another request's id, a hang, an exit, a missing program), and
many threads at once."""

from __future__ import annotations

import base64
import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import blake3
import msgspec
import pytest

from eceb_worker.errors import ProviderError
from eceb_worker.families.eceb.making.profile import ContextSystemSpec
from eceb_worker.families.eceb.making.protocol import ContextRequest, ContextResponse, Permissions
from eceb_worker.io.context_systems import (
    PARTY,
    HttpContextSystem,
    SubprocessContextSystem,
    open_context_system,
)
from tests.support.helpers import refusing_loopback_port
from tests.support.paths import EXAMPLES, SHARED

RUN = EXAMPLES / "run"
CORPUS = SHARED / "corpora" / "public-eng-mix" / "files"
SECRET = "TOP-SECRET-RESTRICTED-TEXT"
"""Text a misbehaving system writes: never in an error message."""

_counter = iter(range(1, 1_000_000))
_counter_lock = threading.Lock()


def request(query: str = "hello", *, budget: int = 1000, allowed: tuple[str, ...] = ("public",), **more: Any) -> Any:
    with _counter_lock:
        number = next(_counter)
    return ContextRequest(
        request_id=more.pop("request_id", f"req-{number}"),
        task_id=more.pop("task_id", "task"),
        query=query,
        strategy=more.pop("strategy", "compiled"),
        budget_tokens=budget,
        repetition=more.pop("repetition", 1),
        permissions=Permissions(
            allowed_classifications=allowed,  # type: ignore[arg-type]
            denied_artifacts=more.pop("denied", ()),
        ),
    )


# --- a scriptable system ---------------------------------------------------------------------------------------------

FAKE_SYSTEM = f"""
import json, os, sys, time
from pathlib import Path

SECRET = {SECRET!r}
answered = 0
for line in sys.stdin:
    request = json.loads(line)
    query = request["query"]
    answer = {{
        "schema": "symgliph.eceb/context-response-v0.1",
        "request_id": request["request_id"],
        "context": f"pid {{os.getpid()}} answer {{answered}} to {{query}}",
    }}
    if query == "garbage":
        print("this is no JSON: " + SECRET, flush=True)
        continue
    if query == "bad-field":
        answer["local_prompt_tokens"] = "many " + SECRET
    if query == "wrong-id":
        answer["request_id"] = "another-" + SECRET
    if query == "hang-once":
        marker = Path("hung")
        if not marker.exists():
            marker.write_text("")
            time.sleep(3600)
    if query == "exit":
        sys.stderr.write(SECRET)
        sys.stderr.flush()
        sys.exit(3)
    answered += 1
    sys.stdout.write(json.dumps(answer) + "\\n")
    sys.stdout.flush()
"""


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[Callable[..., SubprocessContextSystem]]:
    script = tmp_path / "system.py"
    script.write_text(FAKE_SYSTEM, encoding="utf-8")
    opened: list[SubprocessContextSystem] = []

    def start(timeout_s: float = 60.0) -> SubprocessContextSystem:
        system = SubprocessContextSystem([sys.executable, "system.py"], cwd=tmp_path, timeout_s=timeout_s)
        opened.append(system)
        return system

    yield start
    for system in opened:
        system.close()


def pid_of(response: ContextResponse) -> str:
    return response.context.split()[1]


def test_answers_in_order_and_echoes_the_request(fake: Callable[..., SubprocessContextSystem]) -> None:
    system = fake()
    first = system.build(request("one"))
    second = system.build(request("two"))
    assert first.context.endswith("answer 0 to one") and second.context.endswith("answer 1 to two")
    assert pid_of(first) == pid_of(second)


def test_garbage_is_a_final_error_naming_the_line_and_the_system_starts_again(
    fake: Callable[..., SubprocessContextSystem],
) -> None:
    system = fake()
    assert system.build(request("ok")).context
    with pytest.raises(ProviderError) as caught:
        system.build(request("garbage"))
    error = caught.value
    assert error.party == PARTY and not error.transient and not error.fatal
    assert "line 2 of the context system" in str(error) and "JSON is malformed" in str(error)
    assert SECRET not in str(error)
    after = system.build(request("ok"))
    assert after.context.endswith("answer 0 to ok")  # a new process: its output is in step again


def test_a_field_out_of_schema_is_named_without_its_value(fake: Callable[..., SubprocessContextSystem]) -> None:
    system = fake()
    with pytest.raises(ProviderError) as caught:
        system.build(request("bad-field"))
    message = str(caught.value)
    assert "line 1" in message and "$.local_prompt_tokens" in message and SECRET not in message
    assert not caught.value.transient


def test_another_requests_id_is_a_final_error(fake: Callable[..., SubprocessContextSystem]) -> None:
    system = fake()
    with pytest.raises(ProviderError) as caught:
        system.build(request("wrong-id", request_id="mine"))
    message = str(caught.value)
    assert "request_id" in message and "'mine'" in message and SECRET not in message
    assert not caught.value.transient and not caught.value.fatal
    assert system.build(request("ok")).context.endswith("to ok")


def test_a_hang_times_out_transient_and_the_system_is_started_again(
    fake: Callable[..., SubprocessContextSystem],
) -> None:
    system = fake(timeout_s=4.0)
    before = system.build(request("ok"))
    with pytest.raises(ProviderError) as caught:
        system.build(request("hang-once"))
    assert caught.value.transient and not caught.value.fatal
    assert "did not answer within 4 s" in str(caught.value)
    after = system.build(request("hang-once"))  # the marker exists now: the new process answers
    assert pid_of(after) != pid_of(before)
    assert after.context.endswith("answer 0 to hang-once")


def test_an_exit_is_transient_and_the_system_is_started_again(fake: Callable[..., SubprocessContextSystem]) -> None:
    system = fake()
    before = system.build(request("ok"))
    with pytest.raises(ProviderError) as caught:
        system.build(request("exit"))
    message = str(caught.value)
    assert caught.value.transient and not caught.value.fatal
    assert "exit status 3" in message and "'" + sys.executable + "'" in message
    assert SECRET not in message
    assert f"standard error: {len(SECRET)} bytes, BLAKE3 {blake3.blake3(SECRET.encode()).hexdigest()}" in message
    after = system.build(request("ok"))
    assert pid_of(after) != pid_of(before)
    # restarted once, it answered: a later exit is again worth another start
    with pytest.raises(ProviderError) as again:
        system.build(request("exit"))
    assert again.value.transient
    assert system.build(request("ok")).context


def test_a_command_that_exits_again_at_once_is_fatal(tmp_path: Path) -> None:
    system = SubprocessContextSystem(
        [sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(2)"], cwd=tmp_path, timeout_s=60
    )
    try:
        errors = []
        for _ in range(2):
            try:
                system.build(request())
            except ProviderError as exc:
                errors.append(exc)
                if exc.fatal:
                    break
        fatal = errors[-1]
        assert fatal.fatal and not fatal.transient
        assert "exited again (exit status 2)" in str(fatal) and repr(sys.executable) in str(fatal)
        assert "standard error: 4 bytes" in str(fatal)
        with pytest.raises(ProviderError) as later:
            system.build(request())
        assert later.value.fatal and str(later.value) == str(fatal)
    finally:
        system.close()


@pytest.mark.parametrize("program", ["/nonexistent/context-system", "no-such-context-system-anywhere", "./missing.py"])
def test_a_command_that_does_not_exist_is_fatal(tmp_path: Path, program: str) -> None:
    spec = ContextSystemSpec(command=(program, "--token=hunter2"))
    with pytest.raises(ProviderError) as caught:
        open_context_system(spec, base_dir=tmp_path)
    assert caught.value.fatal and "command not found" in str(caught.value) and program in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_a_program_that_is_not_executable_is_fatal(tmp_path: Path) -> None:
    (tmp_path / "system.py").write_text("print()\n")
    with pytest.raises(ProviderError) as caught:
        open_context_system(ContextSystemSpec(command=("./system.py",)), base_dir=tmp_path)
    assert caught.value.fatal and "Permission denied" in str(caught.value)


def test_sixteen_threads_at_once_each_get_their_own_answer(fake: Callable[..., SubprocessContextSystem]) -> None:
    system = fake()
    queries = [f"q{thread}-{n}" for thread in range(16) for n in range(8)]
    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(lambda q: (q, system.build(request(q))), queries))
    assert all(answer.context.endswith(f"to {q}") for q, answer in answers)
    assert len({pid_of(answer) for _, answer in answers}) == 1
    numbers = sorted(int(answer.context.split()[3]) for _, answer in answers)
    assert numbers == list(range(len(queries)))  # one request in flight at a time, none lost


def test_close_stops_the_system_and_later_calls_are_fatal(fake: Callable[..., SubprocessContextSystem]) -> None:
    system = fake()
    system.build(request())
    process = system._process
    assert process is not None
    system.close()
    assert process.popen.returncode is not None
    system.close()  # idempotent
    with pytest.raises(ProviderError) as caught:
        system.build(request())
    assert caught.value.fatal


def test_close_during_a_request_fails_it_fatal(fake: Callable[..., SubprocessContextSystem], tmp_path: Path) -> None:
    system = fake()
    outcome: list[BaseException] = []

    def hang() -> None:
        try:
            system.build(request("hang-once"))
        except ProviderError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=hang)
    thread.start()
    deadline = time.monotonic() + 120
    while not (tmp_path / "hung").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    system.close()
    thread.join(timeout=120)
    assert len(outcome) == 1 and isinstance(outcome[0], ProviderError)
    assert outcome[0].fatal and "closed before answering" in str(outcome[0])


def test_close_terminates_a_system_that_ignores_the_end_of_its_input(tmp_path: Path) -> None:
    system = SubprocessContextSystem(
        [sys.executable, "-c", "import sys, time\nsys.stdin.read()\ntime.sleep(3600)"], cwd=tmp_path, timeout_s=60
    )
    process = system._process
    assert process is not None
    system.close()
    assert process.popen.returncode is not None and process.popen.returncode < 0


def test_the_spec_must_name_one_system(tmp_path: Path) -> None:
    for spec in (ContextSystemSpec(), ContextSystemSpec(command=("x",), url="http://127.0.0.1:1/")):
        with pytest.raises(ProviderError) as caught:
            open_context_system(spec, base_dir=tmp_path)
        assert caught.value.fatal


# --- the example system over the public corpus -----------------------------------------------------------------------

BENCHMARK = json.loads((RUN / "benchmark.json").read_text(encoding="utf-8"))
REGISTRY = {
    a["artifact_id"]: a for a in map(json.loads, (RUN / "registry.jsonl").read_text(encoding="utf-8").splitlines()[1:])
}
UPPER_BUDGETS = (8000, 16000)
"""The ladder's upper budgets, at which the example system selects every required artifact."""


@pytest.fixture(scope="module")
def example() -> Iterator[SubprocessContextSystem]:
    if not CORPUS.is_dir():
        pytest.fail(f"the public corpus is expected at {CORPUS} (../shared beside the checkout)")
    spec = ContextSystemSpec(
        command=(sys.executable, "context_system.py", "--registry", "registry.jsonl", "--corpus", str(CORPUS)),
        timeout_s=300,
    )
    system = open_context_system(spec, base_dir=RUN)
    assert isinstance(system, SubprocessContextSystem)
    yield system
    system.close()


def task_request(task: dict[str, Any], budget: int, repetition: int = 1) -> Any:
    return request(
        task["query"],
        budget=budget,
        allowed=tuple(task["allowed_classifications"]),
        denied=tuple(task.get("denied_artifacts", ())),
        task_id=task["task_id"],
        repetition=repetition,
    )


def test_the_example_registry_is_the_public_eng_mix_registry() -> None:
    assert (RUN / "registry.jsonl").read_bytes() == (EXAMPLES / "public-eng-mix" / "registry.jsonl").read_bytes()


@pytest.mark.parametrize("task", BENCHMARK["tasks"], ids=lambda t: t["task_id"])
def test_the_example_system_honours_permissions_and_budgets(example: SubprocessContextSystem, task: Any) -> None:
    allowed = set(task["allowed_classifications"])
    denied = set(task.get("denied_artifacts", ()))
    for budget in task["budget_ladder"]:
        response = example.build(task_request(task, budget))
        assert not response.error
        for selected in response.selected_artifacts:
            registered = REGISTRY[selected.artifact_id]
            assert registered["classification"] in allowed and selected.artifact_id not in denied
            assert selected.observed_digest == registered["source_digest"]
        assert response.local_prompt_tokens is not None
        assert response.local_prompt_tokens <= budget
        assert -(-len(response.context.encode()) // 3) == response.local_prompt_tokens
        chosen = {s.artifact_id for s in response.selected_artifacts}
        if budget in UPPER_BUDGETS:
            assert set(task["required_artifacts"]) <= chosen, budget


@pytest.mark.parametrize("task", BENCHMARK["tasks"], ids=lambda t: t["task_id"])
def test_the_example_system_is_repeatable(example: SubprocessContextSystem, task: Any) -> None:
    budget = task["budget_ladder"][-1]
    first = example.build(task_request(task, budget, repetition=1))
    second = example.build(task_request(task, budget, repetition=2))
    assert first.context == second.context and first.selected_artifacts == second.selected_artifacts


def test_the_example_system_answers_other_strategies_with_an_error(example: SubprocessContextSystem) -> None:
    response = example.build(request("etcd quota", strategy="naive_top_k"))
    assert "compiled" in response.error and not response.selected_artifacts


def test_the_example_system_through_sixteen_threads(example: SubprocessContextSystem) -> None:
    tasks = BENCHMARK["tasks"]
    jobs = [(task, budget) for task in tasks for budget in task["budget_ladder"]] * 2
    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(lambda job: (job, example.build(task_request(*job))), jobs))
    by_group: dict[tuple[str, int], set[str]] = {}
    for (task, budget), answer in answers:
        digest = blake3.blake3(answer.context.encode()).hexdigest()
        by_group.setdefault((task["task_id"], budget), set()).add(digest)
    assert all(len(digests) == 1 for digests in by_group.values())


# --- HTTP ------------------------------------------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    """Answers by the request's query, as the scriptable subprocess does."""

    seen_authorization: ClassVar[list[str | None]] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        body = self.rfile.read(length)
        Handler.seen_authorization.append(self.headers.get("Authorization"))
        decoded = msgspec.json.decode(body, type=ContextRequest)
        query = decoded.query
        answer: dict[str, Any] = {
            "schema": "symgliph.eceb/context-response-v0.1",
            "request_id": decoded.request_id,
            "context": f"context for {query}",
        }
        status = 200
        if query.startswith("status-"):
            status = int(query.removeprefix("status-"))
        if query == "slow":
            time.sleep(4)
        if query == "wrong-id":
            answer["request_id"] = SECRET
        payload = f"not json {SECRET}".encode() if query == "garbage" else json.dumps(answer).encode()
        if status != 200:
            payload = SECRET.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if status == 503:
            self.send_header("Retry-After", "7")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the client gave up (a timeout)
            self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


class Server(ThreadingHTTPServer):
    request_queue_size = 128  # sixteen clients connect at once
    daemon_threads = True


@pytest.fixture
def server() -> Iterator[str]:
    httpd = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/context"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def test_http_answers_and_echoes(server: str) -> None:
    system = open_context_system(ContextSystemSpec(url=server), base_dir=Path())
    try:
        response = system.build(request("etcd"))
        assert response.context == "context for etcd"
    finally:
        system.close()


def test_http_from_sixteen_threads(server: str) -> None:
    system = HttpContextSystem(server, timeout_s=60)
    queries = [f"q{n}" for n in range(64)]
    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(lambda q: (q, system.build(request(q))), queries))
    assert all(answer.context == f"context for {q}" for q, answer in answers)


@pytest.mark.parametrize(
    ("query", "transient", "status"),
    [("status-503", True, 503), ("status-500", True, 500), ("status-429", True, 429), ("status-400", False, 400)],
)
def test_http_statuses(server: str, query: str, transient: bool, status: int) -> None:
    system = HttpContextSystem(server, timeout_s=60)
    with pytest.raises(ProviderError) as caught:
        system.build(request(query))
    error = caught.value
    assert error.transient is transient and error.status == status and not error.fatal
    assert f"HTTP {status}" in str(error) and SECRET not in str(error)
    assert error.retry_after_s == (7.0 if status == 503 else None)


@pytest.mark.parametrize("query", ["garbage", "wrong-id"])
def test_http_answer_out_of_protocol_is_final(server: str, query: str) -> None:
    system = HttpContextSystem(server, timeout_s=60)
    with pytest.raises(ProviderError) as caught:
        system.build(request(query))
    assert not caught.value.transient and SECRET not in str(caught.value)


def test_http_timeout_is_transient(server: str) -> None:
    system = HttpContextSystem(server, timeout_s=1)
    with pytest.raises(ProviderError) as caught:
        system.build(request("slow"))
    assert caught.value.transient and "no answer within 1 s" in str(caught.value)


def test_http_connection_refused_is_transient() -> None:
    with refusing_loopback_port() as port:
        system = HttpContextSystem(f"http://127.0.0.1:{port}/", timeout_s=30)
        with pytest.raises(ProviderError) as caught:
            system.build(request())
    assert caught.value.transient and "connection refused" in str(caught.value)


def test_http_credentials_are_sent_and_never_shown(server: str) -> None:
    url = server.replace("http://", "http://user:hunter2@")
    system = HttpContextSystem(url, timeout_s=60)
    Handler.seen_authorization.clear()
    system.build(request("ok"))
    assert Handler.seen_authorization == ["Basic " + base64.b64encode(b"user:hunter2").decode()]
    with pytest.raises(ProviderError) as caught:
        system.build(request("status-400"))
    assert "hunter2" not in str(caught.value) and "user" not in str(caught.value)
    assert "***@127.0.0.1" in str(caught.value)


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/x", "file:///tmp/x", "127.0.0.1:80", "http://", "http://h:port/"])
def test_http_only_http_urls(url: str) -> None:
    with pytest.raises(ProviderError) as caught:
        open_context_system(ContextSystemSpec(url=url), base_dir=Path())
    assert caught.value.fatal


def test_http_closed_refuses(server: str) -> None:
    system = HttpContextSystem(server, timeout_s=60)
    system.close()
    with pytest.raises(ProviderError) as caught:
        system.build(request())
    assert caught.value.fatal
