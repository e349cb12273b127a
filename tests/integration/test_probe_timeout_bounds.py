"""``eceb-dist probe --timeout``: any value is either refused as a usage
error or gives a verdict; none is an internal error (a deadline past the
system timers' range, an alarm that rings before it is awaited)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from eceb_cli import exit_codes
from tests.support.helpers import silent_loopback_port


def _probe(port: int, timeout: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eceb_cli.dist", "probe", "--timeout", timeout],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ECEB_BROKER_URL": f"redis://127.0.0.1:{port}/0"},
        check=False,
    )


@pytest.mark.parametrize("timeout", ["86401", "1e10", "1e308"])
def test_a_timeout_past_one_day_is_a_usage_error(timeout: str) -> None:
    with silent_loopback_port() as port:
        done = _probe(port, timeout)
    assert done.returncode == exit_codes.USAGE, done.stderr
    assert "more than 86,400 seconds" in done.stderr


@pytest.mark.parametrize("timeout", ["1e-9", "1e-300"])
def test_a_tiny_timeout_is_not_ready_never_an_internal_error(timeout: str) -> None:
    with silent_loopback_port() as port:
        done = _probe(port, timeout)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("not ready: "), done.stderr
    assert "internal error" not in done.stderr
