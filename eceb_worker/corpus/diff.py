"""What changed from one corpus registry to another (ECEB-0.1 §5), and
what that does to a benchmark's tasks (§6): ``eceb corpus diff``.

The comparison is a merge-walk over the two registries' artifacts in
ascending artifact-id order, which is the corpus-root order a registry
eceb writes is in (the canonical record of an artifact starts with its
JSON-encoded id, and no JSON string is a proper prefix of another): one
pass, nothing looked up, memory for the differences only
(:func:`diff_artifacts`). A registry checked by the one reader
(:func:`~eceb_worker.corpus.registry.scan_registry`, keeping no artifact)
whose lines are in corpus-root order is then read again as a stream
(:func:`registry_stream`), its bytes hashed as they pass (they must be
those checked), so that two registries of any size are compared in
bounded memory; one whose lines are in another order is held whole and
sorted (:func:`diff_registries` compares two registries held whole).

Each artifact id is *added* (in the new registry only), *removed* (in the
old one only), *changed* (in both, a field differing: each change named by
field, old and new value) or unchanged. With a benchmark,
:func:`with_benchmark` names every task whose required or denied artifacts
were added, removed or changed, and says whether the corpus root the
benchmark pins still holds (is the new registry's).

A diff is canonical JSON and a newline (``symgliph.eceb/corpus-diff-v0.1``):
the same registries (whatever the order of their lines) and benchmark give
the same bytes. :func:`invert_diff` and :func:`apply_diff` state what a diff
means exactly: ``diff(B, A)`` is ``invert_diff(diff(A, B))``, and applying
``diff(A, B)`` to A's artifacts gives B's.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Final, Literal, Protocol, get_args

import blake3
import msgspec

from eceb_worker.core.canonical import canonical_json
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.lines import artifact_blocks, decode_block, plain_artifacts
from eceb_worker.corpus.registry import Registry
from eceb_worker.corpus.sorting import encoded_values
from eceb_worker.errors import InputError, Problem

__all__ = [
    "COMPARED_FIELDS",
    "CORPUS_DIFF_SCHEMA",
    "ArtifactChange",
    "ArtifactField",
    "BenchmarkChange",
    "CorpusDiff",
    "EvidenceTask",
    "FieldChange",
    "RegistrySide",
    "TaskArtifactChange",
    "TaskChange",
    "apply_diff",
    "diff_artifacts",
    "diff_registries",
    "encode_corpus_diff",
    "id_order",
    "invert_diff",
    "registry_stream",
    "with_benchmark",
]

CORPUS_DIFF_SCHEMA: Final = "symgliph.eceb/corpus-diff-v0.1"

ArtifactField = Literal["path", "kind", "classification", "source_digest", "size_bytes"]
"""The fields of an artifact a change can name (every field but its id)."""

COMPARED_FIELDS: Final[tuple[ArtifactField, ...]] = get_args(ArtifactField)
"""The fields compared, in the order a change lists them."""

Presence = Literal["added", "removed", "changed"]
"""An artifact of the new registry only, of the old one only, or of both with a field changed."""

Role = Literal["required", "denied"]
"""How a task names an artifact (ECEB-0.1 §6)."""


class FieldChange(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One field of an artifact that differs.

    Fields:
        field: the field's name (:data:`ArtifactField`).
        old, new: its value in the old and the new registry (text, or bytes
            for ``size_bytes``).
    """

    field: ArtifactField
    old: str | int
    new: str | int


class ArtifactChange(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An artifact id of both registries whose record differs.

    Fields:
        artifact_id: the artifact.
        changes: each field that differs, in :data:`COMPARED_FIELDS` order
            (never empty).
    """

    artifact_id: str
    changes: tuple[FieldChange, ...]


class RegistrySide(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a diff keeps of one registry.

    Fields:
        corpus_root: its corpus root (ECEB-0.1 §5), 64 lowercase hex characters.
        artifact_count: the artifacts it lists.
        size_bytes: their sizes summed, bytes.
    """

    corpus_root: str
    artifact_count: int
    size_bytes: int


class TaskArtifactChange(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An artifact a task requires or denies that was added, removed or changed.

    Fields:
        artifact_id: the artifact.
        role: ``required`` or ``denied`` (how the task names it).
        change: ``added`` (the new registry only has it), ``removed`` (the
            old one only has it) or ``changed``.
        changes: for ``changed``, each field that differs; else empty.
    """

    artifact_id: str
    role: Role
    change: Presence
    changes: tuple[FieldChange, ...] = ()


class TaskChange(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A task whose evidence moved.

    Fields:
        task_id: the task.
        artifacts: each of its required or denied artifacts that was added,
            removed or changed, in artifact-id order (corpus-root order),
            required before denied for one id.
    """

    task_id: str
    artifacts: tuple[TaskArtifactChange, ...]


class BenchmarkChange(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a diff does to a benchmark (ECEB-0.1 §6).

    Fields:
        benchmark_id: the benchmark.
        corpus_root: the corpus root it pins (its ``registry.corpus_root``).
        old_corpus_root_holds: the old registry's corpus root is that one.
        corpus_root_holds: the new registry's corpus root is that one (the
            benchmark still describes the new corpus; if not, it must be
            pinned again before it is evaluated against the new registry).
        task_count: the benchmark's tasks.
        tasks: each task with a required or denied artifact added, removed or
            changed, sorted by task id (others left out).
    """

    benchmark_id: str
    corpus_root: str
    old_corpus_root_holds: bool
    corpus_root_holds: bool
    task_count: int
    tasks: tuple[TaskChange, ...]


class CorpusDiff(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Two registries compared (schema ``symgliph.eceb/corpus-diff-v0.1``).

    Fields:
        schema: the schema identifier.
        old, new: the two registries' corpus roots, artifact counts and bytes.
        differ: an artifact was added, removed or changed.
        added: every artifact of the new registry only, whole, in artifact-id order.
        removed: every artifact of the old registry only, whole, in artifact-id order.
        changed: every artifact of both whose record differs, in artifact-id order.
        unchanged_count: the artifacts of both with the same record.
        benchmark: what the diff does to a benchmark; ``None`` without one.
    """

    schema: Literal["symgliph.eceb/corpus-diff-v0.1"]
    old: RegistrySide
    new: RegistrySide
    differ: bool
    added: tuple[Artifact, ...]
    removed: tuple[Artifact, ...]
    changed: tuple[ArtifactChange, ...]
    unchanged_count: int
    benchmark: BenchmarkChange | None = None


class EvidenceTask(Protocol):
    """What :func:`with_benchmark` reads of a task (a benchmark's
    :class:`~eceb_worker.families.eceb.benchmark.Task` is one)."""

    @property
    def task_id(self) -> str:
        """The task's id."""
        ...

    @property
    def required_artifacts(self) -> Sequence[str]:
        """The artifact ids it requires."""
        ...

    @property
    def denied_artifacts(self) -> Sequence[str]:
        """The artifact ids it denies."""
        ...


def _id_key(artifact_id: str) -> bytes:
    """The order of the walk: the id as a JSON string (canonical bytes)."""
    return canonical_json(artifact_id)


def id_order(artifacts: Iterable[Artifact]) -> list[Artifact]:
    """``artifacts`` in ascending artifact-id order (the JSON-encoded ids
    compared bytewise: corpus-root order for distinct ids). Holds them all."""
    return sorted(artifacts, key=lambda artifact: _id_key(artifact.artifact_id))


def _ordered(artifacts: Iterable[Artifact], side: str) -> Iterator[tuple[bytes, Artifact]]:
    """Each artifact with its key; ValueError when the keys do not ascend strictly."""
    previous: bytes | None = None
    for artifact in artifacts:
        key = _id_key(artifact.artifact_id)
        if previous is not None and not previous < key:
            raise ValueError(
                f"the {side} artifacts are not in strictly ascending artifact-id order at {artifact.artifact_id!r}"
            )
        previous = key
        yield key, artifact


def _field_changes(old: Artifact, new: Artifact) -> tuple[FieldChange, ...]:
    return tuple(
        FieldChange(field=field, old=getattr(old, field), new=getattr(new, field))
        for field in COMPARED_FIELDS
        if getattr(old, field) != getattr(new, field)
    )


class _Tally:
    """An artifact count and bytes, summed as the walk goes."""

    def __init__(self) -> None:
        self.count = 0
        self.size = 0

    def add(self, artifact: Artifact) -> None:
        self.count += 1
        self.size += artifact.size_bytes


def diff_artifacts(old: Iterable[Artifact], new: Iterable[Artifact], *, old_root: str, new_root: str) -> CorpusDiff:
    """Compare the ``old`` artifacts with the ``new`` ones, both given in
    strictly ascending artifact-id order (:func:`id_order`; a registry's
    lines in corpus-root order are), read once each, as streams: memory
    holds the differences only. ``old_root`` and ``new_root`` are their
    registries' corpus roots (ECEB-0.1 §5), stated as given.

    Returns the :class:`CorpusDiff` (no benchmark). Raises ValueError when
    either side's ids do not ascend strictly (out of order, or an id twice).
    Pure; exact.
    """
    olds, news = _ordered(old, "old"), _ordered(new, "new")
    old_tally, new_tally = _Tally(), _Tally()
    added: list[Artifact] = []
    removed: list[Artifact] = []
    changed: list[ArtifactChange] = []
    unchanged = 0
    before, after = next(olds, None), next(news, None)
    while before is not None or after is not None:
        if after is None or (before is not None and before[0] < after[0]):
            assert before is not None
            removed.append(before[1])
            old_tally.add(before[1])
            before = next(olds, None)
        elif before is None or after[0] < before[0]:
            added.append(after[1])
            new_tally.add(after[1])
            after = next(news, None)
        else:
            changes = () if before[1] == after[1] else _field_changes(before[1], after[1])
            if changes:
                changed.append(ArtifactChange(artifact_id=after[1].artifact_id, changes=changes))
            else:
                unchanged += 1
            old_tally.add(before[1])
            new_tally.add(after[1])
            before, after = next(olds, None), next(news, None)
    return CorpusDiff(
        schema=CORPUS_DIFF_SCHEMA,
        old=RegistrySide(corpus_root=old_root, artifact_count=old_tally.count, size_bytes=old_tally.size),
        new=RegistrySide(corpus_root=new_root, artifact_count=new_tally.count, size_bytes=new_tally.size),
        differ=bool(added or removed or changed),
        added=tuple(added),
        removed=tuple(removed),
        changed=tuple(changed),
        unchanged_count=unchanged,
    )


def registry_stream(chunks: Iterable[bytes], registry: Registry, name: str, *, digest: str) -> Iterator[Artifact]:
    """The artifacts of ``registry``, read again from its bytes ``chunks``
    as a stream, in the file's line order: ``registry`` is what the one
    reader (:func:`~eceb_worker.corpus.registry.scan_registry`, with any
    ``keep``) made of the same file, whose lines are in corpus-root order,
    and ``digest`` the BLAKE3 of the bytes it checked.

    The lines are not checked again one by one: the bytes are hashed as
    they pass and must be ``digest``, and the artifact ids must ascend.
    Memory: one chunk's lines. Raises ValueError when ``registry`` is not in
    corpus-root order; :class:`InputError` naming ``name`` when the bytes
    are not those checked (the file changed since), at the first artifact
    out of order or at the end; whatever ``chunks`` raises.
    """
    if not registry.in_root_order:
        raise ValueError(f"{name}: its lines are not in corpus-root order: it cannot be read as a stream")
    hasher = blake3.blake3()

    def hashed() -> Iterator[bytes]:
        for chunk in chunks:
            hasher.update(chunk)
            yield chunk

    count = 0
    previous: list[bytes] = []
    for block, lines, first in artifact_blocks(hashed()):
        artifacts, _numbers, _ends = decode_block(block, lines, first, name, None)
        if not artifacts:
            continue
        keys = [*previous, *encoded_values([a.artifact_id for a in artifacts])]
        if not all(map(operator.lt, keys, islice(keys, 1, None))):
            raise _changed(name)
        previous = keys[-1:]
        count += len(artifacts)
        yield from plain_artifacts(artifacts)
    if count != registry.artifact_count or hasher.hexdigest() != digest:
        raise _changed(name)


def _changed(name: str) -> InputError:
    return InputError([Problem(file=name, message="changed while it was read (its bytes are not those checked)")])


def _walked(registry: Registry, side: str) -> Sequence[Artifact]:
    """The registry's artifacts in artifact-id order; ValueError unless it kept every one."""
    if len(registry.artifacts) != registry.artifact_count:
        raise ValueError(f"the {side} registry was read without all its artifacts: a diff needs every one")
    return registry.artifacts if registry.in_root_order else id_order(registry.artifacts)


def diff_registries(old: Registry, new: Registry) -> CorpusDiff:
    """Compare registry ``old`` with registry ``new``, both read with every
    artifact kept (:func:`~eceb_worker.corpus.registry.scan_registry` with
    ``keep=KEEP_ALL``): :func:`diff_artifacts` over their artifacts, a
    registry not in corpus-root order put in that order first (in memory).

    Memory: both registries are held by the caller; the walk adds the
    differences. Raises ValueError when a registry was read without all its
    artifacts. Pure; the same bytes whatever the order of the registries' lines.
    """
    return diff_artifacts(_walked(old, "old"), _walked(new, "new"), old_root=old.corpus_root, new_root=new.corpus_root)


def _moved(diff: CorpusDiff) -> dict[str, tuple[Presence, tuple[FieldChange, ...]]]:
    """Every artifact id the diff names, with how it moved."""
    moved: dict[str, tuple[Presence, tuple[FieldChange, ...]]] = {}
    moved.update((a.artifact_id, ("added", ())) for a in diff.added)
    moved.update((a.artifact_id, ("removed", ())) for a in diff.removed)
    moved.update((c.artifact_id, ("changed", c.changes)) for c in diff.changed)
    return moved


def _task_change(task: EvidenceTask, moved: dict[str, tuple[Presence, tuple[FieldChange, ...]]]) -> TaskChange:
    named: list[tuple[bytes, int, TaskArtifactChange]] = []
    roles: tuple[tuple[Role, Sequence[str]], ...] = (
        ("required", task.required_artifacts),
        ("denied", task.denied_artifacts),
    )
    for rank, (role, ids) in enumerate(roles):
        for artifact_id in set(ids) & moved.keys():
            presence, changes = moved[artifact_id]
            entry = TaskArtifactChange(artifact_id=artifact_id, role=role, change=presence, changes=changes)
            named.append((_id_key(artifact_id), rank, entry))
    named.sort(key=lambda item: item[:2])
    return TaskChange(task_id=task.task_id, artifacts=tuple(entry for _key, _rank, entry in named))


def with_benchmark(
    diff: CorpusDiff, *, benchmark_id: str, corpus_root: str, tasks: Iterable[EvidenceTask]
) -> CorpusDiff:
    """``diff`` with what it does to a benchmark (``benchmark``): the
    benchmark ``benchmark_id`` pinning ``corpus_root`` (its
    ``registry.corpus_root``), whose ``tasks`` require and deny artifacts
    (ECEB-0.1 §6). Each task with a required or denied artifact added,
    removed or changed is named, with those artifacts; whether the old and
    the new registry's corpus roots are the pinned one is said.

    Memory: the diff's artifact ids and the tasks. Pure.
    """
    moved = _moved(diff)
    every = list(tasks)
    changes = [change for change in (_task_change(task, moved) for task in every) if change.artifacts]
    change = BenchmarkChange(
        benchmark_id=benchmark_id,
        corpus_root=corpus_root,
        old_corpus_root_holds=diff.old.corpus_root == corpus_root,
        corpus_root_holds=diff.new.corpus_root == corpus_root,
        task_count=len(every),
        tasks=tuple(sorted(changes, key=lambda task: task.task_id)),
    )
    return msgspec.structs.replace(diff, benchmark=change)


_INVERSE: Final[dict[Presence, Presence]] = {"added": "removed", "removed": "added", "changed": "changed"}


def _swapped(changes: tuple[FieldChange, ...]) -> tuple[FieldChange, ...]:
    return tuple(FieldChange(field=c.field, old=c.new, new=c.old) for c in changes)


def _inverted_benchmark(change: BenchmarkChange) -> BenchmarkChange:
    return msgspec.structs.replace(
        change,
        old_corpus_root_holds=change.corpus_root_holds,
        corpus_root_holds=change.old_corpus_root_holds,
        tasks=tuple(
            TaskChange(
                task_id=task.task_id,
                artifacts=tuple(
                    msgspec.structs.replace(entry, change=_INVERSE[entry.change], changes=_swapped(entry.changes))
                    for entry in task.artifacts
                ),
            )
            for task in change.tasks
        ),
    )


def invert_diff(diff: CorpusDiff) -> CorpusDiff:
    """The diff from ``diff``'s new registry to its old one: sides swapped,
    added and removed swapped, every field change's values swapped (and the
    benchmark's likewise). ``invert_diff(diff_registries(a, b)) ==
    diff_registries(b, a)``. Pure."""
    return msgspec.structs.replace(
        diff,
        old=diff.new,
        new=diff.old,
        added=diff.removed,
        removed=diff.added,
        changed=tuple(ArtifactChange(artifact_id=c.artifact_id, changes=_swapped(c.changes)) for c in diff.changed),
        benchmark=None if diff.benchmark is None else _inverted_benchmark(diff.benchmark),
    )


def apply_diff(artifacts: Iterable[Artifact], diff: CorpusDiff) -> list[Artifact]:
    """``artifacts`` (the old registry's) with ``diff`` applied: the removed
    taken out, the changed fields set, the added put in; returned in
    artifact-id order. Applying ``diff_registries(a, b)`` to ``a``'s
    artifacts gives ``b``'s.

    Memory: every artifact. Raises ValueError when the diff does not apply:
    an artifact removed or changed that is not there as the diff says, an
    artifact added that is there already. Pure.
    """
    by_id = {artifact.artifact_id: artifact for artifact in artifacts}
    for gone in diff.removed:
        if by_id.pop(gone.artifact_id, None) != gone:
            raise ValueError(f"removed artifact {gone.artifact_id!r} is not there as the diff says")
    for change in diff.changed:
        artifact = by_id.get(change.artifact_id)
        if artifact is None or any(getattr(artifact, c.field) != c.old for c in change.changes):
            raise ValueError(f"changed artifact {change.artifact_id!r} is not there as the diff says")
        by_id[change.artifact_id] = msgspec.structs.replace(artifact, **{c.field: c.new for c in change.changes})
    for new in diff.added:
        if new.artifact_id in by_id:
            raise ValueError(f"added artifact {new.artifact_id!r} is there already")
        by_id[new.artifact_id] = new
    return id_order(by_id.values())


def encode_corpus_diff(diff: CorpusDiff) -> bytes:
    """The diff's bytes: canonical JSON (RFC 8785) and a final newline."""
    return canonical_json(diff) + b"\n"
