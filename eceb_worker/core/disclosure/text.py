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

import functools
import re
import unicodedata
from typing import Final

__all__ = [
    "IGNORABLE",
    "Token",
    "alnum_with_origins",
    "artifact_tokens",
    "is_ignorable",
    "normalize",
    "stream_safe",
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


STREAM_SAFE_MARKS: Final = 30
"""The most combining marks in a row that are normalised as written
(Unicode's stream-safe text format, UAX #15): each one past this is read
as a space (see :func:`stream_safe`)."""


@functools.cache
def _long_mark_run() -> re.Pattern[str]:
    """A run of more than :data:`STREAM_SAFE_MARKS` combining marks
    (canonical combining class not 0), ignorable characters between them
    not counted; compiled on first use (it reads the Unicode database)."""
    marks = [c for c in range(0x300, 0x110000) if unicodedata.combining(chr(c)) and chr(c) not in _IGNORABLE_SET]
    ranges: list[tuple[int, int]] = []
    for c in marks:
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1] = (ranges[-1][0], c)
        else:
            ranges.append((c, c))
    mark = "[" + "".join(re.escape(chr(a)) + ("" if a == b else "-" + re.escape(chr(b))) for a, b in ranges) + "]"
    return re.compile(f"(?:{mark}(?:{_IGNORABLE_RUN.pattern})?){{{STREAM_SAFE_MARKS + 1},}}")


def _cut_marks(match: re.Match[str]) -> str:
    marks = 0
    out = []
    for char in match.group():
        if char in _IGNORABLE_SET:
            out.append(char)
        else:
            marks += 1
            out.append(char if marks <= STREAM_SAFE_MARKS else " ")
    return "".join(out)


def stream_safe(text: str) -> str:
    """``text`` with every combining mark after the
    :data:`STREAM_SAFE_MARKS`-th of a run read as a space (the same length):
    real text never holds such runs, and normalising one as written takes
    time that grows with the square of its length."""
    if text.isascii():
        return text
    return _long_mark_run().sub(_cut_marks, text)


def normalize(text: str) -> str:
    """``text`` without its ignorable characters, normalised (NFKC, then
    case folding): the text tokens are read from, without tracing them
    (runs of combining marks cut as :func:`stream_safe` cuts them)."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", drop_ignorable(stream_safe(text))).casefold()


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
    one give the piece's form; else to its *segment* (characters that
    compose together, :func:`_segments`) when the segments' forms joined
    give it; else to the whole piece.
    """
    if text.isascii():
        return text.lower(), None, None
    text = stream_safe(text)
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
        else:  # characters composed together: traced to their segment
            _trace_segments(kept, folded, (piece_start, end), starts, ends)
        at = end
    if at < len(text):
        out.append(text[at:].lower())
        starts.extend(range(at, len(text)))
        ends.extend(range(at + 1, len(text) + 1))
    return "".join(out), starts, ends


_SEGMENT_CONTEXT: Final = 8
"""Characters of a segment normalised with the next one to see whether they compose."""


def _segments(kept: list[tuple[int, str]]) -> list[tuple[int, int, str]]:
    """``kept`` (original offset, character) cut into segments: a new one
    starts at a character that is no combining mark and composes with none
    before it; each segment as its first and last-plus-one offsets and its
    normalised form."""
    segments: list[tuple[int, int, str]] = []
    begin = 0
    for k in range(1, len(kept) + 1):
        if k < len(kept):
            char = kept[k][1]
            form = unicodedata.normalize("NFKC", char)
            if unicodedata.combining(char) or (form and unicodedata.combining(form[0])):
                continue
            before = "".join(c for _, c in kept[max(begin, k - _SEGMENT_CONTEXT) : k])
            if unicodedata.normalize("NFKC", before + char) != unicodedata.normalize("NFKC", before) + form:
                continue
        text = "".join(c for _, c in kept[begin:k])
        segments.append((kept[begin][0], kept[k - 1][0] + 1, unicodedata.normalize("NFKC", text).casefold()))
        begin = k
    return segments


def _trace_segments(
    kept: list[tuple[int, str]], folded: str, piece: tuple[int, int], starts: list[int], ends: list[int]
) -> None:
    """Trace ``folded``, the form of the characters ``kept`` of ``piece``
    (its first and last-plus-one offsets), to its segments when their forms
    joined give it, else each of its characters to the whole piece."""
    segments = _segments(kept)
    if "".join(form for _, _, form in segments) != folded:
        starts.extend([piece[0]] * len(folded))
        ends.extend([piece[1]] * len(folded))
        return
    for start, end, form in segments:
        starts.extend([start] * len(form))
        ends.extend([end] * len(form))


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
