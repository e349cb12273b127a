"""Decoding JSON documents (benchmarks, runs, reports) with every problem reported.

The fast path decodes straight into the frozen Structs with msgspec. When that
fails, the document is re-read leniently and checked against its published
JSON Schema with the ``jsonschema`` library, which lists every problem; large
arrays (a run's observations) are checked item by item, with the schema
consulted only for the items that fail.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Final, TypeVar

import msgspec
from jsonschema import Draft202012Validator

from eceb_worker.engine.schemas import schema_for
from eceb_worker.engine.validation import decode_lenient, problems_of_value
from eceb_worker.errors import InputError, Problem

__all__ = ["decode_document", "item_problems", "split_location"]

T = TypeVar("T", bound=msgspec.Struct)
_INDEXED: Final = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*\[\d+\])(?:\.(.*))?$")


def split_location(path: str) -> tuple[str, str]:
    """Split a JSON path into (record, field): ``tasks[2].budget_ladder[1]`` ->
    ``("tasks[2]", "budget_ladder[1]")``; a path without a leading indexed
    array is all field."""
    match = _INDEXED.match(path)
    if match:
        return match.group(1), match.group(2) or ""
    return "", path


@functools.cache
def _item_validator(schema_file: str, definition: str) -> Draft202012Validator:
    document = schema_for(schema_file)
    return Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": document["$defs"]})


def item_problems(
    raw: bytes, item_type: type[msgspec.Struct], schema_file: str, *, file: str, record: str, decode_error: str = ""
) -> list[Problem]:
    """Every problem of one array item (its schema is ``$defs/<item_type name>``
    of ``schema/<schema_file>``), located at ``record``."""
    value, error = decode_lenient(raw)
    if error:
        return [Problem(file=file, record=record, message=f"invalid JSON: {error}")]
    validator = _item_validator(schema_file, item_type.__name__)
    found = [
        Problem(file=file, record=record, field=path, message=m) for path, m in problems_of_value(value, validator)
    ]
    if not found:
        try:
            msgspec.convert(value, item_type)
        except msgspec.ValidationError as exc:
            found.append(Problem(file=file, record=record, message=str(exc)))
    if not found:
        found.append(Problem(file=file, record=record, message=decode_error or "rejected by the decoder"))
    return found


def decode_document(
    data: bytes,
    struct: type[T],
    schema_file: str,
    *,
    file: str,
    item_fields: Mapping[str, type[msgspec.Struct]] | None = None,
) -> T:
    """Decode ``data`` as ``struct``, or raise :class:`InputError` with every problem.

    ``schema_file`` names the published schema (``schema/<schema_file>``);
    ``item_fields`` maps top-level array fields to their item Struct (whose
    name is its ``$defs`` entry), to be checked one item at a time.
    """
    try:
        return msgspec.json.decode(data, type=struct)
    except (msgspec.DecodeError, RecursionError) as exc:
        first_error = str(exc) or "nested too deeply"
    value, error = decode_lenient(data)
    if error:
        raise InputError([Problem(file=file, message=f"invalid JSON: {error}")])
    problems: list[Problem] = []
    item_problems: list[Problem] = []
    if isinstance(value, dict) and item_fields:
        value = dict(value)
        for field, item_type in item_fields.items():
            items = value.get(field)
            if not isinstance(items, list):
                continue
            value[field] = []
            validator = _item_validator(schema_file, item_type.__name__)
            for index, item in enumerate(items):
                try:
                    msgspec.convert(item, item_type)
                except (msgspec.ValidationError, RecursionError):
                    for path, message in problems_of_value(item, validator):
                        item_problems.append(
                            Problem(file=file, record=f"{field}[{index}]", field=path, message=message)
                        )
    for path, message in problems_of_value(value, Draft202012Validator(schema_for(schema_file))):
        record, field = split_location(path)
        problems.append(Problem(file=file, record=record, field=field, message=message))
    problems.extend(item_problems)
    if not problems:
        problems.append(Problem(file=file, message=first_error))
    raise InputError(problems)
