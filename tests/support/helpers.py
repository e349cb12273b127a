"""Small builders shared by tests."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import blake3
import click
from click.testing import CliRunner, Result

from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.registry import build_registry, registry_lines


def artifact(
    artifact_id: str = "a",
    *,
    path: str | None = None,
    kind: str = "runbook",
    classification: str = "internal",
    content: bytes = b"",
) -> Artifact:
    return Artifact(
        artifact_id=artifact_id,
        path=path if path is not None else artifact_id,
        kind=kind,  # type: ignore[arg-type]
        classification=classification,  # type: ignore[arg-type]
        source_digest=blake3.blake3(content).hexdigest(),
        size_bytes=len(content),
    )


def registry_bytes(*artifacts: Artifact) -> bytes:
    return b"".join(registry_lines(build_registry(artifacts)))


def run_with_closed_reader(stream: str, *command: str, **options: Any) -> subprocess.CompletedProcess[bytes]:
    """Run ``command`` with its ``stream`` (``"stdout"`` or ``"stderr"``) a
    pipe whose reading end is already closed, as ``COMMAND | head -0``
    leaves it: every write to it fails with EPIPE. The other stream is
    captured."""
    other = "stderr" if stream == "stdout" else "stdout"
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            command, **{stream: write, other: subprocess.PIPE}, stdin=subprocess.DEVNULL, check=False, **options
        )
    finally:
        os.close(write)


@contextmanager
def refusing_loopback_port() -> Iterator[int]:
    """A port of 127.0.0.1 bound by no listener while the context lasts:
    connections to it are refused at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as reserved:
        reserved.bind(("127.0.0.1", 0))
        port: int = reserved.getsockname()[1]
        yield port


@contextmanager
def silent_loopback_port() -> Iterator[int]:
    """A port of 127.0.0.1 whose listener accepts every connection and
    never answers (a stuck proxy) while the context lasts."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    lock = threading.Lock()
    closed = False

    def accept() -> None:
        while True:
            try:
                connection = listener.accept()[0]
            except OSError:
                return
            with lock:  # a connection accepted as the context ends is closed, never left to the collector
                if closed:
                    connection.close()
                    return
                held.append(connection)

    accepting = threading.Thread(target=accept, daemon=True)
    accepting.start()
    try:
        yield listener.getsockname()[1]
    finally:
        with lock:
            closed = True
            for connection in held:
                connection.close()
        with contextlib.suppress(OSError):  # wakes the thread blocked in accept(), which close() alone does not
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        accepting.join(timeout=5)


def invoke(command: click.Command, *args: str) -> Result:
    """``command ARGS`` in this process through click's runner (exceptions propagate)."""
    return CliRunner().invoke(command, list(args), catch_exceptions=False)
