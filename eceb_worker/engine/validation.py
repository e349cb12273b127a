"""Collect every schema problem of one record, for error reports.

Decoding with msgspec is fast but stops at a record's first error. When a
record fails to decode, it is decoded again as plain JSON and checked with
the ``jsonschema`` library against the published schema, which lists every
problem of the record at once.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import msgspec
from jsonschema import Draft202012Validator

from eceb_worker.engine.schemas import schema_for
from eceb_worker.errors import Problem

__all__ = ["record_problems"]

_QUOTED = re.compile(r"'([^']*)'")


@functools.cache
def _validator(schema_file: str) -> Draft202012Validator:
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


def record_problems(raw: bytes, schema_file: str, *, file: str, record: str) -> list[Problem]:
    """Every problem of one JSON record against ``schema/<schema_file>``.

    ``raw`` is the record's bytes. Invalid UTF-8 or invalid JSON is one
    problem; otherwise each schema violation is one problem naming its field.
    Returns ``[]`` when the record is valid.
    """
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        return [Problem(file=file, record=record, message=f"invalid JSON: {exc}")]
    errors = sorted(_validator(schema_file).iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
    return [
        Problem(file=file, record=record, field=_field_of(e), message=_message_of(e)) for e in errors
    ]


def _message_of(error: Any) -> str:
    if error.validator == "pattern" and "digest" in _json_path(error.absolute_path):
        return f"{error.instance!r} is not a BLAKE3-256 digest (64 lowercase hex characters)"
    if error.validator == "enum":
        allowed = ", ".join(map(str, error.validator_value))
        return f"{error.instance!r} is not one of: {allowed}"
    return str(error.message)
