"""Corpus registries: reading, validating and writing (ECEB-0.1 §5).

Format (JSON Lines, UTF-8, one JSON object a line)::

    {"artifact_count":2,"corpus_root":"…","schema":"symgliph.eceb/registry-v0.1"}
    {"artifact_id":"…","classification":"…","kind":"…","path":"…","size_bytes":…,"source_digest":"…"}
    …

Line 1 validates against ``schema/registry-header-v0.1.json``, every further
line against ``schema/artifact-v0.1.json``. Written registries list artifacts
in corpus-root order; a reader accepts any order. Blank lines are ignored.

Reading a registry laid out as eceb writes it (header on line 1, then one
object a line, each line starting with ``{`` and ending with ``}``) takes a
fast path that decodes and checks all lines at once; anything else, and any
registry with a problem, is read line by line so that problems name their
lines. Both paths accept exactly the same registries.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator
from typing import IO, Final

import msgspec

from eceb_worker.engine.artifacts import Artifact, RegistryHeader
from eceb_worker.engine.corpus_root import canonical_records, corpus_root_of_sorted
from eceb_worker.engine.paths import path_problems
from eceb_worker.engine.validation import decode_lenient, record_problems
from eceb_worker.engine.vocabulary import REGISTRY_SCHEMA
from eceb_worker.errors import InputError, Problem

__all__ = [
    "PORTABLE_PATH",
    "Registry",
    "artifact_line",
    "build_registry",
    "duplicate_problem",
    "empty_registry_problem",
    "header_line",
    "header_problems",
    "read_registry",
    "registry_lines",
]

_HEADER_DECODER: Final = msgspec.json.Decoder(RegistryHeader)
_ARTIFACT_DECODER: Final = msgspec.json.Decoder(Artifact)
_ENCODER: Final = msgspec.json.Encoder(order="sorted")
# A segment: no separator, control character or surrogate, and not '.' or '..'.
_SEGMENT: Final = r"(?!\.\.?(?:/|\Z))[^/\\\x00-\x1f\x7f-\x9f\ud800-\udfff]+"
# A portable path (see eceb_worker.engine.paths): segments joined by '/', no drive letter.
PORTABLE_PATH: Final = re.compile(rf"(?![A-Za-z]:){_SEGMENT}(?:/{_SEGMENT})*")
"""Matches (``fullmatch``) exactly the portable paths of :func:`~eceb_worker.engine.paths.path_problems`."""


class Registry(msgspec.Struct, frozen=True, kw_only=True):
    """A validated corpus registry.

    Fields:
        header: the registry header; ``header.corpus_root`` is verified.
        artifacts: every artifact, sorted in corpus-root order (by canonical
            record bytes), so index ranges name stable shards.
    """

    header: RegistryHeader
    artifacts: tuple[Artifact, ...]

    @property
    def corpus_root(self) -> str:
        """The corpus root (ECEB-0.1 §5), 64 lowercase hex characters."""
        return self.header.corpus_root


def _path_ok(path: str) -> bool:
    return PORTABLE_PATH.fullmatch(path) is not None


def build_registry(artifacts: Iterable[Artifact]) -> Registry:
    """Sort artifacts into corpus-root order and compute the header.

    Does not validate: callers pass artifacts that are already valid (see
    :func:`read_registry` for untrusted input).
    """
    items = list(artifacts)
    records = canonical_records(items)
    order = sorted(range(len(items)), key=records.__getitem__)
    root = corpus_root_of_sorted(records[i] for i in order)
    header = RegistryHeader(schema=REGISTRY_SCHEMA, artifact_count=len(items), corpus_root=root)
    return Registry(header=header, artifacts=tuple(items[i] for i in order))


def _numbered_lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    for number, line in enumerate(stream, start=1):
        if line.strip():
            yield number, line


def read_registry(stream: IO[bytes], name: str) -> Registry:
    """Read and validate a registry from a binary stream.

    ``name`` is how problems name the file. Checks every line: JSON syntax
    and UTF-8, field types, unknown fields, kind and classification
    vocabularies, digest format, portable paths, duplicate ``artifact_id``
    and duplicate ``path``; then the header's ``artifact_count`` and
    ``corpus_root`` against the lines. Raises :class:`InputError` holding
    every problem found; returns the :class:`Registry` otherwise.

    The whole file is read into memory; :func:`~eceb_worker.engine.registry_scan.scan_registry`
    checks a registry of any size with bounded memory and reports the same problems.
    """
    data = stream.read()
    registry = _read_well_formed(data)
    if registry is not None:
        return registry
    problems: list[Problem] = []
    lines = _numbered_lines(io.BytesIO(data))
    header: RegistryHeader | None = None
    first = next(lines, None)
    if first is None:
        raise InputError([empty_registry_problem(name)])
    header_number, raw = first
    header, found = header_line(raw, header_number, name)
    problems.extend(found)

    artifacts: list[Artifact] = []
    first_line_of_id: dict[str, int] = {}
    first_line_of_path: dict[str, int] = {}
    for number, raw in lines:
        artifact, found = artifact_line(raw, number, name)
        problems.extend(found)
        if artifact is None:
            continue
        seen = first_line_of_id.setdefault(artifact.artifact_id, number)
        if seen != number:
            problems.append(duplicate_problem(name, number, "artifact_id", artifact.artifact_id, seen))
        seen = first_line_of_path.setdefault(artifact.path, number)
        if seen != number:
            problems.append(duplicate_problem(name, number, "path", artifact.path, seen))
        artifacts.append(artifact)

    if problems:
        raise InputError(problems)
    assert header is not None
    registry = build_registry(artifacts)
    problems = header_problems(
        header, registry.header.artifact_count, registry.header.corpus_root, name, line=header_number
    )
    if problems:
        raise InputError(problems)
    return registry


def empty_registry_problem(name: str) -> Problem:
    """The problem of a registry file with no line but blank ones (ECEB-0.1 §5)."""
    return Problem(file=name, message="is empty: a registry starts with its header line")


def header_line(raw: bytes, number: int, name: str) -> tuple[RegistryHeader | None, list[Problem]]:
    """Decode the header line ``raw`` (line ``number`` of registry ``name``).

    Returns the header, or ``None`` and every problem of the line (against
    ``schema/registry-header-v0.1.json``), as :func:`read_registry` reports them.
    """
    try:
        return _HEADER_DECODER.decode(raw), []
    except (msgspec.DecodeError, RecursionError) as exc:
        return None, record_problems(
            raw, "registry-header-v0.1.json", file=name, record=f"line {number} (header)", decode_error=str(exc)
        )


def artifact_line(raw: bytes, number: int, name: str) -> tuple[Artifact | None, list[Problem]]:
    """Decode the artifact line ``raw`` (line ``number`` of registry ``name``, ECEB-0.1 §5).

    Returns the artifact (``None`` when the line does not decode) and every
    problem of the line: schema problems (against ``schema/artifact-v0.1.json``)
    and non-portable path problems, worded and ordered as :func:`read_registry`
    reports them. An artifact whose path is not portable is returned with
    its problems (it still takes part in duplicate detection).
    """
    where = f"line {number}"
    problems: list[Problem] = []
    artifact: Artifact | None
    try:
        artifact = _ARTIFACT_DECODER.decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:
        found = record_problems(raw, "artifact-v0.1.json", file=name, record=where, decode_error=str(exc))
        problems.extend(found)
        artifact = None
        path = _raw_path(raw)
        skip_utf8 = any(p.field == "path" for p in found)
    else:
        path = artifact.path
        skip_utf8 = False
    if path is not None and not _path_ok(path):
        problems.extend(
            Problem(file=name, record=where, field="path", message=f"{path!r} {reason}")
            for reason in path_problems(path)
            if not (skip_utf8 and reason.startswith("is not valid UTF-8"))
        )
    return artifact, problems


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


def _read_well_formed(data: bytes) -> Registry | None:
    """The registry in ``data`` when it is laid out as eceb writes registries
    and has no problem at all; ``None`` otherwise (then :func:`read_registry`
    reads it line by line and reports every problem).

    Layout: the header on line 1; every further line one JSON object that
    starts with ``{`` and ends with ``}`` (no blank line, no space around).
    Then ``decode_lines`` (which would also accept objects spread over lines
    or sharing one) cannot cross a line boundary: a valid artifact is a flat
    object, so a line ending in ``}`` ends an object, a line starting with
    ``{`` starts one, and as many objects as lines means one per line. The
    checks are those of the line-by-line path, done on all lines at once.
    """
    if not data.endswith(b"\n"):
        data += b"\n"
    start = data.find(b"\n") + 1  # the artifact lines, read in place (no copy of a large file)
    try:
        header = _HEADER_DECODER.decode(memoryview(data)[:start])
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    count = data.count(b"\n", start)
    if count and not (
        data.startswith(b"{", start) and data.endswith(b"}\n") and data.count(b"}\n{", start) == count - 1
    ):
        return None
    body = memoryview(data)[start:]
    try:
        artifacts = _ARTIFACT_DECODER.decode_lines(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    paths = [a.path for a in artifacts]
    valid = (
        len(artifacts) == count
        and all(map(PORTABLE_PATH.fullmatch, paths))
        and len(set(paths)) == count
        and len({a.artifact_id for a in artifacts}) == count
    )
    registry = build_registry(artifacts) if valid else None
    return registry if registry is not None and registry.header == header else None


def _raw_path(raw: bytes) -> str | None:
    """The ``path`` string of a record that failed to decode, if it has one."""
    value, _ = decode_lenient(raw)
    path = value.get("path") if isinstance(value, dict) else None
    return path if isinstance(path, str) and path else None


def registry_lines(registry: Registry) -> Iterator[bytes]:
    """The registry's JSON Lines, each with its final ``\\n``: header first."""
    yield _ENCODER.encode(registry.header) + b"\n"
    for artifact in registry.artifacts:
        yield _ENCODER.encode(artifact) + b"\n"
