"""Streaming an artifact's bytes past the answer index (ECEB-0.1 §1, §17):
every window of N normalised tokens of the artifact that is also a window
of an answer, found in one pass over bytes read in any chunks, in memory
that does not grow with the artifact.

The bytes are cut into blocks at ASCII separators (an ASCII byte that is
not a letter or digit: no token and no normalised character spans it), of
about :data:`BLOCK_BYTES`. A block of ASCII text (or one made ASCII by
writing its common non-ASCII punctuation, :data:`SEPARATOR_SEQUENCES`, as
spaces of the same length) is tokenized in bulk by ``bytes.translate`` and
numpy; any other block is normalised as a whole (:func:`.text.normalize`)
and its tokens' byte offsets are traced (:func:`.text.artifact_tokens`)
only when one of its windows is a candidate. The last ``N - 1`` tokens of a
block are carried into the next, so a window across two blocks is found.
A run of more than :data:`LONGEST_BLOCK_BYTES` without an ASCII separator
is cut after its last punctuation or space character, or failing one at a
character boundary (see docs/INTERPRETATIONS.md).

Each candidate (equal hashes) is confirmed byte for byte against the
answer's window before it counts (:meth:`.index.AnswerIndex.confirm`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Final

import numpy as np
import numpy.typing as npt

from eceb_worker.core.disclosure.hashing import (
    ASCII_FOLD,
    Hashes,
    Positions,
    padded,
    token_bounds,
    token_hashes,
    window_hashes,
)
from eceb_worker.core.disclosure.index import AnswerIndex, Ints
from eceb_worker.core.disclosure.text import artifact_tokens, normalize

__all__ = ["BLOCK_BYTES", "LONGEST_BLOCK_BYTES", "SEPARATOR_SEQUENCES", "ArtifactScan", "Matches", "scan_batch"]

_NOT_TOKEN: Final = re.compile(r"[\W_]+")
"""A run of characters that are no part of a token (see :mod:`.text`)."""

BLOCK_BYTES: Final = 256 * 1024
"""The bytes of a block (cut back to its last ASCII separator): big enough
that numpy's per-call costs vanish, small enough to stay in a core's cache."""

LONGEST_BLOCK_BYTES: Final = 1024 * 1024
"""A block without an ASCII separator this long is cut (:func:`_forced_cut`)."""

_BULK_CANDIDATES: Final = 256
"""Candidates in one block from which those that cannot matter are ruled out in bulk."""

MAX_KEPT_MATCHES: Final = 1 << 22
"""Matches of one artifact kept beyond the first place of each window
(runs that would need more end there)."""

SEPARATOR_SEQUENCES: Final[tuple[bytes, ...]] = tuple(
    c.encode()
    for c in (
        "\u00a0",  # no-break space
        "\u2018",
        "\u2019",
        "\u201c",
        "\u201d",  # curly quotes
        "\u2010",
        "\u2011",
        "\u2012",
        "\u2013",
        "\u2014",
        "\u2212",  # hyphens, dashes, minus
        "\u2022",
        "\u00b7",
        "\u2026",  # bullet, middle dot, ellipsis
        "\u00ab",
        "\u00bb",  # guillemets
        "\u00a7",
        "\u00b6",
        "\u00a9",
        "\u00ae",
        "\u00b0",  # section, pilcrow, copyright, registered, degree
    )
)
"""UTF-8 of punctuation that normalises to no letter or digit and composes
with nothing: written as spaces of the same length, a block that holds no
other non-ASCII character is tokenized as ASCII, with the same tokens and
offsets (pinned by a test over each)."""


class Matches:
    """The windows of one artifact that are windows of an answer.

    Attributes (lists of the same length, in artifact order):
        positions: the token index (in the artifact) where the window starts.
        windows: its window id (:class:`~.index.AnswerIndex`).
        starts, ends: the artifact bytes ``[start, end)`` it spans (from
            the start of its first token to the end of its last).

    Kept: the first place of each window, and every match less than the
    longest answer's token count after a first place (what a run starting
    at a first place can reach), up to :data:`MAX_KEPT_MATCHES`.
    """

    __slots__ = ("_last_first", "_longest", "_mask", "_seen", "ends", "positions", "starts", "windows")

    def __init__(self, longest: int) -> None:
        self.positions: list[int] = []
        self.windows: list[int] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        self._seen: set[int] = set()
        self._mask: npt.NDArray[np.bool_] | None = None
        self._longest = longest
        self._last_first = -longest - 1

    def add(self, position: int, window: int, start: int, end: int) -> None:
        """Record a confirmed match (positions in increasing order)."""
        if window not in self._seen:
            self._seen.add(window)
            if self._mask is not None:
                self._mask[window] = True
            self._last_first = position
        elif position - self._last_first >= self._longest or len(self.positions) >= MAX_KEPT_MATCHES:
            return
        self.positions.append(position)
        self.windows.append(window)
        self.starts.append(start)
        self.ends.append(end)

    def __bool__(self) -> bool:
        return bool(self.positions)

    @property
    def distinct(self) -> set[int]:
        """The ids of the windows found."""
        return self._seen

    def worth_confirming(self, index: AnswerIndex, positions: Ints, firsts: Ints) -> npt.NDArray[np.bool_]:
        """Which candidates (artifact token ``positions``, in increasing
        order, each with the first id of its hash, :meth:`.AnswerIndex.candidates`)
        could still change the matches: not those whose hash names one
        window only, already found, and too far after any place where a
        window could be found first (:meth:`add` would drop them). Ruled
        out in bulk, so an artifact repeating a passage costs no step per
        repeat."""
        keep = np.ones(len(positions), dtype=bool)
        if len(positions) < _BULK_CANDIDATES or not self._seen:
            return keep
        if self._mask is None:
            self._mask = np.zeros(index.windows, dtype=bool)
            self._mask[np.fromiter(self._seen, dtype=np.int64, count=len(self._seen))] = True
        known = index.single[firsts] & self._mask[firsts]
        could_be_first = np.where(known, -self._longest - 1, positions)
        latest = np.maximum(np.maximum.accumulate(could_be_first), self._last_first)
        keep[known & (positions - latest >= self._longest)] = False
        return keep


class _Block:
    """One block's tokens: their bytes (``buffer[starts[i]:ends[i]]``) and,
    for an ASCII block, where they are in the artifact; for any other, traced
    on first need."""

    __slots__ = ("ascii", "base", "buffer", "ends", "raw", "starts", "traced")

    def __init__(
        self, raw: bytes, base: int, buffer: bytes, starts: Positions, ends: Positions, *, ascii: bool
    ) -> None:
        self.raw = raw
        self.base = base
        self.buffer = buffer
        self.starts = starts
        self.ends = ends
        self.ascii = ascii
        self.traced: list[tuple[int, int]] | None = None

    def text(self, i: int) -> bytes:
        """Token ``i``'s normalised bytes."""
        return self.buffer[int(self.starts[i]) : int(self.ends[i])]

    def window(self, i: int, n: int) -> bytes:
        """Tokens ``i`` to ``i + n - 1`` joined by one NUL."""
        text = self.buffer[int(self.starts[i]) : int(self.ends[i + n - 1])]
        return b"\0".join(filter(None, text.split(b"\0"))) if b"\0\0" in text else text

    def span(self, i: int) -> tuple[int, int]:
        """Token ``i``'s ``[start, end)`` in the artifact's bytes."""
        if self.ascii:
            return self.base + int(self.starts[i]) - 1, self.base + int(self.ends[i]) - 1
        if self.traced is None:
            tokens = artifact_tokens(self.raw)
            if len(tokens) != len(self.starts):
                raise ValueError("a block's traced tokens differ from its normalised tokens")
            self.traced = [(start, end) for _, start, end in tokens]
        start, end = self.traced[i]
        return self.base + start, self.base + end


def _ascii_form(raw: bytes) -> bytes | None:
    """``raw`` with its common punctuation (:data:`SEPARATOR_SEQUENCES`)
    written as spaces, when that leaves it ASCII; else None."""
    for sequence in SEPARATOR_SEQUENCES:
        if sequence in raw:
            raw = raw.replace(sequence, b" " * len(sequence))
    return raw if raw.isascii() else None


def _tokenize(raw: bytes, base: int, folded: bytes | None = None) -> tuple[_Block, Hashes]:
    """A block's tokens and their hashes; ``folded`` is ``raw`` translated by
    :data:`~.hashing.ASCII_FOLD` when the caller has it."""
    plain = raw if raw.isascii() else _ascii_form(raw)
    if plain is not None:
        buffer = padded(folded if folded is not None and plain is raw else plain.translate(ASCII_FOLD))
        starts, ends = token_bounds(buffer)
        return _Block(raw, base, buffer, starts, ends, ascii=True), token_hashes(buffer, starts, ends)
    spaced = _NOT_TOKEN.sub(" ", normalize(raw.decode("utf-8", "surrogateescape")))
    buffer = padded(spaced.encode().translate(ASCII_FOLD))
    starts, ends = token_bounds(buffer)
    return _Block(raw, base, buffer, starts, ends, ascii=False), token_hashes(buffer, starts, ends)


class ArtifactScan:
    """One read of one artifact's bytes past ``index``: :meth:`feed` every
    chunk in order, then :meth:`finish`. The result does not depend on how
    the bytes were cut into chunks."""

    def __init__(self, index: AnswerIndex) -> None:
        self.index = index
        self.matches = Matches(index.longest)
        self._pending = b""
        self._base = 0  # artifact offset of _pending[0]
        self._tokens = 0  # tokens of the artifact before the carry's end
        self._carry: list[tuple[_Block, int]] = []
        self._carry_hashes: Hashes = np.zeros(0, dtype=np.uint64)
        self._active = index.windows > 0 and index.longest >= index.n

    def feed(self, data: bytes | memoryview) -> None:
        """The next bytes of the artifact (copied as needed: the caller may reuse its buffer)."""
        if not self._active:
            return
        pending = self._pending + data if self._pending else bytes(data)
        if len(pending) < BLOCK_BYTES:
            self._pending = pending
            return
        folded = pending.translate(ASCII_FOLD)  # once for every block of this feed
        at = 0
        while len(pending) - at >= BLOCK_BYTES:
            cut = folded.rfind(b"\0", at + 1, at + BLOCK_BYTES) - at
            if cut <= 0:
                if len(pending) - at < LONGEST_BLOCK_BYTES:
                    break
                cut = folded.rfind(b"\0", at + 1, at + LONGEST_BLOCK_BYTES) - at
            if cut <= 0:
                cut = _forced_cut(pending[at : at + LONGEST_BLOCK_BYTES])
                self._block(pending[at : at + cut], None)
            else:
                self._block(pending[at : at + cut], folded[at : at + cut])
            at += cut
        self._pending = pending[at:]

    def finish(self) -> Matches:
        """Scan what is left and return the matches."""
        if self._active and self._pending:
            self._block(self._pending, None)
            self._pending = b""
        return self.matches

    def _block(self, raw: bytes, folded: bytes | None) -> None:
        block, hashes = _tokenize(raw, self._base, folded)
        self._base += len(raw)
        n = self.index.n
        carry = self._carry
        carried = len(carry)
        every = np.concatenate((self._carry_hashes, hashes)) if carried else hashes
        first_position = self._tokens - carried

        def token(k: int) -> tuple[_Block, int]:
            return carry[k] if k < carried else (block, k - carried)

        found, firsts = self.index.candidates(window_hashes(every, n))
        worth = self.matches.worth_confirming(self.index, found + first_position, firsts)
        for k, first in zip(found[worth].tolist(), firsts[worth].tolist(), strict=True):
            if k >= carried:  # within this block
                text = block.window(k - carried, n)
            else:
                text = b"\0".join(b.text(i) for b, i in (token(k + m) for m in range(n)))
            window = self.index.confirm(text, first)
            if window >= 0:
                head, tail = token(k), token(k + n - 1)
                self.matches.add(first_position + k, window, head[0].span(head[1])[0], tail[0].span(tail[1])[1])
        self._tokens += len(hashes)
        keep = min(n - 1, len(every))
        self._carry = [token(k) for k in range(len(every) - keep, len(every))]
        self._carry_hashes = every[len(every) - keep :].copy()


_CUT_SEARCH_BYTES: Final = 64 * 1024
"""Bytes at the end of a stretch without an ASCII separator searched for punctuation or a space to cut after."""


def _forced_cut(head: bytes) -> int:
    """Where to cut ``head``, which holds no ASCII separator: after its last
    punctuation or space character (Unicode P* or Z*, such as 。 or 、)
    that no combining mark follows, found in its last
    :data:`_CUT_SEARCH_BYTES`; failing that, at its last UTF-8 character
    boundary (never inside a character's bytes)."""
    cut = len(head)
    while cut > 1 and head[cut - 1] & 0xC0 == 0x80:
        cut -= 1
    if cut > 1 and head[cut - 1] >= 0xC0:
        cut -= 1  # the lead byte of a character cut short
    if cut <= 1:
        return len(head)
    low = cut - _CUT_SEARCH_BYTES
    while low > 0 and head[low] & 0xC0 == 0x80:
        low += 1
    tail = head[max(low, 0) : cut].decode("utf-8", "surrogateescape")
    for k in range(len(tail) - 2, -1, -1):
        if unicodedata.category(tail[k])[0] in "PZ" and not unicodedata.category(tail[k + 1]).startswith("M"):
            return cut - len(tail[k + 1 :].encode("utf-8", "surrogateescape"))
    return cut


def scan_batch(index: AnswerIndex, artifacts: Iterable[bytes]) -> list[Matches]:
    """The matches of each of many small artifacts (whole bytes each), in
    order: ASCII ones scanned together as one block (windows across two
    artifacts left out), any other one by itself."""
    items = list(artifacts)
    results = [Matches(index.longest) for _ in items]
    if index.windows == 0 or index.longest < index.n:
        return results
    plain = [i for i, data in enumerate(items) if data.isascii()]
    for i, data in enumerate(items):
        if not data.isascii():
            scan = ArtifactScan(index)
            scan.feed(data)
            results[i] = scan.finish()
    if not plain:
        return results
    joined = b"\n".join(items[i] for i in plain)
    bounds = np.cumsum([0] + [len(items[i]) + 1 for i in plain], dtype=np.int64)
    block, hashes = _tokenize(joined, 0)
    n = index.n
    found, firsts = index.candidates(window_hashes(hashes, n))
    if not len(found):
        return results
    owner_first = np.searchsorted(bounds, block.starts[found] - 1, side="right") - 1
    owner_last = np.searchsorted(bounds, block.ends[found + n - 1] - 1, side="right") - 1
    inside = owner_first == owner_last
    token_owner = np.searchsorted(bounds, block.starts - 1, side="right") - 1
    first_token = np.searchsorted(token_owner, np.arange(len(plain)), side="left")
    for k, first, owner in zip(
        found[inside].tolist(), firsts[inside].tolist(), owner_first[inside].tolist(), strict=True
    ):
        window = index.confirm(block.window(k, n), first)
        if window >= 0:
            base = int(bounds[owner])
            start = block.span(k)[0] - base
            end = block.span(k + n - 1)[1] - base
            results[plain[owner]].add(k - int(first_token[owner]), window, start, end)
    return results
