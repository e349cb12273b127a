"""A corpus in a local directory (:class:`~eceb_worker.corpus.storage.CorpusStorage`)."""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import stat
import sys
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Final

import blake3

from eceb_worker.core.digests import HashedBytes
from eceb_worker.corpus.storage import ListedEntry
from eceb_worker.errors import (
    ArtifactMissing,
    ArtifactOutsideCorpus,
    ArtifactReadError,
    ArtifactUnreadable,
    StorageError,
)

__all__ = ["LARGE_FILE_BYTES", "LocalStorage"]

LARGE_FILE_BYTES: Final = 1024 * 1024
"""From this size on (bytes), a file is read in chunks and hashed on all cores
(BLAKE3's own threading pays only above about 1 MiB)."""

READ_CHUNK_BYTES: Final = 8 * 1024 * 1024
"""Read size for large files: big enough for BLAKE3's threads, small enough for the caches."""

_FILE_FLAGS: Final = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
"""Flags to open a file to hash. O_NONBLOCK: opening a FIFO must not wait for a writer."""

_DIR_FLAGS: Final = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_DIRECTORY", 0)

_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)

_BATCH_FILE_FLAGS: Final = _FILE_FLAGS | _NOFOLLOW

_OPEN_DIRECTORIES: Final = 16
"""Directories a batch keeps open at once (the first opened is closed first)."""

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
            if not self._root.exists():
                raise StorageError(f"{self._given}: no such directory")
            if not self._root.is_dir():
                raise StorageError(f"{self._given}: not a directory")
        except OSError as exc:
            raise StorageError(f"{self._given}: {exc.strerror or exc}") from exc
        self._root_text = str(self._root)
        self._root_prefix = self._root_text.rstrip(os.sep) + os.sep
        self._use_proc = sys.platform.startswith("linux") and _PROC_FD.is_dir()
        self._batch_opens = self._use_proc and bool(_NOFOLLOW) and os.open in os.supports_dir_fd

    @property
    def location(self) -> str:
        """The directory as the user named it."""
        return self._given

    def _resolved(self, fd: int, full: str) -> str:
        """Where the open ``fd`` really is (what ``full`` resolved to when opened)."""
        if self._use_proc:
            try:
                return os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                pass
        return os.path.realpath(full)

    def _inside(self, fd: int, full: str) -> bool:
        return self._resolved(fd, full).startswith(self._root_prefix)

    def hash_artifact(self, path: str) -> HashedBytes:
        """BLAKE3-256 of the file at ``root/path``: ``(size_bytes, hex digest)``.

        Small files are read whole; large ones read in chunks, each hashed
        with BLAKE3's multithreading while the next is read. Raises ``ArtifactMissing``,
        ``ArtifactOutsideCorpus`` or ``ArtifactUnreadable``.
        """
        full = os.path.join(self._root, path)
        try:
            fd = os.open(full, _FILE_FLAGS)
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
            return _hash_open_file(fd, path)
        finally:
            os.close(fd)

    def hash_artifacts(self, paths: Sequence[str]) -> list[HashedBytes | ArtifactReadError]:
        """:meth:`hash_artifact` for many paths, with failures returned, not raised.

        Returns, in the order of ``paths``, ``(size_bytes, hex digest)`` or the
        ``ArtifactReadError`` that :meth:`hash_artifact` would raise (same
        class, same detail).

        Cheaper per file than :meth:`hash_artifact` on Linux: each directory
        is opened once per batch and checked once to resolve inside the
        corpus, then its files are opened relative to it without following a
        final symbolic link, so no file needs its own path resolution check.
        A file that cannot be opened that way (a symbolic link, a missing
        file, a directory outside the corpus, ...) takes the one-path route
        of :meth:`hash_artifact`, which decides and words the failure.
        """
        if not self._batch_opens:
            return [self._hash_or_error(path) for path in paths]
        results: list[HashedBytes | ArtifactReadError] = []
        directories: dict[str, int] = {}  # relative directory -> open fd, or -1 to take the one-path route
        try:
            for path in paths:
                directory, _, name = path.rpartition("/")
                dir_fd = directories.get(directory)
                if dir_fd is None:
                    dir_fd = directories[directory] = self._open_directory(directory)
                    if len(directories) > _OPEN_DIRECTORIES:
                        _close_directory(directories.pop(next(iter(directories))))
                if dir_fd < 0:
                    results.append(self._hash_or_error(path))
                    continue
                try:
                    fd = os.open(name, _BATCH_FILE_FLAGS, dir_fd=dir_fd)
                except OSError:
                    results.append(self._hash_or_error(path))
                    continue
                try:
                    results.append(_hash_open_file(fd, path))
                except ArtifactReadError as exc:
                    results.append(exc)
                finally:
                    os.close(fd)
        finally:
            for dir_fd in directories.values():
                _close_directory(dir_fd)
        return results

    def _hash_or_error(self, path: str) -> HashedBytes | ArtifactReadError:
        try:
            return self.hash_artifact(path)
        except ArtifactReadError as exc:
            return exc

    def _open_directory(self, directory: str) -> int:
        """An fd on ``root/directory`` if it resolves inside the corpus, else -1."""
        full = os.path.join(self._root_text, directory) if directory else self._root_text
        try:
            fd = os.open(full, _DIR_FLAGS)
        except OSError:
            return -1
        resolved = self._resolved(fd, full)
        if resolved == self._root_text or resolved.startswith(self._root_prefix):
            return fd
        os.close(fd)
        return -1

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


def _hash_open_file(fd: int, path: str) -> HashedBytes:
    """BLAKE3-256 of the regular file open on ``fd``: ``(size_bytes, hex digest)``.

    A file of ``LARGE_FILE_BYTES`` or more is read in chunks of
    ``READ_CHUNK_BYTES`` and hashed on all cores, each chunk hashed while the
    next is read (:func:`_hash_large_file`). A smaller one is read with a single ``read`` of its
    size plus one byte (getting exactly its size back means end of file),
    falling back to a read loop when the file changed size since ``fstat``.
    Raises ``ArtifactUnreadable`` (not a regular file, I/O error).
    """
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ArtifactUnreadable(path, "not a regular file")
        size = info.st_size
        if size >= LARGE_FILE_BYTES:
            return _hash_large_file(fd)
        data = os.read(fd, size + 1)
        if len(data) == size:
            return size, blake3.blake3(data).hexdigest()
        hasher = blake3.blake3(data)
        total = len(data)
        while chunk := os.read(fd, max(size - total + 1, 65536)):
            hasher.update(chunk)
            total += len(chunk)
        return total, hasher.hexdigest()
    except OSError as exc:
        raise ArtifactUnreadable(path, exc.strerror or str(exc)) from None


class _ReadAhead(threading.local):
    """A thread's read-ahead: two page-aligned buffers of
    ``READ_CHUNK_BYTES`` (anonymous memory maps; a read into a buffer off a
    page boundary is several times slower) and one reader thread, made on
    first use. A forked child makes its own (threads do not survive a fork)."""

    def __init__(self) -> None:
        self.buffers: tuple[memoryview, memoryview] | None = None
        self.reader: ThreadPoolExecutor | None = None

    def ready(self) -> tuple[tuple[memoryview, memoryview], ThreadPoolExecutor]:
        if self.buffers is None or self.reader is None:
            self.buffers = (memoryview(mmap.mmap(-1, READ_CHUNK_BYTES)), memoryview(mmap.mmap(-1, READ_CHUNK_BYTES)))
            self.reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="eceb-read-ahead")
        return self.buffers, self.reader


_READ_AHEAD = _ReadAhead()


def _forget_read_ahead() -> None:
    global _READ_AHEAD  # noqa: PLW0603 - a forked child starts without the parent's threads
    _READ_AHEAD = _ReadAhead()


os.register_at_fork(after_in_child=_forget_read_ahead)


def _hash_large_file(fd: int) -> HashedBytes:
    """BLAKE3-256 of the file open on ``fd``, from its current offset to its
    end: ``(bytes read, hex digest)``.

    Chunk *i* is hashed (BLAKE3 on all cores, the GIL released) while the
    reader thread reads chunk *i + 1* into the other buffer, so reading and
    hashing overlap. The file is read, never memory-mapped: one truncated
    meanwhile reads short (a size that no longer matches, so ``stale``),
    never SIGBUS. No read is left running when this returns or raises (the
    caller closes ``fd``). Raises ``OSError`` from a read.
    """
    buffers, reader = _READ_AHEAD.ready()
    hasher = blake3.blake3(max_threads=blake3.blake3.AUTO)
    total = 0
    current = 0
    pending: Future[int] | None = reader.submit(os.readv, fd, [buffers[0]])
    try:
        while pending is not None:
            count = pending.result()
            pending = None
            if not count:
                break
            pending = reader.submit(os.readv, fd, [buffers[1 - current]])
            hasher.update(buffers[current][:count])
            total += count
            current = 1 - current
    finally:
        if pending is not None:
            with contextlib.suppress(OSError):
                pending.result()
    return total, hasher.hexdigest()


def _close_directory(fd: int) -> None:
    if fd >= 0:
        os.close(fd)


def _has_link_parent(root: Path, path: str) -> bool:
    current = root
    for segment in path.split("/")[:-1]:
        current = current / segment
        if current.is_symlink():
            return True
    return False
