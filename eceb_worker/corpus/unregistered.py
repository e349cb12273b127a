"""Files of a corpus that its registry does not list (ECEB-0.1 §5: a corpus
verified is "exactly the one registered", no file more).

Both sides are compared as streams of sort keys in ascending byte order
(:func:`path_key`): the paths the storage lists and the paths the registry
holds, each put in order by a :class:`~eceb_worker.corpus.sorting.Sorter`
(one that spills to temporary files for a corpus of millions of files), then
merged. Memory does not grow with the corpus: the sorters' runs, and the
first :data:`UNREGISTERED_LISTED` paths found. Only paths are kept, never a
byte of what the files hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final

import msgspec

from eceb_worker.core.paths import printable_path

__all__ = [
    "UNREGISTERED_LISTED",
    "UnregisteredFiles",
    "path_key",
    "registry_paths",
    "unregistered_files",
    "unregistered_keys",
]

UNREGISTERED_LISTED: Final = 1000
"""Unregistered paths a verification report lists (the first, in byte
order); :attr:`UnregisteredFiles.count` counts them all."""


class UnregisteredFiles(msgspec.Struct, frozen=True, kw_only=True):
    """The files (or objects) of a corpus that its registry does not list.

    Fields:
        count: how many there are (every one, however many are listed).
        paths: the first :data:`UNREGISTERED_LISTED` of them, corpus-relative,
            in ascending order of their UTF-8 bytes, made printable (control
            characters and bytes that are not UTF-8 written as escapes).
        fail: whether they fail the verification (``eceb corpus verify``'s
            default; false with ``--unregistered report``).
        excluded: how many listed files were not looked at because the rules
            file given (``--rules``) excludes them; 0 without one. Shown, so
            rules that exclude everything cannot hide a file unseen.
    """

    count: int
    paths: tuple[str, ...]
    fail: bool
    excluded: int = 0

    @property
    def ok(self) -> bool:
        """True unless there are unregistered files and they fail the verification."""
        return not (self.fail and self.count)


def path_key(path: str) -> bytes:
    """The sort key of a corpus-relative path: its UTF-8 bytes (a file name
    that was not UTF-8, decoded with surrogate escapes, gets its own bytes
    back; a lone surrogate that is no escape is kept as such)."""
    try:
        return path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogatepass")


def _shown(key: bytes) -> str:
    """The printable path of a sort key."""
    return printable_path(key.decode("utf-8", "surrogateescape"))


def unregistered_keys(listed: Iterable[bytes], registered: Iterable[bytes]) -> Iterator[bytes]:
    """The keys of ``listed`` that ``registered`` does not hold, both in
    ascending byte order (duplicates allowed; each key given once)."""
    wanted = iter(registered)
    current = next(wanted, None)
    previous: bytes | None = None
    for key in listed:
        if key == previous:
            continue
        previous = key
        while current is not None and current < key:
            current = next(wanted, None)
        if current != key:
            yield key


def unregistered_files(
    listed: Iterable[bytes], registered: Iterable[bytes], *, fail: bool, limit: int = UNREGISTERED_LISTED
) -> UnregisteredFiles:
    """:func:`unregistered_keys` counted, the first ``limit`` kept as printable paths."""
    count = 0
    kept: list[str] = []
    for key in unregistered_keys(listed, registered):
        if count < limit:
            kept.append(_shown(key))
        count += 1
    return UnregisteredFiles(count=count, paths=tuple(kept), fail=fail)


class _PathOnly(msgspec.Struct):
    """What :func:`registry_paths` reads of an artifact line."""

    path: str


_LINES: Final = msgspec.json.Decoder(list[_PathOnly])


def registry_paths(chunks: Iterable[bytes], name: str) -> Iterator[str]:
    """The ``path`` of every artifact line of a registry (``chunks``: its
    bytes, in order) that was checked already: the header line and blank
    lines are skipped.

    Raises ValueError naming ``name`` when a line does not decode (the file
    changed since it was checked).
    """
    rest = b""
    first = True
    for chunk in chunks:
        data = rest + chunk
        cut = data.rfind(b"\n") + 1
        if not cut:
            rest = data
            continue
        lines, rest = data[:cut].split(b"\n")[:-1], data[cut:]
        if first:
            lines, first = lines[1:], False
        yield from _decoded(lines, name)
    if rest and not first:
        yield from _decoded([rest], name)


def _decoded(lines: list[bytes], name: str) -> Iterator[str]:
    kept = [line for line in lines if line.strip()]
    if not kept:
        return
    try:
        artifacts = _LINES.decode(b"[" + b",".join(kept) + b"]")
    except msgspec.DecodeError:
        raise ValueError(f"{name}: changed while it was being verified") from None
    for artifact in artifacts:
        yield artifact.path
