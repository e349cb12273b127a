"""Directories of files written and read whole: a publication bundle
(``eceb publish``). Written atomically (a temporary directory beside it,
renamed into place: readers see no bundle or the complete one, never over
anything that exists); read without following a symbolic link.
"""

from __future__ import annotations

import ctypes
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

import msgspec

from eceb_worker.errors import OutputError
from eceb_worker.io.files import check_not_an_input

__all__ = ["check_new_directory", "list_tree", "write_new_directory", "write_tree"]


class Tree(msgspec.Struct, frozen=True, kw_only=True):
    """What a directory holds, each entry by its ``/``-separated path
    relative to it, sorted.

    Fields:
        files: regular files.
        links: symbolic links (never followed).
        others: anything else but directories (FIFOs, sockets, devices).
    """

    files: tuple[str, ...]
    links: tuple[str, ...]
    others: tuple[str, ...]


def list_tree(root: Path) -> Tree:
    """Every entry below directory ``root``, symbolic links listed and never
    followed. Raises ``OSError`` when ``root`` cannot be listed."""
    files: list[str] = []
    links: list[str] = []
    others: list[str] = []
    pending = [("", root)]
    while pending:
        prefix, directory = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                relative = prefix + entry.name
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISLNK(mode):
                    links.append(relative)
                elif stat.S_ISDIR(mode):
                    pending.append((relative + "/", Path(entry.path)))
                elif stat.S_ISREG(mode):
                    files.append(relative)
                else:
                    others.append(relative)
    return Tree(files=tuple(sorted(files)), links=tuple(sorted(links)), others=tuple(sorted(others)))


def check_new_directory(directory: Path, inputs: Iterable[Path] = ()) -> None:
    """Raise :class:`OutputError` unless a new directory can be written at
    ``directory``: nothing is there (a bundle is never written over
    anything, an input least of all), and its parent exists and is writable."""
    check_not_an_input(directory, list(inputs))
    if directory.is_symlink() or directory.exists():
        raise OutputError(f"{directory}: exists (a bundle is written as a new directory, never over anything)")
    parent = directory.parent
    if not parent.is_dir():
        raise OutputError(f"{directory}: directory {parent} does not exist (it is not created)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{directory}: directory {str(parent)!r} is not writable")


def write_tree(directory: Path, files: Sequence[tuple[str, bytes]]) -> None:
    """Write ``files`` (``(relative path, bytes)``, paths already checked as
    portable) as the new directory ``directory`` (:func:`write_new_directory`,
    through a hidden temporary directory beside it). Raises :class:`OutputError`."""
    check_new_directory(directory)
    temporary = directory.parent / f".{directory.name}.{secrets.token_hex(8)}.partial"
    write_new_directory(directory, files, temporary=temporary, what="the bundle")


def write_new_directory(
    final: Path, files: Iterable[tuple[str, bytes]], *, temporary: Path, what: str = "the directory"
) -> None:
    """Write ``files`` (``(relative path, bytes)``) under the hidden
    ``temporary`` directory (created exclusively), each flushed to disk,
    then rename it to ``final``, never replacing anything there; on any
    failure or interruption the temporary directory is removed. Raises
    :class:`OutputError` (naming ``what`` was written)."""
    try:
        temporary.mkdir(mode=0o777)
    except OSError as exc:
        raise OutputError(f"{temporary}: cannot create: {exc.strerror or exc}") from None
    try:
        for relative, data in files:
            path = temporary / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("xb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
        _rename_new(temporary, final)
    except OSError as exc:
        shutil.rmtree(temporary, ignore_errors=True)
        raise OutputError(f"{final}: cannot write {what}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


_RENAME_NOREPLACE: Final = 1
_AT_FDCWD: Final = -100


def _rename_new(source: Path, target: Path) -> None:
    """Rename ``source`` to ``target`` only when nothing is at ``target``
    (Linux ``renameat2(RENAME_NOREPLACE)``; elsewhere a check first, then
    the rename, which also refuses a non-empty directory). Raises
    ``FileExistsError`` when something is there."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is not None:
        result = renameat2(_AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(target), _RENAME_NOREPLACE)
        if result == 0:
            return
        error = ctypes.get_errno()
        if error not in (errno.ENOSYS, errno.EINVAL):
            raise OSError(error, os.strerror(error), str(target))
    if os.path.lexists(target):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(target))
    os.rename(source, target)
