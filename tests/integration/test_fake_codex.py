"""The fake ``codex`` (tests/support/fake_codex.py): the real flags, the real
event shapes, and each scenario's stream as eceb reads it (read_transport)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import blake3
import pytest

from eceb_worker.families.paired.prompts import codex_argv
from eceb_worker.families.paired.schedule import Arm
from eceb_worker.families.paired.transport import COUNTERS, Transport, TransportStatus, read_transport
from tests.support.fake_codex import MUTATION
from tests.support.provider import PAIRED, example_prompt, example_repository, fake_codex_wrapper, provider_env


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("go") is None:
        pytest.fail("the verification scenarios run the fixture's Go test: apt-get install golang-go")
    root = tmp_path_factory.mktemp("fake-codex")
    example_repository(root / "repo")
    return root


def argv(bench: Path, kind: str, *extra: str) -> list[str]:
    full = codex_argv(
        executable=str(bench / "bin" / "codex"),
        output_schema=str(PAIRED / "tasks" / f"{kind}.answer.schema.json"),
        repository=str(bench / "repo"),
        model="gpt-5-codex",
        reasoning_effort="medium",
        speed_tier="standard",
        sandbox="read-only",
    )
    return [*full[:-1], *extra, full[-1]]


def run(
    bench: Path, kind: str, scenario: str, arm: Arm = Arm.A, **env: Any
) -> tuple[subprocess.CompletedProcess[bytes], Transport]:
    environment = provider_env(bench / "bin", scenario=scenario, **env)
    done = subprocess.run(
        argv(bench, kind), input=example_prompt(kind, arm), capture_output=True, env=environment, check=False
    )
    return done, read_transport(done.stdout)


def answer(transport: Transport) -> Any:
    assert transport.answer is not None, transport.problems
    return json.loads(transport.answer)


def test_version_and_the_wrapper_bytes_are_stable(tmp_path: Path) -> None:
    env = provider_env(tmp_path / "bin")
    for flag in ("--version", "-V"):
        done = subprocess.run(["codex", flag], capture_output=True, text=True, env=env, check=False)
        assert (done.returncode, done.stdout) == (0, "codex-cli 0.171.0-fake\n")
    first = blake3.blake3((tmp_path / "bin" / "codex").read_bytes()).hexdigest()
    provider_env(tmp_path / "bin")
    assert blake3.blake3((tmp_path / "bin" / "codex").read_bytes()).hexdigest() == first
    assert (tmp_path / "bin" / "codex").read_bytes() == fake_codex_wrapper()


def test_ok_explanation_cites_real_lines_of_the_targets(bench: Path) -> None:
    done, transport = run(bench, "explanation", "ok")
    assert done.returncode == 0 and transport.status is TransportStatus.COMPLETED
    assert transport.thread_id is not None and transport.thread_id.startswith("synthetic-")
    assert b"synthetic" in done.stderr
    claims = answer(transport)["claims"]
    assert len(claims) >= 2
    lines = (bench / "repo" / "greet" / "greet.go").read_text().splitlines()
    for claim in claims:
        for citation in claim["citations"]:
            assert citation["path"] == "greet/greet.go" and 1 <= citation["line"] <= len(lines)


def test_ok_discovery_finds_every_marker_with_its_line(bench: Path) -> None:
    _, transport = run(bench, "discovery", "ok")
    assert answer(transport) == {
        "ids": ["REQ-1", "REQ-2"],
        "references": [
            {"id": "REQ-1", "path": "greet/greet.go", "line": 6},
            {"id": "REQ-1", "path": "greet/greet.go", "line": 10},
            {"id": "REQ-2", "path": "greet/greet.go", "line": 15},
        ],
    }


def test_ok_verification_runs_the_declared_go_test(bench: Path) -> None:
    done, transport = run(bench, "verification", "ok")
    assert done.returncode == 0 and transport.status is TransportStatus.COMPLETED
    (command,) = transport.commands
    assert command.command == "bash -lc 'go test -count=1 ./...'"
    assert command.exit_code == 0 and command.aggregated_output.startswith("ok  \texample.com/greet/greet\t")
    assert answer(transport) == {
        "command": "go test -count=1 ./...",
        "output": command.aggregated_output,
        "exit_code": 0,
    }


def test_wrong_command_and_cheap_wrong(bench: Path) -> None:
    _, wrong = run(bench, "verification", "wrong-command")
    assert wrong.status is TransportStatus.COMPLETED
    assert wrong.commands[0].command == "bash -lc 'go test ./...'"
    assert answer(wrong)["command"] == "go test ./..."
    _, ok = run(bench, "discovery", "ok")
    _, cheap = run(bench, "discovery", "cheap-wrong")
    assert cheap.status is TransportStatus.COMPLETED
    assert ok.usage is not None and cheap.usage is not None
    assert cheap.usage.input_tokens * 4 < ok.usage.input_tokens
    assert answer(cheap)["ids"] == ["REQ-1"]
    _, verification = run(bench, "verification", "cheap-wrong")
    assert answer(verification)["exit_code"] != verification.commands[0].exit_code
    _, explanation = run(bench, "explanation", "cheap-wrong")
    assert max(c["line"] for claim in answer(explanation)["claims"] for c in claim["citations"]) > 18


def test_usage_grows_with_the_context(bench: Path) -> None:
    environment = provider_env(bench / "bin", scenario="ok")
    usages = []
    for context in (b"small cue\n", b"a much larger context\n" * 200):
        done = subprocess.run(
            argv(bench, "discovery"),
            input=example_prompt("discovery", Arm.B, context),
            capture_output=True,
            env=environment,
            check=False,
        )
        usages.append(read_transport(done.stdout).usage)
    small, large = usages
    assert small is not None and large is not None and small.input_tokens < large.input_tokens


@pytest.mark.parametrize(
    ("scenario", "status", "code"),
    [
        ("fail", TransportStatus.FAILED, 1),
        ("unknown-event", TransportStatus.MALFORMED, 0),
        ("truncated", TransportStatus.MALFORMED, 0),
        ("off-schema", TransportStatus.COMPLETED, 0),
        ("not-json", TransportStatus.COMPLETED, 0),
        ("partial", TransportStatus.PARTIAL, 0),
        ("two-turns", TransportStatus.INCOMPATIBLE, 0),
        ("network-failure", TransportStatus.FAILED, 1),
        ("missing-counter", TransportStatus.COMPLETED, 0),
        ("negative-counter", TransportStatus.COMPLETED, 0),
        ("huge-counters", TransportStatus.COMPLETED, 0),
    ],
)
def test_each_scenario_reads_as_its_status(bench: Path, scenario: str, status: TransportStatus, code: int) -> None:
    done, transport = run(bench, "explanation", scenario)
    assert (done.returncode, transport.status) == (code, status), transport.problems
    if scenario == "truncated":
        assert not done.stdout.endswith(b"\n")
    if scenario == "off-schema":
        assert "claims" not in answer(transport)
    if scenario == "not-json":
        with pytest.raises(json.JSONDecodeError):
            json.loads(transport.answer or "")
    if scenario in ("missing-counter", "negative-counter", "huge-counters"):
        assert transport.usage is not None and transport.answer is not None
        unknown = {name: why[0] for name in COUNTERS if (why := transport.usage.unknown(name)) is not None}
        assert (
            unknown
            == {
                "missing-counter": {"cached_input_tokens": "missing_counters"},
                "negative-counter": {"input_tokens": "missing_counters"},
                "huge-counters": {"input_tokens": "overflow", "output_tokens": "overflow"},
            }[scenario]
        )


def test_exit_error_writes_nothing_on_stdout(bench: Path) -> None:
    done, transport = run(bench, "explanation", "exit-error")
    assert (done.returncode, done.stdout) == (1, b"")
    assert b"Error:" in done.stderr
    assert transport.status is TransportStatus.PARTIAL


def test_per_arm_scenarios_and_the_invocation_log(bench: Path, tmp_path: Path) -> None:
    log = tmp_path / "codex.log"
    _, a = run(bench, "explanation", "A=ok,B=fail", Arm.A, log=log)
    _, b = run(bench, "explanation", "A=ok,B=fail", Arm.B, log=log)
    assert (a.status, b.status) == (TransportStatus.COMPLETED, TransportStatus.FAILED)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["arm"], r["scenario"], r["cwd"]) for r in records] == [
        ("A", "ok", str(bench / "repo")),
        ("B", "fail", str(bench / "repo")),
    ]
    assert records[0]["argv"] == argv(bench, "explanation")


def test_mutate_writes_into_the_repository(bench: Path) -> None:
    try:
        _, transport = run(bench, "discovery", "mutate")
        assert transport.status is TransportStatus.COMPLETED
        assert (bench / "repo" / MUTATION).is_file()
    finally:
        (bench / "repo" / MUTATION).unlink(missing_ok=True)


def test_slow_ok_sleeps_then_completes(bench: Path) -> None:
    start = time.monotonic()
    _, transport = run(bench, "discovery", "slow-ok", sleep=0.5)
    assert time.monotonic() - start >= 0.5
    assert transport.status is TransportStatus.COMPLETED


def test_hang_dies_promptly_on_sigterm(bench: Path) -> None:
    environment = provider_env(bench / "bin", scenario="hang")
    process = subprocess.Popen(
        argv(bench, "explanation"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(example_prompt("explanation", Arm.A))
    process.stdin.close()
    lines = [process.stdout.readline() for _ in range(3)]
    assert [json.loads(line)["type"] for line in lines] == ["thread.started", "turn.started", "item.completed"]
    start = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=5) == -signal.SIGTERM
    assert time.monotonic() - start < 2
    assert read_transport(b"".join(lines) + process.stdout.read()).status is TransportStatus.PARTIAL
    process.stdout.close()
    assert process.stderr is not None
    process.stderr.close()


def test_the_real_flags_are_parsed_like_the_real_cli(bench: Path) -> None:
    environment = provider_env(bench / "bin", scenario="ok")
    prompt = example_prompt("discovery", Arm.A)

    def call(args: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, input=prompt.decode(), capture_output=True, text=True, env=environment, check=False)

    accepted = call(argv(bench, "discovery", "--skip-git-repo-check", "--add-dir", "/tmp", "-o", "/dev/null"))
    assert accepted.returncode == 0, accepted.stderr
    unknown = call(argv(bench, "discovery", "--no-such-flag"))
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("error: unexpected argument '--no-such-flag' found\n")
    sandbox = call(["codex", "exec", "--json", "-s", "bogus", "-"])
    assert sandbox.returncode == 2
    assert sandbox.stderr == (
        "error: invalid value 'bogus' for '--sandbox <SANDBOX_MODE>'\n"
        "  [possible values: read-only, workspace-write, danger-full-access]\n\n"
        "For more information, try '--help'.\n"
    )
    missing = call(["codex", "exec", "--json", "-m"])
    assert missing.returncode == 2
    assert missing.stderr == (
        "error: a value is required for '--model <MODEL>' but none was supplied\n\n"
        "For more information, try '--help'.\n"
    )
    schema = [*argv(bench, "discovery")]
    schema[schema.index("--output-schema") + 1] = str(bench / "absent.json")
    absent = call(schema)
    assert absent.returncode == 1 and absent.stderr.startswith("Failed to read output schema file ")
    (bench / "bad.json").write_text("{bad")
    schema[schema.index("--output-schema") + 1] = str(bench / "bad.json")
    bad = call(schema)
    assert bad.returncode == 1 and " is not valid JSON: " in bad.stderr
    assert absent.stdout == bad.stdout == ""
