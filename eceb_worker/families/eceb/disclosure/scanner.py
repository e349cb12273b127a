"""The disclosure scan of one re-hash shard (ECEB-0.1 §1, §5, §17): the
bytes the re-hash reads are streamed past the answer index as they are
read, once; nothing restricted is read twice.

:class:`~.context.ScanContext` is what a process holds of a job's scan
(the answer index, the tasks' policies, the secrets), built once per job
from its :class:`~.spec.ScanSpec`. :class:`DisclosureScanner` watches one shard's
reads (a :class:`~eceb_worker.corpus.storage.ReadObserver`): each read of
an artifact is scanned as it streams (an artifact smaller than
:data:`SMALL_ARTIFACT_BYTES` is kept whole and scanned with others); a read
counts only when its digest is the registered one, and then its windows,
runs and secrets enter the shard's :class:`~.findings.DisclosurePartial`.
Restricted text and secret values stay in this process: the partial holds
ids, offsets and counts.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from typing import Final, Protocol

from eceb_worker.core.disclosure.runs import Run, answer_runs, match_shape
from eceb_worker.core.disclosure.scan import BLOCK_BYTES, ArtifactScan, Matches, scan_batch
from eceb_worker.core.disclosure.text import STREAM_SAFE_MARKS, Token, alnum_with_origins, token_words
from eceb_worker.families.eceb.disclosure.check import LISTED_FINDINGS, DisclosureHit
from eceb_worker.families.eceb.disclosure.context import ScanContext
from eceb_worker.families.eceb.disclosure.findings import DisclosurePartial, FindingGroup, WindowHolders

__all__ = ["SMALL_ARTIFACT_BYTES", "DisclosureScanner"]

SMALL_ARTIFACT_BYTES: Final = 64 * 1024
"""An artifact registered smaller than this is scanned with others, whole."""

_SHAPES_KEPT: Final = 1024
"""Answers' runs in an artifact shape a shard keeps for the next artifact of that shape."""

_WIDEN: Final = 4 * (STREAM_SAFE_MARKS + 2)
"""Bytes before and after a secret span kept to widen it to whole
characters and letters with their combining marks."""


class ScannedArtifact(Protocol):
    """What the scan needs of a registered artifact."""

    @property
    def artifact_id(self) -> str:
        """Its id."""
        ...

    @property
    def classification(self) -> str:
        """Its classification."""
        ...

    @property
    def source_digest(self) -> str:
        """Its registered digest."""
        ...

    @property
    def size_bytes(self) -> int:
        """Its registered size."""
        ...


class _Sink:
    """One read of one artifact: its bytes fed as read, then its digest."""

    __slots__ = ("_kept", "_offset", "_pieces", "_position", "_scan", "_scanner", "_spans")

    def __init__(self, scanner: DisclosureScanner, position: int) -> None:
        self._scanner = scanner
        self._position = position
        artifact = scanner.artifacts[position]
        small = artifact.size_bytes < SMALL_ARTIFACT_BYTES
        self._kept: list[bytes] | None = [] if small else None
        self._scan = None if small or not scanner.context.scans_windows else ArtifactScan(scanner.context.index)
        self._spans = [] if small else scanner.context.secret_spans(artifact.artifact_id)
        self._pieces: list[bytearray] = [bytearray() for _ in self._spans]
        self._offset = 0

    def feed(self, data: bytes | memoryview) -> None:
        """The next bytes read."""
        if self._kept is not None:
            self._kept.append(bytes(data))
            return
        if self._scan is not None:
            self._scan.feed(data)
        end = self._offset + len(data)
        for (start, stop), piece in zip(self._spans, self._pieces, strict=True):
            low, high = max(start - _WIDEN, self._offset), min(stop + _WIDEN, end)
            if low < high:
                piece.extend(data[low - self._offset : high - self._offset])
        self._offset = end

    def end(self, digest: str) -> None:
        """The read completed with bytes of ``digest``: they count when it is the registered one."""
        scanner = self._scanner
        if digest != scanner.artifacts[self._position].source_digest:
            return
        if self._kept is not None:
            scanner.whole(self._position, b"".join(self._kept))
            return
        matches = self._scan.finish() if self._scan is not None else Matches(0)
        secrets = [
            (start, stop, bytes(piece), max(start - _WIDEN, 0), self._offset)
            for (start, stop), piece in zip(self._spans, self._pieces, strict=True)
        ]
        scanner.scanned(self._position, matches, secrets)


def _secret_value(piece: bytes, low: int, start: int, stop: int, size: int) -> tuple[str, int, int] | None:
    """A secret's letters and numbers and its span widened to whole UTF-8
    characters, then over the combining marks that go with its first and
    last characters (a span cutting a character or a letter's accents
    protects all of it), from ``piece``, the artifact's bytes from offset
    ``low`` (:data:`_WIDEN` bytes either side of the span where the
    artifact has them); None for a span outside the artifact (``size``
    bytes) or holding no letter or number."""
    if not 0 <= start < stop <= size:
        return None
    for _ in range(3):
        if 0 < start < size and piece[start - low] & 0xC0 == 0x80:
            start -= 1
    for _ in range(3):
        if stop < size and piece[stop - low] & 0xC0 == 0x80:
            stop += 1
    start, stop = _whole_letters(piece, low, start, stop)
    value = "".join(token_words(piece[start - low : stop - low].decode("utf-8", "surrogateescape")))
    return (value, start, stop) if value else None


def _is_mark(char: str) -> bool:
    return unicodedata.category(char).startswith("M")


def _whole_letters(piece: bytes, low: int, start: int, stop: int) -> tuple[int, int]:
    """``[start, stop)`` (on character boundaries) widened over the
    combining marks after it, and, when it begins with a combining mark,
    back over the marks before it and their letter."""
    after = piece[stop - low : stop - low + _WIDEN].decode("utf-8", "surrogateescape")
    marks = 0
    while marks < min(len(after), STREAM_SAFE_MARKS) and _is_mark(after[marks]):
        marks += 1
    stop += len(after[:marks].encode("utf-8", "surrogateescape"))
    first = piece[start - low : start - low + 4].decode("utf-8", "surrogateescape")[:1]
    if first and _is_mark(first):
        before = piece[max(start - low - _WIDEN, 0) : start - low].decode("utf-8", "surrogateescape")
        back = len(before)
        while back > 0 and len(before) - back < STREAM_SAFE_MARKS and _is_mark(before[back - 1]):
            back -= 1
        if back > 0:
            back -= 1  # the letter the marks go with
        start -= len(before[back:].encode("utf-8", "surrogateescape"))
    return start, stop


class _Group:
    """One finding group as a shard gathers it: its first findings (kept
    sorted once there are enough) and its count."""

    __slots__ = ("count", "hits", "last")

    def __init__(self) -> None:
        self.hits: list[DisclosureHit] = []
        self.count = 0
        self.last: int | None = None  # the answer offset of the last listed finding, once trimmed

    def add(self, hit: DisclosureHit) -> None:
        self.count += 1
        self.hits.append(hit)
        if len(self.hits) >= 4 * LISTED_FINDINGS:
            self.hits.sort(key=lambda h: h.order)
            del self.hits[LISTED_FINDINGS:]
            self.last = self.hits[-1].answer_start

    def take(self, runs: Sequence[Run], hit: Callable[[Run], DisclosureHit], tokens: Sequence[Token]) -> None:
        """Count ``runs`` (one artifact's, in answer order), listing those
        that may be among the group's first."""
        added = 0
        for run in runs[:LISTED_FINDINGS]:
            if self.count >= LISTED_FINDINGS and self.listed_before(tokens[run[0]][1]):
                break  # this run and every later one start after all the group lists
            self.add(hit(run))
            added += 1
        self.count += len(runs) - added

    def listed_before(self, answer_start: int) -> bool:
        """Every finding it lists starts before ``answer_start`` (a finding
        starting there cannot be among its first)."""
        return self.last is not None and self.last < answer_start


class DisclosureScanner:
    """The disclosure scan of one shard's ``artifacts`` (in the order the
    storage reads them: :meth:`reading` takes a position among them)."""

    def __init__(self, context: ScanContext, artifacts: Sequence[ScannedArtifact]) -> None:
        self.context = context
        self.artifacts = artifacts
        self._batch: list[tuple[int, bytes]] = []
        self._batched = 0
        self._groups: dict[tuple[str, str, tuple[int, ...]], _Group] = {}
        self._shapes: dict[tuple[int, bytes], list[tuple[tuple[int, ...], list[Run]]]] = {}
        self._classifications: dict[int, set[str]] = {}
        self._denied: dict[int, set[tuple[str, str]]] = {}

    def reading(self, position: int) -> _Sink:
        """A sink for one read of the artifact at ``position``."""
        return _Sink(self, position)

    def whole(self, position: int, data: bytes) -> None:
        """A small artifact's verified bytes: scanned with others."""
        self._batch.append((position, data))
        self._batched += len(data)
        if self._batched >= BLOCK_BYTES:
            self._flush()

    def _flush(self) -> None:
        batch, self._batch, self._batched = self._batch, [], 0
        if not batch:
            return
        context = self.context
        if context.scans_windows:
            found = scan_batch(context.index, (data for _, data in batch))
        else:
            found = [Matches(0) for _ in batch]
        for (position, data), matches in zip(batch, found, strict=True):
            spans = context.secret_spans(self.artifacts[position].artifact_id)
            self.scanned(position, matches, [(start, stop, data, 0, len(data)) for start, stop in spans])

    def scanned(self, position: int, matches: Matches, secrets: Sequence[tuple[int, int, bytes, int, int]]) -> None:
        """An artifact's verified scan: its matches, and each marked secret
        span ``(start, end, piece, offset, size)``: the artifact's bytes
        ``piece`` from ``offset`` on hold the span and the bytes around it,
        the artifact has ``size`` bytes."""
        artifact = self.artifacts[position]
        context = self.context
        if matches:
            self._hold(artifact, matches.distinct)
        restricted = context.restricted_for(artifact.artifact_id, artifact.classification)
        if not restricted:
            return
        if matches:
            self._runs(artifact.artifact_id, matches, restricted)
        values = {_secret_value(piece, offset, start, stop, size) for start, stop, piece, offset, size in secrets}
        for found in sorted((v for v in values if v is not None), key=lambda v: (v[1], v[2], v[0])):  # once a span
            self._secret(artifact.artifact_id, *found, restricted)

    def _hold(self, artifact: ScannedArtifact, windows: set[int]) -> None:
        if self.context.denied_by_some_task(artifact.artifact_id):
            held = (artifact.artifact_id, artifact.classification)
            for window in windows:
                self._denied.setdefault(window, set()).add(held)
        else:
            for window in windows:
                self._classifications.setdefault(window, set()).add(artifact.classification)

    def _tasks(self, answer: int, restricted: frozenset[int]) -> list[str]:
        spec = self.context.spec
        return [spec.tasks[t].task_id for t in spec.answer_tasks[answer] if t in restricted]

    def _runs(self, artifact_id: str, matches: Matches, restricted: frozenset[int]) -> None:
        context = self.context
        shape: bytes | None = None
        for answer in context.answers_holding(matches.distinct):
            task_ids = self._tasks(answer, restricted)
            if not task_ids:
                continue
            if shape is None:
                shape = match_shape(matches)
            texts = self._texts(answer, matches, shape)
            if not texts:
                continue
            tokens = context.traced(answer)
            key = context.key(answer)

            def hit(run: Run, tokens: list[Token] = tokens) -> DisclosureHit:
                i, length, first, last = run
                return DisclosureHit(
                    kind="overlap",
                    artifact_id=artifact_id,
                    answer_start=tokens[i][1],
                    answer_end=tokens[i + length - 1][2],
                    artifact_start=matches.starts[first],
                    artifact_end=matches.ends[last],
                    tokens=length,
                )

            for text, runs in texts:
                for task_id in task_ids:
                    self._groups.setdefault((task_id, key, text), _Group()).take(runs, hit, tokens)

    def _texts(self, answer: int, matches: Matches, shape: bytes) -> list[tuple[tuple[int, ...], list[Run]]]:
        """The runs of ``answer`` in an artifact of matches ``matches`` (and
        ``shape``), grouped by their text (their windows), in answer order:
        found once per answer and shape in a shard (boilerplate that many
        artifacts hold is run once)."""
        found = self._shapes.get((answer, shape))
        if found is None:
            index = self.context.index
            windows = index.answer_windows(answer)
            by_text: dict[bytes, tuple[tuple[int, ...], list[Run]]] = {}
            for run in answer_runs(index, answer, matches):
                of_run = windows[run[0] : run[0] + run[1] - index.n + 1]
                entry = by_text.get(content := of_run.tobytes())
                if entry is None:
                    entry = by_text[content] = (tuple(of_run.tolist()), [])
                entry[1].append(run)
            found = list(by_text.values())
            if len(self._shapes) >= _SHAPES_KEPT:
                self._shapes.clear()
            self._shapes[(answer, shape)] = found
        return found

    def _secret(self, artifact_id: str, value: str, start: int, stop: int, restricted: frozenset[int]) -> None:
        context = self.context
        for answer, at in context.secret_occurrences(value):
            task_ids = self._tasks(answer, restricted)
            if not task_ids:
                continue
            _, starts, ends = alnum_with_origins(context.spec.answers[answer])
            hit = DisclosureHit(
                kind="secret",
                artifact_id=artifact_id,
                answer_start=starts[at],
                answer_end=ends[at + len(value) - 1],
                artifact_start=start,
                artifact_end=stop,
                tokens=0,
            )
            key = context.key(answer)
            for task_id in task_ids:
                self._groups.setdefault((task_id, key, ()), _Group()).add(hit)

    def partial(self) -> DisclosurePartial:
        """The shard's partial result (every read ended: what is still
        batched is scanned first)."""
        self._flush()
        groups = tuple(
            FindingGroup(
                task_id=task_id,
                answer=answer,
                windows=windows,
                hits=tuple(sorted(group.hits, key=lambda h: h.order)[:LISTED_FINDINGS]),
                count=group.count,
            )
            for (task_id, answer, windows), group in sorted(self._groups.items())
        )
        windows = sorted(set(self._classifications) | set(self._denied))
        holders = tuple(
            WindowHolders(
                window=w,
                classifications=tuple(sorted(self._classifications.get(w, ()))),
                denied=tuple(sorted(self._denied.get(w, ()))),
            )
            for w in windows
        )
        return DisclosurePartial(groups=groups, holders=holders)
