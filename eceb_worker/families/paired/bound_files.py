"""One check of the files a record binds by content
(task-context-benchmark-reference.md, "Paired inputs and retained
outputs": the summary "validates frozen inputs, digests"; "Paid experiment
preflight conditions": nothing runs on a changed input).

A record (the freeze, a pair's ``manifest.json``, an attempt's
``attempt-start.json`` or ``attempt.json``) binds files as
:class:`~eceb_worker.families.paired.records.FileDigest` (path, BLAKE3,
size). :func:`bound_file_problems` says, given what was read of them
(:class:`Seen`), which are missing, which changed and, when the record must
bind given names, which it does not bind, each a
:class:`~eceb_worker.errors.Problem` worded by the caller's
:class:`Wording` (:class:`SinceBound`, :class:`SincePrepared`,
:class:`SinceFrozen`, :class:`SinceFrozenExecutable`): each command keeps
its own words. The reading is the
caller's (:func:`eceb_worker.pipeline.paired.experiment.check_bound_files`). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from eceb_worker.core.digests import digest_bytes
from eceb_worker.errors import Problem
from eceb_worker.families.paired.records import FileDigest

__all__ = [
    "BoundFile",
    "Seen",
    "SinceBound",
    "SinceFrozen",
    "SinceFrozenExecutable",
    "SincePrepared",
    "Wording",
    "bound_file_problems",
    "seen_bytes",
]


@dataclass(frozen=True, kw_only=True)
class BoundFile:
    """One file a record binds: ``file`` as the record binds it (path,
    BLAKE3, size); ``location``, the file as it is read and named in
    problems (a path, or a name relative to the directory the problems are
    read in); ``record``, where the binding record lists it (e.g.
    ``files[0]``, ``""`` when not said)."""

    file: FileDigest
    location: str
    record: str = ""


@dataclass(frozen=True, kw_only=True)
class Seen:
    """What was read of a bound file: the BLAKE3 (64 hex) of its bytes and
    their ``size`` (bytes; ``None`` when not known: then only the digest is
    compared)."""

    blake3: str
    size: int | None = None


def seen_bytes(data: bytes) -> Seen:
    """What ``data`` (a bound file's bytes) is: its BLAKE3 and size."""
    return Seen(blake3=digest_bytes(data), size=len(data))


class Wording(Protocol):
    """How one command words the problems of the files a record binds."""

    def missing(self, bound: BoundFile, why: Sequence[Problem]) -> list[Problem]:
        """The problems of ``bound`` not read (``why``: the reading's problems, may be empty)."""
        ...

    def changed(self, bound: BoundFile, now: Seen) -> list[Problem]:
        """The problems of ``bound`` read as ``now``, not what the record binds."""
        ...

    def unbound(self, name: str) -> list[Problem]:
        """The problems of the required file ``name`` the record does not bind."""
        ...


@dataclass(frozen=True)
class SinceBound:
    """``<location>: missing, though <binder> binds it`` (nothing when
    ``name_missing`` is false: the caller names missing files itself),
    ``<location>: changed since <binder> bound it`` and ``<name>: <binder>
    does not bind it``; ``binder`` is the binding record's name
    (``manifest.json``, ``attempt.json``, ``attempt-start.json``)."""

    binder: str
    name_missing: bool = True

    def missing(self, bound: BoundFile, why: Sequence[Problem]) -> list[Problem]:
        """See :class:`Wording`."""
        if not self.name_missing:
            return []
        return [Problem(file=bound.location, message=f"missing, though {self.binder} binds it")]

    def changed(self, bound: BoundFile, now: Seen) -> list[Problem]:
        """See :class:`Wording`."""
        return [Problem(file=bound.location, message=f"changed since {self.binder} bound it")]

    def unbound(self, name: str) -> list[Problem]:
        """See :class:`Wording`."""
        return [Problem(file=name, message=f"{self.binder} does not bind it")]


@dataclass(frozen=True)
class SincePrepared:
    """The words of ``eceb pair run`` checking a pair directory against its
    manifest (``manifest``: the manifest's path): a file not read is a
    problem of the manifest's record and ``path`` field, with the first
    reading problem's message; a changed file is named with both digests
    and sizes."""

    manifest: str

    def missing(self, bound: BoundFile, why: Sequence[Problem]) -> list[Problem]:
        """See :class:`Wording`."""
        message = why[0].message if why else "missing"
        return [Problem(file=self.manifest, record=bound.record, field="path", message=message)]

    def changed(self, bound: BoundFile, now: Seen) -> list[Problem]:
        """See :class:`Wording`."""
        bound_file = bound.file
        message = (
            f"changed since the pair was prepared: BLAKE3 {now.blake3}, {now.size} bytes, "
            f"the manifest ({bound.record}) binds {bound_file.blake3}, {bound_file.size} bytes"
        )
        return [Problem(file=bound.location, message=message)]

    def unbound(self, name: str) -> list[Problem]:
        """See :class:`Wording`."""
        return [Problem(file=self.manifest, field="files", message=f"does not bind {name}")]


@dataclass(frozen=True)
class SinceFrozen:
    """The words of ``eceb pair prepare`` re-checking the frozen files: a
    file not read is named by the reading's own problems; a changed file
    with both digests and sizes and what to do (freeze again)."""

    def missing(self, bound: BoundFile, why: Sequence[Problem]) -> list[Problem]:
        """See :class:`Wording`."""
        return list(why) or [Problem(file=bound.location, message="missing")]

    def changed(self, bound: BoundFile, now: Seen) -> list[Problem]:
        """See :class:`Wording`."""
        frozen = bound.file
        message = (
            f"changed since the freeze: BLAKE3 {now.blake3} ({now.size} bytes), "
            f"frozen {frozen.blake3} ({frozen.size} bytes); freeze again into a new directory"
        )
        return [Problem(file=bound.location, message=message)]

    def unbound(self, name: str) -> list[Problem]:
        """See :class:`Wording`."""
        return [Problem(file=name, message="the freeze does not bind it")]


@dataclass(frozen=True)
class SinceFrozenExecutable(SinceFrozen):
    """The words of ``eceb pair prepare`` re-checking a frozen executable
    (``role``: which one, e.g. ``provider``): a changed one is
    ``<location>: the <role> executable changed since the freeze; freeze
    again into a new directory`` (neither digest nor size named); one not
    read, or not bound, as :class:`SinceFrozen` words it."""

    role: str

    def changed(self, bound: BoundFile, now: Seen) -> list[Problem]:
        """See :class:`Wording`."""
        message = f"the {self.role} executable changed since the freeze; freeze again into a new directory"
        return [Problem(file=bound.location, message=message)]


def _holds(bound: FileDigest, now: Seen) -> bool:
    return now.blake3 == bound.blake3 and (now.size is None or now.size == bound.size)


def bound_file_problems(
    bound: Sequence[BoundFile],
    seen: Mapping[str, Seen],
    wording: Wording,
    *,
    why: Mapping[str, Sequence[Problem]] | None = None,
    required: Sequence[str] | None = None,
) -> list[Problem]:
    """Every file of ``bound`` that is not what its record binds, in order:
    missing (no entry in ``seen``, by location; ``why``: the reading's
    problems by location, when it failed) or changed (another BLAKE3, or
    another size where ``seen`` knows it). With ``required`` (names, in the
    order checked), only those are checked, and one the record does not
    bind (no file of ``bound`` has that location) is a problem too. Each
    problem is ``wording``'s."""
    reasons = why or {}
    checked: Sequence[BoundFile | str] = bound
    if required is not None:
        by_location = {entry.location: entry for entry in bound}
        checked = [by_location.get(name, name) for name in required]
    problems: list[Problem] = []
    for entry in checked:
        if isinstance(entry, str):
            problems += wording.unbound(entry)
            continue
        now = seen.get(entry.location)
        if now is None:
            problems += wording.missing(entry, reasons.get(entry.location, ()))
        elif not _holds(entry.file, now):
            problems += wording.changed(entry, now)
    return problems
