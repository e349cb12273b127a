"""Loopback TCP relays in front of the S3 server, to put faults on the wire.

:class:`CuttingRelay` breaks responses off mid-body, :class:`RefusingRelay`
answers with S3 throttling, server errors or connection resets, and
:class:`StallingRelay` holds the first request for one object until released
(so a test knows a worker is in the middle of a shard). Every relay records
the request lines it forwarded (:attr:`CuttingRelay.requests`).
"""

from __future__ import annotations

import contextlib
import re
import socket
import struct
import threading
from types import TracebackType
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["CuttingRelay", "RefusingRelay", "StallingRelay"]

_REQUEST_LINE = re.compile(rb"(?:^|\r\n)(GET|HEAD|PUT|POST|DELETE) (\S+) HTTP/1\.[01]\r\n")


class CuttingRelay:
    """A loopback TCP relay in front of the S3 server. The first ``cuts``
    connections are closed after ``after`` bytes of response (the connection
    breaks in the middle of a body); later ones are relayed faithfully."""

    def __init__(self, upstream_url: str, *, cuts: int, after: int) -> None:
        upstream = urlsplit(upstream_url)
        assert upstream.hostname == "127.0.0.1"
        assert upstream.port is not None
        self._upstream = (upstream.hostname, upstream.port)
        self._cuts = cuts
        self._after = after
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self.connections = 0
        self.requests: list[tuple[str, str]] = []
        """``(method, unquoted path)`` of every request forwarded, in order."""
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint_url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def __enter__(self) -> CuttingRelay:
        self._spawn(self._serve)
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        for sock in [self._listener, *self._sockets]:
            _shut(sock)
        for thread in self._threads:
            thread.join(timeout=5)

    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            self._handle(client)

    def _handle(self, client: socket.socket) -> None:
        """Relay one connection, cutting its response if cuts are left."""
        with self._lock:
            cut = self._cuts > 0
            self._cuts -= int(cut)
        self._relay(client, self._after if cut else None)

    def _relay(self, client: socket.socket, limit: int | None) -> None:
        with self._lock:
            upstream = socket.create_connection(self._upstream)
            self._sockets += [client, upstream]
        self._spawn(self._forward, client, upstream)
        self._spawn(self._pump, upstream, client, limit)

    def _forward(self, client: socket.socket, upstream: socket.socket) -> None:
        """Pump requests upstream, recording their request lines; see :meth:`_hold`."""
        try:
            with contextlib.suppress(OSError):
                while True:
                    data = client.recv(65536)
                    if not data:
                        break
                    lines = [(m.decode(), unquote(p.decode())) for m, p in _REQUEST_LINE.findall(data)]
                    with self._lock:
                        self.requests += lines
                    if any(self._hold(method, path) for method, path in lines):
                        return
                    upstream.sendall(data)
        finally:
            _shut(client)
            _shut(upstream)

    def _hold(self, method: str, path: str) -> bool:
        """True to hold this request back (never forward it); here never."""
        return False

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, limit: int | None) -> None:
        try:
            with contextlib.suppress(OSError):
                while limit is None or limit > 0:
                    data = source.recv(65536)
                    if not data:
                        break
                    if limit is not None:
                        data = data[:limit]
                        limit -= len(data)
                    sink.sendall(data)
        finally:
            _shut(source)
            _shut(sink)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


class RefusingRelay(CuttingRelay):
    """A loopback relay that answers its first ``refusals`` connections itself:
    ``slowdown`` (HTTP 503 with S3's SlowDown error), ``internal`` (HTTP 500
    InternalError) or ``reset`` (the connection is reset before any answer);
    later connections are relayed to the S3 server."""

    def __init__(self, upstream_url: str, *, refusals: int, how: str) -> None:
        super().__init__(upstream_url, cuts=0, after=0)
        self._refusals = refusals
        self._how = how

    def _handle(self, client: socket.socket) -> None:
        with self._lock:
            refuse = self._refusals > 0
            self._refusals -= int(refuse)
        if refuse:
            self._spawn(self._refuse, client)
        else:
            self._relay(client, None)

    def _refuse(self, client: socket.socket) -> None:
        with contextlib.suppress(OSError):
            client.recv(65536)  # the request line and headers
            if self._how == "reset":
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                status, code = (
                    ("503 Slow Down", "SlowDown")
                    if self._how == "slowdown"
                    else (
                        "500 Internal Server Error",
                        "InternalError",
                    )
                )
                body = f"<Error><Code>{code}</Code><Message>try again</Message></Error>".encode()
                client.sendall(
                    f"HTTP/1.1 {status}\r\nContent-Type: application/xml\r\nContent-Length: {len(body)}\r\n"
                    f"Connection: close\r\n\r\n".encode()
                    + body
                )
        client.close()


class StallingRelay(CuttingRelay):
    """A relay that holds the first GET of the object whose key ends with
    ``key_suffix`` (every such GET when ``every``): the request is never
    answered, and its connection is closed when :meth:`release` is called
    (the client then retries). Later requests for it pass. :attr:`stalled` is
    set once a request is held; :attr:`stall_count` counts them.
    """

    def __init__(self, upstream_url: str, *, key_suffix: str, every: bool = False) -> None:
        super().__init__(upstream_url, cuts=0, after=0)
        self._suffix = key_suffix
        self._every = every
        self._released = threading.Event()
        self.stalled = threading.Event()
        self.stall_count = 0

    def _hold(self, method: str, path: str) -> bool:
        if method != "GET" or not path.split("?", 1)[0].endswith(self._suffix):
            return False
        with self._lock:
            if self.stalled.is_set() and not self._every:
                return False
            self.stall_count += 1
            self.stalled.set()
        self._released.wait()
        return True

    def release(self) -> None:
        """Let the held request go (its connection is closed unanswered)."""
        self._released.set()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.release()
        super().__exit__(*exc)
