"""The portable corpus-relative path (ECEB-0.1 §5: "a portable corpus-relative path").

One rule, stated twice only in form: :data:`PORTABLE_PATH` decides
(``fullmatch``), :func:`path_problems` explains a refusal in words. A
property test (``tests/unit/test_paths.py``) holds them to the same verdict
on arbitrary text.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["PORTABLE_PATH", "path_problems", "printable_path"]

# A segment: no separator, control character or surrogate, and not '.' or '..'.
_SEGMENT: Final = r"(?!\.\.?(?:/|\Z))[^/\\\x00-\x1f\x7f-\x9f\ud800-\udfff]+"
PORTABLE_PATH: Final = re.compile(rf"(?![A-Za-z]:){_SEGMENT}(?:/{_SEGMENT})*")
"""A portable path: non-empty segments joined by ``/``, no drive letter (``fullmatch``)."""


def path_problems(path: str) -> list[str]:
    """Every reason ``path`` is not a portable corpus-relative path; ``[]`` if it is.

    A portable path is non-empty valid UTF-8 (no lone surrogate), uses ``/``
    as its only separator, is relative (no leading ``/``, no drive letter such
    as ``C:``), has no empty, ``.`` or ``..`` segment (so no trailing ``/``
    either), and contains no backslash, NUL or other control character
    (Unicode category Cc).
    """
    if path == "":
        return ["is empty"]
    reasons: list[str] = []
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        reasons.append("is not valid UTF-8 (contains a lone surrogate)")
    if path.startswith("/"):
        reasons.append("is absolute (starts with '/')")
    if len(path) >= 2 and path[1] == ":" and path[0].isascii() and path[0].isalpha():
        reasons.append("starts with a drive letter")
    if "\\" in path:
        reasons.append("contains a backslash")
    controls = sorted({f"U+{ord(c):04X}" for c in path if unicodedata.category(c) == "Cc"})
    if controls:
        reasons.append(f"contains control characters ({', '.join(controls)})")
    segments = path.split("/")
    inner = segments[1:] if path.startswith("/") else segments
    if any(s == "" for s in inner):
        reasons.append("has an empty segment")
    if any(s == "." for s in segments):
        reasons.append("has a '.' segment")
    if any(s == ".." for s in segments):
        reasons.append("has a '..' segment")
    return reasons


def printable_path(path: str) -> str:
    """``path`` safe to print in one line: control characters, lone surrogates
    (bytes that were not UTF-8) and other unprintable characters are written
    as Python escapes (``\\x01``, ``\\udcff``); other Unicode stays as it is."""
    if path.isprintable():
        return path
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in path)
