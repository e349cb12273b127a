"""Runs of an answer's tokens in an artifact (ECEB-0.1 §1, §17), from the
artifact's matched windows (:class:`~eceb_worker.core.disclosure.scan.Matches`).

The answer's tokens are read left to right; where a window of N of them
occurs in the artifact, the run is extended as far as both agree from the
window's first place there, reported, and the search in that artifact
resumes after it (docs/INTERPRETATIONS.md, "Disclosure").
"""

from __future__ import annotations

import bisect
from typing import Final

import numpy as np

from eceb_worker.core.disclosure.index import AnswerIndex
from eceb_worker.core.disclosure.scan import Matches

__all__ = ["Run", "answer_runs"]

Run = tuple[int, int, int, int]
"""One run: its first token in the answer, its length in tokens, and the
artifact bytes ``[start, end)`` it spans."""

_FIRST_STEP: Final = 64
"""Windows compared at once when a run is extended (then twice as many each time)."""


class _Artifact:
    """An artifact's matches as arrays, with the first place of each window."""

    def __init__(self, matches: Matches) -> None:
        self.positions = np.array(matches.positions, dtype=np.int64)
        self.windows = np.array(matches.windows, dtype=np.int64)
        self.starts = matches.starts
        self.ends = matches.ends
        self.ids, self.first = np.unique(self.windows, return_index=True)

    def extension(self, answer: np.ndarray, i: int, at: int) -> int:
        """How many consecutive windows of ``answer`` from ``i`` the
        artifact holds consecutively from its match number ``at``."""
        matched = 1
        step = _FIRST_STEP
        start = int(self.positions[at])
        while True:
            length = min(step, len(answer) - i - matched, len(self.positions) - at - matched)
            if length <= 0:
                return matched
            theirs = self.positions[at + matched : at + matched + length]
            agree = (theirs == start + matched + np.arange(length)) & (
                self.windows[at + matched : at + matched + length] == answer[i + matched : i + matched + length]
            )
            if not agree.all():
                return matched + int(np.argmin(agree))
            matched += length
            step *= 2


def answer_runs(index: AnswerIndex, answer: int, matches: Matches) -> list[Run]:
    """Every run of answer number ``answer`` of ``index`` in the artifact
    whose matches are ``matches``, in answer order."""
    windows = index.answer_windows(answer)
    if not matches or not len(windows):
        return []
    artifact = _Artifact(matches)
    place = np.searchsorted(artifact.ids, windows)
    inside = (windows >= 0) & (place < len(artifact.ids))
    found = np.zeros(len(windows), dtype=bool)
    found[inside] = artifact.ids[place[inside]] == windows[inside]
    candidates = np.flatnonzero(found).tolist()
    if not candidates:
        return []
    firsts = artifact.first[place[candidates]].tolist()
    n = index.n
    runs: list[Run] = []
    known: dict[tuple[int, bytes], int] = {}
    c = 0
    while c < len(candidates):
        i, at = candidates[c], firsts[c]
        tail = windows[i : i + _FIRST_STEP]
        key = (at, tail.tobytes())
        matched = known.get(key)
        if matched is None:
            matched = artifact.extension(windows, i, at)
            if matched < len(tail):
                known[key] = matched
        tokens = matched + n - 1
        runs.append((i, tokens, artifact.starts[at], artifact.ends[at + matched - 1]))
        c = bisect.bisect_left(candidates, i + tokens, c + 1)
    return runs
