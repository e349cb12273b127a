"""Standard output and standard error as command-line tools keep them: a
reader that went away (``eceb evaluate ... | head -1``) drops what is
still written, and the command carries on and exits with the code its
outcome has (README, "Exit codes"), never with an internal error.

Python ignores SIGPIPE: a write to a pipe without a reader raises
BrokenPipeError, from any ``print`` or at the final flush. Here the
standard streams write through :class:`_DroppingWhenClosed`, which turns
that first EPIPE into "written" and points the descriptor at ``/dev/null``
for the rest of the process.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

import click

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

__all__ = ["PipeSafeGroup", "guard_standard_streams"]


class _DroppingWhenClosed(io.RawIOBase):
    """Writes to descriptor ``fd``; once its reader is gone (EPIPE), the
    descriptor is replaced by ``/dev/null`` and every write succeeds."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: ReadableBuffer) -> int:
        view = memoryview(data)
        try:
            return os.write(self._fd, view)
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self._fd)
        finally:
            os.close(null)
        return view.nbytes

    def close(self) -> None:
        """Mark the stream closed; the descriptor stays open (it is the process's)."""
        super().close()


def _guarded(stream: TextIO, fd: int, *, line_buffering: bool) -> TextIO:
    raw = _DroppingWhenClosed(fd)
    return io.TextIOWrapper(
        io.BufferedWriter(raw),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=line_buffering,
    )


def guard_standard_streams() -> None:
    """Make ``sys.stdout`` and ``sys.stderr`` drop what they cannot deliver
    to a reader that is gone (see the module). Only the interpreter's own
    streams on descriptors 1 and 2 are replaced (a test runner's captures
    are left alone); calling it again changes nothing."""
    for name, original, fd in (("stdout", sys.__stdout__, 1), ("stderr", sys.__stderr__, 2)):
        current: TextIO = getattr(sys, name)
        if original is None or current is not original or not _on_descriptor(current, fd):
            continue
        current.flush()
        interactive = os.isatty(fd)
        setattr(sys, name, _guarded(current, fd, line_buffering=interactive or name == "stderr"))


def _on_descriptor(stream: TextIO, fd: int) -> bool:
    """True when ``stream`` writes to descriptor ``fd``."""
    try:
        return stream.fileno() == fd
    except (OSError, ValueError):
        return False


class PipeSafeGroup(click.Group):
    """A click group whose standard streams are guarded
    (:func:`guard_standard_streams`) before anything is printed, help and
    version included."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Guard the standard streams, then run the command line as click does."""
        guard_standard_streams()
        return super().main(*args, **kwargs)
