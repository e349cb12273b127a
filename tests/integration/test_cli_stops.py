"""A command stopped by Ctrl-C, SIGTERM or SIGHUP says so in the same words
and exits 130, 143 or 129 (README, "Exit codes"), for ``eceb`` and
``eceb-dist`` alike: each is stopped here while it waits on a loopback
server that accepts connections and never answers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from eceb_cli import exit_codes
from tests.support.helpers import silent_loopback_port


@pytest.fixture
def silent_port() -> Iterator[int]:
    with silent_loopback_port() as port:
        yield port


def _stopped(command: list[str], signum: int, env: dict[str, str]) -> tuple[int, str]:
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env}
    )
    time.sleep(3)  # started and waiting on the silent server
    assert process.poll() is None, process.communicate()
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=30)
    return process.returncode, stderr


WORDS = {
    signal.SIGINT: ("interrupted (Ctrl-C)", exit_codes.INTERRUPTED),
    signal.SIGTERM: ("terminated (SIGTERM)", exit_codes.TERMINATED),
    signal.SIGHUP: ("hung up (SIGHUP)", exit_codes.HANGUP),
}


@pytest.mark.parametrize("signum", list(WORDS), ids=[signal.Signals(s).name for s in WORDS])
def test_eceb_dist_stops_alike(silent_port: int, signum: int) -> None:
    code, stderr = _stopped(
        [sys.executable, "-m", "eceb_cli.dist", "status", "0" * 32],
        signum,
        {"ECEB_BROKER_URL": f"redis://127.0.0.1:{silent_port}/0"},
    )
    what, expected = WORDS[signum]
    assert code == expected, stderr
    assert stderr.strip().splitlines()[-1] == f"{what}: stopped; no partial output was left"
    assert "Traceback" not in stderr


@pytest.mark.parametrize("signum", list(WORDS), ids=[signal.Signals(s).name for s in WORDS])
def test_eceb_stops_alike(silent_port: int, signum: int) -> None:
    code, stderr = _stopped(
        [
            sys.executable,
            "-m",
            "eceb_cli",
            "evaluate",
            "s3://bucket/benchmark.json",
            "s3://bucket/run.json",
            "--corpus",
            "s3://bucket/corpus",
            "--endpoint-url",
            f"http://127.0.0.1:{silent_port}",
        ],
        signum,
        {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1"},
    )
    what, expected = WORDS[signum]
    assert code == expected, stderr
    assert stderr.strip().splitlines()[-1] == f"{what}: stopped; no partial output was left"
    assert "Traceback" not in stderr
