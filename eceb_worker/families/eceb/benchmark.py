"""Benchmark definitions (ECEB-0.1 §4, §6): the corpus registry they rest on
and their quality-constrained tasks.

A benchmark file (``symgliph.eceb/benchmark-v0.1``) is one JSON document. It
names its registry file (a path relative to the benchmark file) and pins the
registry's corpus root, so a benchmark cannot silently move to another corpus.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

import blake3
import msgspec

from eceb_worker.core.arithmetic import SAFE_INTEGER_MAX
from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.digests import Digest, digest_bytes
from eceb_worker.core.identifiers import Identifier
from eceb_worker.corpus.artifacts import Classification

__all__ = [
    "Abstention",
    "Benchmark",
    "RegistryReference",
    "SecretSpan",
    "Task",
    "normalized_task",
    "query_digest",
    "task_root",
]

TASK_ROOT_DOMAIN: Final = b"symgliph:eceb:tasks:v0.1\x00"

Milli = Annotated[int, msgspec.Meta(ge=0, le=1000, description="Thousandths (0..1000).")]
NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Budget = Annotated[int, msgspec.Meta(gt=0, le=SAFE_INTEGER_MAX, description="Token budget: prompt tokens, positive.")]


class Abstention(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A task no policy-permitted answer exists for (ECEB-0.1 §17): the
    system is expected to refuse.

    Fields:
        refusal_markers: phrases of which an answer must hold at least one to
            count as a refusal (matched as answer terms are: NFKC, case folded).
    """

    refusal_markers: Annotated[tuple[NonEmpty, ...], msgspec.Meta(min_length=1)]


class Task(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One quality-constrained task (ECEB-0.1 §6).

    Fields:
        task_id: unique in the benchmark.
        query: the user query, verbatim.
        required_artifacts: artifact ids an acceptable answer rests on; each
            must exist in the registry.
        allowed_classifications: classifications the actor may receive, listed
            explicitly (never inferred from order).
        denied_artifacts: artifact ids the actor must not receive; independent
            of ``required_artifacts`` (an id may not be in both).
        budget_ladder: strictly ascending positive token budgets.
        minimum_quality_milli: absolute quality floor, thousandths.
        maximum_quality_regression_milli: largest allowed drop below the
            baseline's quality, thousandths.
        required_answer_terms: terms every answer must contain (case-insensitive).
        required_repetitions: observations each strategy-budget group needs (positive).
        abstention: set for an abstention task (§17): every answer must
            refuse (hold a refusal marker); ``None`` (left out) otherwise.
    """

    task_id: Identifier
    query: NonEmpty
    required_artifacts: tuple[Identifier, ...]
    allowed_classifications: tuple[Classification, ...]
    denied_artifacts: tuple[Identifier, ...] = ()
    budget_ladder: tuple[Budget, ...]
    minimum_quality_milli: Milli
    maximum_quality_regression_milli: Milli
    required_answer_terms: tuple[NonEmpty, ...] = ()
    required_repetitions: Annotated[int, msgspec.Meta(gt=0, le=SAFE_INTEGER_MAX)]
    abstention: Abstention | None = None


class SecretSpan(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A secret value marked in an artifact (ECEB-0.1 §17), by where it is,
    so that the benchmark never writes the value itself: the evaluator reads
    it from the artifact's verified bytes.

    Fields:
        artifact_id: the artifact holding it (must be in the registry).
        start, end: its bytes in the artifact, ``[start, end)``, 0-based;
            not empty, and within the artifact's registered size.
    """

    artifact_id: Identifier
    start: Annotated[int, msgspec.Meta(ge=0, le=SAFE_INTEGER_MAX)]
    end: Annotated[int, msgspec.Meta(ge=0, le=SAFE_INTEGER_MAX)]


class RegistryReference(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Where a benchmark's registry is and which corpus it must describe.

    Fields:
        path: the registry file, relative to the benchmark file's directory
            (or to the prefix of an ``s3://`` benchmark).
        corpus_root: the corpus root the registry must have (ECEB-0.1 §5).
    """

    path: NonEmpty
    corpus_root: Digest


class Benchmark(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A benchmark definition (schema ``symgliph.eceb/benchmark-v0.1``).

    Fields:
        schema: the schema identifier.
        benchmark_id: a name for the benchmark.
        description: free text.
        registry: the corpus registry this benchmark rests on.
        tasks: the tasks, in any order (task ids are unique).
        secret_spans: marked secret values, checked in every answer of a
            task that may not see their artifact (left out: none).
    """

    schema: Literal["symgliph.eceb/benchmark-v0.1"]
    benchmark_id: Identifier
    description: str = ""
    registry: RegistryReference
    tasks: tuple[Task, ...]
    secret_spans: tuple[SecretSpan, ...] = ()


_OMITTED_WHEN_DEFAULT: Final = ("abstention",)
"""Task fields added after the first task roots were published: left out of
a task's canonical form while they hold their default, so that the task root
of a benchmark that does not use them is unchanged."""


def query_digest(query: str) -> str:
    """BLAKE3-256 (hex) of the query's UTF-8 bytes: how a run shows which task text it used."""
    return digest_bytes(query.encode("utf-8"))


def normalized_task(task: Task) -> Task:
    """``task`` with its set-valued lists sorted (the ladder is already ascending)."""
    return msgspec.structs.replace(
        task,
        required_artifacts=tuple(sorted(task.required_artifacts)),
        allowed_classifications=tuple(sorted(task.allowed_classifications)),
        denied_artifacts=tuple(sorted(task.denied_artifacts)),
        required_answer_terms=tuple(sorted(task.required_answer_terms)),
        abstention=None
        if task.abstention is None
        else Abstention(refusal_markers=tuple(sorted(task.abstention.refusal_markers))),
    )


def task_root(tasks: tuple[Task, ...] | list[Task]) -> str:
    """The task root: ``BLAKE3("symgliph:eceb:tasks:v0.1\\0" || canonical(task) || "\\n" ...)``
    over tasks sorted by canonical bytes, as the corpus root does for
    artifacts (ECEB-0.1 §16 asks for "immutable corpus and task roots").

    Canonical form: RFC 8785 (msgspec sorted-key encoding; tasks hold only
    strings, integers and lists) of the task with its set-valued lists
    (required and denied artifacts, allowed classifications, answer terms)
    sorted, so the root does not depend on the order they were written in;
    a field of :data:`_OMITTED_WHEN_DEFAULT` holding its default is left out.
    Returns 64 lowercase hex characters.
    """
    hasher = blake3.blake3(TASK_ROOT_DOMAIN)
    for record in sorted(_canonical_task(t) for t in tasks):
        hasher.update(record)
        hasher.update(b"\n")
    return hasher.hexdigest()


def _canonical_task(task: Task) -> bytes:
    """The canonical bytes of ``task`` as the task root hashes them."""
    normalized = normalized_task(task)
    if all(getattr(task, name) is None for name in _OMITTED_WHEN_DEFAULT):
        fields = {f: getattr(normalized, f) for f in Task.__struct_fields__ if f not in _OMITTED_WHEN_DEFAULT}
        return canonical_json(fields)
    return canonical_json(normalized)
