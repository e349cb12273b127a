"""Local files: reading inputs with located errors, writing outputs atomically."""

from __future__ import annotations

import errno
import mmap
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from eceb_worker.errors import InputError, OutputError, Problem

__all__ = [
    "atomic_write",
    "check_not_an_input",
    "check_writable",
    "map_input",
    "open_input",
    "path_inside",
    "read_input",
]

_INPUT_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
"""O_NONBLOCK: opening a FIFO must not wait for a writer (it is then refused)."""


def _unreadable(path: Path, exc: OSError | ValueError) -> InputError:
    message = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return InputError([Problem(file=str(path), message=f"cannot read: {message}")])


def open_input(path: Path) -> BinaryIO:
    """The input file at ``path``, open for reading. Raises :class:`InputError`
    naming it when it cannot be opened or is not a regular file (a FIFO, a
    device or a directory would block or never end)."""
    try:
        fd = os.open(path, _INPUT_FLAGS)
    except (OSError, ValueError) as exc:
        raise _unreadable(path, exc) from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            reason = os.strerror(errno.EISDIR) if stat.S_ISDIR(mode) else "not a regular file"
            raise InputError([Problem(file=str(path), message=f"cannot read: {reason}")])
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(path: Path) -> bytes:
    """The bytes of an input file; raises :class:`InputError` naming it when it
    cannot be read (:func:`open_input`).
    """
    with open_input(path) as stream:
        try:
            return stream.read()
        except OSError as exc:
            raise _unreadable(path, exc) from exc


def map_input(path: Path) -> bytes | mmap.mmap:
    """The bytes of a large input file (a run), memory-mapped read-only
    rather than copied: a 1 GB run is indexed in about 1.5 s instead of 2.2 s.

    The file must not be truncated while eceb reads it (a mapped file that
    shrinks ends the process with SIGBUS); the corpus, which may change
    under a verification, is never mapped. Raises :class:`InputError`
    naming the file when it cannot be read.
    """
    with open_input(path) as stream:
        try:
            if os.fstat(stream.fileno()).st_size == 0:
                return stream.read()
            return mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise _unreadable(path, exc) from exc


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def _check_replaceable(path: Path) -> None:
    """Raise :class:`OutputError` when something other than a regular file
    is at ``path``, a symbolic link followed (a device, a FIFO, a socket): an
    output is renamed into place and would replace it."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return  # nothing there: the checks of its directory say the rest
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise OutputError(f"{path}: is a directory")
    if not stat.S_ISREG(mode):
        raise OutputError(
            f"{path}: is not a regular file (a device, FIFO or socket is never replaced; -o - writes standard output)"
        )


def check_writable(path: Path) -> None:
    """Raise :class:`OutputError` unless a file can be created at ``path``
    (checked before long work, so that it is not wasted): its directory
    exists (none is created), is writable, and nothing but a regular file
    is at ``path`` (:func:`atomic_write` would replace it)."""
    _check_replaceable(path)
    directory = path.parent
    if not directory.exists():
        raise OutputError(f"{path}: directory {directory} does not exist (it is not created)")
    if not directory.is_dir():
        raise OutputError(f"{path}: {str(directory)!r} is not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: directory {str(directory)!r} is not writable")


def same_file(first: Path, second: Path) -> bool:
    """True when both paths name one existing file, however they are
    spelled (relative or absolute, through symbolic links, hard links):
    the same device and inode."""
    try:
        one, other = first.stat(), second.stat()
    except (OSError, ValueError):
        return False
    return (one.st_dev, one.st_ino) == (other.st_dev, other.st_ino)


def check_not_an_input(path: Path, inputs: Iterable[Path]) -> None:
    """Raise :class:`OutputError` when the output ``path`` is one of
    ``inputs`` (:func:`same_file`): an output never replaces what it was
    made from."""
    for given in inputs:
        if same_file(path, given):
            raise OutputError(f"{path}: is the input {given} (an output never replaces an input)")


def path_inside(path: Path, directory: Path) -> str | None:
    """``path``'s ``/``-separated path relative to ``directory`` when it
    lies inside it (both resolved, symbolic links followed), else None."""
    try:
        relative = path.resolve().relative_to(directory.resolve())
    except (OSError, ValueError, RuntimeError):
        return None
    return relative.as_posix()


def atomic_write(path: Path, chunks: Iterable[bytes]) -> None:
    """Write ``chunks`` to ``path`` so that readers see the old file or the
    complete new one, never a part: a temporary file in the same directory,
    flushed to disk, then renamed over ``path``. On any failure the temporary
    file is removed and ``path`` is untouched. Its directory must exist, and
    ``path`` must be absent or a regular file (never a device or FIFO); a
    symbolic link is followed, and stays.
    """
    import tempfile  # here, not at the top: commands that write nothing start faster

    _check_replaceable(path)
    if path.is_symlink():
        path = path.resolve()  # the file the link names is replaced, never the link
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        Path(tmp).replace(path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
