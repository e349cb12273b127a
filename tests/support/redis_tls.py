"""A loopback Redis server that speaks TLS only, with a password.

:func:`tls_redis_server` makes a test certificate authority (``trustme``),
issues the server a certificate for ``127.0.0.1``, and starts ``redis-server``
on 127.0.0.1 with its plain-text port closed (``--port 0``), a TLS port
(``--tls-port``), a random password (``--requirepass``) and no persistence.
Clients authenticate with the password, not a certificate
(``--tls-auth-clients no``); they verify the server's certificate against
the test CA (:attr:`~tests.support.redis_server.RedisServer.ca_path`). It fails the test (never skips)
when ``redis-server`` is missing or was built without TLS.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from tests.support.redis_server import LOOPBACK, RedisServer, TlsFiles, running_redis

__all__ = ["redis_monitor", "tls_redis_server"]


@contextlib.contextmanager
def tls_redis_server(directory: Path) -> Iterator[RedisServer]:
    """Run a TLS-only, password-protected ``redis-server`` in ``directory``
    (certificates from a test CA, log) until the block ends."""
    authority = trustme.CA()
    issued = authority.issue_cert(LOOPBACK)
    files = TlsFiles(cert_path=directory / "redis.crt", key_path=directory / "redis.key", ca_path=directory / "ca.pem")
    authority.cert_pem.write_to_path(str(files.ca_path))
    issued.cert_chain_pems[0].write_to_path(str(files.cert_path))
    issued.private_key_pem.write_to_path(str(files.key_path))
    with contextlib.ExitStack() as stack:
        try:
            server = stack.enter_context(running_redis(directory, tls=files))
        except RuntimeError as exc:
            pytest.fail(str(exc), pytrace=False)
        yield server


@contextlib.contextmanager
def redis_monitor(server: RedisServer) -> Iterator[bytearray]:
    """Record, while the block runs, every command the server executes
    (``MONITOR``: keys and values as written, transient ones included). Yields
    the bytes received so far; they are complete once the block has ended."""
    context = ssl.create_default_context(cafile=str(server.ca_path))
    raw = socket.create_connection((LOOPBACK, server.port), timeout=5)
    sock = context.wrap_socket(raw, server_hostname=LOOPBACK)
    received = bytearray()
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not chunk:
                return
            received.extend(chunk)

    sock.sendall(f"AUTH {server.password}\r\nMONITOR\r\n".encode())
    answer = b""
    while answer.count(b"\r\n") < 2:
        chunk = sock.recv(256)
        assert chunk, "the Redis server closed the MONITOR connection"
        answer += chunk
    assert answer.startswith(b"+OK\r\n+OK\r\n"), answer
    received.extend(answer[len(b"+OK\r\n+OK\r\n") :])
    sock.settimeout(0.1)
    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        time.sleep(0.2)  # the last commands' lines
        stop.set()
        thread.join(timeout=5)
        sock.close()
