"""The checks of a benchmark that did not decode as a whole (ECEB-0.1 §6):
its schema problems do not hide the checks of the tasks and secret spans
that decode on their own (``eceb validate`` lists every problem at once)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from eceb_worker.core.decoding import decoded_items
from eceb_worker.core.digests import is_digest
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.errors import Problem
from eceb_worker.families.eceb.benchmark import SecretSpan, Task
from eceb_worker.families.eceb.consistency import secret_span_problems, task_problems

__all__ = ["benchmark_parts", "parts_problems"]


class BenchmarkParts(msgspec.Struct, frozen=True, kw_only=True):
    """What decodes of a benchmark read leniently.

    Fields:
        tasks, secret_spans: the items that decode, each with its position in its list.
        registry_path: the registry's path, when it is a non-empty string.
        pinned_root: the corpus root the benchmark pins, when it is a digest.
        no_tasks: the benchmark's ``tasks`` is an empty list.
    """

    tasks: list[tuple[int, Task]]
    secret_spans: list[tuple[int, SecretSpan]]
    registry_path: str | None
    pinned_root: str | None
    no_tasks: bool

    @property
    def artifact_ids(self) -> frozenset[str]:
        """Every artifact id the decoded tasks require or deny, or the decoded spans mark."""
        named = {a for _, task in self.tasks for a in (*task.required_artifacts, *task.denied_artifacts)}
        named.update(span.artifact_id for _, span in self.secret_spans)
        return frozenset(named)


def benchmark_parts(value: Mapping[str, Any]) -> BenchmarkParts:
    """The parts of a benchmark read leniently (``value``: its top-level object) that decode."""
    reference = value.get("registry")
    path = reference.get("path") if isinstance(reference, dict) else None
    pinned = reference.get("corpus_root") if isinstance(reference, dict) else None
    return BenchmarkParts(
        tasks=decoded_items(value.get("tasks"), Task),
        secret_spans=decoded_items(value.get("secret_spans"), SecretSpan),
        registry_path=path if isinstance(path, str) and path else None,
        pinned_root=pinned if isinstance(pinned, str) and is_digest(pinned) else None,
        no_tasks=value.get("tasks") == [],
    )


def parts_problems(
    parts: BenchmarkParts, artifacts: Mapping[str, Artifact] | None, corpus_root: str | None, *, file: str
) -> list[Problem]:
    """The checks :func:`~eceb_worker.families.eceb.consistency.benchmark_problems`
    makes, of the ``parts`` that decoded (``artifacts`` and ``corpus_root``
    as there: ``None`` when the registry could not be loaded)."""
    problems: list[Problem] = []
    if parts.no_tasks:
        problems.append(Problem(file=file, field="tasks", message="is empty: a benchmark needs at least one task"))
    if corpus_root is not None and parts.pinned_root is not None and parts.pinned_root != corpus_root:
        message = f"pins {parts.pinned_root} but the registry's corpus root is {corpus_root}"
        problems.append(Problem(file=file, record="registry", field="corpus_root", message=message))
    problems.extend(task_problems(parts.tasks, artifacts, file=file))
    problems.extend(secret_span_problems(parts.secret_spans, artifacts, file=file))
    return problems
