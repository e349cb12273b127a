"""Loopback Redis server fixture, and real Celery worker processes.

``redis_server`` (session scope) starts ``redis-server`` on 127.0.0.1 on a
free port, without persistence (``--save '' --appendonly no``) and with a
random password (so tests can check that no output shows it), waits until it
answers PING, and stops it at the end of the session. If ``redis-server`` is
not installed the fixture fails (never skips). :func:`running_redis` runs
one for a block, optionally with an append-only file so that it can be
restarted without losing data.

:func:`celery_workers` starts ``celery -A eceb_worker.cluster.app
worker`` processes (prefork pool, one child each) against a broker URL and
stops them, with every child, when its block ends.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from eceb_worker.cluster.app import worker_command
from tests.support.s3_server import S3Server

__all__ = ["CeleryWorkers", "RedisServer", "TlsFiles", "celery_workers", "redis_server", "running_redis"]

LOOPBACK = "127.0.0.1"
INSTALL_HINT = "install redis-server (Debian package redis-server)"
START_TIMEOUT_S = 20.0
START_ATTEMPTS = 3
WORKER_START_TIMEOUT_S = 45.0
WORKER_STOP_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class TlsFiles:
    """A TLS server's certificate, key and the CA that issued the certificate (PEM files)."""

    cert_path: Path
    key_path: Path
    ca_path: Path


@dataclass(frozen=True)
class RedisServer:
    """A running loopback Redis server.

    Attributes:
        port: its TCP port on 127.0.0.1 (its TLS port when ``tls`` is set:
            it then accepts TLS only).
        password: the password it requires (must never show in any output).
        log_path: the server's log.
        tls: its certificate files, for a TLS server.
    """

    port: int
    password: str
    log_path: Path
    tls: TlsFiles | None = None

    @property
    def ca_path(self) -> Path:
        """The CA that issued a TLS server's certificate."""
        assert self.tls is not None, "not a TLS server"
        return self.tls.ca_path

    def url(self, db: int = 0) -> str:
        """``redis://:PASSWORD@127.0.0.1:PORT/DB`` (``rediss://`` for TLS)."""
        scheme = "redis" if self.tls is None else "rediss"
        return f"{scheme}://:{self.password}@{LOOPBACK}:{self.port}/{db}"

    def client(self, db: int = 0) -> Any:
        """A redis-py client (verifying a TLS server's certificate against its CA)."""
        import redis

        if self.tls is None:
            return redis.Redis.from_url(self.url(db))
        return redis.Redis.from_url(self.url(db), ssl_ca_certs=str(self.tls.ca_path))


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def _pings(port: int, password: str, ca_path: Path | None = None) -> bool:
    """True once the server answers AUTH and PING (over verified TLS when ``ca_path`` is given)."""
    try:
        with contextlib.ExitStack() as stack:
            sock = stack.enter_context(socket.create_connection((LOOPBACK, port), timeout=2))
            if ca_path is not None:
                context = ssl.create_default_context(cafile=str(ca_path))
                sock = stack.enter_context(context.wrap_socket(sock, server_hostname=LOOPBACK))
            sock.sendall(f"AUTH {password}\r\nPING\r\n".encode())
            answer = b""
            while answer.count(b"\r\n") < 2:
                chunk = sock.recv(256)
                if not chunk:
                    return False
                answer += chunk
    except OSError:
        return False
    return answer == b"+OK\r\n+PONG\r\n"


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _stop(process: subprocess.Popen[bytes], timeout: float = 10) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
    process.wait(timeout=10)


@contextlib.contextmanager
def running_redis(
    directory: Path, *, port: int | None = None, appendonly: bool = False, tls: TlsFiles | None = None
) -> Iterator[RedisServer]:
    """Run a password-protected ``redis-server`` on 127.0.0.1 until the block
    ends; yields once it answers. ``port`` None picks a free one (retrying
    when it was taken meanwhile). ``appendonly`` keeps an fsync-always
    append-only file in ``directory``, so a restart on the same directory and
    port keeps the data; otherwise nothing is kept. ``tls`` makes it accept
    TLS only, with that certificate. Raises RuntimeError (with the end of the
    server's log) if it does not come up.
    """
    executable = shutil.which("redis-server")
    if executable is None:
        raise RuntimeError(f"the broker tests need a Redis server: {INSTALL_HINT}")
    log_path = directory / "redis-server.log"
    password_file = directory / "password"
    if not password_file.exists():
        password_file.write_text(f"redis-pw-{secrets.token_hex(12)}")
    password = password_file.read_text()
    persistence = ["--appendonly", "yes", "--appendfsync", "always"] if appendonly else ["--appendonly", "no"]
    for _attempt in range(START_ATTEMPTS if port is None else 1):
        chosen = port if port is not None else _free_loopback_port()
        listening = ["--port", str(chosen)]
        if tls is not None:
            listening = [
                "--port",
                "0",
                "--tls-port",
                str(chosen),
                "--tls-cert-file",
                str(tls.cert_path),
                "--tls-key-file",
                str(tls.key_path),
                "--tls-ca-cert-file",
                str(tls.ca_path),
                "--tls-auth-clients",
                "no",
            ]
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                [
                    executable,
                    "--bind",
                    LOOPBACK,
                    *listening,
                    "--save",
                    "",
                    *persistence,
                    "--dir",
                    str(directory),
                    "--requirepass",
                    password,
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and process.poll() is None:
            if _pings(chosen, password, tls.ca_path if tls else None):
                try:
                    yield RedisServer(port=chosen, password=password, log_path=log_path, tls=tls)
                finally:
                    _stop(process)
                return
            time.sleep(0.05)
        _stop(process)
        tail = _tail(log_path)
        if tls is not None and "tls-port" in tail and ("Bad directive" in tail or "not supported" in tail.lower()):
            raise RuntimeError(
                "this redis-server was built without TLS: install one with TLS support (Debian's "
                f"redis-server package has it); its log ends with:\n{tail}"
            )
        # Probably the port was taken between probing and binding: try another.
    raise RuntimeError(f"redis-server did not answer on {LOOPBACK}; its log ends with:\n{_tail(log_path)}")


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A password-protected ``redis-server`` on 127.0.0.1, without persistence."""
    with contextlib.ExitStack() as stack:
        try:
            running = stack.enter_context(running_redis(tmp_path_factory.mktemp("redis-server")))
        except RuntimeError as exc:
            pytest.fail(str(exc), pytrace=False)
        yield running


@dataclass(frozen=True)
class CeleryWorkers:
    """Running Celery worker processes.

    Attributes:
        names: their node names.
        log_paths: each worker's combined stdout/stderr.
    """

    names: tuple[str, ...]
    log_paths: tuple[Path, ...]
    pids: tuple[int, ...]

    def pool_processes(self) -> list[int]:
        """The process ids of the workers' pool children (the processes that run tasks)."""
        children: list[int] = []
        for pid in self.pids:
            with contextlib.suppress(OSError):
                children += [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        return children

    def logs(self) -> str:
        """Every worker's log so far."""
        return "\n".join(path.read_text(encoding="utf-8", errors="replace") for path in self.log_paths)


def group_alive(pgid: int) -> bool:
    """A process of group ``pgid`` is still alive (and ours)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else: cannot be ours
        return False
    return True


def stop_groups(processes: list[subprocess.Popen[bytes]], timeout: float = WORKER_STOP_TIMEOUT_S) -> None:
    """Warm shutdown (SIGTERM) of every process at once, then kill what is left
    of each one's process group (each runs in a session of its own)."""
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for process in processes:
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    deadline = time.monotonic() + 5
    for process in processes:
        while group_alive(process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if group_alive(process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)


@contextlib.contextmanager
def celery_workers(
    broker_url: str, count: int, log_dir: Path, env: Mapping[str, str] | None = None
) -> Iterator[CeleryWorkers]:
    """Run ``count`` workers (``--pool prefork --concurrency 1``) against
    ``broker_url`` until the block ends; yields once every one is ready.

    ``env`` is added to this process's environment for the workers. Fails the
    test if a worker does not become ready; stops every worker and its pool
    children at the end (no stray processes).
    """
    log_dir.mkdir(parents=True, exist_ok=True)
    environment = {**os.environ, **(env or {}), "ECEB_BROKER_URL": broker_url}
    environment.pop("ECEB_RESULT_BACKEND", None)
    token = secrets.token_hex(4)
    names = tuple(f"eceb-test-{token}-{i}@{LOOPBACK}" for i in range(count))
    log_paths = tuple(log_dir / f"worker-{token}-{i}.log" for i in range(count))
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for name, log_path in zip(names, log_paths, strict=True):
            with log_path.open("wb") as log:
                processes.append(
                    subprocess.Popen(
                        worker_command(
                            concurrency=1,
                            extra=("--hostname", name, "--without-heartbeat"),
                        ),
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=environment,
                        cwd=log_dir,
                        start_new_session=True,
                    )
                )
        deadline = time.monotonic() + WORKER_START_TIMEOUT_S
        waiting = dict(zip(names, zip(processes, log_paths, strict=True), strict=True))
        while waiting:
            for name, (process, log_path) in list(waiting.items()):
                if f"{name} ready." in log_path.read_text(encoding="utf-8", errors="replace"):
                    del waiting[name]
                elif process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"celery worker {name} did not start; its log ends with:\n{_tail(log_path)}")
            time.sleep(0.05)
        yield CeleryWorkers(names=names, log_paths=log_paths, pids=tuple(p.pid for p in processes))
    finally:
        stop_groups(processes)


@pytest.fixture(scope="module", params=[1, 2], ids=["1-worker", "2-workers"])
def workers(
    request: pytest.FixtureRequest,
    redis_server: RedisServer,
    s3_server: S3Server,  # first: the workers inherit its fake credentials
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[CeleryWorkers]:
    """One, then two, worker processes for the tests of a module (a task is retried once)."""
    log_dir = tmp_path_factory.mktemp("celery-workers")
    with celery_workers(redis_server.url(), request.param, log_dir, env={"ECEB_TASK_MAX_RETRIES": "1"}) as running:
        yield running
