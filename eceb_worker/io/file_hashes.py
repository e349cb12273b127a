"""Hashing a file open for reading (ECEB-0.1 §5): a small file in one read,
a large one in chunks, each hashed on all cores while the next is read."""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Final

import blake3

from eceb_worker.core.digests import HashedBytes
from eceb_worker.corpus.storage import ByteSink
from eceb_worker.errors import ArtifactReadError, ArtifactUnreadable

__all__ = ["LARGE_FILE_BYTES", "READ_CHUNK_BYTES", "hash_again", "hash_open_file"]

LARGE_FILE_BYTES: Final = 1024 * 1024
"""From this size on (bytes), a file is read in chunks and hashed on all cores
(BLAKE3's own threading pays only above about 1 MiB)."""

READ_CHUNK_BYTES: Final = 2 * 1024 * 1024
"""Read size for large files (bytes): big enough for BLAKE3's threads, small
enough that each thread's share of a chunk stays in its core's L2 cache
(1 MiB a core on the machines measured; 8 MiB chunks were 15 % slower,
docs/PERFORMANCE.md)."""


def hash_open_file(fd: int, path: str, sink: ByteSink | None = None) -> HashedBytes:
    """BLAKE3-256 of the regular file open on ``fd``: ``(size_bytes, hex digest)``.

    A file of ``LARGE_FILE_BYTES`` or more is read in chunks of
    ``READ_CHUNK_BYTES`` and hashed on all cores, each chunk hashed while the
    next is read (:func:`hash_large_file`). A smaller one is read with a single ``read`` of its
    size plus one byte (getting exactly its size back means end of file),
    falling back to a read loop when the file changed size since ``fstat``.
    Every byte read is fed to ``sink``, ended with the digest, when given.
    Raises ``ArtifactUnreadable`` (not a regular file, I/O error).
    """
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ArtifactUnreadable(path, "not a regular file")
        size = info.st_size
        if size >= LARGE_FILE_BYTES:
            return hash_large_file(fd, sink)
        data = os.read(fd, size + 1)
        if len(data) == size:
            digest = blake3.blake3(data).hexdigest()
            if sink is not None:
                sink.feed(data)
                sink.end(digest)
            return size, digest
        hasher = blake3.blake3(data)
        if sink is not None:
            sink.feed(data)
        total = len(data)
        while chunk := os.read(fd, max(size - total + 1, 65536)):
            hasher.update(chunk)
            if sink is not None:
                sink.feed(chunk)
            total += len(chunk)
        digest = hasher.hexdigest()
        if sink is not None:
            sink.end(digest)
        return total, digest
    except OSError as exc:
        raise ArtifactUnreadable(path, exc.strerror or str(exc)) from None


def hash_again(fd: int, path: str, sink: ByteSink | None = None) -> HashedBytes | ArtifactReadError:
    """What :func:`hash_open_file` finds reading ``fd`` from its start (the
    failure returned, not raised), the bytes fed to ``sink`` when given."""
    with contextlib.suppress(OSError):  # a FIFO cannot seek: hash_open_file refuses it
        os.lseek(fd, 0, os.SEEK_SET)
    try:
        return hash_open_file(fd, path, sink)
    except ArtifactReadError as exc:
        return exc


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


def hash_large_file(fd: int, sink: ByteSink | None = None) -> HashedBytes:
    """BLAKE3-256 of the file open on ``fd``, from its current offset to its
    end: ``(bytes read, hex digest)``.

    Chunk *i* is hashed (BLAKE3 on all cores, the GIL released) while the
    reader thread reads chunk *i + 1* into the other buffer, so reading and
    hashing overlap. The file is read, never memory-mapped: one truncated
    meanwhile reads short (a size that no longer matches, so ``stale``),
    never SIGBUS. No read is left running when this returns or raises (the
    caller closes ``fd``). Each chunk is fed to ``sink`` after it is hashed
    (while the next is read), the digest ended with, when given. Raises
    ``OSError`` from a read.
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
            if sink is not None:
                sink.feed(buffers[current][:count])
            total += count
            current = 1 - current
    finally:
        if pending is not None:
            with contextlib.suppress(OSError):
                pending.result()
    digest = hasher.hexdigest()
    if sink is not None:
        sink.end(digest)
    return total, digest
