"""eceb's own baselines (ECEB-0.1 §7): ``full_permitted_context`` and
``naive_top_k``, built by eceb itself so that the run's writer can neither
pad nor thin them.

Both start from the artifacts the task permits (:func:`permitted`: an
allowed classification, not denied, ECEB-0.1 §6, §14), read and handed in
by the caller as ``(artifact, bytes)`` pairs. Each artifact is rendered as
one block (:func:`render_artifact`) of its text, the bytes decoded as UTF-8
with ``errors="replace"`` (:func:`decode_text`: a byte that is no UTF-8 is
shown as U+FFFD rather than refused, so a binary or Latin-1 file still
takes its place). The context is the concatenation of the blocks.

Packing is greedy and whole-artifact: in the strategy's order, each block
that still fits in the available tokens is taken and one that does not is
skipped (the next ones are still tried). Tokens are counted by
:func:`estimate_tokens`, a conservative local estimate; the gates judge the
prompt by the provider's count (ECEB-0.1 §11 gate 2, §16).

- :func:`full_permitted_context`: the task's required artifacts, then the
  other permitted ones, each part in artifact-id order.
- :func:`naive_top_k`: BM25 score order (:class:`Bm25Index`), ties by
  artifact id, artifacts scoring zero left out.

Everything here is deterministic and independent of the order of its
inputs. No I/O.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Iterable, Sequence
from typing import Any, Final, Protocol

import bm25s  # type: ignore[import-untyped]
import msgspec
import numpy as np

from eceb_worker.core.digests import digest_bytes
from eceb_worker.corpus.artifacts import Artifact, Classification
from eceb_worker.families.eceb.run import SelectedArtifact

__all__ = [
    "BYTES_PER_TOKEN",
    "ArtifactBytes",
    "Bm25Index",
    "Packed",
    "PermissionSource",
    "decode_text",
    "estimate_tokens",
    "full_permitted_context",
    "naive_top_k",
    "permitted",
    "render_artifact",
]

BYTES_PER_TOKEN: Final = 3
"""Bytes of UTF-8 counted as one token by :func:`estimate_tokens`.

Conservative on purpose: subword tokenizers give about 4 bytes a token for
English prose and about 3 for code and structured text (YAML, JSON, Go), so
dividing by 3 over-counts prose and roughly matches code. A baseline packed
by this count rarely exceeds the provider's count of the same text; the
gates use the provider's count (ECEB-0.1 §11 gate 2), never this one."""

ArtifactBytes = tuple[Artifact, bytes]
"""A registered artifact and the complete bytes read for it."""

_STOPWORDS: Final = "en"
"""bm25s's English stop-word list, for documents and queries alike."""


class PermissionSource(Protocol):
    """What :func:`permitted` reads of a task: its allow-list and denials
    (a :class:`~eceb_worker.families.eceb.benchmark.Task` or a request's
    :class:`~eceb_worker.families.eceb.making.protocol.Permissions`)."""

    @property
    def allowed_classifications(self) -> tuple[Classification, ...]:
        """Classifications the actor may receive."""
        ...

    @property
    def denied_artifacts(self) -> tuple[str, ...]:
        """Artifact ids the actor must not receive."""
        ...


class Packed(msgspec.Struct, frozen=True, kw_only=True):
    """A baseline's context, packed within its available tokens.

    Fields:
        context: the rendered context (concatenated blocks; ``""`` when none fits).
        selected_artifacts: the artifacts in ``context``, in context order,
            each with the BLAKE3 of the bytes read.
        estimated_tokens: :func:`estimate_tokens` of ``context``.
        permitted_count, permitted_bytes: the permitted artifacts offered to
            the strategy, and their source bytes.
        selected_count, selected_bytes: the selected ones, and their source
            bytes (the context is larger: it adds the block markup).
    """

    context: str
    selected_artifacts: tuple[SelectedArtifact, ...]
    estimated_tokens: int
    permitted_count: int
    permitted_bytes: int
    selected_count: int
    selected_bytes: int


def permitted(task: PermissionSource, artifacts: Iterable[Artifact]) -> list[Artifact]:
    """The artifacts ``task`` permits (ECEB-0.1 §6, §14): classification in
    its allow-list (never inferred from order) and not denied, sorted by
    artifact id."""
    allowed = frozenset(task.allowed_classifications)
    denied = frozenset(task.denied_artifacts)
    chosen = [a for a in artifacts if a.classification in allowed and a.artifact_id not in denied]
    return sorted(chosen, key=lambda a: a.artifact_id)


def estimate_tokens(text: str) -> int:
    """A deterministic, conservative local token count of ``text``:
    ⌈UTF-8 bytes / 3⌉ (see :data:`BYTES_PER_TOKEN`)."""
    return _tokens_of(len(text.encode("utf-8")))


def _tokens_of(size_bytes: int) -> int:
    """⌈size_bytes / BYTES_PER_TOKEN⌉."""
    return -(-size_bytes // BYTES_PER_TOKEN)


def decode_text(data: bytes) -> str:
    """An artifact's text: its bytes decoded as UTF-8, each invalid byte
    sequence replaced by U+FFFD (never refused)."""
    return data.decode("utf-8", errors="replace")


def render_artifact(artifact: Artifact, text: str) -> str:
    """One artifact's block of the context::

        <artifact id="ID" path="PATH">
        TEXT
        </artifact>

    ``ID`` and ``PATH`` escaped as XML attribute values (``&``, ``<``,
    ``>``, ``"`` and ``'``); ``TEXT`` as it is."""
    artifact_id = html.escape(artifact.artifact_id, quote=True)
    path = html.escape(artifact.path, quote=True)
    return f'<artifact id="{artifact_id}" path="{path}">\n{text}\n</artifact>\n'


def _by_id(items: Iterable[ArtifactBytes]) -> dict[str, ArtifactBytes]:
    """``items`` keyed by artifact id; ValueError when an id occurs twice."""
    keyed: dict[str, ArtifactBytes] = {}
    for item in items:
        artifact_id = item[0].artifact_id
        if artifact_id in keyed:
            raise ValueError(f"artifact {artifact_id!r} given twice")
        keyed[artifact_id] = item
    return keyed


def _pack(ordered: Sequence[ArtifactBytes], offered: dict[str, ArtifactBytes], available_tokens: int) -> Packed:
    """Greedy packing of ``ordered`` (see the module) within ``available_tokens``."""
    blocks: list[str] = []
    selected: list[SelectedArtifact] = []
    used_bytes = 0
    selected_bytes = 0
    for artifact, data in ordered:
        block = render_artifact(artifact, decode_text(data))
        block_bytes = len(block.encode("utf-8"))
        if _tokens_of(used_bytes + block_bytes) > available_tokens:
            continue
        blocks.append(block)
        used_bytes += block_bytes
        selected_bytes += len(data)
        selected.append(SelectedArtifact(artifact_id=artifact.artifact_id, observed_digest=digest_bytes(data)))
    return Packed(
        context="".join(blocks),
        selected_artifacts=tuple(selected),
        estimated_tokens=_tokens_of(used_bytes),
        permitted_count=len(offered),
        permitted_bytes=sum(len(data) for _, data in offered.values()),
        selected_count=len(selected),
        selected_bytes=selected_bytes,
    )


def full_permitted_context(
    permitted_with_texts: Iterable[ArtifactBytes], available_tokens: int, required: Iterable[str] = ()
) -> Packed:
    """The ``full_permitted_context`` baseline (ECEB-0.1 §7): the permitted
    artifacts (as :func:`permitted` chose them, with their bytes), the
    task's ``required`` ones first, then every other one, each part in
    artifact-id order, packed greedily within ``available_tokens`` (the
    model's input window less the rest of the prompt; zero or less: an
    empty context). Required first: the baseline is judged by the same
    gates (its evidence must be selected, ECEB-0.1 §11 gate 5), so when the
    window cannot hold every permitted artifact it holds the evidence and
    as much other permitted context as fits. Raises ValueError when an
    artifact id occurs twice."""
    offered = _by_id(permitted_with_texts)
    first = frozenset(required)
    ordered = [offered[artifact_id] for artifact_id in sorted(offered, key=lambda i: (i not in first, i))]
    return _pack(ordered, offered, available_tokens)


def naive_top_k(
    index: Bm25Index, query: str, permitted_with_texts: Iterable[ArtifactBytes], available_tokens: int
) -> Packed:
    """The ``naive_top_k`` baseline (ECEB-0.1 §7): the permitted artifacts
    ranked by ``index`` for ``query`` (descending BM25 score, ties by
    artifact id, zero scores left out), packed greedily within
    ``available_tokens``. A permitted artifact ``index`` does not hold is
    never ranked. Raises ValueError when an artifact id occurs twice."""
    offered = _by_id(permitted_with_texts)
    ordered = [offered[artifact_id] for artifact_id in index.rank(query, offered)]
    return _pack(ordered, offered, available_tokens)


def _tokenize(texts: list[str]) -> Any:
    """bm25s's tokenization (lower case, words of two or more characters,
    English stop words removed)."""
    return bm25s.tokenize(texts, stopwords=_STOPWORDS, return_ids=True, show_progress=False)


class Bm25Index:
    """A BM25 index (bm25s, Lucene variant, k1 = 1.5, b = 0.75) over the
    texts of every artifact a run needs, built once and filtered per task.

    Scores (and so rankings) depend on the whole indexed set through the
    inverse document frequencies: the same set gives the same rankings.
    Build it with :meth:`build`.
    """

    def __init__(self, artifact_ids: tuple[str, ...], model: Any) -> None:
        """Use :meth:`build`."""
        self._ids = artifact_ids
        self._position = {artifact_id: i for i, artifact_id in enumerate(artifact_ids)}
        self._model = model

    @classmethod
    def build(cls, texts: Sequence[tuple[str, str]]) -> Bm25Index:
        """Index ``texts``, ``(artifact_id, text)`` pairs (texts from
        :func:`decode_text`), in any order: they are indexed in artifact-id
        order, so the index does not depend on it. Raises ValueError when an
        artifact id occurs twice."""
        ordered = sorted(texts, key=lambda pair: pair[0])
        ids = tuple(artifact_id for artifact_id, _ in ordered)
        if len(set(ids)) != len(ids):
            duplicate = next(a for a, b in itertools.pairwise(ids) if a == b)
            raise ValueError(f"artifact {duplicate!r} given twice")
        tokenized = _tokenize([text for _, text in ordered])
        if not any(tokenized.ids):
            return cls(ids, None)  # no word anywhere: every score is zero
        model = bm25s.BM25()
        model.index(tokenized, show_progress=False)
        return cls(ids, model)

    def __len__(self) -> int:
        """Number of indexed artifacts."""
        return len(self._ids)

    def rank(self, query: str, permitted_ids: Iterable[str]) -> list[str]:
        """The ids of ``permitted_ids`` that the index holds and whose score
        for ``query`` is positive, by descending score, ties by artifact id
        (independent of the order of ``permitted_ids``)."""
        positions = sorted({self._position[i] for i in permitted_ids if i in self._position})
        if self._model is None or not positions:
            return []
        words = bm25s.tokenize(query, stopwords=_STOPWORDS, return_ids=False, show_progress=False)[0]
        token_ids = self._model.get_tokens_ids(words)
        if not token_ids:
            return []
        mask = np.zeros(len(self._ids), dtype=np.float32)
        mask[positions] = 1
        scores = self._model.get_scores_from_ids(token_ids, weight_mask=mask)
        scored = [(float(scores[p]), self._ids[p]) for p in positions if scores[p] > 0]
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return [artifact_id for _, artifact_id in scored]
