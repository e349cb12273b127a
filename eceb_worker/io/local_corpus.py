"""A corpus in a local directory (:class:`~eceb_worker.corpus.storage.CorpusStorage`)."""

from __future__ import annotations

import errno
import os
import stat
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import blake3

from eceb_worker.core.digests import HashedBytes
from eceb_worker.corpus.storage import ByteSink, ListedEntry, ReadObserver
from eceb_worker.errors import (
    ArtifactMissing,
    ArtifactOutsideCorpus,
    ArtifactReadError,
    ArtifactUnreadable,
    StorageError,
)
from eceb_worker.io.file_hashes import LARGE_FILE_BYTES, READ_CHUNK_BYTES, hash_again, hash_open_file

if TYPE_CHECKING:
    from eceb_worker.corpus.verification import HashResult, Registered

__all__ = ["LARGE_FILE_BYTES", "READ_CHUNK_BYTES", "LocalStorage"]

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

    def hash_artifact(self, path: str, sink: ByteSink | None = None) -> HashedBytes:
        """BLAKE3-256 of the file at ``root/path``: ``(size_bytes, hex digest)``.

        Small files are read whole; large ones read in chunks, each hashed
        with BLAKE3's multithreading while the next is read; the bytes fed
        to ``sink`` when given. Raises ``ArtifactMissing``,
        ``ArtifactOutsideCorpus`` or ``ArtifactUnreadable``.
        """
        fd = self._open_inside(path)
        try:
            return hash_open_file(fd, path, sink)
        finally:
            os.close(fd)

    def read_artifact(self, path: str) -> bytes:
        """The complete bytes of the file at ``root/path`` (a restricted
        artifact the disclosure check compares answers with). Raises what
        :meth:`hash_artifact` raises."""
        fd = self._open_inside(path)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ArtifactUnreadable(path, "not a regular file")
            chunks = []
            while chunk := os.read(fd, READ_CHUNK_BYTES):
                chunks.append(chunk)
            return b"".join(chunks)
        except OSError as exc:
            raise ArtifactUnreadable(path, exc.strerror or str(exc)) from None
        finally:
            os.close(fd)

    def _open_inside(self, path: str) -> int:
        """An open fd on ``root/path``, checked to resolve inside the corpus.
        Raises ``ArtifactMissing``, ``ArtifactOutsideCorpus`` or ``ArtifactUnreadable``."""
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
        if not self._inside(fd, full):
            os.close(fd)
            raise ArtifactOutsideCorpus(path, "a symbolic link leads outside the corpus directory")
        return fd

    def hash_artifacts(
        self, paths: Sequence[str], observer: ReadObserver | None = None
    ) -> list[HashedBytes | ArtifactReadError]:
        """:meth:`hash_artifact` for many paths, with failures returned, not
        raised, each read watched by ``observer`` (positions those of ``paths``).

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
            return [self._hash_or_error(path, _sink(observer, i)) for i, path in enumerate(paths)]
        results: list[HashedBytes | ArtifactReadError] = []
        directories: dict[str, int] = {}  # relative directory -> open fd, or -1 to take the one-path route
        try:
            for position, path in enumerate(paths):
                directory, _, name = path.rpartition("/")
                dir_fd = self._directory(directories, directory)
                if dir_fd < 0:
                    results.append(self._hash_or_error(path, _sink(observer, position)))
                    continue
                try:
                    fd = os.open(name, _BATCH_FILE_FLAGS, dir_fd=dir_fd)
                except OSError:
                    results.append(self._hash_or_error(path, _sink(observer, position)))
                    continue
                try:
                    results.append(hash_open_file(fd, path, _sink(observer, position)))
                except ArtifactReadError as exc:
                    results.append(exc)
                finally:
                    os.close(fd)
        finally:
            for dir_fd in directories.values():
                _close_directory(dir_fd)
        return results

    def check_artifacts(  # noqa: PLR0912 - each way a file can fail to read as registered (missing, link, not regular, changed while read)
        self, artifacts: Sequence[Registered], observer: ReadObserver | None = None
    ) -> tuple[int, list[tuple[int, HashResult]]]:
        """Re-hash registered artifacts, comparing as it reads (see
        :class:`~eceb_worker.corpus.verification.ComparingStorage`): returns
        the bytes hashed of those whose digest matches, and ``(position,
        result)`` for every other one, its result what :meth:`hash_artifacts`
        would give (same class, same detail).

        The loop :meth:`hash_artifacts` runs, leaner for a registered size
        under ``LARGE_FILE_BYTES``: the file opened as there, then one
        ``pread`` of the registered size plus one byte, no ``fstat``. Getting
        exactly the registered size (more than none) with the registered
        digest is a match: a regular file read to its end (a FIFO, a socket
        or a terminal refuses ``pread``, a directory cannot be read, and a
        device gives none or more than asked). Anything else is read again
        from the start on the same open file as :meth:`hash_artifacts` reads
        it, which decides and words the result.
        """
        if not self._batch_opens:
            return _compared(artifacts, self.hash_artifacts([a.path for a in artifacts]))
        hashed = 0
        odd: list[tuple[int, HashResult]] = []
        directories: dict[str, int] = {}  # relative directory -> open fd, or -1 to take the one-path route
        last: str | None = None
        dir_fd = -1
        open_file, pread, close, blake = os.open, os.pread, os.close, blake3.blake3  # the loop's names, bound once
        flags, large = _BATCH_FILE_FLAGS, LARGE_FILE_BYTES
        try:
            expected = _digest_bytes(artifacts)
            for index, artifact in enumerate(artifacts):
                directory, _, name = artifact.path.rpartition("/")
                if directory != last:
                    last, dir_fd = directory, self._directory(directories, directory)
                try:
                    fd = open_file(name, flags, dir_fd=dir_fd) if dir_fd >= 0 else -1
                except OSError:
                    fd = -1
                result: HashResult
                if fd < 0:
                    result = self._hash_or_error(artifact.path, _sink(observer, index))
                else:
                    try:
                        size = artifact.size_bytes
                        if 0 < size < large:
                            try:
                                data = pread(fd, size + 1, 0)
                            except OSError:
                                data = b""
                            at = 32 * index
                            if len(data) == size and blake(data).digest() == expected[at : at + 32]:
                                hashed += size
                                if observer is not None:
                                    _watched(observer, index, data, artifact.source_digest)
                                continue
                        result = hash_again(fd, artifact.path, _sink(observer, index))
                    finally:
                        close(fd)
                if type(result) is tuple and result[1] == artifact.source_digest:
                    hashed += result[0]
                else:
                    odd.append((index, result))
        finally:
            for fd in directories.values():
                _close_directory(fd)
        return hashed, odd

    def _hash_or_error(self, path: str, sink: ByteSink | None = None) -> HashedBytes | ArtifactReadError:
        try:
            return self.hash_artifact(path, sink)
        except ArtifactReadError as exc:
            return exc

    def _directory(self, directories: dict[str, int], directory: str) -> int:
        """:meth:`_open_directory`, once per batch (``directories``: those
        open, the first opened closed first past ``_OPEN_DIRECTORIES``)."""
        found = directories.get(directory)
        if found is None:
            found = directories[directory] = self._open_directory(directory)
            if len(directories) > _OPEN_DIRECTORIES:
                _close_directory(directories.pop(next(iter(directories))))
        return found

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
        """Every regular file under ``root`` (symbolic links to files included),
        with its size, mtime, ctime and inode (of the file a link leads to).

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
                    yield ListedEntry(
                        path=prefix + name,
                        size_bytes=info.st_size,
                        mtime_ns=info.st_mtime_ns,
                        ctime_ns=info.st_ctime_ns,
                        inode=info.st_ino,
                    )
                else:
                    yield ListedEntry(path=prefix + name, size_bytes=-1, refusal="not a regular file")


def _sink(observer: ReadObserver | None, position: int) -> ByteSink | None:
    """``observer``'s sink for a read of the artifact at ``position``, if any."""
    return None if observer is None else observer.reading(position)


def _watched(observer: ReadObserver, position: int, data: bytes, digest: str) -> None:
    """Show ``observer`` a whole read of ``data``, whose digest is ``digest``."""
    sink = observer.reading(position)
    if sink is not None:
        sink.feed(data)
        sink.end(digest)


def _digest_bytes(artifacts: Sequence[Registered]) -> bytes:
    """The registered digests, 32 bytes each, in order; ``b""`` unless every
    one is 64 lowercase hexadecimal digits (then no digest matches as bytes,
    and each file goes the way that compares its digest as text)."""
    text = "".join([a.source_digest for a in artifacts])
    if len(text) != 64 * len(artifacts) or not text.isascii() or text != text.lower():
        return b""
    try:
        digests = bytes.fromhex(text)
    except ValueError:
        return b""
    return digests if len(digests) == 32 * len(artifacts) else b""  # white space skipped: not digits only


def _compared(
    artifacts: Sequence[Registered], results: Sequence[HashResult]
) -> tuple[int, list[tuple[int, HashResult]]]:
    """``results`` (one per artifact) as :meth:`LocalStorage.check_artifacts` returns them."""
    hashed = 0
    odd: list[tuple[int, HashResult]] = []
    for index, (artifact, result) in enumerate(zip(artifacts, results, strict=True)):
        if type(result) is tuple and result[1] == artifact.source_digest:
            hashed += result[0]
        else:
            odd.append((index, result))
    return hashed, odd


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
