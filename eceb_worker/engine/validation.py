"""Collect every schema problem of one record, for error reports.

Decoding with msgspec is fast but stops at a record's first error. When a
record fails to decode, it is decoded again as plain JSON and checked with
the ``jsonschema`` library against the published schema, which lists every
problem of the record at once.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from eceb_worker.engine.schemas import schema_for
from eceb_worker.errors import Problem

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

__all__ = ["decode_lenient", "problems_of_value", "record_problems"]

_QUOTED = re.compile(r"'([^']*)'")


@functools.cache
def _validator(schema_file: str) -> Draft202012Validator:
    # Imported on first use: only an invalid input needs it, and it costs
    # tens of milliseconds of start-up.
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema_for(schema_file))


def _json_path(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _field_of(error: Any) -> str:
    path = _json_path(error.absolute_path)
    if error.validator in ("required", "additionalProperties"):
        names = _QUOTED.findall(error.message)
        if names:
            inner = names[0] if error.validator == "required" else ", ".join(names)
            return f"{path}.{inner}" if path else inner
    return path


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    counts = Counter(k for k, _ in pairs)
    duplicates = sorted(k for k, n in counts.items() if n > 1)
    if duplicates:
        raise ValueError(f"duplicate keys {', '.join(map(repr, duplicates))}")
    return dict(pairs)


def decode_lenient(raw: bytes) -> tuple[Any, str]:
    """Decode a JSON record for error reporting: ``(value, error)``.

    Bytes that are not UTF-8 are decoded with ``surrogateescape`` so that the
    field holding them can be named; ``error`` is ``""`` when the record is
    JSON, else why not (``value`` is then ``None``). Rejects NaN, Infinity and
    duplicate keys.
    """
    text = raw.decode("utf-8", "surrogateescape")
    try:
        return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys), ""
    except ValueError as exc:
        return None, str(exc)
    except RecursionError:
        return None, "nested too deeply"


def _invalid_utf8_fields(value: Any, path: str = "") -> list[str]:
    if isinstance(value, str):
        return [path] if any("\udc80" <= c <= "\udcff" for c in value) else []
    if isinstance(value, dict):
        return [f for k, v in value.items() for f in _invalid_utf8_fields(v, f"{path}.{k}" if path else k)]
    if isinstance(value, list):
        return [f for i, v in enumerate(value) for f in _invalid_utf8_fields(v, f"{path}[{i}]")]
    return []


def problems_of_value(value: Any, validator: Draft202012Validator) -> list[tuple[str, str]]:
    """Every problem of a decoded JSON value: ``(field path, message)`` pairs.

    Strings holding bytes that were not UTF-8 (decoded by :func:`decode_lenient`)
    are reported first, then each schema violation, in path order.
    """
    found = [(field, "is not valid UTF-8") for field in _invalid_utf8_fields(value)]
    errors = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    found.extend((_field_of(e), _message_of(e)) for e in errors)
    return found


def record_problems(raw: bytes, schema_file: str, *, file: str, record: str, decode_error: str = "") -> list[Problem]:
    """Every problem of one JSON record against ``schema/<schema_file>``.

    ``raw`` is the record's bytes; ``decode_error`` what the strict decoder
    said of it. Invalid JSON is one problem; otherwise each string that is
    not valid UTF-8 and each schema violation is one problem naming its
    field. When the lenient reading finds nothing wrong although the strict
    decoder refused the record (a lone surrogate escape, ``1.0`` for an
    integer), ``decode_error`` is the problem: a record is never dropped
    silently. Returns ``[]`` only when the record is valid and no
    ``decode_error`` is given.
    """
    value, error = decode_lenient(raw)
    if error:
        return [Problem(file=file, record=record, message=f"invalid JSON: {error}")]
    found = [
        Problem(file=file, record=record, field=field, message=message)
        for field, message in problems_of_value(value, _validator(schema_file))
    ]
    if not found and decode_error:
        found.append(Problem(file=file, record=record, message=decode_error))
    return found


def _message_of(error: Any) -> str:
    if error.validator == "anyOf":
        enums = [e for e in error.context or () if e.validator == "enum"]
        if enums:
            return _message_of(enums[0])
    if error.validator == "pattern" and "digest" in _json_path(error.absolute_path):
        return f"{error.instance!r} is not a BLAKE3-256 digest (64 lowercase hex characters)"
    if error.validator == "enum":
        allowed = ", ".join(map(str, error.validator_value))
        return f"{error.instance!r} is not one of: {allowed}"
    return str(error.message)
