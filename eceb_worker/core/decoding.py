"""Decoding records and documents with every problem reported, located by
file, record and field.

The fast path decodes straight into the frozen Structs with msgspec, which
stops at a record's first error. When that fails, the bytes are decoded
again leniently as plain JSON and checked with the ``jsonschema`` library
against the Struct's published schema (:mod:`eceb_worker.core.schemas`),
which lists every problem at once; large arrays (a run's observations) are
checked item by item, with the schema consulted only for the items that fail.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

import msgspec

from eceb_worker.core.identifiers import ID_PATTERN, TRAILING_LINE_BREAK_SCHEMA, identifier_problem, published_pattern
from eceb_worker.core.lenient import ITEM_DEPTH, brief_repr, copy_object, decode_lenient, value_defects
from eceb_worker.core.repeats import repeats_no_key
from eceb_worker.core.schemas import json_schema
from eceb_worker.errors import InputError, Problem

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

__all__ = ["decode_document", "decoded_items", "item_problems", "json_path", "record_problems", "split_location"]

T = TypeVar("T", bound=msgspec.Struct)
_QUOTED: Final = re.compile(r"'([^']*)'")
_INDEXED: Final = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*\[\d+\])(?:\.(.*))?$")
_NESTED_TOO_DEEPLY: Final = "nested too deeply"
_PUBLISHED_ID: Final = published_pattern({"pattern": ID_PATTERN})["pattern"]


@functools.cache
def _validator(struct: type[msgspec.Struct], item: type[msgspec.Struct] | None = None) -> Draft202012Validator:
    """The validator of ``struct``'s schema, or of the ``$defs`` entry of one
    of its ``item`` Structs. Imported on first use: only an invalid input
    needs it, and it costs tens of milliseconds of start-up."""
    from jsonschema import Draft202012Validator

    document = json_schema(struct)
    if item is None:
        return Draft202012Validator(document)
    return Draft202012Validator({"$ref": f"#/$defs/{item.__name__}", "$defs": document["$defs"]})


def json_path(parts: Any) -> str:
    """A JSON path as text: ``tasks[2].budget_ladder[1]``."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _field_of(error: Any) -> str:
    path = json_path(error.absolute_path)
    if error.validator in ("required", "additionalProperties"):
        names = _QUOTED.findall(error.message)
        if names:
            inner = names[0] if error.validator == "required" else ", ".join(names)
            return f"{path}.{inner}" if path else inner
    return path


def _message_of(error: Any) -> str:
    """The message of a schema violation, the offending value shown by :func:`brief_repr`."""
    if error.validator == "anyOf":
        enums = [e for e in error.context or () if e.validator == "enum"]
        if enums:
            return _message_of(enums[0])
    shown = brief_repr(error.instance)
    if error.validator == "not" and error.validator_value == TRAILING_LINE_BREAK_SCHEMA:
        return f"{shown} ends with a line break"
    if error.validator == "pattern" and error.validator_value == _PUBLISHED_ID and isinstance(error.instance, str):
        return f"{shown} {identifier_problem(error.instance) or 'is not an id'}"
    if error.validator == "pattern" and "digest" in json_path(error.absolute_path):
        return f"{shown} is not a BLAKE3-256 digest (64 lowercase hex characters)"
    if error.validator == "enum":
        allowed = ", ".join(map(str, error.validator_value))
        return f"{shown} is not one of: {allowed}"
    return str(error.message).replace(repr(error.instance), shown)


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def problems_of_value(
    value: Any, validator: Draft202012Validator, *, utf8: bool = True, depth: int = 1
) -> list[tuple[str, str]]:
    """Every problem of a value :func:`decode_lenient` read: ``(field path, message)`` pairs.

    What the strict decoders refuse without naming a field comes first
    (:func:`~eceb_worker.core.lenient.value_defects`: strings that are not
    Unicode, repeated keys, nesting deeper than
    :data:`~eceb_worker.core.lenient.MAX_DEPTH`; ``utf8`` and ``depth`` as
    there), then each schema violation, in path order (none at or under a
    container cut out for its depth).
    """
    defects, cut = value_defects(value, utf8=utf8, depth=depth)
    found = [(json_path(path), message) for path, message in defects]
    errors = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    refused = {tuple(e.absolute_path) for e in errors if e.validator == "pattern"}
    errors = [e for e in errors if e.validator != "not" or tuple(e.absolute_path) not in refused]
    found.extend(
        (_field_of(e), _message_of(e)) for e in errors if not any(tuple(e.absolute_path)[: len(c)] == c for c in cut)
    )
    return found


def record_problems(
    raw: bytes, struct: type[msgspec.Struct], *, file: str, record: str, decode_error: str = "", line: int = 0
) -> list[Problem]:
    """Every problem of one JSON record against the schema of ``struct``.

    ``raw`` is the record's bytes; ``decode_error`` what the strict decoder
    said of it; ``line`` the record's line in a JSON Lines file (0: the
    record is the whole file), which locates a syntax error
    (:func:`~eceb_worker.core.lenient.decode_lenient`). Invalid JSON is one problem; otherwise each string that is
    not valid UTF-8 and each schema violation is one problem naming its
    field. When the lenient reading finds nothing wrong although the strict
    decoder refused the record (a lone surrogate escape, ``1.0`` for an
    integer), ``decode_error`` is the problem: a record is never dropped
    silently. Returns ``[]`` only when the record is valid and no
    ``decode_error`` is given.
    """
    value, error = decode_lenient(raw, line=line)
    if error:
        return [Problem(file=file, record=record, message=error)]
    found = [
        Problem(file=file, record=record, field=field, message=message)
        for field, message in problems_of_value(value, _validator(struct), utf8=_is_utf8(raw))
    ]
    if not found and decode_error:
        found.append(Problem(file=file, record=record, message=decode_error))
    return found


def split_location(path: str) -> tuple[str, str]:
    """Split a JSON path into (record, field): ``tasks[2].budget_ladder[1]`` ->
    ``("tasks[2]", "budget_ladder[1]")``; a path without a leading indexed
    array is all field."""
    match = _INDEXED.match(path)
    if match:
        return match.group(1), match.group(2) or ""
    return "", path


def item_problems(
    raw: bytes,
    item_type: type[msgspec.Struct],
    document: type[msgspec.Struct],
    *,
    file: str,
    record: str,
    decode_error: str = "",
) -> list[Problem]:
    """Every problem of one array item of a ``document`` (its schema is the
    ``$defs`` entry of ``item_type`` in the document's schema), located at
    ``record`` (an item of a top-level array: nested 3 levels deep). Never
    empty: an item the schema accepts but the decoder refused is reported
    with the decoder's words."""
    value, error = decode_lenient(raw, depth=ITEM_DEPTH)
    if error:
        return [Problem(file=file, record=record, message=error)]
    validator = _validator(document, item_type)
    found = [
        Problem(file=file, record=record, field=path, message=m)
        for path, m in problems_of_value(value, validator, utf8=_is_utf8(raw), depth=ITEM_DEPTH)
    ]
    if not found:
        try:
            msgspec.convert(value, item_type)
        except msgspec.ValidationError as exc:
            found.append(Problem(file=file, record=record, message=str(exc)))
    if not found:
        found.append(Problem(file=file, record=record, message=decode_error or "rejected by the decoder"))
    return found


def decode_document(  # noqa: C901, PLR0912 - every failure of the one decoder (syntax, depth, surrogates, schema) located in one pass
    data: bytes,
    struct: type[T],
    *,
    file: str,
    item_fields: Mapping[str, type[msgspec.Struct]] | None = None,
) -> T:
    """Decode ``data`` as ``struct``, or raise :class:`InputError` with every problem.

    ``item_fields`` maps top-level array fields to their item Struct (whose
    name is its ``$defs`` entry), to be checked one item at a time. A
    document the strict decoder accepts is read leniently too, for the keys
    it repeats (every one is a problem, as in any record). A document that is
    not JSON is one problem, located (:func:`~eceb_worker.core.lenient.decode_lenient`)
    and saying that its other checks wait until it is.
    """
    try:
        decoded = msgspec.json.decode(data, type=struct)
    except (msgspec.DecodeError, RecursionError) as exc:
        first_error = str(exc) or _NESTED_TOO_DEEPLY
    else:
        if repeats_no_key(data):
            return decoded
        first_error = "rejected by the decoder"
    value, error = decode_lenient(data)
    if error:
        raise InputError([Problem(file=file, message=f"{error} (its other checks wait until it is valid JSON)")])
    utf8 = _is_utf8(data)
    problems: list[Problem] = []
    in_items: list[Problem] = []
    if isinstance(value, dict) and item_fields:
        value = copy_object(value)
        for field, item_type in item_fields.items():
            items = value.get(field)
            if not isinstance(items, list):
                continue
            value[field] = []
            validator = _validator(struct, item_type)
            for index, item in enumerate(items):
                defects, _ = value_defects(item, utf8=utf8, depth=ITEM_DEPTH)
                try:
                    if defects:
                        raise msgspec.ValidationError
                    msgspec.convert(item, item_type)
                except (msgspec.ValidationError, RecursionError):
                    for path, message in problems_of_value(item, validator, utf8=utf8, depth=ITEM_DEPTH):
                        in_items.append(Problem(file=file, record=f"{field}[{index}]", field=path, message=message))
    for path, message in problems_of_value(value, _validator(struct), utf8=utf8):
        record, field = split_location(path)
        problems.append(Problem(file=file, record=record, field=field, message=message))
    problems.extend(in_items)
    if not problems:
        problems.append(Problem(file=file, message=first_error))
    raise InputError(problems)


def decoded_items(items: object, struct: type[T]) -> list[tuple[int, T]]:
    """The items of ``items`` (a list :func:`~eceb_worker.core.lenient.decode_lenient`
    read, or anything else) that decode as ``struct`` on their own, each with
    its position; an item holding a defect of
    :func:`~eceb_worker.core.lenient.value_defects` is left out."""
    if not isinstance(items, list):
        return []
    decoded: list[tuple[int, T]] = []
    for index, item in enumerate(items):
        if value_defects(item, depth=ITEM_DEPTH)[0]:
            continue
        try:
            decoded.append((index, msgspec.convert(item, struct)))
        except (msgspec.ValidationError, RecursionError):
            continue
    return decoded
