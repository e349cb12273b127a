"""Text as the disclosure check compares it (ECEB-0.1 §1, §17).

Text is normalised as answer terms are (Unicode NFKC, then case folding),
after leaving out every *ignorable* character (:data:`IGNORABLE`): the
default-ignorable code points of Unicode (``Default_Ignorable_Code_Point``:
zero-width spaces and joiners, soft hyphens, variation selectors, fillers,
tags, ...) and the format characters (category Cf), which change nothing a
reader sees. A
token is a maximal run of characters for which ``str.isalnum()`` holds
(Unicode categories L* and N*). Every token can be traced to where it came
from in the original text: code points of an answer, bytes of an artifact.

The normalised *token stream* of a text is its tokens' UTF-8 bytes joined
by one NUL byte (NUL is never part of a token): what windows of tokens are
hashed and compared over (:mod:`eceb_worker.core.disclosure.hashing`).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = [
    "IGNORABLE",
    "Token",
    "alnum_with_origins",
    "artifact_tokens",
    "drop_ignorable",
    "is_ignorable",
    "normalize",
    "normalized_with_origins",
    "token_words",
    "tokenize",
]

_TOKEN: Final = re.compile(r"[^\W_]+")
"""A maximal run of characters for which ``str.isalnum()`` holds."""

_NON_ASCII: Final = re.compile(r"[^\x00-\x7f]+")

IGNORABLE: Final[tuple[tuple[int, int], ...]] = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
"""The ignorable characters, inclusive ranges: Unicode's
``Default_Ignorable_Code_Point`` (DerivedCoreProperties.txt) and its
format characters (category Cf), Unicode 15.1."""

_IGNORABLE_SET: Final = frozenset(chr(c) for low, high in IGNORABLE for c in range(low, high + 1))
_IGNORABLE_RUN: Final = re.compile(
    "["
    + "".join(re.escape(chr(low)) + ("" if low == high else "-" + re.escape(chr(high))) for low, high in IGNORABLE)
    + "]+"
)

Token = tuple[str, int, int]
"""One token: its normalised text, and the ``[start, end)`` of the original
characters (or bytes) it came from."""


def is_ignorable(char: str) -> bool:
    """``char`` is left out before normalisation (see the module's docstring)."""
    return char in _IGNORABLE_SET


def drop_ignorable(text: str) -> str:
    """``text`` without its ignorable characters."""
    if text.isascii():
        return text
    return _IGNORABLE_RUN.sub("", text)


def normalize(text: str) -> str:
    """``text`` without its ignorable characters, normalised (NFKC, then
    case folding): the text tokens are read from, without tracing them."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", drop_ignorable(text)).casefold()


def token_words(text: str) -> list[str]:
    """The normalised tokens of ``text``, in order, untraced."""
    return _TOKEN.findall(normalize(text))


def normalized_with_origins(text: str) -> tuple[str, list[int] | None, list[int] | None]:
    """:func:`normalize` of ``text`` with, for each normalised character,
    the start and end (code points) of the original characters it came
    from; ``None, None`` when they are the same positions (ASCII text,
    whose normalised form is its lower case).

    The text is normalised piece by piece, a piece being a maximal run of
    non-ASCII characters with the ASCII character before it: no ASCII
    character composes with the one before it, so the pieces' forms joined
    are the whole text's form. Each normalised character is traced to its
    own original character when the piece's characters normalised one by
    one give the piece's form, else to the whole piece.
    """
    if text.isascii():
        return text.lower(), None, None
    ignorable = _IGNORABLE_SET
    out: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    for match in _NON_ASCII.finditer(text):
        start, end = match.span()
        piece_start = start - 1 if start > at else start
        if piece_start > at:
            plain = text[at:piece_start].lower()
            out.append(plain)
            starts.extend(range(at, piece_start))
            ends.extend(range(at + 1, piece_start + 1))
        kept = [(o, c) for o, c in enumerate(text[piece_start:end], start=piece_start) if c not in ignorable]
        folded = unicodedata.normalize("NFKC", "".join(c for _, c in kept)).casefold()
        out.append(folded)
        parts = [unicodedata.normalize("NFKC", c).casefold() for _, c in kept]
        if "".join(parts) == folded:  # each character's form traced to it alone
            for (offset, _), part in zip(kept, parts, strict=True):
                starts.extend([offset] * len(part))
                ends.extend([offset + 1] * len(part))
        else:  # characters composed together: traced to the piece
            starts.extend([piece_start] * len(folded))
            ends.extend([end] * len(folded))
        at = end
    if at < len(text):
        out.append(text[at:].lower())
        starts.extend(range(at, len(text)))
        ends.extend(range(at + 1, len(text) + 1))
    return "".join(out), starts, ends


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``, in order, each traced to ``[start, end)``
    code points of ``text`` (see the module's docstring)."""
    normalized, starts, ends = normalized_with_origins(text)
    if starts is None or ends is None:
        return [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(normalized)]
    return [(m.group(), starts[m.start()], ends[m.end() - 1]) for m in _TOKEN.finditer(normalized)]


def _byte_positions(text: str, offsets: list[int]) -> list[int]:
    """The byte offset in ``text``'s UTF-8 form of each code point offset of
    ``offsets`` (non-decreasing): one pass over the text, whatever their number."""
    char = byte = 0
    positions = []
    for offset in offsets:
        byte += len(text[char:offset].encode("utf-8", "surrogateescape"))
        char = offset
        positions.append(byte)
    return positions


def artifact_tokens(data: bytes) -> list[Token]:
    """The tokens of an artifact's bytes, each traced to ``[start, end)``
    byte offsets of ``data``. The bytes are read as UTF-8; a byte that is
    not UTF-8 becomes one lone surrogate, which is no letter: it ends a token."""
    text = data.decode("utf-8", "surrogateescape")
    tokens = tokenize(text)
    if len(text) == len(data):
        return tokens
    starts = _byte_positions(text, [t[1] for t in tokens])  # a token's start and end never go back
    ends = _byte_positions(text, [t[2] for t in tokens])
    return [(t[0], start, end) for t, start, end in zip(tokens, starts, ends, strict=True)]


def alnum_with_origins(text: str) -> tuple[str, list[int], list[int]]:
    """The letters and numbers of :func:`normalize` of ``text``, every
    other character left out (its tokens joined with nothing: what a marked
    secret is compared on), with each one's original ``[start, end)`` code
    points as :func:`normalized_with_origins` traces them."""
    normalized, starts, ends = normalized_with_origins(text)
    letters: list[str] = []
    kept_starts: list[int] = []
    kept_ends: list[int] = []
    for match in _TOKEN.finditer(normalized):
        letters.append(match.group())
        if starts is None or ends is None:
            kept_starts.extend(range(match.start(), match.end()))
            kept_ends.extend(range(match.start() + 1, match.end() + 1))
        else:
            kept_starts.extend(starts[match.start() : match.end()])
            kept_ends.extend(ends[match.start() : match.end()])
    return "".join(letters), kept_starts, kept_ends
