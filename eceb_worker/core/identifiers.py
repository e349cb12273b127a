"""Identifiers: the characters an id may hold, and exact anchoring of the
patterns the wire Structs state.

An id (a task id, an artifact id, a benchmark, run or configuration id) is
free text of at least one character, but holds none of
:data:`FORBIDDEN_CHARACTERS`: control characters (Unicode category Cc: a
terminal would act on ``ESC [ 2K`` or a carriage return), the line and
paragraph separators, and the format characters that reorder or hide text
(bidirectional overrides and isolates, zero-width characters, the byte order
mark). The set is listed here, not read from Python's Unicode database, so
that the published schemas do not change with the Python version.

Patterns end in ``\\Z`` (the very end of the string) in the Structs, since
Python's ``$``, which msgspec and the ``jsonschema`` library use, also
matches before a final line break; the published schemas state them with
``$`` (ECMA-262, which JSON Schema names, has no ``\\Z``) and add
``"not": {"type": "string", "pattern": "\\n$"}``, so that any validator, whichever dialect its
regular expressions follow, refuses a trailing line break
(:func:`published_pattern`).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final

import msgspec

__all__ = [
    "ID_PATTERN",
    "TRAILING_LINE_BREAK_SCHEMA",
    "Identifier",
    "RecordIdentifier",
    "identifier_problem",
    "is_identifier",
    "published_pattern",
]

FORBIDDEN_CHARACTERS: Final = (
    "\\x00-\\x1f\\x7f-\\x9f"  # Cc: C0 controls, DEL, C1 controls
    "\\xad"  # soft hyphen (Cf)
    "\\u061c"  # Arabic letter mark (Cf, bidirectional)
    "\\u180e"  # Mongolian vowel separator (Cf)
    "\\u200b-\\u200f"  # zero-width space, non-joiner, joiner; LRM, RLM (Cf)
    "\\u2028-\\u202e"  # line and paragraph separators (Zl, Zp); bidirectional embeddings and overrides (Cf)
    "\\u2060-\\u206f"  # word joiner, invisible operators, bidirectional isolates, deprecated format characters
    "\\ufeff"  # zero-width no-break space, the byte order mark (Cf)
    "\\ufff9-\\ufffb"  # interlinear annotation characters (Cf)
)
"""The characters no id may hold, as the inside of a regular-expression
character class (the same text in Python's and ECMA-262's syntax)."""

ID_PATTERN: Final = f"^[^{FORBIDDEN_CHARACTERS}]+\\Z"
"""An id: one or more characters, none of :data:`FORBIDDEN_CHARACTERS`."""

ID_DESCRIPTION: Final = "Non-empty text without control, line-separator or invisible format characters."

TRAILING_LINE_BREAK: Final = "\n$"
"""The pattern a published schema forbids (under ``not``) beside each exact pattern."""

TRAILING_LINE_BREAK_SCHEMA: Final = {"type": "string", "pattern": TRAILING_LINE_BREAK}
"""The schema a published schema forbids (under ``not``): a string ending in a line break."""

_FORBIDDEN: Final = re.compile(f"[{FORBIDDEN_CHARACTERS}]")

Identifier = Annotated[str, msgspec.Meta(min_length=1, pattern=ID_PATTERN, description=ID_DESCRIPTION)]
"""An id, checked while decoding (:data:`ID_PATTERN`)."""

RecordIdentifier = Annotated[
    str, msgspec.Meta(min_length=1, extra_json_schema={"pattern": ID_PATTERN}, description=ID_DESCRIPTION)
]
"""An id in a record that occurs millions of times (observations, registry
lines): decoding checks only that it is not empty; the schema states the
full pattern, and the checks call :func:`identifier_problem` on the distinct
values."""


def is_identifier(value: str) -> bool:
    """True when ``value`` is a valid id: not empty, none of :data:`FORBIDDEN_CHARACTERS`."""
    if not value:
        return False
    if value.isprintable():  # the usual case: no forbidden character is printable
        return True
    return _FORBIDDEN.search(value) is None


def identifier_problem(value: str) -> str:
    """Why ``value`` is not a valid id, as a message naming the first
    forbidden character escaped and its position (``'\\x1b' (U+001B) at
    character 2``); ``""`` when it is one. Never repeats the value itself."""
    if not value:
        return "is empty"
    if value.isprintable():
        return ""
    found = _FORBIDDEN.search(value)
    if found is None:
        return ""
    char = found.group()
    count = len(_FORBIDDEN.findall(value))
    more = f" (and {count - 1} more)" if count > 1 else ""
    return (
        f"holds {char!a} (U+{ord(char):04X}) at character {found.start() + 1}{more}: "
        "an id may hold no control, line-separator or invisible format character"
    )


def published_pattern(node: Any) -> Any:
    """``node`` (a JSON Schema, as generated from the Structs) with every
    pattern ending in ``\\Z`` stated as published: ending in ``$``, beside
    ``"not"`` :data:`TRAILING_LINE_BREAK_SCHEMA` (the two together match what the
    Struct's pattern matches, under Python's and ECMA-262's rules alike).
    Returns a new value; ``node`` is not changed."""
    if isinstance(node, list):
        return [published_pattern(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: published_pattern(value) for key, value in node.items()}
    pattern = converted.get("pattern")
    if isinstance(pattern, str) and pattern.endswith("\\Z"):
        converted["pattern"] = pattern[:-2] + "$"
        if "not" in converted:  # pragma: no cover - no Struct states both
            raise ValueError("a schema with both an exact pattern and 'not'")
        converted["not"] = dict(TRAILING_LINE_BREAK_SCHEMA)
    return converted
