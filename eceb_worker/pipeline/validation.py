"""``eceb validate``: check one file of any kind eceb reads, every problem
reported, the kind told by the file's own ``schema`` field
(:data:`eceb_worker.documents.FILES`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import msgspec

from eceb_worker.core.decoding import decode_document
from eceb_worker.documents import FILES, VERIFICATION, document_of_schema
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.benchmark import task_root
from eceb_worker.families.eceb.consistency import run_header_problems
from eceb_worker.families.eceb.report import Report
from eceb_worker.io.files import map_input, read_input
from eceb_worker.pipeline.inputs import check_benchmark, check_inputs, check_run_records, load_registry, load_run

__all__ = ["kind_of", "validate_file"]


class _SchemaField(msgspec.Struct):
    """Only a document's ``schema`` field; everything else is skipped unread."""

    schema: str = ""


def kind_of(path: Path) -> str | None:
    """Which kind of file ``path`` is, from its ``schema`` field: of the whole
    JSON document, of the first line of a JSON Lines registry, or of a TOML
    file; ``None`` when it names none. Raises :class:`InputError` when the
    file cannot be read."""
    data = map_input(path)
    candidates: list[str] = []
    for document in (data, bytes(data[: data.find(b"\n") if data.find(b"\n") >= 0 else len(data)])):
        try:
            candidates.append(msgspec.json.decode(document, type=_SchemaField).schema)
            break
        except (msgspec.DecodeError, RecursionError):
            continue
    else:
        with contextlib.suppress(msgspec.DecodeError, RecursionError):
            candidates.append(msgspec.toml.decode(bytes(data), type=_SchemaField).schema)
    found = (document_of_schema(candidate) for candidate in candidates)
    return next((document.kind for document in found if document is not None), None)


def validate_file(path: Path, kind: str | None, benchmark: Path | None = None) -> str:
    """Check ``path``, a file of ``kind`` (:func:`kind_of`); a run also
    against ``benchmark`` when given. Returns what to print of a valid file.

    A benchmark is checked with its registry, and the line names its task
    root and corpus root (a run must name them). Raises :class:`InputError`
    holding every problem.
    """
    if kind == "registry":
        registry = load_registry(path)
        return f"{path}: valid registry: {registry.artifact_count} artifacts, corpus root {registry.corpus_root}"
    if kind == "benchmark":
        checked, registry = check_benchmark(path)
        return (
            f"{path}: valid benchmark: {len(checked.tasks)} tasks, task root {task_root(checked.tasks)}, "
            f"corpus root {registry.corpus_root}"
        )
    if kind == "run" and benchmark is not None:
        inputs = check_inputs(benchmark, path)
        check_run_records(inputs.run, inputs.benchmark)
    elif kind == "run":
        run = load_run(path)
        problems = list(run.unkeyed) + run_header_problems(run.header, None, None, file=str(path))
        if problems:
            raise InputError(problems)
        check_run_records(run)
    elif kind == "report":
        decode_document(read_input(path), Report, file=str(path))
    elif kind == "verification":
        decode_document(read_input(path), VERIFICATION.struct, file=str(path))
    elif kind == "rules":
        from eceb_worker.corpus.rules import parse_rules

        parse_rules(read_input(path), str(path))
    else:
        known = ", ".join(document.schema_id for document in FILES)
        raise InputError([Problem(file=str(path), field="schema", message=f"is none of {known}")])
    return f"{path}: valid {kind}"
