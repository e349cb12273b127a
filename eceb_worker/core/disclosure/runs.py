"""Runs of an answer's tokens in an artifact (ECEB-0.1 §1, §17), from the
artifact's matched windows (:class:`~eceb_worker.core.disclosure.scan.Matches`).

The answer's tokens are read left to right; where a window of N of them
occurs in the artifact, the run is extended as far as both agree from the
window's first place there, reported, and the search in that artifact
resumes at the first window not inside it, so that every window of the
answer is either part of a reported run or looked up
(docs/INTERPRETATIONS.md, "Disclosure").
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import Final

import numpy as np
import numpy.typing as npt

from eceb_worker.core.disclosure.index import AnswerIndex
from eceb_worker.core.disclosure.scan import Matches

__all__ = ["Run", "answer_runs", "match_shape"]

Run = tuple[int, int, int, int]
"""One run: its first token in the answer, its length in tokens, and the
numbers of the artifact's matches (:class:`~.scan.Matches`) of its first and
last windows (the artifact bytes it spans run from the first's start to the
last's end)."""

_FIRST_STEP: Final = 64
"""Windows compared at once when a run is extended (then twice as many each time)."""


class _Artifact:
    """An artifact's matches as arrays, with the first place of each window."""

    def __init__(self, matches: Matches) -> None:
        self.positions = np.array(matches.positions, dtype=np.int64)
        self.windows = np.array(matches.windows, dtype=np.int64)
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
    known: dict[int, dict[int, set[bytes]]] = {}  # first place -> extension -> the windows that decided it
    c = 0
    while c < len(candidates):
        i, at = candidates[c], firsts[c]
        decided = known.setdefault(at, {})
        matched = _known(decided, windows, i)
        if matched is None:
            matched = artifact.extension(windows, i, at)
            decided.setdefault(matched, set()).add(windows[i : i + matched + 1].tobytes())
        runs.append((i, matched + n - 1, at, at + matched - 1))
        c = bisect.bisect_left(candidates, i + matched, c + 1)
    return runs


def _known(found: Mapping[int, set[bytes]], windows: npt.NDArray[np.int64], i: int) -> int | None:
    """The extension of a run from answer token ``i`` already found from the
    same first place, when the windows that decided it are those from ``i``
    (a repeated passage: the same run again); one set look-up per distinct
    extension found there."""
    for matched, decided in found.items():
        if windows[i : i + matched + 1].tobytes() in decided:
            return matched
    return None


def match_shape(matches: Matches) -> bytes:
    """What the runs of any answer in an artifact depend on: its matched
    windows and their places relative to the first (two artifacts holding
    the same passage once have the same shape, whatever else they hold and
    wherever the passage is)."""
    positions = np.array(matches.positions, dtype=np.int64)
    shape: bytes = (positions - positions[0]).tobytes() + np.array(matches.windows, dtype=np.int64).tobytes()
    return shape
