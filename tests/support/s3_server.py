"""Loopback S3-compatible server fixture (moto server mode).

``s3_server`` (session scope) starts ``python -m moto.server`` on 127.0.0.1
on a free port as a subprocess of the test run, waits until it answers HTTP,
and stops it at the end of the session. While it runs, the process
environment holds fake AWS credentials (and nothing else AWS-related), so
boto3 in the tests and every ``eceb`` subprocess they start sign their
requests with them and never find real credentials or real endpoints.

``s3_bucket`` (function scope) is a fresh, empty bucket on that server,
deleted with its objects afterwards.

``s3_server_enforcing_auth`` (session scope, started only when a test asks
for it) is a second server that checks every request's credentials: the
fake ones are unknown to it, so every request is refused with
``InvalidAccessKeyId``.

If moto's server cannot be started the fixture fails (never skips): the S3
path must be tested.
"""

from __future__ import annotations

import contextlib
import http.client
import importlib.util
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import botocore.config
import pytest

__all__ = [
    "FAKE_ACCESS_KEY_ID",
    "FAKE_SECRET_ACCESS_KEY",
    "FAKE_SESSION_TOKEN",
    "S3Server",
    "empty_bucket",
    "s3_bucket",
    "s3_server",
    "s3_server_enforcing_auth",
]

LOOPBACK = "127.0.0.1"
REGION = "us-east-1"
FAKE_ACCESS_KEY_ID = "testing"
# Distinctive values, so a test can assert they never show up in any output.
FAKE_SECRET_ACCESS_KEY = "fake-secret-Qx7vN2pLw9-never-print-me"
FAKE_SESSION_TOKEN = "fake-token-Hb4mZ8cRt1-never-print-me"

INSTALL_HINT = "install it into the test environment: pip install 'moto[server]'"
START_TIMEOUT_S = 30.0
START_ATTEMPTS = 3

# Environment of the test run while the server is up. ``None`` removes a variable.
_ENVIRONMENT: dict[str, str | None] = {
    "AWS_ACCESS_KEY_ID": FAKE_ACCESS_KEY_ID,
    "AWS_SECRET_ACCESS_KEY": FAKE_SECRET_ACCESS_KEY,
    "AWS_SESSION_TOKEN": FAKE_SESSION_TOKEN,
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_PROFILE": None,
    "AWS_DEFAULT_PROFILE": None,
    "AWS_SECURITY_TOKEN": None,
    "AWS_ENDPOINT_URL": None,
    "AWS_ENDPOINT_URL_S3": None,
    "AWS_ROLE_ARN": None,
    "AWS_WEB_IDENTITY_TOKEN_FILE": None,
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": None,
    "AWS_CONTAINER_CREDENTIALS_FULL_URI": None,
    "ECEB_S3_ENDPOINT_URL": None,
}


@dataclass(frozen=True)
class S3Server:
    """A running loopback S3 server.

    Attributes:
        endpoint_url: ``http://127.0.0.1:<port>``.
        region: the region the fake credentials are set up for.
        secrets: credential values that must never appear in any output.
        log_path: the server's combined stdout/stderr (one line per request).
    """

    endpoint_url: str
    region: str
    secrets: tuple[str, ...]
    log_path: Path

    def client(self, **config: Any) -> Any:
        """A boto3 S3 client for this server (path-style addressing).

        Keyword arguments are extra ``botocore.config.Config`` options.
        """
        options: dict[str, Any] = {
            "s3": {"addressing_style": "path"},
            "retries": {"mode": "standard", "max_attempts": 3},
        }
        options.update(config)
        return boto3.session.Session().client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name=self.region,
            config=botocore.config.Config(**options),
        )

    def upload_tree(self, root: Path, bucket: str, prefix: str, *, threads: int = 32) -> list[str]:
        """Upload every file under ``root`` to ``bucket/prefix/<relative path>``
        (test set-up, in a thread pool); returns the relative paths, sorted."""
        files = sorted(p for p in root.rglob("*") if p.is_file())
        client = self.client(max_pool_connections=threads)

        def put(path: Path) -> str:
            relative = path.relative_to(root).as_posix()
            client.put_object(Bucket=bucket, Key=f"{prefix}/{relative}", Body=path.read_bytes())
            return relative

        with ThreadPoolExecutor(max_workers=threads) as pool:
            return list(pool.map(put, files))


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def _answers(port: int) -> bool:
    """True once the server answers an HTTP request (any status)."""
    connection = http.client.HTTPConnection(LOOPBACK, port, timeout=2)
    try:
        connection.request("GET", "/moto-api/")
        connection.getresponse().read()
    except OSError:
        return False
    finally:
        connection.close()
    return True


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no server log)"
    return "\n".join(text.splitlines()[-lines:])


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def _start(log_path: Path, extra_env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], int]:
    """Start moto's server on a free loopback port; fail the test run if it cannot."""
    missing = [name for name in ("moto", "flask", "flask_cors") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.fail(
            f"the S3 tests need moto's server mode ({', '.join(missing)} not importable): {INSTALL_HINT}", pytrace=False
        )
    for _attempt in range(START_ATTEMPTS):
        port = _free_loopback_port()
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", LOOPBACK, "-p", str(port)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(extra_env or {})},
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            if _answers(port):
                return process, port
            time.sleep(0.1)
        _stop(process)
        tail = _tail(log_path)
        if "No module named" in tail or "ModuleNotFoundError" in tail:
            pytest.fail(f"moto's server cannot start ({tail.splitlines()[-1]}): {INSTALL_HINT}", pytrace=False)
        # Otherwise the port was probably taken between probing and binding: try another.
    pytest.fail(
        f"moto's server did not answer on {LOOPBACK} after {START_ATTEMPTS} attempts "
        f"(if it is not installed: {INSTALL_HINT}); its log ends with:\n{_tail(log_path)}",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A moto S3 server on 127.0.0.1, with fake credentials in the environment."""
    log_path = tmp_path_factory.mktemp("s3-server") / "moto-server.log"
    with pytest.MonkeyPatch.context() as patch:
        for name, value in _ENVIRONMENT.items():
            if value is None:
                patch.delenv(name, raising=False)
            else:
                patch.setenv(name, value)
        for name in ("NO_PROXY", "no_proxy"):
            current = os.environ.get(name, "")
            patch.setenv(name, ",".join(filter(None, [current, LOOPBACK, "localhost"])))
        process, port = _start(log_path)
        try:
            yield S3Server(
                endpoint_url=f"http://{LOOPBACK}:{port}",
                region=REGION,
                secrets=(FAKE_SECRET_ACCESS_KEY, FAKE_SESSION_TOKEN),
                log_path=log_path,
            )
        finally:
            _stop(process)


@pytest.fixture(scope="session")
def s3_server_enforcing_auth(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A second loopback server that authenticates requests and knows no
    access key: it refuses the fake credentials (``InvalidAccessKeyId``)."""
    log_path = tmp_path_factory.mktemp("s3-server-auth") / "moto-server.log"
    process, port = _start(log_path, {"INITIAL_NO_AUTH_ACTION_COUNT": "0"})
    try:
        yield S3Server(
            endpoint_url=f"http://{LOOPBACK}:{port}",
            region=s3_server.region,
            secrets=s3_server.secrets,
            log_path=log_path,
        )
    finally:
        _stop(process)


def empty_bucket(client: Any, bucket: str) -> None:
    """Delete every object of ``bucket`` (1,000 a request)."""
    paginator = client.get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket):
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})


@contextlib.contextmanager
def fresh_bucket(s3_server: S3Server, prefix: str = "eceb-test") -> Iterator[str]:
    """The name of a new, empty bucket on ``s3_server`` (``PREFIX-<random>``)
    until the block ends; then emptied and removed."""
    client = s3_server.client()
    name = f"{prefix}-{uuid.uuid4().hex[:16]}"
    client.create_bucket(Bucket=name)
    try:
        yield name
    finally:
        empty_bucket(client, name)
        client.delete_bucket(Bucket=name)


@pytest.fixture
def s3_bucket(s3_server: S3Server) -> Iterator[str]:
    """The name of a fresh, empty bucket on ``s3_server``; removed afterwards."""
    with fresh_bucket(s3_server) as name:
        yield name
