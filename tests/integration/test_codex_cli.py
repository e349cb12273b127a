"""The real Codex CLI (the version .ci/run pins): its own parser accepts the
adapter's command line, and the event stream of a turn that fails for want
of network is the recorded fixture's, which the stream reader and the fake
codex follow (tests/fixtures/codex)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from eceb_worker.families.paired.schedule import Arm
from eceb_worker.families.paired.transport import TransportStatus, read_transport
from tests.support.codex_cli import (
    CODEX_VERSION,
    FIXTURES,
    example_argv,
    loopback_provider_options,
    record_network_failure,
    require_codex,
    shapes,
)
from tests.support.fake_codex import OPTIONS
from tests.support.paths import REPO
from tests.support.provider import example_prompt, example_repository, provider_env

FIXTURE = FIXTURES / "network-failure.jsonl"


@pytest.fixture(scope="module")
def codex() -> str:
    return require_codex()


def test_the_version_is_pinned_once_and_the_readme_says_it(codex: str) -> None:
    assert re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", CODEX_VERSION)
    assert f"@openai/codex@{CODEX_VERSION}" in (REPO / "README.md").read_text()
    assert f"CLI **{CODEX_VERSION}**" in (FIXTURES / "README.md").read_text()


def test_exec_help_lists_every_flag_the_adapter_uses(codex: str, tmp_path: Path) -> None:
    done = subprocess.run([codex, "exec", "--help"], capture_output=True, text=True, timeout=60, check=True)
    listed = set()
    for line in done.stdout.splitlines():
        match = re.match(r"\s+(?:(-\w), )?(--[\w-]+)", line)
        if match:
            listed.update(flag for flag in match.groups() if flag)
    used = {arg for arg in example_argv(codex, tmp_path) if arg.startswith("-") and arg != "-"}
    assert used == {"--json", "--color", "--ephemeral", "--ignore-user-config", "--ignore-rules"} | {
        "--output-schema",
        "-m",
        "-c",
        "-s",
        "-C",
    }
    assert used <= listed, used - listed


def test_the_fake_knows_every_flag_the_real_exec_lists(codex: str) -> None:
    done = subprocess.run([codex, "exec", "--help"], capture_output=True, text=True, timeout=60, check=True)
    listed = {}
    for line in done.stdout.splitlines():
        match = re.match(r"\s+(?:(-\w), )?(--[\w-]+)(?: <([^>]+)>)?", line)
        if match and match.group(2) not in {"--help", "--version"}:
            listed[(match.group(1), match.group(2))] = match.group(3)
    fake = {
        (flags[0] if len(flags[0]) == 2 else None, next(f for f in flags if f.startswith("--"))): value
        for flags, value, _ in OPTIONS
    }
    assert fake == listed


@pytest.mark.parametrize("speed_tier", ["standard", "priority"])
def test_the_real_parser_accepts_the_adapters_command_line(codex: str, speed_tier: str) -> None:
    recording = record_network_failure(codex, speed_tier=speed_tier)
    adapter = recording.adapter_argv
    assert recording.argv[:-1][: len(adapter) - 1] == adapter[:-1] and recording.argv[-1] == adapter[-1] == "-"
    assert len(recording.argv) == len(adapter) + len(loopback_provider_options(0))
    assert recording.returncode != 2, recording.stderr
    assert "unexpected argument" not in recording.stderr and "error: " not in recording.stderr
    assert shapes(recording.stdout)[0] == {"thread_id": "string", "type": "thread.started"}


def test_the_recorded_network_failure_reads_as_failed() -> None:
    transport = read_transport(FIXTURE.read_bytes())
    assert transport.status is TransportStatus.FAILED, transport.problems
    assert transport.turns == 1 and transport.usage is None and transport.partial_usage is None
    assert [w.split(": ", 1)[0] for w in transport.warnings] == ["line 2"]
    assert len(transport.errors) == 3
    assert transport.problems[-1].startswith("line 7: the turn failed: stream disconnected")


def test_the_installed_cli_writes_the_recorded_sequence(codex: str) -> None:
    recording = record_network_failure(codex)
    assert recording.returncode == 1
    assert shapes(recording.stdout) == shapes(FIXTURE.read_bytes())
    assert read_transport(recording.stdout).status is TransportStatus.FAILED


def test_the_fakes_network_failure_is_the_recorded_sequence(tmp_path: Path) -> None:
    repo = example_repository(tmp_path / "repo")
    argv = example_argv("codex", tmp_path)
    env = provider_env(tmp_path / "bin", scenario="network-failure")
    done = subprocess.run(argv, input=example_prompt("explanation", Arm.A), capture_output=True, env=env, check=False)
    assert done.returncode == 1 and repo.is_dir()
    assert shapes(done.stdout) == shapes(FIXTURE.read_bytes())
    fake, real = read_transport(done.stdout), read_transport(FIXTURE.read_bytes())
    assert fake.thread_id is not None and fake.thread_id.startswith("synthetic-")
    assert (fake.status, fake.turns, len(fake.warnings), len(fake.errors)) == (
        real.status,
        real.turns,
        len(real.warnings),
        len(real.errors),
    )
