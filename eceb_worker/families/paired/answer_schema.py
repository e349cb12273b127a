"""Whether an answer schema meets the provider's strict structured-output
rules, checked before it is frozen (task-context-benchmark-reference.md,
"Paid experiment preflight conditions": the answer schema is frozen; Codex
passes ``--output-schema`` to a provider that rejects a schema that is not
strict, and a rejected schema would be found only once executions are paid).

:func:`usable_schema_problems` first checks that the file is a JSON Schema
the provider and the runner can use at all: JSON without repeated keys, at
most :data:`~eceb_worker.core.lenient.MAX_DEPTH` levels deep, valid against
the JSON Schema 2020-12 metaschema, every ``$ref`` a local JSON pointer
that resolves in the document (a remote one could not be fetched, and one
that resolves nowhere would fail only when an answer is checked).

The rule: every object schema (one whose ``type`` is or includes
``"object"``, or that has ``properties``) sets ``additionalProperties`` to
``false`` and lists every one of its ``properties`` in ``required``, no more.
Every sub-schema is checked, wherever it sits (``properties``, ``items``,
``anyOf``, ``$defs``, ...). The walk is iterative: any nesting depth is read
without recursion.
"""

from __future__ import annotations

from typing import Any, Final

from eceb_worker.core.lenient import decode_lenient, value_defects
from eceb_worker.errors import Problem

__all__ = ["strict_schema_problems", "usable_schema_problems"]


def _pointer(parts: tuple[str, ...]) -> str:
    """RFC 6901 JSON pointer of ``parts`` (``""`` for the document)."""
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts)


def _is_object_schema(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    return "object" in kinds or "properties" in schema


def _object_problems(schema: dict[str, Any], file: str, where: str) -> list[Problem]:
    record = where or "/"
    messages: list[tuple[str, str]] = []
    if schema.get("additionalProperties") is not False:
        messages.append(("additionalProperties", "must be false"))
    properties = schema.get("properties", {})
    names = set(properties) if isinstance(properties, dict) else set()
    required = schema.get("required", [])
    listed = {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()
    if missing := sorted(names - listed):
        messages.append(("required", f"must list {', '.join(missing)}"))
    if extra := sorted(listed - names):
        messages.append(("required", f"names no property {', '.join(extra)}"))
    return [Problem(file=file, record=record, field=field, message=message) for field, message in messages]


_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples", "required"})
"""Keywords whose value is data, not a schema: never walked."""
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
"""Keywords whose value maps names to schemas (a name is not a keyword)."""


def strict_schema_problems(schema: Any, file: str) -> list[Problem]:
    """Every way ``schema`` (a decoded JSON Schema) breaks the strict rule
    (see the module), each a :class:`Problem` of ``file`` whose record is the
    JSON pointer of the object schema and whose field is
    ``additionalProperties`` or ``required``; in document order. Empty when
    the schema is strict. A schema that is not a JSON object is one problem."""
    if not isinstance(schema, dict):
        return [Problem(file=file, message="an answer schema must be a JSON object")]
    problems: list[Problem] = []
    # (pointer parts, value, whether value is a map of names to schemas)
    stack: list[tuple[tuple[str, ...], Any, bool]] = [((), schema, False)]
    while stack:
        parts, value, is_map = stack.pop()
        children: list[tuple[tuple[str, ...], Any, bool]] = []
        if isinstance(value, dict) and is_map:
            children = [((*parts, str(name)), child, False) for name, child in value.items()]
        elif isinstance(value, dict):
            if _is_object_schema(value):
                problems.extend(_object_problems(value, file, _pointer(parts)))
            children = [
                ((*parts, str(key)), child, key in _SCHEMA_MAPS)
                for key, child in value.items()
                if key not in _DATA_KEYWORDS
            ]
        elif isinstance(value, list):
            children = [((*parts, str(index)), child, False) for index, child in enumerate(value)]
        stack.extend(reversed(children))
    return problems


_NOWHERE: Final = object()
"""What :func:`_resolved` gives for a pointer that names nothing."""


def _resolved(document: Any, pointer: str) -> Any:
    """The value RFC 6901 ``pointer`` (after ``#``) names in ``document``, or :data:`_NOWHERE`."""
    node = document
    for raw in pointer.split("/")[1:] if pointer else []:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _NOWHERE
    return node


def _reference_problems(document: Any, file: str) -> list[Problem]:
    """A problem for each ``$ref`` that is not a local pointer resolving in ``document``."""
    from urllib.parse import unquote

    problems: list[Problem] = []
    stack: list[tuple[Any, tuple[str, ...]]] = [(document, ())]
    while stack:
        node, parts = stack.pop()
        if isinstance(node, dict):
            reference = None if parts and parts[-1] in _SCHEMA_MAPS else node.get("$ref")
            if isinstance(reference, str):
                where = _pointer(parts) or "/"
                if not reference.startswith("#"):
                    problems.append(Problem(file=file, record=where, field="$ref", message="must be local (#/...)"))
                elif (target := _resolved(document, unquote(reference[1:]))) is _NOWHERE:
                    message = f"{reference!r} resolves to nothing in the schema"
                    problems.append(Problem(file=file, record=where, field="$ref", message=message))
                elif not isinstance(target, (dict, bool)):
                    message = f"{reference!r} resolves to a {type(target).__name__}, not a schema"
                    problems.append(Problem(file=file, record=where, field="$ref", message=message))
            for key, child in node.items():
                if key not in _DATA_KEYWORDS:
                    stack.append((child, (*parts, key)))
        elif isinstance(node, list):
            stack.extend((child, (*parts, str(index))) for index, child in enumerate(node))
    return sorted(problems)


def usable_schema_problems(data: bytes, file: str) -> tuple[Any, list[Problem]]:
    """``(schema, problems)`` of an answer schema file's bytes (see the
    module): ``schema`` the decoded document (``None`` when it is not JSON),
    ``problems`` every reason it cannot be used, named by JSON pointer."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    value, error = decode_lenient(data)
    if error:
        return None, [Problem(file=file, message=f"not a JSON document: {error}")]
    defects, _cut = value_defects(value)
    if defects:
        return None, [
            Problem(file=file, record=_pointer(tuple(map(str, path))) or "/", message=message)
            for path, message in defects
        ]
    problems: list[Problem] = []
    try:
        Draft202012Validator.check_schema(value)
    except SchemaError as exc:
        where = _pointer(tuple(map(str, exc.absolute_path))) or "/"
        problems.append(Problem(file=file, record=where, message=f"not a JSON Schema 2020-12: {exc.message}"))
    except Exception as exc:
        # The metaschema check on hostile data (a pattern the regex engine refuses to compile, ...)
        # raises more than SchemaError: a problem of the file, never a crash.
        message = f"cannot be checked as a JSON Schema: {type(exc).__name__}: {str(exc)[:300]}"
        problems.append(Problem(file=file, message=message))
    problems += _reference_problems(value, file)
    return value, problems
