"""The process side of the Codex adapter (eceb_worker.io.paired.provider) over
small throwaway scripts: output straight into files, the environment
passed, timeouts, cancellation, stragglers and spawn failures."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from eceb_worker.io.paired.provider import DeferredSignals, ProviderExit, call_provider, environment_names
from tests.support.pair_experiment import fake_processes


def script(tmp_path: Path, body: str, name: str = "provider") -> Path:
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(0o755)
    return path


def call(tmp_path: Path, argv: list[str], *, timeout_s: float = 20, grace_s: float = 5.0, **env: str) -> ProviderExit:
    stdin = tmp_path / "stdin"
    stdin.write_bytes(b"the prompt\n")
    with DeferredSignals() as signals:
        return call_provider(
            argv,
            cwd=tmp_path,
            stdin=stdin,
            stdout=tmp_path / "provider.jsonl",
            stderr=tmp_path / "provider.stderr",
            environment={**os.environ, **env},
            timeout_s=timeout_s,
            signals=signals,
            grace_s=grace_s,
        )


def test_output_goes_to_the_files_with_the_prompt_on_stdin_and_the_environment(tmp_path: Path) -> None:
    provider = script(
        tmp_path,
        "import os, sys\n"
        "sys.stdout.write(sys.stdin.read().upper())\n"
        "sys.stderr.write(os.environ['MARKER'] + ' ' + os.getcwd())\n"
        "raise SystemExit(3)\n",
    )
    ended = call(tmp_path, [str(provider)], MARKER="passed through")
    assert (ended.spawned, ended.exit_code, ended.signal, ended.timed_out, ended.cancelled) == (
        True,
        3,
        None,
        False,
        None,
    )
    assert (tmp_path / "provider.jsonl").read_bytes() == b"THE PROMPT\n"
    assert (tmp_path / "provider.stderr").read_text() == f"passed through {tmp_path}"
    assert environment_names({"B": "secret", "A": "x"}) == ("A", "B")


def test_a_provider_ignoring_sigterm_past_its_timeout_is_killed(tmp_path: Path) -> None:
    provider = script(
        tmp_path,
        "import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)\n",
    )
    ended = call(tmp_path, [str(provider)], timeout_s=0.5, grace_s=0.3)
    assert (ended.timed_out, ended.killed, ended.exit_code, ended.signal) == (True, True, None, signal.SIGKILL)
    assert 500 <= ended.duration_ms < 5000
    assert fake_processes(str(provider)) == []


def test_processes_left_behind_by_the_provider_are_killed(tmp_path: Path) -> None:
    child = script(tmp_path, "import time\ntime.sleep(60)\n", name="straggler")
    provider = script(tmp_path, f"import subprocess\nsubprocess.Popen([{str(child)!r}])\n")
    ended = call(tmp_path, [str(provider)])
    assert (ended.exit_code, ended.stragglers) == (0, True)
    assert fake_processes(str(child)) == []


def test_a_provider_that_cannot_be_started_is_a_spawn_failure(tmp_path: Path) -> None:
    provider = tmp_path / "provider"
    provider.write_text("#!/nonexistent/interpreter\n")
    provider.chmod(0o755)
    ended = call(tmp_path, [str(provider)])
    assert (ended.spawned, ended.exit_code, ended.signal) == (False, None, None)
    assert ended.spawn_error is not None and ended.spawn_error.startswith(str(provider))
    assert (tmp_path / "provider.jsonl").read_bytes() == b""  # the files exist: the journal is complete


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_runner_stops_the_provider_group(tmp_path: Path, signum: int) -> None:
    provider = script(tmp_path, "import time\nprint('up', flush=True)\ntime.sleep(60)\n")
    stdout = tmp_path / "provider.jsonl"

    def interrupt() -> None:
        while not (stdout.exists() and stdout.read_bytes()):
            threading.Event().wait(0.01)
        os.kill(os.getpid(), signum)

    sender = threading.Thread(target=interrupt)
    sender.start()
    ended = call(tmp_path, [str(provider)])
    sender.join()
    assert (ended.cancelled, ended.killed, ended.exit_code, ended.signal) == (signum, False, None, signal.SIGTERM)
    assert fake_processes(str(provider)) == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handlers are given back
