"""Local files: reading inputs with located errors, writing outputs atomically."""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable
from pathlib import Path

from eceb_worker.errors import InputError, Problem

__all__ = ["atomic_write", "map_input", "read_input"]


def read_input(path: Path) -> bytes:
    """The bytes of an input file; raises :class:`InputError` naming it when it
    cannot be read.
    """
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError([Problem(file=str(path), message=f"cannot read: {exc.strerror or exc}")]) from exc


def map_input(path: Path) -> bytes | mmap.mmap:
    """The bytes of a (large) input file, memory-mapped read-only rather than
    copied; raises :class:`InputError` naming it when it cannot be read."""
    try:
        with path.open("rb") as stream:
            if os.fstat(stream.fileno()).st_size == 0:
                return b""
            return mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        message = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError([Problem(file=str(path), message=f"cannot read: {message}")]) from exc


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def atomic_write(path: Path, chunks: Iterable[bytes]) -> None:
    """Write ``chunks`` to ``path`` so that readers see the old file or the
    complete new one, never a part: a temporary file in the same directory,
    flushed to disk, then renamed over ``path``. On any failure the temporary
    file is removed and ``path`` is untouched.
    """
    import tempfile  # here, not at the top: commands that write nothing start faster

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
