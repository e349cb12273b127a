"""Standard output and standard error as command-line tools keep them: a
reader that went away (``eceb evaluate ... | head -1``) drops what is
still written, and the command carries on and exits with the code its
outcome has (README, "Exit codes"), never with an internal error.

Python ignores SIGPIPE: a write to a pipe without a reader raises
BrokenPipeError, from any ``print`` or at the final flush. Here the
standard streams write through :class:`_DroppingWhenClosed`, which turns
that first EPIPE into "written" and points the descriptor at ``/dev/null``
for the rest of the process.

Standard output that fails otherwise (a full device: ENOSPC, EIO) is
dropped the same way, but remembered: a command that would have exited 0
or 1 exits 6 instead (output cannot be written), saying so on standard
error; what it wrote to files is written all the same. Standard error that
fails is dropped and changes nothing. A standard descriptor closed before
eceb starts (``2>&-``) is opened on ``/dev/null`` first, so that no file
eceb opens (a report) takes its number and receives its messages.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import signal
import sys
from typing import TYPE_CHECKING, Any, TextIO

import click

from eceb_cli import exit_codes
from eceb_cli.console import run_reported
from eceb_cli.conventions import ConventionalGroup, Stopped, stopped_line

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

__all__ = ["PipeSafeGroup"]


class _Failures:
    """What became of the process's standard output: ``stdout`` holds the
    reason its writes failed (other than a reader gone), or ``None``."""

    stdout: str | None = None


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
            if exc.errno != errno.EPIPE and self._fd == 1:
                _Failures.stdout = exc.strerror or type(exc).__name__
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self._fd)
        finally:
            os.close(null)
        return view.nbytes

    def close(self) -> None:
        """Mark the stream closed; the descriptor stays open (it is the process's)."""
        super().close()


def _guarded(stream: TextIO | None, fd: int, *, line_buffering: bool) -> TextIO:
    raw = _DroppingWhenClosed(fd)
    return io.TextIOWrapper(
        io.BufferedWriter(raw),
        encoding=stream.encoding if stream is not None else "utf-8",
        errors=stream.errors if stream is not None else "backslashreplace",
        line_buffering=line_buffering,
    )


def _open_if_closed(fd: int) -> bool:
    """Open ``/dev/null`` on standard descriptor ``fd`` when it is closed;
    True when it was."""
    try:
        os.fstat(fd)
    except OSError:
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        return True
    return False


def guard_standard_streams() -> None:
    """Make ``sys.stdout`` and ``sys.stderr`` drop what they cannot deliver
    to a reader that is gone (see the module). Only the interpreter's own
    streams on descriptors 1 and 2 are replaced (a test runner's captures
    are left alone); calling it again changes nothing."""
    reopened = {fd: _open_if_closed(fd) for fd in (0, 1, 2)}
    for name, original, fd in (("stdout", sys.__stdout__, 1), ("stderr", sys.__stderr__, 2)):
        current: TextIO | None = getattr(sys, name)
        if original is None and current is None and reopened[fd]:
            setattr(sys, name, _guarded(None, fd, line_buffering=name == "stderr"))
            continue
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


class PipeSafeGroup(ConventionalGroup):
    """A top-level click group whose standard streams are guarded
    (:func:`guard_standard_streams`) before anything is printed, help and
    version included; whose commands keep the conventions
    (:mod:`eceb_cli.conventions`), what they raise mapped to exit codes
    (:func:`~eceb_cli.console.run_reported`, here for every command); and where SIGTERM and SIGHUP unwind as
    Ctrl-C does (:class:`~eceb_cli.conventions.Stopped`), so temporary files
    are removed."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Guard the standard streams, then run the command line as click
        does; exit 6 when standard output could not be written (see the
        module)."""
        guard_standard_streams()
        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGHUP, _stop)
        try:
            result = super().main(*args, **kwargs)
        except Stopped as exc:
            click.echo(stopped_line(exc.signum), err=True)
            _check_standard_output(128 + exc.signum)
            raise SystemExit(128 + exc.signum) from None
        except SystemExit as exit_:
            _check_standard_output(exit_.code)
            raise
        _check_standard_output(0)
        return result

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command line's command, what it raises reported and
        mapped to its exit code (:func:`~eceb_cli.console.run_reported`)."""
        return run_reported(lambda: super(PipeSafeGroup, self).invoke(ctx))


def _stop(signum: int, _frame: object) -> None:
    """SIGTERM and SIGHUP: unwind like Ctrl-C."""
    raise Stopped(signum)


def _check_standard_output(code: object) -> None:
    """Raise ``SystemExit(6)`` when standard output failed and ``code``
    (the command's exit code) would say its outcome was delivered."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.flush()
    if _Failures.stdout is None or code not in (None, exit_codes.OK, exit_codes.TASKS_FAILED):
        return
    click.echo(f"error: output: standard output: cannot be written ({_Failures.stdout})", err=True)
    raise SystemExit(exit_codes.OUTPUT)
