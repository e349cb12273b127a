"""``eceb-dist worker`` processes for the observability tests, and
``eceb-dist`` against a broker of the test's choosing (a Redis database of
its own, so that no other module's jobs or messages meet its workers).

:func:`dist_worker` starts ``python -m eceb_cli.dist worker OPTIONS`` (its
standard output and standard error kept apart, in files), waits until it
logs ``<node> ready.`` and stops it (SIGTERM, then its whole process group)
when the block ends. :func:`scrape` reads a metrics endpoint on 127.0.0.1
and :func:`samples` parses Prometheus's text format.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.dist_support import dist
from tests.support.redis_server import RedisServer, stop_groups
from tests.support.s3_server import S3Server

__all__ = ["DistWorker", "dist_at", "dist_worker", "samples", "scrape"]

START_TIMEOUT_S = 45.0
STOP_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class DistWorker:
    """A running ``eceb-dist worker``.

    Attributes:
        name: its Celery node name.
        pid: the worker's main process (its process group).
        stdout_path, stderr_path: what it wrote to each stream.
    """

    name: str
    pid: int
    stdout_path: Path
    stderr_path: Path

    def stderr(self) -> str:
        """Its standard error so far."""
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def stdout(self) -> str:
        """Its standard output so far."""
        return self.stdout_path.read_text(encoding="utf-8", errors="replace")


@contextlib.contextmanager
def dist_worker(
    broker_url: str, log_dir: Path, *options: str, env: Mapping[str, str] | None = None
) -> Iterator[DistWorker]:
    """Run ``eceb-dist worker OPTIONS`` with ``ECEB_BROKER_URL`` BROKER
    (``env`` added to this process's environment, ``ECEB_RESULT_BACKEND``
    left out; a password never goes on a command line) until the
    block ends; yields once it is ready. Fails the test if it does not
    become ready; stops it and every child at the end."""
    log_dir.mkdir(parents=True, exist_ok=True)
    name = f"eceb-obs-{secrets.token_hex(4)}@127.0.0.1"
    environment = {**os.environ, **(env or {})}
    environment.pop("ECEB_RESULT_BACKEND", None)
    environment["ECEB_BROKER_URL"] = broker_url
    stdout_path, stderr_path = log_dir / f"{name}.out", log_dir / f"{name}.err"
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "eceb_cli.dist",
                "worker",
                *options,
                "--hostname",
                name,
                "--without-heartbeat",
            ],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=environment,
            cwd=log_dir,
            start_new_session=True,
        )
    running = DistWorker(name=name, pid=process.pid, stdout_path=stdout_path, stderr_path=stderr_path)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while f"{name} ready." not in running.stderr():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"eceb-dist worker did not start; its standard error ends with:\n{running.stderr()[-3000:]}"
                )
            time.sleep(0.05)
        yield running
    finally:
        stop_groups([process], STOP_TIMEOUT_S)


def dist_at(
    broker_url: str, redis_server: RedisServer, s3_server: S3Server, *args: str, endpoint_url: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``eceb-dist ARGS`` against ``broker_url`` (the backend the same) and the
    test S3 server (or ``endpoint_url``), checking that no credential shows."""
    return dist(redis_server, s3_server, *args, broker_url=broker_url, endpoint_url=endpoint_url)


def scrape(port: int) -> str:
    """The text of ``http://127.0.0.1:PORT/metrics``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text: str = response.read().decode()
        return text


def samples(text: str) -> dict[str, float]:
    """Every sample of Prometheus text ``text``, by its name and labels as
    written (``eceb_shards_done_total{kind="rehash"}``)."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            found[name] = float(value)
    return found
