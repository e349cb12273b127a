"""The answer index (ECEB-0.1 §1, §17): every window of N normalised
tokens of every answer to check, once per distinct text, looked up by hash
and confirmed byte for byte.

The disclosure check indexes the answers, not the corpus: its memory
follows the run (about 40 bytes per answer token), and each artifact is
streamed past the index once (:mod:`eceb_worker.core.disclosure.scan`).

A *window id* names one distinct window text; ids are numbered in the
order of their hashes (ties by first place), so that every process that
builds the index from the same answers numbers them alike: partial results
of different processes name windows by id.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from eceb_worker.core.disclosure.hashing import Hashes, padded, token_bounds, token_hashes, window_hashes
from eceb_worker.core.disclosure.text import token_words

__all__ = ["DEFAULT_MINIMUM_OVERLAP_TOKENS", "AnswerIndex", "Ints"]

DEFAULT_MINIMUM_OVERLAP_TOKENS: Final = 8
"""N: the fewest consecutive normalised tokens an answer must share with a
restricted artifact to disclose it (see docs/INTERPRETATIONS.md)."""

_FILTER_BITS_PER_WINDOW: Final = 32
"""Bits of the membership filter per distinct window (about 1 in 16 lookups
of an absent window passes it, then fails the sorted search)."""

_COMPARED_IN_TURN: Final = 4
"""Windows sharing a hash compared one by one before they are looked up by text."""

_COMPARED_AT_ONCE: Final = 1 << 18
"""Windows whose token ids are compared in one step while ids are assigned."""

Ints = npt.NDArray[np.int64]


def _narrow(values: Ints) -> Ints:
    """``values`` as 32-bit integers when they all fit (half the memory), else as they are."""
    if not len(values) or (values.min() >= -(2**31) and values.max() < 2**31):
        narrowed: Ints = values.astype(np.int32)
        return narrowed
    return values


class AnswerIndex:
    """Every window of ``n`` tokens of ``answers`` (distinct texts, in the
    order given: an answer's number is its position).

    Attributes:
        n: tokens a window holds.
        answers: the answer texts.
        longest: the most tokens of one answer.
        first_token: for each answer, the index of its first token in the
            index's token numbering (one more entry: the total).
        window_of: for each token, the id of the window starting there,
            -1 when no window of its answer starts there.
        windows: how many distinct windows.
        single: for each window id, whether no other window has its hash.

    Raises ValueError for ``n`` below 1.
    """

    def __init__(self, answers: Sequence[str], n: int = DEFAULT_MINIMUM_OVERLAP_TOKENS) -> None:
        if n < 1:
            raise ValueError(f"the minimum overlap must be at least 1 token, got {n}")
        self.n = n
        self.answers = list(answers)
        words = [token_words(answer) for answer in self.answers]
        counts = np.array([len(w) for w in words], dtype=np.int64)
        self.longest = int(counts.max()) if len(counts) else 0
        self.first_token: Ints = np.zeros(len(words) + 1, dtype=np.int64)
        np.cumsum(counts, out=self.first_token[1:])
        self._buffer = padded(b"\0".join(b"\0".join(t.encode() for t in ws) for ws in words if ws))
        starts, ends = token_bounds(self._buffer)
        self._starts, self._ends = _narrow(starts), _narrow(ends)
        total = len(starts)
        owner = np.repeat(np.arange(len(words), dtype=np.int64), counts)
        hashes = window_hashes(token_hashes(self._buffer, starts, ends), n)
        valid: Ints = np.flatnonzero(owner[: len(hashes)] == owner[n - 1 : n - 1 + len(hashes)])
        self.window_of: Ints = np.full(total, -1, dtype=np.int64)
        self._assign(valid, hashes, words)
        self._make_filter()
        self._groups: dict[int, dict[bytes, int]] = {}
        self.single: npt.NDArray[np.bool_] = np.ones(self.windows, dtype=bool)
        self.single[:-1] = self._hashes[1:] != self._hashes[:-1]
        self.single[1:] &= self._hashes[1:] != self._hashes[:-1]

    def _assign(self, valid: Ints, hashes: Hashes, words: list[list[str]]) -> None:
        """Number the distinct windows: sorted by hash, equal hashes compared
        by their tokens (interned), a different text under an equal hash
        given an id of its own."""
        if not len(valid):
            self._hashes: Hashes = np.zeros(0, dtype=np.uint64)
            self._first: Ints = np.zeros(0, dtype=np.int64)
            self.windows = 0
            return
        interned: dict[str, int] = {}
        ids = np.array([interned.setdefault(w, len(interned)) for ws in words for w in ws], dtype=np.int64)
        order = valid[np.argsort(hashes[valid], kind="stable")]
        sorted_hashes = hashes[order]
        new = np.ones(len(order), dtype=bool)
        new[1:] = sorted_hashes[1:] != sorted_hashes[:-1]
        group_first = np.maximum.accumulate(np.where(new, np.arange(len(order)), 0))
        repeats = np.flatnonzero(~new)
        differs = np.zeros(len(order), dtype=bool)
        for at in range(0, len(repeats), _COMPARED_AT_ONCE):
            chunk = repeats[at : at + _COMPARED_AT_ONCE]
            here, there = order[chunk], order[group_first[chunk]]
            unequal = np.zeros(len(chunk), dtype=bool)
            for m in range(self.n):
                unequal |= ids[here + m] != ids[there + m]
            differs[chunk] = unequal
        if differs.any():
            new = self._split_collisions(order, new, ids)
        window_ids = np.cumsum(new) - 1
        self.window_of[order] = window_ids
        self.window_of = _narrow(self.window_of)
        firsts = np.flatnonzero(new)
        self._hashes = sorted_hashes[firsts]
        self._first = _narrow(order[firsts])
        self.windows = len(firsts)

    def _split_collisions(self, order: Ints, new: npt.NDArray[np.bool_], ids: Ints) -> npt.NDArray[np.bool_]:
        """Where windows of different texts share a hash, regroup each run
        of equal hashes by text (first place first): a rare path."""
        new = new.copy()
        starts = [*np.flatnonzero(new).tolist(), len(order)]
        regrouped = order.copy()
        for begin, end in itertools.pairwise(starts):
            if end - begin < 2:
                continue
            texts: dict[tuple[int, ...], list[int]] = {}
            for position in order[begin:end].tolist():
                texts.setdefault(tuple(ids[position : position + self.n].tolist()), []).append(position)
            if len(texts) < 2:
                continue
            at = begin
            for positions in texts.values():
                regrouped[at : at + len(positions)] = positions
                new[at] = True
                new[at + 1 : at + len(positions)] = False
                at += len(positions)
        order[:] = regrouped
        return new

    def _make_filter(self) -> None:
        bits = max(1 << 16, 1 << int(self.windows * _FILTER_BITS_PER_WINDOW).bit_length())
        self._shift = np.uint64(64 - (bits.bit_length() - 1))
        slots = (self._hashes >> self._shift).astype(np.int64)
        self._filter = np.zeros(bits // 8, dtype=np.uint8)
        np.bitwise_or.at(self._filter, slots >> 3, (np.uint8(1) << (slots & 7).astype(np.uint8)))

    @property
    def nbytes(self) -> int:
        """The bytes its arrays and buffers hold (not the answer texts)."""
        arrays = (
            self.first_token,
            self.window_of,
            self._starts,
            self._ends,
            self._hashes,
            self._first,
            self._filter,
            self.single,
        )
        return len(self._buffer) + sum(a.nbytes for a in arrays)

    def candidates(self, hashes: Hashes) -> tuple[Ints, Ints]:
        """Which of window ``hashes`` equal the hash of an indexed window:
        their positions in ``hashes``, and for each the first id (in hash
        order) with that hash; the texts are still to be compared
        (:meth:`confirm`)."""
        if not self.windows or not len(hashes):
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        slots = (hashes >> self._shift).astype(np.int64)
        passed = np.flatnonzero((self._filter[slots >> 3] >> (slots & 7).astype(np.uint8)) & 1)
        if not len(passed):
            return passed, passed
        found = np.searchsorted(self._hashes, hashes[passed])
        inside = found < self.windows
        hit = np.flatnonzero(inside)[self._hashes[found[inside]] == hashes[passed[inside]]]
        return passed[hit], found[hit].astype(np.int64)

    def window_bytes(self, window: int) -> bytes:
        """The text of window ``window``: its tokens' bytes joined by NUL."""
        first = int(self._first[window])
        return self._buffer[int(self._starts[first]) : int(self._ends[first + self.n - 1])]

    def confirm(self, text: bytes, first: int) -> int:
        """The id of the indexed window whose text is ``text`` (tokens joined
        by NUL), among those from ``first`` with the same hash; -1 when none is."""
        group = self._groups.get(first)
        if group is not None:
            return group.get(text, -1)
        window = first
        while window < self.windows and self._hashes[window] == self._hashes[first]:
            if self.window_bytes(window) == text:
                return window
            window += 1
            if window - first == _COMPARED_IN_TURN:
                return self._group(first).get(text, -1)
        return -1

    def _group(self, first: int) -> dict[bytes, int]:
        """The ids of the windows sharing the hash of window ``first`` by
        text, built on the first look-up that compares more than a few (a
        crafted answer can make many texts share a hash): each later
        confirmation is then one look-up."""
        end = int(np.searchsorted(self._hashes, self._hashes[first], side="right"))
        group = {self.window_bytes(window): window for window in range(end - 1, first - 1, -1)}
        self._groups[first] = group
        return group

    def answer_windows(self, answer: int) -> Ints:
        """The window id at each token of ``answer`` (-1 where no window starts)."""
        return self.window_of[self.first_token[answer] : self.first_token[answer + 1]]
