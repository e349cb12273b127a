"""Helper processes of the embedded executor.

A helper is a fresh interpreter (``python -c``, never a fork: BLAKE3's
thread pool does not survive one) that imports only what hashing needs and
serves shard tasks (:data:`~eceb_worker.pipeline.messages.ShardTask`) read
from its standard input, one at a time, answering each on its standard
output before reading the next, with the same
:class:`~eceb_worker.pipeline.shards.Workspace` a Celery worker runs them
with. Messages are MessagePack (msgspec, never pickle), each preceded by its
length in bytes (8 bytes, big-endian): a re-hash shard travels as its
artifacts' records, and its answer holds only counts and findings; an
evaluation shard travels detached
(:class:`~eceb_worker.pipeline.detached.DetachedEvaluation`: its tasks and
their records), its answer the tasks' outcomes. A request's first byte
says which of the two it is, so that a helper that only re-hashes never
imports the evaluation.

This costs far less than ``multiprocessing`` with ``spawn`` (measured: about
50 ms instead of 110 ms from start to first answer): no resource tracker
process, no re-import of the ``__main__`` module (the whole command line) in
each helper, no pickling.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final

import msgspec

from eceb_worker.errors import ShardFailedError, StorageError
from eceb_worker.pipeline.messages import EvaluateTask, HashTask, RehashTask, ShardAnswer, ShardTask
from eceb_worker.pipeline.shards import Workspace

if TYPE_CHECKING:
    import subprocess

    from eceb_worker.pipeline.detached import DetachedEvaluation, DetachedRehash

__all__ = ["HelperProcess", "serve"]

_LENGTH_BYTES: Final = 8
_SHARD_TASK: Final = b"T"
_DETACHED: Final = b"D"
_DETACHED_REHASH: Final = b"R"
_HELPER_CODE: Final = "from eceb_worker.executors.helpers import serve; serve()"
_EXIT_SECONDS: Final = 10.0
"""How long a helper whose input was closed gets to exit before it is killed."""


class Failed(msgspec.Struct, frozen=True, tag="helper-failed"):
    """A request failed as a whole.

    Fields:
        storage: True for a ``StorageError`` (the storage failed as a whole),
            False for anything else (a bug: ``message`` holds the traceback).
        message: the error's text.
    """

    storage: bool
    message: str


Reply = ShardAnswer | Failed

_ENCODER: Final = msgspec.msgpack.Encoder()
_REQUEST_DECODER: Final = msgspec.msgpack.Decoder(ShardTask)
_REPLY_DECODER: Final = msgspec.msgpack.Decoder(Reply)


def _write_frame(stream: IO[bytes], payload: bytes, kind: bytes = b"") -> None:
    """Write one frame: its length, then ``kind`` (a request's first byte) and ``payload``."""
    stream.write((len(kind) + len(payload)).to_bytes(_LENGTH_BYTES, "big") + kind)
    stream.write(payload)
    stream.flush()


def _read_exactly(stream: IO[bytes], size: int) -> bytes | None:
    """``size`` bytes, or None at end of stream before the first one."""
    data = stream.read(size)
    if not data:
        return None
    while len(data) < size:
        more = stream.read(size - len(data))
        if not more:
            raise EOFError(f"stream ended {size - len(data)} bytes early")
        data += more
    return data


def _read_frame(stream: IO[bytes]) -> bytes | None:
    """The next frame's payload, or None at end of stream."""
    header = _read_exactly(stream, _LENGTH_BYTES)
    if header is None:
        return None
    return _read_exactly(stream, int.from_bytes(header, "big")) or b""


@functools.cache
def _detached_decoder(kind: bytes) -> msgspec.msgpack.Decoder[DetachedEvaluation | DetachedRehash]:
    """The decoder of a detached request of ``kind`` (imported on first use:
    a helper that only re-hashes never imports the evaluation)."""
    from eceb_worker.pipeline.detached import DetachedEvaluation, DetachedRehash

    return msgspec.msgpack.Decoder(DetachedEvaluation if kind == _DETACHED else DetachedRehash)


def serve() -> None:
    """A helper's main loop: answer requests from standard input until it closes.

    Ignores SIGINT: the parent (same process group) decides when a helper
    stops, by closing its input or killing it. Exits at once when its input
    closes (status 0), and with status 1 when the parent goes away
    mid-request.
    """
    import signal
    import traceback

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    requests = sys.stdin.buffer
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray output goes to stderr, never into an answer
    workspace = Workspace()
    try:
        while (frame := _read_frame(requests)) is not None:
            answer: Reply
            try:
                if frame[:1] in (_DETACHED, _DETACHED_REHASH):
                    answer = workspace.run_detached(_detached_decoder(frame[:1]).decode(memoryview(frame)[1:]))
                else:
                    answer = workspace.run(_REQUEST_DECODER.decode(memoryview(frame)[1:]))
            except StorageError as exc:
                answer = Failed(storage=True, message=str(exc))
            except Exception:  # reported to the parent, which raises it
                answer = Failed(storage=False, message=traceback.format_exc())
            _write_frame(answers, _ENCODER.encode(answer))
    except (BrokenPipeError, EOFError):  # the parent went away: nobody to answer
        os._exit(1)
    # Every answer is written (each frame is flushed) and a helper leaves
    # nothing to clean up: exit now, not after tearing the interpreter down
    # (some 20 ms, which the parent would wait for).
    sys.stderr.flush()
    os._exit(0)


_PIPE_BYTES: Final = 1024 * 1024
"""The capacity asked for each pipe to a helper (Linux's default limit for
an unprivileged process; the default is 64 KiB). An evaluation shard's
request and answer are megabytes: each system call that moves 64 KiB of
them would wait for the GIL again, up to a switch interval, while this
process's own shard holds it."""


def _widen(pipe: IO[bytes] | None) -> None:
    """Ask for a :data:`_PIPE_BYTES` pipe where the system allows it (Linux); else keep its size."""
    import fcntl

    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if pipe is None or set_size is None:
        return
    with contextlib.suppress(OSError):  # a lower limit: the pipe keeps its size
        fcntl.fcntl(pipe.fileno(), set_size, _PIPE_BYTES)


def _gone(process: subprocess.Popen[bytes]) -> ShardFailedError:
    """The error for a helper that exited before answering: a shard that
    did not complete, not a bug (the OOM killer, an operator's kill)."""
    status = process.wait()
    how = f"killed by signal {-status}" if status < 0 else f"status {status}"
    return ShardFailedError(f"helper process {process.pid} exited ({how}) before answering; nothing was reported")


class HelperProcess:
    """One running helper, driven by one thread at a time.

    Starting one costs about an interpreter start-up plus the hashing
    imports (some 50 ms of CPU); the caller keeps working meanwhile, since
    :meth:`answer` is what waits for it.
    """

    def __init__(self) -> None:
        import subprocess  # here, not at the top: a run without helpers does not need it

        # -P: never the current directory first on the path, so the helper
        # runs this eceb, whatever directory the command runs in.
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        self._process: subprocess.Popen[bytes] = subprocess.Popen(
            [sys.executable, "-P", "-c", _HELPER_CODE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        for pipe in (self._process.stdin, self._process.stdout):
            _widen(pipe)

    def send(self, request: ShardTask | DetachedEvaluation | DetachedRehash) -> None:
        """Send ``request`` (a shard task, or a detached shard);
        :meth:`answer` waits for its answer. Raises
        :class:`~eceb_worker.errors.ShardFailedError` when the helper is gone
        (killed from outside)."""
        process = self._process
        assert process.stdin is not None
        if isinstance(request, (RehashTask, EvaluateTask, HashTask)):
            kind = _SHARD_TASK
        else:
            from eceb_worker.pipeline.detached import DetachedEvaluation

            kind = _DETACHED if isinstance(request, DetachedEvaluation) else _DETACHED_REHASH
        payload = _ENCODER.encode(request)
        try:
            _write_frame(process.stdin, payload, kind)
        except OSError as exc:
            raise _gone(process) from exc

    def answer(self) -> ShardAnswer:
        """Wait for the answer to the request sent last.

        Raises ``StorageError`` when the storage failed as a whole,
        :class:`~eceb_worker.errors.ShardFailedError` when the helper exited
        before answering (killed from outside), ``RuntimeError`` when it
        reported a failure of its own (a bug).
        """
        process = self._process
        assert process.stdout is not None
        try:
            frame = _read_frame(process.stdout)
        except (OSError, EOFError) as exc:
            raise _gone(process) from exc
        if frame is None:
            raise _gone(process)
        answer = _REPLY_DECODER.decode(frame)
        if isinstance(answer, Failed):
            if answer.storage:
                raise StorageError(answer.message)
            raise RuntimeError(f"helper process {process.pid} failed:\n{answer.message}")
        return answer

    def close(self, *, kill: bool = False) -> None:
        """Let the helper exit (close its input), or kill it; then reap it."""
        import subprocess

        process = self._process
        if kill:
            process.kill()
        if process.stdin is not None:
            with contextlib.suppress(OSError):  # a broken pipe: the helper is gone already
                process.stdin.close()
        try:
            process.wait(timeout=_EXIT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
