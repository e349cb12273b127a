"""``eceb-dist`` given a broker or result backend that is not Redis: a usage
error naming the setting (exit 2), before any connection, never repeating
the URL."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from eceb_cli import exit_codes

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
    result = _dist("status", "0" * 32, "--result-backend", f"http://x:{SECRET}@127.0.0.1:1/")
    assert result.returncode == exit_codes.USAGE, result.stderr
    assert "ECEB_RESULT_BACKEND is not a Redis URL" in result.stderr
    assert SECRET not in result.stdout + result.stderr
