"""Corpus storage in a local directory."""

from __future__ import annotations

import errno
import mmap
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import blake3

from eceb_worker.engine.digests import HashedBytes
from eceb_worker.engine.ports import ListedEntry
from eceb_worker.errors import ArtifactMissing, ArtifactOutsideCorpus, ArtifactUnreadable, StorageError

__all__ = ["LocalStorage"]

LARGE_FILE_BYTES: Final = 1024 * 1024
"""From this size on, a file is memory-mapped and hashed on all cores
(BLAKE3's own threading pays only above about 1 MiB)."""

_PROC_FD: Final = Path("/proc/self/fd")


class LocalStorage:
    """A corpus in a directory tree; artifact paths are relative to ``root``.

    Reads never leave the directory: a path whose resolution (through any
    symbolic link) lands outside ``root`` raises ``ArtifactOutsideCorpus``.
    Raises ``StorageError`` at construction when ``root`` is not a directory.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._given = str(root)
        try:
            self._root = Path(os.path.realpath(root))
            if not self._root.is_dir():
                raise StorageError(f"{self._given}: not a directory")
        except OSError as exc:
            raise StorageError(f"{self._given}: {exc.strerror or exc}") from exc
        self._root_prefix = str(self._root).rstrip(os.sep) + os.sep
        self._use_proc = sys.platform.startswith("linux") and _PROC_FD.is_dir()

    @property
    def location(self) -> str:
        """The directory as the user named it."""
        return self._given

    @property
    def concurrency(self) -> int:
        """One: local reads are CPU-bound; parallelism comes from processes."""
        return 1

    def _inside(self, fd: int, full: str) -> bool:
        if self._use_proc:
            try:
                actual = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                actual = os.path.realpath(full)
        else:
            actual = os.path.realpath(full)
        return actual.startswith(self._root_prefix)

    def hash_artifact(self, path: str) -> HashedBytes:
        """BLAKE3-256 of the file at ``root/path``: ``(size_bytes, hex digest)``.

        Small files are read whole; large ones memory-mapped and hashed with
        BLAKE3's multithreading. Raises ``ArtifactMissing``,
        ``ArtifactOutsideCorpus`` or ``ArtifactUnreadable``.
        """
        full = os.path.join(self._root, path)
        try:
            fd = os.open(full, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            if os.path.islink(full) or _has_link_parent(self._root, path):
                raise ArtifactMissing(path, "dangling symbolic link") from None
            raise ArtifactMissing(path, "no such file") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ArtifactUnreadable(path, "too many levels of symbolic links") from None
            if exc.errno == errno.ENOTDIR:
                raise ArtifactMissing(path, "a parent of the path is not a directory") from None
            raise ArtifactUnreadable(path, exc.strerror or str(exc)) from None
        try:
            if not self._inside(fd, full):
                raise ArtifactOutsideCorpus(path, "a symbolic link leads outside the corpus directory")
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ArtifactUnreadable(path, "not a regular file")
            size = info.st_size
            try:
                if size >= LARGE_FILE_BYTES:
                    with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mapped:
                        return size, blake3.blake3(mapped, max_threads=blake3.blake3.AUTO).hexdigest()
                hasher = blake3.blake3()
                total = 0
                while True:
                    chunk = os.read(fd, max(size - total + 1, 65536))
                    if not chunk:
                        break
                    hasher.update(chunk)
                    total += len(chunk)
                return total, hasher.hexdigest()
            except OSError as exc:
                raise ArtifactUnreadable(path, exc.strerror or str(exc)) from None
        finally:
            os.close(fd)

    def list_entries(self) -> Iterator[ListedEntry]:
        """Every regular file under ``root`` (symbolic links to files included).

        Symbolic links to directories are not followed: each is listed with a
        refusal. Raises ``StorageError`` when ``root`` cannot be walked.
        """

        def fail(exc: OSError) -> None:
            raise StorageError(f"{self._given}: cannot list {exc.filename}: {exc.strerror}")

        for directory, dirnames, filenames in os.walk(self._root, onerror=fail):
            relative_dir = os.path.relpath(directory, self._root)
            prefix = "" if relative_dir == "." else relative_dir.replace(os.sep, "/") + "/"
            for name in sorted(dirnames):
                if os.path.islink(os.path.join(directory, name)):
                    yield ListedEntry(
                        path=prefix + name,
                        size_bytes=-1,
                        refusal="symbolic link to a directory: not followed (register its target instead)",
                    )
            for name in sorted(filenames):
                full = os.path.join(directory, name)
                try:
                    info = os.stat(full)
                except OSError:
                    yield ListedEntry(path=prefix + name, size_bytes=-1)
                    continue
                if stat.S_ISREG(info.st_mode):
                    yield ListedEntry(path=prefix + name, size_bytes=info.st_size)
                else:
                    yield ListedEntry(path=prefix + name, size_bytes=-1, refusal="not a regular file")


def _has_link_parent(root: Path, path: str) -> bool:
    current = root
    for segment in path.split("/")[:-1]:
        current = current / segment
        if current.is_symlink():
            return True
    return False
