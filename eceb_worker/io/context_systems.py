"""The transports of the user's context system (``eceb run``): a subprocess
spoken to in JSON Lines, or an HTTP endpoint (protocol:
:mod:`eceb_worker.families.eceb.making.protocol`). Both implement
:class:`~eceb_worker.families.eceb.making.exchange.ContextSystem`; open one
with :func:`open_context_system`.

Subprocess (:class:`SubprocessContextSystem`)
    The profile's ``command`` is started once, in its own session and
    process group, in the directory the caller gives (the profile's); a
    relative program path (with a ``/``) is found there, a bare name on
    ``PATH``. It inherits eceb's environment. Each request is one line of
    JSON on its standard input, each response one line on its standard
    output. Requests are serialized (one in flight; concurrent callers
    wait their turn), each answer must echo the request's ``request_id``.
    Its standard error is drained and never shown: it may quote restricted
    text. Errors give only its size and BLAKE3 digest, so that it can be
    matched with the system's own logs. Failures, each a
    :class:`~eceb_worker.errors.ProviderError` of party ``"context system"``:

    - an answer that is no JSON, not a context response or the answer to
      another request: final, naming the line of the system's output and
      the field (never the text); the process is stopped (its output may be
      out of step) and started again for the next request;
    - no answer within ``timeout_s``: transient; the process group is
      killed and started again for the next request;
    - the process exits: transient, and it is started again for the next
      request; when that new process exits too before answering anything
      (a broken command), fatal, naming the program and exit status, and
      every later call fails the same way;
    - the program cannot be started (not found, not executable): fatal.

    :meth:`~SubprocessContextSystem.close` closes its standard input, gives
    it :data:`GRACE_S` seconds to exit, then terminates and kills its group.
    A system whose standard input closes (eceb died) should exit.

HTTP (:class:`HttpContextSystem`)
    Each request is the JSON body of a ``POST`` to the profile's ``url``
    (``http`` or ``https``; user information in it is sent as HTTP basic
    authentication and never shown; no proxy, no redirect followed), each
    response the JSON body of a ``200`` answer. Requests may run
    concurrently (a connection each). A timeout, a connection refused or
    lost, HTTP 408, 409, 429 and 5xx are transient (``Retry-After`` is
    kept); another status or a body that is not the answer is final. Messages show the URL
    without user information, query or fragment, and never the body.

Both read at most :data:`MAX_RESPONSE_BYTES` of one answer.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import os
import queue
import re
import select
import signal
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Final
from urllib.parse import unquote, urlsplit

import blake3
import msgspec

from eceb_worker.core.urls import shown_url
from eceb_worker.errors import ProviderError
from eceb_worker.families.eceb.making.exchange import ContextSystem
from eceb_worker.families.eceb.making.profile import ContextSystemSpec
from eceb_worker.families.eceb.making.protocol import ContextRequest, ContextResponse

__all__ = [
    "GRACE_S",
    "MAX_RESPONSE_BYTES",
    "PARTY",
    "HttpContextSystem",
    "SubprocessContextSystem",
    "open_context_system",
]

PARTY: Final = "context system"
"""The ``party`` of every :class:`~eceb_worker.errors.ProviderError` raised here."""

MAX_RESPONSE_BYTES: Final = 64 * 1024 * 1024
"""The largest answer read (one output line, one HTTP body): 64 MiB."""

GRACE_S: Final = 5.0
"""Seconds a subprocess is given to exit once its standard input is closed,
then once terminated (SIGTERM), before its process group is killed."""

_JOIN_S: Final = 5.0
"""Seconds to wait for a draining thread once its process is gone."""

_CHUNK: Final = 64 * 1024
_POLL_S: Final = 0.05
"""How often a reader of the process's pipes looks whether it is still wanted, in seconds."""
_RETRIED_STATUSES: Final = frozenset({408, 409, 429})
_ENCODER: Final = msgspec.json.Encoder()
_DECODER: Final = msgspec.json.Decoder(ContextResponse)
_QUOTED: Final = re.compile(r"'.*'", re.DOTALL)


def _error(
    message: str,
    *,
    transient: bool = False,
    fatal: bool = False,
    status: int | None = None,
    retry_after_s: float | None = None,
) -> ProviderError:
    """A :class:`~eceb_worker.errors.ProviderError` of :data:`PARTY` (final unless said otherwise)."""
    return ProviderError(
        message, party=PARTY, transient=transient, fatal=fatal, status=status, retry_after_s=retry_after_s
    )


def _decode_problem(error: msgspec.DecodeError) -> str:
    """What is wrong with an answer, from msgspec's message, without any
    value the system wrote (an enumeration's value is quoted: it is
    replaced) and with the field's path."""
    what, _, where = str(error).partition(" - at ")
    what = _QUOTED.sub("a value not shown", what)
    what = "".join(c if c.isprintable() else "?" for c in what)[:200]
    return f"{what} (field {where})" if where else what


def _check_response(response: ContextResponse, request: ContextRequest, where: str) -> ContextResponse:
    """``response`` when it answers ``request``; a final error naming ``where`` otherwise."""
    if response.request_id != request.request_id:
        raise _error(f"{where} answers another request: field request_id is not the request's {request.request_id!r}")
    return response


# --- subprocess -------------------------------------------------------------------------------------------------


class _Output(msgspec.Struct, frozen=True):
    """A line of the system's standard output (``line`` None: longer than
    :data:`MAX_RESPONSE_BYTES`), or its end (``number`` 0)."""

    number: int
    line: bytes | None


class _Process:
    """One started process of a context system, and the threads draining its
    standard output (into numbered lines) and standard error (into a size
    and a digest)."""

    def __init__(self, popen: subprocess.Popen[bytes], *, after_exit: bool) -> None:
        self.popen = popen
        self.after_exit = after_exit
        self.answered = False
        self.killed = False
        self.lines: queue.SimpleQueue[_Output] = queue.SimpleQueue()
        self._stderr_lock = threading.Lock()
        self._stderr_bytes = 0
        self._stderr_hash = blake3.blake3()
        self._finished = threading.Event()
        self._threads = [
            threading.Thread(target=self._read_lines, name="context-system-stdout", daemon=True),
            threading.Thread(target=self._drain_stderr, name="context-system-stderr", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _chunks(self, fd: int) -> Iterator[bytes]:
        """What the process writes on ``fd``, chunk by chunk, until it ends
        or the process is finished with (:meth:`_finish`): a descendant
        that keeps the pipe open cannot hold a reader for ever."""
        while not self._finished.is_set():
            try:
                ready, _, _ = select.select([fd], [], [], _POLL_S)
                if not ready:
                    continue
                chunk = os.read(fd, _CHUNK)
            except (OSError, ValueError):
                return
            if not chunk:
                return
            yield chunk

    def _read_lines(self) -> None:
        stream = self.popen.stdout
        assert stream is not None
        number = 0
        pending = bytearray()
        for chunk in self._chunks(stream.fileno()):
            pending += chunk
            while (end := pending.find(b"\n")) >= 0:
                number += 1
                line = bytes(pending[: end + 1])
                del pending[: end + 1]
                if len(line) > MAX_RESPONSE_BYTES:
                    self.lines.put(_Output(number, None))
                    return
                self.lines.put(_Output(number, line))
            if len(pending) > MAX_RESPONSE_BYTES:
                self.lines.put(_Output(number + 1, None))
                return
        if pending:
            self.lines.put(_Output(number + 1, bytes(pending)))
        self.lines.put(_Output(0, None))

    def _drain_stderr(self) -> None:
        stream = self.popen.stderr
        assert stream is not None
        for chunk in self._chunks(stream.fileno()):
            with self._stderr_lock:
                self._stderr_bytes += len(chunk)
                self._stderr_hash.update(chunk)

    def stderr_summary(self) -> str:
        """``; its standard error: N bytes, BLAKE3 D`` (empty when it wrote none)."""
        with self._stderr_lock:
            if not self._stderr_bytes:
                return ""
            return f"; its standard error: {self._stderr_bytes} bytes, BLAKE3 {self._stderr_hash.hexdigest()}"

    def exchange(self, payload: bytes, timeout_s: float) -> _Output | None:
        """Send ``payload`` and wait for the next line; ``None`` when none
        came within ``timeout_s`` (the process group is then killed). A
        line numbered 0 means the output ended (the process exited)."""
        deadline = time.monotonic() + timeout_s
        watchdog = threading.Timer(timeout_s, self.kill)  # a write the process never reads blocks: kill unblocks it
        watchdog.daemon = True
        watchdog.start()
        try:
            stdin = self.popen.stdin
            assert stdin is not None
            with contextlib.suppress(OSError, ValueError):  # the process is gone: its output ends too
                stdin.write(payload)
                stdin.flush()
            try:
                output = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.kill()
                return None
        finally:
            watchdog.cancel()
        if output.number == 0 and self.killed:
            return None
        if output.number:
            self.answered = True
        return output

    def kill(self) -> None:
        """SIGKILL to the process group (the process is reaped by :meth:`stop`)."""
        self.killed = True
        with contextlib.suppress(OSError):
            os.killpg(self.popen.pid, signal.SIGKILL)

    def stop(self) -> None:
        """Kill the group, reap the process, close its pipes."""
        if self.popen.poll() is None:
            self.kill()
        self._finish()

    def close(self) -> None:
        """Close standard input; after :data:`GRACE_S` SIGTERM to the group;
        after as long again SIGKILL; then reap and close its pipes."""
        stdin = self.popen.stdin
        assert stdin is not None
        with contextlib.suppress(OSError, ValueError):
            stdin.close()
        for number in (signal.SIGTERM, signal.SIGKILL):
            try:
                self.popen.wait(timeout=GRACE_S)
                break
            except subprocess.TimeoutExpired:
                self.killed = True
                with contextlib.suppress(OSError):
                    os.killpg(self.popen.pid, number)
        self._finish()

    def exit_status(self) -> str:
        """How the exited process ended, e.g. ``exit status 2`` (waits for it)."""
        self._finish()
        code = self.popen.returncode
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                return f"killed by {signal.Signals(-code).name}"
            return f"killed by signal {-code}"
        return f"exit status {code}"

    def _finish(self) -> None:
        try:
            self.popen.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:  # it closed its output but runs on
            self.kill()
            self.popen.wait()
        for thread in self._threads:  # what the process wrote last is still read
            thread.join(timeout=_POLL_S * 4)
        self._finished.set()  # a descendant holding the pipes open does not hold the readers
        for thread in self._threads:
            thread.join(timeout=_JOIN_S)
        streams: list[IO[bytes] | None] = [self.popen.stdin, self.popen.stdout, self.popen.stderr]
        for stream in streams:
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()


class SubprocessContextSystem:
    """A context system run as a subprocess speaking JSON Lines (see the
    module for the protocol and its failures).

    Args:
        command: the program and its arguments.
        cwd: the directory it runs in (the profile's directory).
        timeout_s: seconds to answer one request (its start included when
            it is started for that request).

    Raises:
        ProviderError: fatal, when the program cannot be started.
    """

    def __init__(self, command: Sequence[str], *, cwd: Path, timeout_s: float) -> None:
        if not command or not command[0]:
            raise _error("the context system's command is empty", fatal=True)
        self._command = tuple(command)
        self._cwd = cwd
        self._timeout_s = timeout_s
        self._lock = threading.Lock()  # one request in flight
        self._guard = threading.Lock()  # the current process, against close()
        self._process: _Process | None = None
        self._closed = False
        self._restart_after_exit = False
        self._fatal: str | None = None
        self._process = self._start()

    @property
    def _name(self) -> str:
        """The program as messages name it (its arguments may hold credentials: never shown)."""
        return f"context system {self._command[0]!r}"

    def _start(self) -> _Process:
        if not self._cwd.is_dir():
            raise _error(f"cannot start the {self._name}: its directory {str(self._cwd)!r} is not found", fatal=True)
        try:
            popen = subprocess.Popen(
                self._command,
                cwd=self._cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            reason = "command not found" if isinstance(exc, FileNotFoundError) else exc.strerror or type(exc).__name__
            raise _error(f"cannot start the {self._name}: {reason}", fatal=True) from None
        process = _Process(popen, after_exit=self._restart_after_exit)
        self._restart_after_exit = False
        return process

    def _current(self) -> _Process:
        """The running process, started (again) when there is none."""
        with self._guard:
            if self._closed:
                raise _error(f"the {self._name} is closed", fatal=True)
            process = self._process
            if process is not None and process.popen.poll() is not None:  # ended between two requests
                self._process = None
                if not process.killed:
                    self._exited(process)
                else:
                    process.stop()
            if self._process is None:
                self._process = self._start()
            return self._process

    def _exited(self, process: _Process) -> str:
        """Record that ``process`` exited on its own; its exit status. Raises
        the fatal error when it had been started again after an exit and
        never answered."""
        status = process.exit_status()
        if process.after_exit and not process.answered:
            self._fatal = (
                f"the {self._name} exited again ({status}) after it was started again"
                f"{process.stderr_summary()}; check its command"
            )
            raise _error(self._fatal, fatal=True)
        self._restart_after_exit = True
        return status

    def _drop(self, process: _Process) -> None:
        """Stop ``process`` (its output is out of step, or it timed out): a
        new one starts for the next request."""
        process.stop()
        with self._guard:
            if self._process is process:
                self._process = None

    def build(self, request: ContextRequest) -> ContextResponse:
        """The system's answer to ``request`` (see the module for the
        failures, each a :class:`~eceb_worker.errors.ProviderError`)."""
        payload = _ENCODER.encode(request) + b"\n"
        with self._lock:
            if self._fatal is not None:
                raise _error(self._fatal, fatal=True)
            process = self._current()
            output = process.exchange(payload, self._timeout_s)
            return self._answer(process, output, request)

    def _answer(self, process: _Process, output: _Output | None, request: ContextRequest) -> ContextResponse:
        """The response ``output`` holds, or the error it means."""
        if self._closed and (output is None or output.number == 0):  # close() stopped it
            raise _error(f"the {self._name} was closed before answering", fatal=True)
        if output is None:
            self._drop(process)
            raise _error(
                f"the {self._name} did not answer within {self._timeout_s:g} s{process.stderr_summary()}; "
                "it was stopped and starts again for the next request",
                transient=True,
            )
        if output.number == 0:
            with self._guard:
                if self._process is process:
                    self._process = None
            status = self._exited(process)
            raise _error(
                f"the {self._name} exited ({status}) before answering{process.stderr_summary()}; "
                "it starts again for the next request",
                transient=True,
            )
        where = f"line {output.number} of the {self._name}'s output"
        if output.line is None:
            self._drop(process)
            raise _error(f"{where} is longer than {MAX_RESPONSE_BYTES} bytes")
        try:
            response = _DECODER.decode(output.line.rstrip(b"\r\n"))
            return _check_response(response, request, where)
        except msgspec.DecodeError as exc:
            self._drop(process)
            raise _error(f"{where} is not a context response: {_decode_problem(exc)}") from None
        except ProviderError:
            self._drop(process)
            raise

    def close(self) -> None:
        """Stop the system (see the module); later calls of :meth:`build`
        fail (fatal). A request in flight fails. Idempotent."""
        with self._guard:
            self._closed = True
            process, self._process = self._process, None
        if process is not None:
            process.close()


# --- HTTP ---------------------------------------------------------------------------------------------------------


class HttpContextSystem:
    """A context system behind an HTTP endpoint (see the module).

    Args:
        url: the ``http://`` or ``https://`` endpoint taking each ``POST``.
        timeout_s: seconds for one request, from connecting to the end of
            the answer's body.

    Raises:
        ProviderError: fatal, when ``url`` is not an HTTP(S) URL.
    """

    def __init__(self, url: str, *, timeout_s: float) -> None:
        self._shown = shown_url(url)
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            raise _error(f"the context system's URL is not a valid URL: {self._shown}", fatal=True) from None
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:
            raise _error(f"the context system's URL must be an http:// or https:// URL: {self._shown}", fatal=True)
        self._https = scheme == "https"
        self._host = parts.hostname
        self._port = port
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if parts.username is not None or parts.password is not None:
            user = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
            self._headers["Authorization"] = "Basic " + base64.b64encode(user.encode("utf-8")).decode("ascii")
        self._timeout_s = timeout_s
        self._ssl = ssl.create_default_context() if self._https else None
        self._closed = False

    def _connection(self) -> http.client.HTTPConnection:
        if self._ssl is not None:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout_s, context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout_s)

    def build(self, request: ContextRequest) -> ContextResponse:
        """The endpoint's answer to ``request`` (see the module for the
        failures, each a :class:`~eceb_worker.errors.ProviderError`)."""
        if self._closed:
            raise _error(f"the context system at {self._shown} is closed", fatal=True)
        status, retry_after, body = self._post(_ENCODER.encode(request))
        if status != 200:
            retried = status in _RETRIED_STATUSES or status >= 500
            raise _error(
                f"the context system at {self._shown} answered HTTP {status}",
                transient=retried,
                status=status,
                retry_after_s=retry_after if retried else None,
            )
        where = f"the body of the answer of the context system at {self._shown}"
        if body is None:
            raise _error(f"{where} is longer than {MAX_RESPONSE_BYTES} bytes", status=status)
        try:
            response = _DECODER.decode(body)
        except msgspec.DecodeError as exc:
            raise _error(f"{where} is not a context response: {_decode_problem(exc)}", status=status) from None
        return _check_response(response, request, where)

    def _post(self, body: bytes) -> tuple[int, float | None, bytes | None]:
        """``(status, Retry-After seconds, body)`` of one ``POST``; body None
        when longer than :data:`MAX_RESPONSE_BYTES`. Raises a transient
        error when no answer came whole within the timeout."""
        connection = self._connection()
        expired = threading.Event()

        def expire() -> None:  # the whole exchange has one deadline, however slowly the answer trickles
            expired.set()
            sock = connection.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        watchdog = threading.Timer(self._timeout_s, expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            connection.request("POST", self._target, body=body, headers=self._headers)
            answer = connection.getresponse()
            data = _read_limited(answer)
            if expired.is_set():
                raise TimeoutError
            return answer.status, _retry_after(answer.getheader("Retry-After")), data
        except (OSError, http.client.HTTPException) as exc:
            timed_out = expired.is_set() or isinstance(exc, TimeoutError)
            reason = f"no answer within {self._timeout_s:g} s" if timed_out else _reason(exc)
            raise _error(f"the context system at {self._shown}: {reason}", transient=True) from None
        finally:
            watchdog.cancel()
            connection.close()

    def close(self) -> None:
        """Refuse later requests (no connection is kept between requests)."""
        self._closed = True


def _read_limited(answer: http.client.HTTPResponse) -> bytes | None:
    """The body, or None once it exceeds :data:`MAX_RESPONSE_BYTES`."""
    chunks: list[bytes] = []
    size = 0
    while chunk := answer.read(_CHUNK):
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds, when given as a number of seconds."""
    if value is None or not value.strip().isdigit():
        return None
    return float(int(value.strip()))


def _reason(exc: BaseException) -> str:
    """Why a connection failed, in a few words (no address, no credential)."""
    if isinstance(exc, TimeoutError):
        return f"no answer in time ({type(exc).__name__})"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, OSError) and exc.strerror:
        return f"connection failed ({exc.strerror})"
    return f"connection failed ({type(exc).__name__})"


# --- factory ------------------------------------------------------------------------------------------------------


def open_context_system(spec: ContextSystemSpec, *, base_dir: Path) -> ContextSystem:
    """The context system ``spec`` declares: a started
    :class:`SubprocessContextSystem` (its ``command`` run in ``base_dir``,
    the profile's directory) or an :class:`HttpContextSystem` (its
    ``url``), with the spec's ``timeout_s``. The caller closes it.

    Raises:
        ProviderError: fatal, when the spec names both or neither, the
            program cannot be started, or the URL is not HTTP(S).
    """
    if spec.command and spec.url:
        raise _error("the context system names both a command and a URL: give one", fatal=True)
    if spec.command:
        return SubprocessContextSystem(spec.command, cwd=base_dir, timeout_s=spec.timeout_s)
    if spec.url:
        return HttpContextSystem(spec.url, timeout_s=spec.timeout_s)
    raise _error("the context system names neither a command nor a URL", fatal=True)
