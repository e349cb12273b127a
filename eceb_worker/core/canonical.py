"""The canonical JSON encoder of every document eceb hashes or writes.

Keys sorted, no insignificant white space, integers only, strings as
RFC 8785 writes them: for eceb's documents (ASCII keys, integers within
+/-(2^53 - 1), strings without lone surrogates, no floats) msgspec's
sorted-key encoding gives exactly the RFC 8785 (JSON Canonicalization
Scheme) bytes. ``tests/unit/test_canonical.py`` pins this against the
``rfc8785`` reference implementation over arbitrary documents of that
shape, and the reference against the RFC's official vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

__all__ = ["canonical_json", "canonical_lines"]

_ENCODER: Final = msgspec.json.Encoder(order="sorted")


def canonical_json(value: Any) -> bytes:
    """The canonical bytes of ``value`` (a Struct, or dicts, lists, strings,
    integers, booleans and None), no trailing newline."""
    return _ENCODER.encode(value)


def canonical_lines(values: Sequence[Any]) -> bytes:
    """:func:`canonical_json` of each value, each followed by ``"\\n"``
    (JSON Lines); ``b""`` for no values. JSON text never holds a raw
    newline, so splitting the result on ``"\\n"`` gives back the records."""
    return _ENCODER.encode_lines(values)
