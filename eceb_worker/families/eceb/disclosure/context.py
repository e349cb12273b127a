"""What one process holds of a job's disclosure scan (ECEB-0.1 §1, §17):
the answer index, the tasks' policies, the secrets, and what is derived from
them on first need; built once per job and process from its
:class:`~.spec.ScanSpec`."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Final

import numpy as np
import numpy.typing as npt

from eceb_worker.core.disclosure.index import AnswerIndex
from eceb_worker.core.disclosure.text import Token, token_words, tokenize
from eceb_worker.corpus.artifacts import CLASSIFICATIONS
from eceb_worker.families.eceb.disclosure.check import answer_key
from eceb_worker.families.eceb.disclosure.spec import ScanSpec

__all__ = ["ScanContext"]

_TRACED_KEPT: Final = 4096
"""Answers whose traced tokens a context keeps at once."""


class ScanContext:
    """A job's disclosure scan as one process holds it.

    Attributes:
        spec: what it scans for.
        index: the answers' windows.
    """

    def __init__(self, spec: ScanSpec) -> None:
        self.spec = spec
        self.index = AnswerIndex(spec.answers, spec.n)
        tasks = spec.tasks
        self._not_allowing = {c: tuple(i for i, t in enumerate(tasks) if c not in t.allowed) for c in CLASSIFICATIONS}
        self._denying: dict[str, list[int]] = {}
        for i, task in enumerate(tasks):
            for artifact_id in task.denied:
                self._denying.setdefault(artifact_id, []).append(i)
        self._secrets: dict[str, list[tuple[int, int]]] = {}
        for artifact_id, start, end in spec.secrets:
            self._secrets.setdefault(artifact_id, []).append((start, end))
        self._keys: dict[int, str] = {}
        self._traced: dict[int, list[Token]] = {}
        self._window_answers: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None
        self._letters: tuple[str, list[int]] | None = None

    @property
    def scans_windows(self) -> bool:
        """Some answer holds a window of N tokens."""
        return self.index.windows > 0

    def secret_spans(self, artifact_id: str) -> list[tuple[int, int]]:
        """The marked secret spans of ``artifact_id``."""
        return self._secrets.get(artifact_id, [])

    def denied_by_some_task(self, artifact_id: str) -> bool:
        """Some task checked denies ``artifact_id``."""
        return artifact_id in self._denying

    def restricted_for(self, artifact_id: str, classification: str) -> frozenset[int]:
        """The tasks (positions in the spec) that may not see the artifact."""
        return frozenset((*self._not_allowing.get(classification, ()), *self._denying.get(artifact_id, ())))

    def answers_holding(self, windows: Iterable[int]) -> list[int]:
        """The answers (numbers) holding any of ``windows``, in order."""
        if self._window_answers is None:
            index = self.index
            at = np.flatnonzero(index.window_of >= 0)
            owners = np.searchsorted(index.first_token, at, side="right") - 1
            pairs = np.unique(index.window_of[at].astype(np.int64) * len(self.spec.answers) + owners)
            ids, owners = np.divmod(pairs, len(self.spec.answers))
            offsets = np.searchsorted(ids, np.arange(index.windows + 1))
            self._window_answers = (offsets, owners)  # each window's answers, each once, in order
        offsets, owners = self._window_answers
        found = [owners[offsets[w] : offsets[w + 1]] for w in windows]
        return np.unique(np.concatenate(found)).tolist() if found else []

    def key(self, answer: int) -> str:
        """The key naming answer number ``answer`` (:func:`~.check.answer_key`)."""
        key = self._keys.get(answer)
        if key is None:
            key = self._keys[answer] = answer_key(self.spec.answers[answer])
        return key

    def traced(self, answer: int) -> list[Token]:
        """The tokens of answer number ``answer``, traced to its characters."""
        tokens = self._traced.get(answer)
        if tokens is None:
            if len(self._traced) >= _TRACED_KEPT:
                self._traced.clear()
            tokens = self._traced[answer] = tokenize(self.spec.answers[answer])
        return tokens

    def secret_occurrences(self, value: str) -> list[tuple[int, int]]:
        """Every occurrence of a secret's letters and numbers ``value`` in the
        answers' letters and numbers: ``(answer, first letter)``."""
        if self._letters is None:
            letters = ["".join(token_words(a)) for a in self.spec.answers]
            starts = []
            at = 0
            for text in letters:
                starts.append(at)
                at += len(text) + 1
            self._letters = ("\0".join(letters), starts)
        joined, starts = self._letters
        found = []
        at = joined.find(value)
        while at >= 0:
            answer = bisect.bisect_right(starts, at) - 1
            found.append((answer, at - starts[answer]))
            at = joined.find(value, at + 1)
        return found
