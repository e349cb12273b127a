"""``eceb-dist`` given a broker or result backend that is not Redis, or a Redis
URL it cannot use (a query, a port or database that does not parse): a usage
error naming the setting (exit 2), before any connection, never repeating
the URL."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from eceb_cli import exit_codes
from tests.support.helpers import silent_loopback_port

SECRET = "never-print-this-pw"


def _dist(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ECEB_")}
    return subprocess.run(
        [sys.executable, "-m", "eceb_cli.dist", *args],
        capture_output=True,
        text=True,
        env={**environment, **env},
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(
    "url",
    [
        f"amqp://guest:{SECRET}@127.0.0.1:1//",
        f"http://user:{SECRET}@127.0.0.1:1/",
        "memory://",
        "garbage",
        f"sqla+sqlite:///{SECRET}.db",
        f"redis://:{SECRET}@127.0.0.1:1/0;amqp://127.0.0.1:1//",
    ],
)
@pytest.mark.parametrize("variable", ["ECEB_BROKER_URL", "ECEB_RESULT_BACKEND"])
def test_a_broker_or_backend_that_is_not_redis_is_a_usage_error(variable: str, url: str) -> None:
    env = {"ECEB_BROKER_URL": "redis://127.0.0.1:1/0", variable: url}
    for args in (("status", "0" * 32), ("wait", "0" * 32), ("worker",)):
        result = _dist(*args, **env)
        assert result.returncode == exit_codes.USAGE, (args, result.stdout + result.stderr)
        assert f"{variable} is not a Redis URL" in result.stderr, result.stderr
        assert "use redis://[:PASSWORD@]HOST[:PORT]/DB or rediss://" in result.stderr
        assert SECRET not in result.stdout + result.stderr


def test_a_url_given_by_option_is_checked_too() -> None:
    """``--result-backend`` overrides its variable, which the message names."""
    result = _dist("status", "0" * 32, "--result-backend", "http://127.0.0.1:1/")
    assert result.returncode == exit_codes.USAGE, result.stderr
    assert "ECEB_RESULT_BACKEND is not a Redis URL" in result.stderr


@pytest.mark.parametrize("option", ["--broker-url", "--result-backend"])
@pytest.mark.parametrize(
    "url",
    [
        f"redis://:{SECRET}@127.0.0.1:1/0",
        f"rediss://user:{SECRET}@127.0.0.1:1/0",
        f"redis://127.0.0.1:1/0;redis://:{SECRET}@127.0.0.1:2/0",
        f"http://x:{SECRET}@127.0.0.1:1/",
    ],
)
def test_a_password_on_the_command_line_is_a_usage_error(option: str, url: str) -> None:
    """A command line shows in the process list: a URL holding a password
    goes in the environment, and the message names its variable."""
    variable = "ECEB_BROKER_URL" if option == "--broker-url" else "ECEB_RESULT_BACKEND"
    for args in (("status", "0" * 32), ("worker",), ("probe",)):
        result = _dist(*args, option, url, ECEB_BROKER_URL="redis://127.0.0.1:1/0")
        assert result.returncode == exit_codes.USAGE, (args, result.stdout + result.stderr)
        assert f"Invalid value for '{option}': holds a password" in result.stderr
        assert f"give this URL in {variable}" in result.stderr
        assert SECRET not in result.stdout + result.stderr


def test_a_password_for_celery_on_the_worker_command_line_is_a_usage_error() -> None:
    """Arguments passed on to ``celery worker`` are held to the same rule."""
    result = _dist("worker", "-b", f"redis://:{SECRET}@127.0.0.1:1/0", ECEB_BROKER_URL="redis://127.0.0.1:1/0")
    assert result.returncode == exit_codes.USAGE, result.stdout + result.stderr
    assert "holds a password" in result.stderr
    assert SECRET not in result.stdout + result.stderr


S3_IN = ("s3://inputs/seed/benchmark.json", "s3://inputs/seed/run.json", "--corpus", "s3://inputs/seed/corpus")
EVERY_COMMAND = (
    ("status", "0" * 32),
    ("wait", "0" * 32),
    ("result", "0" * 32),
    ("cancel", "0" * 32),
    ("worker",),
    ("submit", *S3_IN, "--out", "s3://reports/r.json"),
    ("verify", "s3://inputs/seed/registry.jsonl", "--corpus", "s3://inputs/seed/corpus"),
)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("redis://127.0.0.1:1/0?x=1", "the URL's query"),
        ("redis://127.0.0.1:1/0?socket_timeout=abc", "the URL's query"),
        (f"redis://127.0.0.1:1/0?password={SECRET}", "the URL's query"),
        ("redis://127.0.0.1:1/0?credential_provider=os.system", "the URL's query"),
        ("redis://127.0.0.1:1/0?ssl_ca_certs=/etc/ca.pem", "the URL's query"),
        ("rediss://127.0.0.1:1/0?ssl_cert_reqs=required&db=3", "the URL's query"),
        (f"redis://:pa?{SECRET}@127.0.0.1:1/0", "percent-encode a password"),
        (f"redis://:pa#{SECRET}@127.0.0.1:1/0", "percent-encode a password"),
        ("redis://127.0.0.1:1/0#x", "a fragment"),
        (f"redis://user:{SECRET}/0", "the port"),
        ("redis://127.0.0.1:99999/0", "the port"),
        (f"redis://127.0.0.1:1/{SECRET}", "the database"),
        (f"redis://[{SECRET}/0", "not a valid URL"),
    ],
)
def test_a_redis_url_eceb_cannot_use_is_a_usage_error(url: str, said: str) -> None:
    """Only the TLS parameters are taken in a query (docs/SETTINGS.md); a
    port, database or query that does not parse is named, before anything
    is read or connected to, and the URL is never repeated."""
    _refused("ECEB_BROKER_URL", url, said, ("status", "0" * 32))


@pytest.mark.parametrize("variable", ["ECEB_BROKER_URL", "ECEB_RESULT_BACKEND"])
def test_every_command_checks_the_redis_urls_first(variable: str) -> None:
    _refused(variable, f"redis://127.0.0.1:1/0?password={SECRET}", "the URL's query", *EVERY_COMMAND)


def _refused(variable: str, url: str, said: str, *commands: tuple[str, ...]) -> None:
    env = {"ECEB_BROKER_URL": "redis://127.0.0.1:1/0", variable: url, "AWS_EC2_METADATA_DISABLED": "true"}
    for args in commands:
        result = _dist(*args, **env)
        assert result.returncode == exit_codes.USAGE, (args, result.stdout + result.stderr)
        assert f"{variable}: " in result.stderr and said in result.stderr, (args, result.stderr)
        assert SECRET not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "url",
    [
        "rediss://127.0.0.1:1/0?ssl_cert_reqs=required&ssl_check_hostname=true&ssl_ca_certs=/nonexistent.pem",
        "redis://127.0.0.1:1/",
        "redis://127.0.0.1:1",
        "redis://[::1]:1/2",
    ],
)
def test_redis_urls_eceb_can_use_get_as_far_as_connecting(url: str) -> None:
    result = _dist("status", "0" * 32, "--broker-url", url)
    assert result.returncode == exit_codes.STORAGE, result.stdout + result.stderr
    assert "cannot reach the broker" in result.stderr


@pytest.mark.parametrize("timeout", ["nan", "inf", "-inf", "0", "-1", "abc"])
def test_a_wait_timeout_is_a_finite_number_of_seconds(timeout: str) -> None:
    result = _dist("wait", "0" * 32, "--timeout", timeout, ECEB_BROKER_URL="redis://127.0.0.1:1/0")
    assert result.returncode == exit_codes.USAGE, result.stdout + result.stderr
    assert "Invalid value for '--timeout'" in result.stderr


def test_a_redis_that_accepts_but_never_answers_is_storage_unavailable_not_a_hang() -> None:
    """A server that takes the connection and then says nothing (a stuck
    proxy) makes each command fail after REDIS_SOCKET_TIMEOUT_S, and the
    command ends with exit 5 instead of waiting for ever."""
    import time

    from eceb_worker.cluster.app import REDIS_SOCKET_TIMEOUT_S

    with silent_loopback_port() as port:
        silent = f"redis://127.0.0.1:{port}/0"
        started = time.monotonic()
        result = _dist("status", "0" * 32, ECEB_BROKER_URL=silent)
        took = time.monotonic() - started
    assert result.returncode == exit_codes.STORAGE, result.stdout + result.stderr
    assert f"cannot reach the broker {silent}" in result.stderr and "Timeout" in result.stderr
    assert REDIS_SOCKET_TIMEOUT_S <= took < 4 * REDIS_SOCKET_TIMEOUT_S + 10
