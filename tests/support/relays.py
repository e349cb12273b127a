"""Loopback TCP relays in front of the S3 server, to put faults on the wire.

:class:`CuttingRelay` breaks responses off mid-body, :class:`RefusingRelay`
answers with S3 throttling, server errors or connection resets,
:class:`StallingRelay` holds the first request for one object until released
(so a test knows a worker is in the middle of a shard),
:class:`ChecksumRefusingRelay` is a store that does not support flexible
checksums (400 InvalidArgument to any request carrying them) and
:class:`CorruptingRelay` flips a byte in response bodies. Every relay records
the request lines it forwarded (:attr:`CuttingRelay.requests`).
"""

from __future__ import annotations

import contextlib
import queue
import re
import socket
import struct
import threading
from types import TracebackType
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["ChecksumRefusingRelay", "CorruptingRelay", "CuttingRelay", "RefusingRelay", "StallingRelay"]

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
        sent: queue.SimpleQueue[tuple[str, str]] = queue.SimpleQueue()
        self._spawn(self._forward, client, upstream, sent)
        self._spawn(self._pump, upstream, client, limit, sent)

    def _forward(
        self, client: socket.socket, upstream: socket.socket, sent: queue.SimpleQueue[tuple[str, str]]
    ) -> None:
        """Pump requests upstream, recording their request lines (also in
        ``sent``, this connection's); see :meth:`_hold` and :meth:`_answer`."""
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
                    answer = self._answer(data)
                    if answer is not None:
                        client.sendall(answer)
                        return
                    for line in lines:
                        sent.put(line)
                    upstream.sendall(data)
        finally:
            _shut(client)
            _shut(upstream)

    def _hold(self, method: str, path: str) -> bool:
        """True to hold this request back (never forward it); here never."""
        return False

    def _answer(self, data: bytes) -> bytes | None:
        """The relay's own answer to the request ``data`` starts (then the
        connection is closed), or None to forward it; here never."""
        return None

    def _pump(
        self, source: socket.socket, sink: socket.socket, limit: int | None, sent: queue.SimpleQueue[tuple[str, str]]
    ) -> None:
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
                client.sendall(_s3_error(status, code, "try again"))
        client.close()


def _s3_error(status: str, code: str, message: str) -> bytes:
    """An S3 error response that closes its connection."""
    body = f"<Error><Code>{code}</Code><Message>{message}</Message></Error>".encode()
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/xml\r\nContent-Length: {len(body)}\r\n"
        f"Connection: close\r\n\r\n".encode()
        + body
    )


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


_CHECKSUM_HEADERS = re.compile(
    rb"\r\n(?:x-amz-checksum-[a-z0-9-]+|x-amz-sdk-checksum-algorithm|x-amz-trailer"
    rb"|content-encoding: *(?:[^\r]*,)? *aws-chunked)[:\r ]",
    re.IGNORECASE,
)


class ChecksumRefusingRelay(CuttingRelay):
    """A store that does not support S3's flexible checksums, as many
    S3-compatible ones: a request carrying a checksum header
    (``x-amz-checksum-*``, ``x-amz-sdk-checksum-algorithm``,
    ``x-amz-trailer``) or an ``aws-chunked`` body is answered 400
    InvalidArgument; others are relayed. :attr:`refused` holds the request
    lines refused."""

    def __init__(self, upstream_url: str) -> None:
        super().__init__(upstream_url, cuts=0, after=0)
        self.refused: list[tuple[str, str]] = []

    def _answer(self, data: bytes) -> bytes | None:
        head = data.split(b"\r\n\r\n", 1)[0]
        if not _CHECKSUM_HEADERS.search(head):
            return None
        lines = [(m.decode(), unquote(p.decode())) for m, p in _REQUEST_LINE.findall(head)]
        with self._lock:
            self.refused += lines
        return _s3_error("400 Bad Request", "InvalidArgument", "x-amz-checksum headers are not supported")


class CorruptingRelay(CuttingRelay):
    """A relay that corrupts bytes in transit: in the body of the first
    ``corruptions`` answers to a GET whose path ends with ``key_suffix``
    (every one when ``corruptions`` is None), one byte in the middle is
    flipped, each time by another value (two corrupted reads never agree).
    Headers (ETag, checksums) are left as the server sent them. Relies on
    the server's ``Content-Length`` (moto's answers have one).
    :attr:`corrupted` counts the bodies corrupted."""

    def __init__(self, upstream_url: str, *, key_suffix: str, corruptions: int | None = None) -> None:
        super().__init__(upstream_url, cuts=0, after=0)
        self._suffix = key_suffix
        self._left = corruptions
        self.corrupted = 0

    def _corrupts(self, method: str, path: str) -> int:
        """The value to flip this answer's byte with, or 0 to leave it."""
        if method != "GET" or not path.split("?", 1)[0].endswith(self._suffix):
            return 0
        with self._lock:
            if self._left is not None:
                if self._left <= 0:
                    return 0
                self._left -= 1
            self.corrupted += 1
            return self.corrupted % 255 + 1

    def _pump(
        self, source: socket.socket, sink: socket.socket, limit: int | None, sent: queue.SimpleQueue[tuple[str, str]]
    ) -> None:
        buffer = b""

        def fill(size: int) -> bool:
            nonlocal buffer
            while len(buffer) < size:
                data = source.recv(65536)
                if not data:
                    return False
                buffer += data
            return True

        try:
            with contextlib.suppress(OSError, queue.Empty):
                while True:
                    while b"\r\n\r\n" not in buffer:
                        if not fill(len(buffer) + 1):
                            return
                    head, _, buffer = buffer.partition(b"\r\n\r\n")
                    status = int(head.split(b" ", 2)[1])
                    sink.sendall(head + b"\r\n\r\n")
                    if status < 200:  # 100 Continue: the answer itself follows
                        continue
                    method, path = sent.get(timeout=30)
                    found = re.search(rb"\r\ncontent-length: *(\d+)", head, re.IGNORECASE)
                    length = 0 if method == "HEAD" or found is None else int(found.group(1))
                    if not fill(length):
                        return
                    body, buffer = bytearray(buffer[:length]), buffer[length:]
                    flip = self._corrupts(method, path) if 200 <= status < 300 and body else 0
                    if flip:
                        body[len(body) // 2] ^= flip
                    sink.sendall(bytes(body))
        finally:
            _shut(source)
            _shut(sink)
