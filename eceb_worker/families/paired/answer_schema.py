"""Whether an answer schema meets the provider's strict structured-output
rules, checked before it is frozen (task-context-benchmark-reference.md,
"Paid experiment preflight conditions": the answer schema is frozen; Codex
passes ``--output-schema`` to a provider that rejects a schema that is not
strict, and a rejected schema would be found only once executions are paid).

The rule: every object schema (one whose ``type`` is or includes
``"object"``, or that has ``properties``) sets ``additionalProperties`` to
``false`` and lists every one of its ``properties`` in ``required``, no more.
Every sub-schema is checked, wherever it sits (``properties``, ``items``,
``anyOf``, ``$defs``, ...). The walk is iterative: any nesting depth is read
without recursion.
"""

from __future__ import annotations

from typing import Any

from eceb_worker.errors import Problem

__all__ = ["strict_schema_problems"]


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
