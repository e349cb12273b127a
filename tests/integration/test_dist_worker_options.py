"""``eceb-dist worker``'s options and settings checked before the worker
starts (usage errors, exit 2, nothing started): the log format, the metrics
port, an endpoint holding credentials; and the environment its options set."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from eceb_cli import exit_codes
from eceb_cli.dist_worker import worker_environment


def _worker(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "ECEB_BROKER_URL": "redis://127.0.0.1:1/0", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "eceb_cli.dist", "worker", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
        check=False,
    )


def test_a_metrics_port_in_use_is_a_usage_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = _worker("--metrics-port", str(port), "--metrics-address", "127.0.0.1")
    assert result.returncode == exit_codes.USAGE, result.stderr
    assert f"--metrics-port {port} (ECEB_METRICS_PORT): cannot listen on 127.0.0.1" in result.stderr
    assert "starting a worker" not in result.stderr


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ECEB_LOG_FORMAT": "xml"}, "ECEB_LOG_FORMAT must be one of text, json"),
        ({"ECEB_METRICS_PORT": "70917"}, "ECEB_METRICS_PORT must be a port number from 1 to 65535"),
    ],
)
def test_a_setting_that_does_not_parse_stops_the_worker(env: dict[str, str], message: str) -> None:
    result = _worker(env=env)
    assert result.returncode == exit_codes.USAGE, result.stderr
    assert message in result.stderr
    assert "70917" not in result.stderr.replace(message, "")


def test_an_option_out_of_range_or_unknown_is_a_usage_error() -> None:
    assert _worker("--metrics-port", "0").returncode == exit_codes.USAGE
    assert _worker("--log-format", "xml").returncode == exit_codes.USAGE


def test_an_endpoint_holding_credentials_is_refused() -> None:
    result = _worker("--endpoint-url", "http://KEY:SECRET@127.0.0.1:9000")
    assert result.returncode == exit_codes.USAGE
    assert "SECRET" not in result.stderr


def test_the_options_set_their_variables_and_leave_the_rest() -> None:
    base = {"ECEB_LOG_FORMAT": "text", "OTHER": "kept"}
    environment = worker_environment(
        base,
        log_format="json",
        metrics_port=9808,
        metrics_address=None,
        broker_url="",
        s3_endpoint_url="http://s3:9000",
    )
    assert environment == {
        "ECEB_LOG_FORMAT": "json",
        "OTHER": "kept",
        "ECEB_METRICS_PORT": "9808",
        "ECEB_S3_ENDPOINT_URL": "http://s3:9000",
    }
    assert base == {"ECEB_LOG_FORMAT": "text", "OTHER": "kept"}
