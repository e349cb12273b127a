"""Hostile changes to valid inputs, for the fuzz tests: JSON documents, JSON
Lines registries and TOML rules files changed in their types, nesting,
integers, escapes, keys, identifiers and bytes.

A document is held as a tree whose objects are :class:`Obj` (a list of
key/value pairs, so that a key can be repeated) and whose leaves may be
:class:`Raw` text, written out verbatim (escapes, numbers and nesting that no
Python value renders). :func:`json_text` and :func:`toml_text` write a tree;
the strategies below draw changed trees and bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

__all__ = [
    "ODD_IDS",
    "Obj",
    "Raw",
    "changed_bytes",
    "changed_lines",
    "changed_tree",
    "json_text",
    "plain",
    "toml_text",
    "tree",
]


@dataclass
class Obj:
    """A JSON object or TOML table as written: its pairs in order, keys possibly repeated."""

    pairs: list[tuple[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Raw:
    """Text written as it is in place of a value."""

    text: str


def tree(value: Any) -> Any:
    """The tree of a decoded JSON or TOML value (dicts become :class:`Obj`)."""
    if isinstance(value, dict):
        return Obj([(k, tree(v)) for k, v in value.items()])
    if isinstance(value, list):
        return [tree(v) for v in value]
    return value


def plain(node: Any) -> Any:
    """The value of a tree without :class:`Raw` leaves (the last of repeated keys wins)."""
    if isinstance(node, Obj):
        return {k: plain(v) for k, v in node.pairs}
    if isinstance(node, list):
        return [plain(v) for v in node]
    return node


def _json_value(node: Any, out: list[str]) -> None:
    if isinstance(node, Raw):
        out.append(node.text)
    elif isinstance(node, Obj):
        out.append("{")
        for i, (key, value) in enumerate(node.pairs):
            out.append(("," if i else "") + json.dumps(key, ensure_ascii=False) + ":")
            _json_value(value, out)
        out.append("}")
    elif isinstance(node, list):
        out.append("[")
        for i, value in enumerate(node):
            if i:
                out.append(",")
            _json_value(value, out)
        out.append("]")
    else:
        out.append(json.dumps(node, ensure_ascii=False))


def json_text(node: Any) -> bytes:
    """``node`` as JSON bytes (a lone surrogate in a Python string is written
    as its three bytes: invalid UTF-8)."""
    out: list[str] = []
    _json_value(node, out)
    return "".join(out).encode("utf-8", "surrogatepass")


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _toml_value(node: Any) -> str:
    if isinstance(node, Raw):
        return node.text
    if isinstance(node, Obj):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in node.pairs) + "}"
    if isinstance(node, list):
        return "[" + ", ".join(_toml_value(v) for v in node) + "]"
    if isinstance(node, bool):
        return "true" if node else "false"
    if node is None:
        return "{}"  # TOML has no null: an empty inline table stands in for it
    return json.dumps(node, ensure_ascii=False)


def toml_text(root: Obj) -> bytes:
    """``root`` as a TOML document: its arrays of tables as ``[[name]]``
    sections, every other pair as ``key = value``."""
    head: list[str] = []
    tables: list[str] = []
    for key, value in root.pairs:
        if isinstance(value, list) and value and all(isinstance(v, Obj) for v in value):
            for table in value:
                tables.append(f"[[{_toml_key(key)}]]")
                tables.extend(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in table.pairs)
        else:
            head.append(f"{_toml_key(key)} = {_toml_value(value)}")
    return ("\n".join([*head, *tables]) + "\n").encode("utf-8", "surrogatepass")


ODD_IDS = ["t[1x", "a[²]", "x[0", "q[9/", "[", "]", "/", "²", "a\x00b", "\x00", "a\nb", "\n", "", " ", "a/../b", "\\"]
"""Identifiers with characters that locations, paths and lines give a meaning to."""

_HUGE = [2**53 - 1, 2**53, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, -1, 10**30, 10**400]
_ESCAPES = [
    '"\\ud800"',
    '"\\udfff"',
    '"a\\ud83d"',
    '"\\ud800\\u0041"',
    '"\\udc00\\ud800"',
    '"\\u0000"',
    '"\\x41"',
    '"\\u12"',
    '"\\""',
    '"\\u2028\\ufeff"',
    '"a\\/b"',
]
_GLOBS = ["{a,b}" * 10, "{a,b}" * 3, "{", "}", "[!", "[]]", "**" * 40, "a{b,{c,{d,e}}}", "!x", "\\", "./a", "a//b"]
_NUMBERS = ["1e400", "-0", "1.0", "1e2", "NaN", "Infinity", "0x10", "01", "1" * 5000, "-" + "9" * 400]


def _nested(depth: int, kind: str) -> Raw:
    if kind == "list":
        return Raw("[" * depth + "]" * depth)
    if kind == "object":
        return Raw('{"a":' * depth + "1" + "}" * depth)
    return Raw('[{"a":' * depth + "1" + "}]" * depth)


_DEPTHS = st.sampled_from([2, 10, 100, 449, 450, 500, 999, 1000, 2000, 3000]) | st.integers(1, 3000)

_VALUES = st.one_of(
    st.sampled_from([0, 1, "", "x", True, False, None, [], 1.5, [0], ["x"]]),
    st.builds(Obj),
    st.sampled_from(_HUGE),
    st.sampled_from(ODD_IDS),
    st.sampled_from(_GLOBS),
    st.sampled_from([Raw(text) for text in _ESCAPES + _NUMBERS]),
    st.builds(_nested, _DEPTHS, st.sampled_from(["list", "object", "mixed"])),
    st.text(max_size=8),
    st.text(st.characters(codec="utf-8", categories=["Cc", "Cs", "Zl", "Zp", "Cf", "No"]), max_size=4),
)
"""Values that replace others: other types, huge integers, odd identifiers,
globs, escapes, numbers out of range, nesting thousands of levels deep."""


def _children(node: Any) -> list[Any]:
    if isinstance(node, Obj):
        return [value for _, value in node.pairs]
    return node if isinstance(node, list) else []


def _with_child(node: Any, index: int, child: Any) -> Any:
    """A copy of ``node`` (an :class:`Obj` or a list) with child ``index`` replaced."""
    if isinstance(node, Obj):
        pairs = list(node.pairs)
        pairs[index] = (pairs[index][0], child)
        return Obj(pairs)
    items = list(node)
    items[index] = child
    return items


@st.composite
def _changed_node(draw: st.DrawFn, node: Any) -> Any:
    """``node`` with one change at a node found by a random walk from it;
    nodes are copied on the way down, never changed in place (the trees of
    the valid inputs are shared between examples)."""
    children = _children(node)
    stop = draw(st.integers(0, len(children))) if children else 0
    if stop < len(children):
        return _with_child(node, stop, draw(_changed_node(children[stop])))
    how = draw(st.sampled_from(["replace", "replace", "replace", "drop", "repeat", "rename", "empty", "twice"]))
    if how == "replace" or not children:
        return draw(_VALUES)
    index = draw(st.integers(0, len(children) - 1))
    if isinstance(node, Obj):
        pairs = list(node.pairs)
        key = pairs[index][0]
        if how == "drop":
            del pairs[index]
        elif how == "rename":
            pairs[index] = (
                draw(st.sampled_from([*ODD_IDS, "schema", "task_id", "extra", key.upper()])),
                pairs[index][1],
            )
        else:  # the key repeated with another value
            pairs.insert(draw(st.integers(0, len(pairs))), (key, draw(_VALUES)))
        return Obj(pairs)
    items = list(node)
    if how == "empty":
        return []
    if how == "drop":
        del items[index]
    else:
        items.insert(index, items[index])
    return items


@st.composite
def changed_tree(draw: st.DrawFn, original: Any, changes: int = 3) -> Any:
    """``original`` (not changed itself) with one to ``changes`` changes: a
    value replaced (:data:`_VALUES`); a pair removed, renamed or its key
    repeated with another value; a list emptied, an item removed or repeated."""
    root = original
    for _ in range(draw(st.integers(1, changes))):
        root = draw(_changed_node(root))
    return root


_BOMS = [b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"]


@st.composite
def changed_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` truncated at any byte, behind a byte order mark, with a NUL
    byte or another byte put anywhere, or followed by a second copy."""
    how = draw(st.sampled_from(["truncate", "bom", "nul", "byte", "twice"]))
    at = draw(st.integers(0, len(data)))
    if how == "truncate":
        return data[:at]
    if how == "bom":
        return draw(st.sampled_from(_BOMS)) + data
    if how == "nul":
        return data[:at] + b"\x00" + data[at:]
    if how == "byte":
        return data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
    return data + b"\n" + data


@st.composite
def changed_lines(draw: st.DrawFn, lines: list[Any]) -> bytes:
    """JSON Lines of the trees ``lines`` with one line changed
    (:func:`changed_tree`), removed, repeated or moved, or a blank or
    CRLF-ended line, then perhaps their bytes changed (:func:`changed_bytes`)."""
    rows = [json_text(line) for line in lines]
    how = draw(st.sampled_from(["tree", "tree", "tree", "drop", "repeat", "move", "blank", "crlf"]))
    at = draw(st.integers(0, len(rows) - 1))
    if how == "tree":
        rows[at] = json_text(draw(changed_tree(lines[at])))
    elif how == "drop":
        del rows[at]
    elif how == "repeat":
        rows.insert(at, rows[at])
    elif how == "move":
        rows.insert(draw(st.integers(0, len(rows) - 1)), rows.pop(at))
    elif how == "blank":
        rows.insert(at, b"")
    else:
        rows[at] += b"\r"
    data = b"".join(row + b"\n" for row in rows)
    if draw(st.integers(0, 3)) == 0:
        data = draw(changed_bytes(data))
    return data
