"""Where an input is: a local file or an ``s3://bucket/key`` object, behind
one interface (:class:`Location`), chosen in one place (:meth:`Locator.locate`).

A :class:`Locator` reads every input of one job: it keeps the ETag of each
object it read, and with ``expected`` ETags accepts only those versions (a
job's workers read exactly what its coordinator checked). A missing or
unreadable input is an :class:`~eceb_worker.errors.InputError` naming it;
storage that cannot be used at all is a ``StorageError``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

from eceb_worker.core.urls import object_sibling
from eceb_worker.errors import InputError, Problem
from eceb_worker.io.files import map_input, open_input, read_input

if TYPE_CHECKING:
    import mmap

    from eceb_worker.io.objects import ObjectStore

__all__ = ["CHUNK_BYTES", "Location", "Locator"]

CHUNK_BYTES: Final = 8 * 1024 * 1024
"""Bytes of a streamed input read at a time."""


class Location(Protocol):
    """An input's bytes, however they are stored."""

    @property
    def name(self) -> str:
        """How messages name it: the path or URL as given (no credential)."""
        ...

    def read(self) -> bytes:
        """Every byte of it."""
        ...

    def map(self) -> bytes | mmap.mmap:
        """Every byte of a large input (a run): memory-mapped where it can be."""
        ...

    def chunks(self) -> Iterator[bytes]:
        """Its bytes as a stream of chunks, read as consumed (never held whole),
        from the same version each time it is asked."""
        ...

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)``; an :class:`InputError` when it is shorter or changed."""
        ...

    def sibling(self, relative: str) -> Location:
        """What ``relative`` names beside it (a file's directory, an object's
        key prefix); ValueError when it leads out of the bucket, or out of
        the file's directory through a symbolic link."""
        ...


class _File:
    """A local file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = str(path)

    def _unreadable(self, exc: OSError) -> InputError:
        return InputError([Problem(file=self.name, message=f"cannot read: {exc.strerror or exc}")])

    def read(self) -> bytes:
        return read_input(self.path)

    def map(self) -> bytes | mmap.mmap:
        return map_input(self.path)

    def chunks(self) -> Iterator[bytes]:
        with open_input(self.path) as stream:
            try:
                while chunk := stream.read(CHUNK_BYTES):
                    yield chunk
            except OSError as exc:
                raise self._unreadable(exc) from None

    def read_range(self, start: int, end: int) -> bytes:
        with open_input(self.path) as stream:
            try:
                stream.seek(start)
                data = stream.read(end - start)
            except OSError as exc:
                raise self._unreadable(exc) from None
        if len(data) != end - start:
            raise InputError([Problem(file=self.name, message="changed while the job ran (it is shorter)")])
        return data

    def sibling(self, relative: str) -> Location:
        directory = self.path.parent
        target = directory / relative
        try:
            inside = target.resolve().is_relative_to(directory.resolve())
        except (OSError, RuntimeError) as exc:  # a loop of symbolic links
            raise ValueError(f"{relative!r} cannot be resolved: {exc}") from None
        if not inside:
            raise ValueError(f"{relative!r} leads outside the directory of {self.name} through a symbolic link")
        return _File(target)


class _Object:
    """An object in S3-compatible storage, pinned to the version its
    locator expects, else to the first one it reads."""

    def __init__(self, url: str, locator: Locator) -> None:
        self.name = url
        self._locator = locator

    def _pin(self) -> str | None:
        return self._locator.expected.get(self.name) or self._locator.etags.get(self.name)

    def read(self) -> bytes:
        data, etag = self._locator.store().get(self.name, etag=self._locator.expected.get(self.name))
        self._locator.etags[self.name] = etag
        return data

    def map(self) -> bytes:
        return self.read()

    def chunks(self) -> Iterator[bytes]:
        stream, etag = self._locator.store().open(self.name, etag=self._pin())
        self._locator.etags[self.name] = etag
        with stream:
            while chunk := stream.read(CHUNK_BYTES):
                yield chunk

    def read_range(self, start: int, end: int) -> bytes:
        return self._locator.store().get_range(self.name, start, end, etag=self._pin())

    def sibling(self, relative: str) -> Location:
        return _Object(object_sibling(self.name, relative), self._locator)


class Locator:
    """Finds inputs: local files, or ``s3://bucket/key`` objects read with
    ``endpoint_url``. ``etags`` holds the ETag of every object read; with
    ``expected`` ETags (``url -> ETag``), only those versions are accepted.
    ``make_store`` gives the S3 client when the first object is read (to
    share one between locators); by default a new one.
    """

    def __init__(
        self,
        endpoint_url: str | None = None,
        *,
        expected: Mapping[str, str] | None = None,
        make_store: Callable[[], ObjectStore] | None = None,
    ) -> None:
        self.endpoint_url = endpoint_url
        self.expected = dict(expected or {})
        self.etags: dict[str, str] = {}
        self._make_store = make_store
        self._store: ObjectStore | None = None

    def store(self) -> ObjectStore:
        """The S3 client of this locator's objects (made on first use).
        Raises ``StorageError`` for a malformed endpoint."""
        if self._store is None:
            if self._make_store is not None:
                self._store = self._make_store()
            else:
                from eceb_worker.io.objects import ObjectStore

                self._store = ObjectStore(self.endpoint_url)
        return self._store

    def locate(self, where: str | os.PathLike[str]) -> Location:
        """The input at ``where``: an ``s3://`` URL, else a local path."""
        text = os.fspath(where)
        if text.startswith("s3://"):
            return _Object(text, self)
        return _File(Path(text))
