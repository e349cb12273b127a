"""``--help`` is true to the exit codes a command really ends with
(README, "Exit codes"): the groups' help lists 10 (a regression, which
``eceb compare`` and ``eceb-dist nightly`` exit with), and ``eceb
compare --help`` lists 143 and 130, which it exits with when stopped while
it reads a report from a storage that does not answer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eceb_cli import exit_codes
from tests.support.helpers import silent_loopback_port


def _help(*command: str) -> str:
    done = subprocess.run([sys.executable, "-m", *command, "--help"], capture_output=True, text=True, check=True)
    return " ".join(done.stdout.split())


def test_eceb_help_lists_the_regression_code() -> None:
    assert "10 regression" in _help("eceb_cli")


def test_eceb_dist_help_lists_the_regression_code() -> None:
    # ``eceb-dist nightly`` exits 10: listed, directly or through "as `eceb`".
    codes = _help("eceb_cli.dist").split("Exit codes", 1)[1]
    inherited = "as `eceb`" in codes and "10 regression" in _help("eceb_cli")
    assert "10 regression" in codes or inherited, codes


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_compare_help_lists_the_stop_code_it_exits_with(tmp_path: Path, signum: int) -> None:
    report = tmp_path / "new.json"
    report.write_text("{}")
    with silent_loopback_port() as port:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "eceb_cli",
                "compare",
                "s3://bucket/old.json",
                str(report),
                "--endpoint-url",
                f"http://127.0.0.1:{port}",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"},
        )
        time.sleep(3)
        assert process.poll() is None, process.communicate()
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=30)
    code = exit_codes.TERMINATED if signum == signal.SIGTERM else exit_codes.INTERRUPTED
    assert process.returncode == code, stderr
    assert f"{code} {exit_codes.SHORT[code]}" in _help("eceb_cli", "compare")
