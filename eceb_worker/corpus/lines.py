"""The lines of a registry file (ECEB-0.1 §5): cut into blocks of whole
lines, decoded, and every problem of a line worded once (reading a registry
already checked: :mod:`eceb_worker.corpus.checked_lines`).

Format (JSON Lines, UTF-8, one JSON object a line)::

    {"artifact_count":2,"corpus_root":"…","schema":"symgliph.eceb/registry-v0.1"}
    {"artifact_id":"…","classification":"…","kind":"…","path":"…","size_bytes":…,"source_digest":"…"}
    …

Line 1 validates against ``schema/registry-header-v0.1.json``, every further
line against ``schema/artifact-v0.1.json``. Blank lines are ignored. A block
laid out one object a line (as eceb writes registries) is decoded in one
call and checked at once (its digests, its paths); any other block, and
any block with a problem, line by line, so that problems name their lines.
Both ways accept exactly the same lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, islice
from typing import Final, NamedTuple, cast, overload

import msgspec

from eceb_worker.core.canonical import canonical_lines
from eceb_worker.core.decoding import record_problems
from eceb_worker.core.digests import RecordDigest
from eceb_worker.core.identifiers import identifier_problem
from eceb_worker.core.lenient import brief_repr, decode_lenient
from eceb_worker.core.paths import PORTABLE_PATH, path_problems
from eceb_worker.core.repeats import required_strings
from eceb_worker.corpus.artifacts import Artifact, RegistryHeader
from eceb_worker.errors import Problem

__all__ = [
    "Block",
    "artifact_blocks",
    "artifact_line",
    "blocks",
    "decode_block",
    "duplicate_problem",
    "empty_registry_problem",
    "header_line",
    "header_problems",
    "lines_of",
    "plain_artifacts",
]

_HEADER_DECODER: Final = msgspec.json.Decoder(RegistryHeader)
_ARTIFACT_DECODER: Final = msgspec.json.Decoder(Artifact)

_ARTIFACT_QUOTES: Final = 2 * required_strings(Artifact)  # a line naming each key once (core.repeats)
_HEADER_QUOTES: Final = 2 * required_strings(RegistryHeader)


class Block(NamedTuple):
    """Whole lines of a registry file: ``data`` starts at byte ``offset``
    with line number ``number`` (1-based)."""

    offset: int
    number: int
    data: bytes


def blocks(chunks: Iterable[bytes]) -> Iterator[tuple[Block, list[bytes]]]:
    """The file whose bytes come as ``chunks`` (of any sizes), as blocks of
    whole lines, each ending with ``\\n`` except perhaps the last (a file not
    ending with a newline; the last block may be empty), each with its lines
    (:func:`lines_of`). A line longer than a chunk is carried into the next
    block."""
    offset = 0
    number = 1
    carry = b""
    for chunk in chunks:
        if not chunk:
            continue
        data = carry + chunk if carry else chunk
        cut = data.rfind(b"\n") + 1
        if not cut:
            carry = data
            continue
        block, carry = Block(offset, number, data[:cut]), data[cut:]
        lines = lines_of(block)
        yield block, lines
        offset += cut
        number += len(lines)  # the block ends with a newline: one per line
    last = Block(offset, number, carry)
    yield last, lines_of(last)


def lines_of(block: Block) -> list[bytes]:
    """The block's lines without their newlines (none for an empty block)."""
    lines = block.data.split(b"\n")
    if block.data.endswith(b"\n") or not block.data:
        lines.pop()
    return lines


def artifact_blocks(chunks: Iterable[bytes]) -> Iterator[tuple[Block, list[bytes], int]]:
    """Each block of the file with its lines and the position of its first
    artifact line: past the header (the first line that is not blank)."""
    header_seen = False
    for block, lines in blocks(chunks):
        first = 0
        if not header_seen:
            while first < len(lines) and not lines[first].strip():
                first += 1
            if first == len(lines):
                continue
            header_seen = True
            first += 1
        yield block, lines, first


class _Ends(Sequence[int]):
    """Byte offsets just past each of ``count`` consecutive lines (newline
    included) whose lengths add up to ``totals``, the first starting at
    ``start``; the last line has no newline unless ``newline_at_end``."""

    def __init__(self, start: int, totals: list[int], newline_at_end: bool) -> None:
        self._start = start
        self._totals = totals
        self._short = 0 if newline_at_end else 1

    def __len__(self) -> int:
        return len(self._totals)

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[int]: ...

    def __getitem__(self, index: int | slice) -> int | Sequence[int]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self._totals)
        end = self._start + self._totals[index] + index + 1
        return end - self._short if index == len(self._totals) - 1 else end


class Decoded(NamedTuple):
    """The artifact lines of a block that decode: the artifacts, their line
    numbers and the byte offset just past each one's line."""

    artifacts: list[Artifact]
    numbers: Sequence[int]
    ends: Sequence[int]


_NOTHING: Final = Decoded([], (), ())


def decode_block(
    block: Block, lines: list[bytes], first: int, name: str, problems: list[tuple[int, Problem]] | None
) -> Decoded:
    """Decode the artifact lines ``lines[first:]`` of ``block``.

    With ``problems``, every problem of every line is appended there with its
    line number, as :func:`artifact_line` words it; without, a line that does
    not decode is skipped silently. Either way the same artifacts are
    returned (those whose line decodes; see :func:`plain_artifacts` to keep them).
    """
    count = len(lines) - first
    if not count:
        return _NOTHING
    at = sum(len(line) + 1 for line in lines[:first])
    data = block.data
    ends = _Ends(block.offset + at, list(accumulate(map(len, islice(lines, first, None)))), data.endswith(b"\n"))
    artifacts = _decode_laid_out(data, at, count)
    if artifacts is not None:
        number = block.number + first
        return Decoded(artifacts, range(number, number + count), ends)
    decoded: list[Artifact] = []
    numbers: list[int] = []
    kept: list[int] = []
    for position, line in enumerate(islice(lines, first, None)):
        if not line.strip():
            continue
        number = block.number + first + position
        raw = line + b"\n" if position < count - 1 or data.endswith(b"\n") else line
        if problems is None:
            try:
                artifact: Artifact | None = _ARTIFACT_DECODER.decode(raw)
            except (msgspec.DecodeError, RecursionError):
                artifact = None
            if artifact is not None and raw.count(b'"') != _ARTIFACT_QUOTES:
                artifact = None if record_problems(raw, Artifact, file=name, record="") else artifact
        else:
            artifact, found = artifact_line(raw, number, name)
            problems.extend((number, problem) for problem in found)
        if artifact is not None:
            decoded.append(artifact)
            numbers.append(number)
            kept.append(ends[position])
    return Decoded(decoded, numbers, kept)


class _Unpatterned(Artifact, frozen=True, kw_only=True, gc=False, forbid_unknown_fields=True):
    """An artifact line decoded with every check of :class:`Artifact` but
    its digest's pattern (its length only: a regular expression per line
    would cost twice the decoding); :func:`_decode_laid_out` checks the
    block's digests together, then hands out plain artifacts
    (:func:`plain_artifacts`) where they are kept."""

    source_digest: RecordDigest


_LAID_OUT_DECODER: Final = msgspec.json.Decoder(_Unpatterned)
_HEX_DIGITS: Final = b"0123456789abcdef"


def _decode_laid_out(data: bytes, at: int, count: int) -> list[Artifact] | None:
    """The ``count`` artifact lines of ``data`` from byte ``at``, decoded in
    one call, when they are laid out one object a line, naming each key once,
    and all valid; ``None`` otherwise (then they are read line by line).

    Lines exactly as eceb writes them (canonical JSON) are recognised by
    encoding the artifacts again; otherwise, a valid artifact being a flat
    object, ``}\n{`` separates objects and as many objects as lines means
    one a line, and a line naming each key once holds 22 ``"``."""
    if not (data.startswith(b"{", at) and data.endswith(b"}\n" if data.endswith(b"\n") else b"}")):
        return None
    view = memoryview(data)[at:]
    try:
        artifacts = cast(list[Artifact], _LAID_OUT_DECODER.decode_lines(view))  # of a subclass of Artifact
    except (msgspec.DecodeError, RecursionError):
        return None
    laid_out = len(artifacts) == count and (
        canonical_lines(artifacts) == (data[at:] if at else data)  # bytes, not a view: compared at once
        or (data.count(b"}\n{", at) == count - 1 and data.count(b'"', at) == _ARTIFACT_QUOTES * count)
    )
    if (
        laid_out
        # every digest of lowercase hexadecimal digits only, every path portable
        and not "".join([a.source_digest for a in artifacts]).encode().translate(None, _HEX_DIGITS)
        and all(map(PORTABLE_PATH.fullmatch, [a.path for a in artifacts]))
        and "".join([a.artifact_id for a in artifacts]).isprintable()  # no id holds a forbidden character
    ):
        return artifacts
    return None


def plain_artifacts(artifacts: Sequence[Artifact]) -> list[Artifact]:
    """``artifacts`` (ECEB-0.1 §5) as plain :class:`Artifact` instances, in
    order (those a block decoded in one call are of a subclass of it, equal
    to none)."""
    return [
        a
        if type(a) is Artifact
        else Artifact(
            artifact_id=a.artifact_id,
            path=a.path,
            kind=a.kind,
            classification=a.classification,
            source_digest=a.source_digest,
            size_bytes=a.size_bytes,
        )
        for a in artifacts
    ]


def empty_registry_problem(name: str) -> Problem:
    """The problem of a registry file with no line but blank ones (ECEB-0.1 §5)."""
    return Problem(file=name, message="is empty: a registry starts with its header line")


def header_line(raw: bytes, number: int, name: str) -> tuple[RegistryHeader | None, list[Problem]]:
    """Decode the header line ``raw`` (line ``number`` of registry ``name``).

    Returns the header, or ``None`` and every problem of the line (against
    ``schema/registry-header-v0.1.json``).
    """
    try:
        header = _HEADER_DECODER.decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:
        return None, record_problems(
            raw, RegistryHeader, file=name, record=f"line {number} (header)", decode_error=str(exc), line=number
        )
    if raw.count(b'"') != _HEADER_QUOTES:
        found = record_problems(raw, RegistryHeader, file=name, record=f"line {number} (header)", line=number)
        if found:
            return None, found
    return header, []


def artifact_line(raw: bytes, number: int, name: str) -> tuple[Artifact | None, list[Problem]]:
    """Decode the artifact line ``raw`` (line ``number`` of registry ``name``, ECEB-0.1 §5).

    Returns the artifact (``None`` when the line does not decode) and every
    problem of the line: schema problems (against ``schema/artifact-v0.1.json``)
    and non-portable path problems. An artifact whose path is not portable
    is returned with its problems (it still takes part in duplicate detection).
    """
    where = f"line {number}"
    problems: list[Problem] = []
    artifact: Artifact | None
    try:
        artifact = _ARTIFACT_DECODER.decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:
        found = record_problems(raw, Artifact, file=name, record=where, decode_error=str(exc), line=number)
        problems.extend(found)
        artifact = None
        path = _raw_path(raw)
        skip_utf8 = any(p.field == "path" for p in found)
    else:
        path = artifact.path
        skip_utf8 = False
        if raw.count(b'"') != _ARTIFACT_QUOTES:
            found = record_problems(raw, Artifact, file=name, record=where, line=number)
            if found:
                problems.extend(found)
                artifact = None
    if artifact is not None and (refused := identifier_problem(artifact.artifact_id)):
        problems.append(
            Problem(
                file=name, record=where, field="artifact_id", message=f"{brief_repr(artifact.artifact_id)} {refused}"
            )
        )
    if path is not None and PORTABLE_PATH.fullmatch(path) is None:
        problems.extend(
            Problem(file=name, record=where, field="path", message=f"{path!r} {reason}")
            for reason in path_problems(path)
            if not (skip_utf8 and reason.startswith("is not valid UTF-8"))
        )
    return artifact, problems


def _raw_path(raw: bytes) -> str | None:
    """The ``path`` string of a record that failed to decode, if it has one."""
    value, _ = decode_lenient(raw)
    path = value.get("path") if isinstance(value, dict) else None
    return path if isinstance(path, str) and path else None


def duplicate_problem(name: str, number: int, field: str, value: str, first: int) -> Problem:
    """The problem of line ``number`` repeating the ``field`` (``artifact_id``
    or ``path``) ``value`` first listed on line ``first``."""
    return Problem(
        file=name,
        record=f"line {number}",
        field=field,
        message=f"duplicate {field} {value!r} (first on line {first})",
    )


def header_problems(
    header: RegistryHeader, artifact_count: int, corpus_root: str, name: str, *, line: int = 1
) -> list[Problem]:
    """Problems of a header (on line ``line``) whose ``artifact_count`` or
    ``corpus_root`` differs from those of the lines (``artifact_count``
    artifacts whose recomputed corpus root, ECEB-0.1 §5, is ``corpus_root``)."""
    problems: list[Problem] = []
    if header.artifact_count != artifact_count:
        problems.append(
            Problem(
                file=name,
                record=f"line {line} (header)",
                field="artifact_count",
                message=f"declares {header.artifact_count} artifacts but the file lists {artifact_count}",
            )
        )
    if header.corpus_root != corpus_root:
        problems.append(
            Problem(
                file=name,
                record=f"line {line} (header)",
                field="corpus_root",
                message=f"declares {header.corpus_root} but the listed artifacts give {corpus_root}",
            )
        )
    return problems
