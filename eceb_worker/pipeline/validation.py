"""``eceb validate``: check one file of any kind eceb reads, every problem
reported, the kind told by the file's own ``schema`` field
(:data:`eceb_worker.documents.FILES`).
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from eceb_worker.core.decoding import decode_document
from eceb_worker.core.lenient import decode_lenient
from eceb_worker.documents import FILES, VERIFICATION, named_document
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.benchmark import task_root
from eceb_worker.families.eceb.consistency import run_header_problems
from eceb_worker.families.eceb.declarations import Declarations, SourcesFile
from eceb_worker.families.eceb.publication import PublicationManifest
from eceb_worker.families.eceb.shards import record_problems_of_run
from eceb_worker.io.files import map_input, read_input
from eceb_worker.pipeline.inputs import (
    check_benchmark,
    check_inputs,
    check_run_records,
    load_registry,
    load_rules,
    load_run,
)
from eceb_worker.pipeline.reports import decode_report

__all__ = ["Validation", "kind_of", "validate_file"]


def kind_of(path: Path) -> str:
    """Which kind of file ``path`` is, from its ``schema`` field
    (:func:`~eceb_worker.documents.named_document`). Raises
    :class:`InputError` when the file cannot be read, or names no kind: it
    is empty, it does not parse (``invalid JSON at byte N (line L, column C)``, or the TOML
    reader's words for a ``.toml`` file), or its ``schema`` field names no
    kind eceb knows."""
    mapped = map_input(path)
    found = named_document(mapped)  # the file as mapped: a large one is not copied
    if found is not None:
        return found.kind
    data = bytes(mapped)
    known = ", ".join(document.schema_id for document in FILES)
    if not data.strip():
        message = f"is empty: eceb reads files whose schema is one of {known}"
        raise InputError([Problem(file=str(path), message=message)])
    value, error = decode_lenient(data)
    if error and path.suffix == ".toml":
        try:
            value, error = msgspec.toml.decode(data), ""
        except msgspec.DecodeError as exc:
            error = f"invalid TOML: {exc}"
    if error:
        raise InputError([Problem(file=str(path), message=error)])
    schema = value.get("schema") if isinstance(value, dict) else None
    if schema is None:
        message = f"has no 'schema' field naming its kind: one of {known}"
        raise InputError([Problem(file=str(path), message=message)])
    raise InputError([Problem(file=str(path), field="schema", message=f"{schema!r} is none of {known}")])


class Validation(msgspec.Struct, frozen=True, kw_only=True):
    """What ``eceb validate`` found of a valid file (printed as a line, or
    as JSON with ``--json``).

    Fields: ``file`` (the path given), ``kind`` (a :data:`FILES` kind),
    ``valid`` (always true: an invalid file raises), and for a registry its
    ``artifact_count`` and ``corpus_root``; for a benchmark its
    ``task_count``, ``task_root`` and ``corpus_root``.
    """

    file: str
    kind: str
    valid: bool = True
    artifact_count: int | None = None
    task_count: int | None = None
    task_root: str | None = None
    corpus_root: str | None = None

    def line(self) -> str:
        """The line ``eceb validate`` prints."""
        if self.kind == "registry":
            return f"{self.file}: valid registry: {self.artifact_count} artifacts, corpus root {self.corpus_root}"
        if self.kind == "benchmark":
            return (
                f"{self.file}: valid benchmark: {self.task_count} tasks, task root {self.task_root}, "
                f"corpus root {self.corpus_root}"
            )
        if self.kind == "run-profile":
            return f"{self.file}: valid run-profile (its judge's rubric, when it names one, matches its BLAKE3)"
        return f"{self.file}: valid {self.kind}"


def _validate_publishing(path: Path, kind: str) -> None:
    """Check a publication manifest (read alone, not in its bundle: its
    bound files are checked by ``eceb publish --check``), a sources file or
    a declarations file (ECEB-0.1 §15, §16). Raises :class:`InputError`
    holding every problem."""
    from eceb_worker.pipeline.publication import manifest_problems, sources_problems

    data, file = read_input(path), str(path)
    problems: list[Problem] = []
    if kind == "publication":
        problems = manifest_problems(decode_document(data, PublicationManifest, file=file), file)
    elif kind == "sources":
        problems = sources_problems(decode_document(data, SourcesFile, file=file), file)
    else:
        decode_document(data, Declarations, file=file)
    if problems:
        raise InputError(problems)


def validate_file(path: Path, kind: str, benchmark: Path | None = None) -> Validation:
    """Check ``path``, a file of ``kind`` (:func:`kind_of`); a run also
    against ``benchmark`` when given. A publication manifest, a sources or
    a declarations file is checked alone (its schema, its own consistency). Returns what was found of a valid file.

    A benchmark is checked with its registry, and the result names its task
    root and corpus root (a run must name them). Raises :class:`InputError`
    holding every problem.
    """
    if kind == "registry":
        registry = load_registry(path)
        return Validation(
            file=str(path), kind=kind, artifact_count=registry.artifact_count, corpus_root=registry.corpus_root
        )
    if kind == "benchmark":
        checked, registry = check_benchmark(path)
        return Validation(
            file=str(path),
            kind=kind,
            task_count=len(checked.tasks),
            task_root=task_root(checked.tasks),
            corpus_root=registry.corpus_root,
        )
    if kind == "run" and benchmark is not None:
        inputs = check_inputs(benchmark, path)
        check_run_records(inputs.run, inputs.benchmark)
    elif kind == "run":
        run = load_run(path)
        problems = list(run.unkeyed) + run_header_problems(run.header, None, None, file=str(path))
        problems += record_problems_of_run(run, None)
        if problems:
            raise InputError(problems)
    elif kind == "report":
        decode_report(read_input(path), str(path))
    elif kind == "verification":
        decode_document(read_input(path), VERIFICATION.struct, file=str(path))
    elif kind == "rules":
        load_rules(read_input(path), str(path))
    elif kind in ("publication", "sources", "declarations"):
        _validate_publishing(path, kind)
    elif kind == "run-profile":
        from eceb_worker.pipeline.making.inputs import load_profile

        load_profile(path)
    else:  # pragma: no cover - kind_of names only the kinds above
        raise ValueError(f"no kind {kind!r}")
    return Validation(file=str(path), kind=kind)
