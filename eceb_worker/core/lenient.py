"""The lenient reading of JSON for error reporting: every defect the strict
decoders refuse without naming a field, found and located.

:func:`decode_lenient` reads any JSON, however deeply nested (a container
deeper than :data:`MAX_DEPTH` levels is cut out), keeping bytes that are not
UTF-8 and objects that repeat a key; :func:`value_defects` then walks the
value without recursion and names, by JSON path, every string that is not
Unicode (bytes that are not UTF-8, lone surrogate escapes), every repeated
key and every container nested too deeply.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any, Final

__all__ = ["ITEM_DEPTH", "MAX_DEPTH", "Path", "brief_repr", "copy_object", "decode_lenient", "value_defects"]

MAX_DEPTH: Final = 64
"""The deepest nesting of arrays and objects a document may have (the
documents' schemas need fewer than 10 levels)."""
ITEM_DEPTH: Final = 3
"""The ``depth`` of an item of a document's top-level array: document, array, item."""

Path = tuple[str | int, ...]
"""A JSON path: object keys and array indices."""

SHOWN_CHARACTERS: Final = 200
"""The most characters of an input value a message repeats (:func:`brief_repr`)."""

_CUT: Final = "\x00eceb:nested-too-deeply:" + secrets.token_hex(8)
"""What a container nested too deeply is replaced with (no input can hold it)."""
_TOKENS: Final = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_NOT_UTF8: Final = re.compile("[\udc80-\udcff]")
_REPEATED: Final = "duplicate key: the object holds it more than once"


class _Object(dict[str, Any]):
    """A decoded JSON object; ``repeated`` lists the keys it holds more than once."""

    repeated: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    found = _Object(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        repeated: list[str] = []
        for key, _ in pairs:
            if key in seen and key not in repeated:
                repeated.append(key)
            seen.add(key)
        found.repeated = tuple(repeated)
    return found


def copy_object(value: dict[str, Any]) -> dict[str, Any]:
    """A shallow copy of an object :func:`decode_lenient` read, keys it repeats included."""
    copied = _Object(value)
    copied.repeated = getattr(value, "repeated", ())
    return copied


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _cut_deep(text: str, limit: int) -> str:
    """``text`` with each container that opens below ``limit`` levels replaced
    by the string :data:`_CUT`; scanned without recursion."""
    pieces: list[str] = []
    depth = 0
    copied = 0
    cut_at = -1
    for token in _TOKENS.finditer(text):
        char = token.group()
        if char in "[{":
            depth += 1
            if depth == limit + 1 and cut_at < 0:
                cut_at = token.start()
        elif char in "]}":
            if depth == limit + 1 and cut_at >= 0:
                pieces.append(text[copied:cut_at])
                pieces.append(json.dumps(_CUT))
                copied, cut_at = token.end(), -1
            depth -= 1
    pieces.append(text[copied:])
    return "".join(pieces)


def decode_lenient(raw: bytes, *, depth: int = 1, line: int = 0) -> tuple[Any, str]:
    """Decode a JSON record for error reporting: ``(value, error)``.

    ``raw`` is the record's bytes; ``depth`` how deep the record sits in its
    document (1: it is the document); ``line``, for a line of a JSON Lines
    file, its line number (1-based; 0: the record is a whole file). Bytes
    that are not UTF-8 are decoded with ``surrogateescape``; objects that
    repeat a key keep the last value and list the key (:func:`value_defects`
    reports it); containers nested deeper than :data:`MAX_DEPTH` are cut
    out. ``error`` is ``""`` when the record is JSON, else why not, located
    (``value`` is then ``None``): in a whole file by byte offset, line and
    column (``invalid JSON at byte 822 (line 18, column 5): Expecting
    property name...``), in a line of a JSON Lines file by that line and the
    column (``invalid JSON at line 12, column 41: ...``); columns count
    characters from 1. Rejects NaN and Infinity.
    """
    text = raw.decode("utf-8", "surrogateescape")
    if line:  # the line's own break: an error at its end is on this line, never at the next line's column 1
        text = text.rstrip("\r\n")
    try:
        return _loads(text), ""
    except json.JSONDecodeError as exc:
        if line:
            return None, f"invalid JSON at line {line + exc.lineno - 1}, column {exc.colno}: {exc.msg}"
        at = len(text[: exc.pos].encode("utf-8", "surrogateescape"))
        return None, f"invalid JSON at byte {at} (line {exc.lineno}, column {exc.colno}): {exc.msg}"
    except ValueError as exc:
        return None, f"invalid JSON: {exc}"
    except RecursionError:
        pass
    try:
        return _loads(_cut_deep(text, MAX_DEPTH - depth + 1)), ""
    except (ValueError, RecursionError) as exc:  # the text did not parse before it was cut
        return None, f"invalid JSON: {exc}"


def _loads(text: str) -> Any:
    return json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_pairs)


def _string_defect(value: str, utf8: bool) -> str:
    if not _SURROGATE.search(value):
        return ""
    if not utf8 and not _SURROGATE.search(_NOT_UTF8.sub("", value)):
        return "is not valid UTF-8"
    return "holds a lone surrogate escape (\\ud800 to \\udfff): not a Unicode character"


def value_defects(value: Any, *, utf8: bool = True, depth: int = 1) -> tuple[list[tuple[Path, str]], list[Path]]:
    """What the strict decoders refuse in a value :func:`decode_lenient`
    read: ``(defects, cut)``. ``defects`` are ``(path, message)`` pairs, in
    document order: strings (and keys) that are not Unicode, repeated keys,
    containers nested too deeply; ``cut`` the paths of the containers cut
    out, each shortened to its field (:func:`shorten`; schema errors at or
    under them say nothing more). ``utf8`` tells
    whether the record's bytes were UTF-8 (else surrogates in U+DC80 to
    U+DCFF stand for bytes that are not); ``depth`` how deep the value sits
    in its document. Walks without recursion.
    """
    defects: list[tuple[Path, str]] = []
    cut: list[Path] = []
    stack: list[tuple[Any, Path, int]] = [(value, (), depth)]
    while stack:
        node, path, level = stack.pop()
        if isinstance(node, str):
            if node == _CUT:
                field = shorten(path)
                if field not in cut:
                    cut.append(field)
                    defects.append((field, f"nested too deeply (more than {MAX_DEPTH} levels)"))
            elif message := _string_defect(node, utf8):
                defects.append((path, message))
            continue
        if isinstance(node, dict):
            defects.extend(((*path, key), _REPEATED) for key in getattr(node, "repeated", ()))
            defects.extend(((*path, key), f"key {m}") for key in node if (m := _string_defect(key, utf8)))
            children: list[tuple[Any, Any]] = list(node.items())
        elif isinstance(node, list):
            children = list(enumerate(node))
        else:
            continue
        for at, child in reversed(children):
            if isinstance(child, (dict, list)) and level >= MAX_DEPTH:
                node[at] = _CUT
            stack.append((node[at], (*path, at), level + 1))
    return defects, cut


def shorten(path: Path) -> Path:
    """The part of ``path`` that names a field: its first key, and when an
    index and a key follow (an item of an array of records), those too; the
    rest is nesting inside the field."""
    if len(path) >= 3 and isinstance(path[0], str) and isinstance(path[1], int) and isinstance(path[2], str):
        return path[:3]
    return path[:1]


def brief_repr(value: Any) -> str:
    """``repr(value)`` as a message may show it: a container cut out for
    its depth shown as ``'...'`` (never the marker that stands for it), and
    at most :data:`SHOWN_CHARACTERS` characters, then how many there were."""
    shown = repr(value).replace(repr(_CUT), "'...'")
    if len(shown) <= SHOWN_CHARACTERS:
        return shown
    return f"{shown[:SHOWN_CHARACTERS]}... ({len(shown):,} characters)"
