"""Running the disclosure scan in this process, as a re-hash shard runs it:
artifacts fed to a shard's scanner in chunks of any size, the partials
reduced, one task's findings returned."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import blake3

from eceb_worker.families.eceb.disclosure import AnswerFindings, DisclosureHit
from eceb_worker.families.eceb.disclosure.context import ScanContext
from eceb_worker.families.eceb.disclosure.findings import DisclosurePartial, reduce_disclosures
from eceb_worker.families.eceb.disclosure.scanner import DisclosureScanner
from eceb_worker.families.eceb.disclosure.spec import ScanSpec, TaskPolicy


@dataclass(frozen=True)
class Held:
    artifact_id: str
    classification: str
    source_digest: str
    size_bytes: int


def held(artifact_id: str, data: bytes, classification: str = "restricted") -> Held:
    return Held(artifact_id, classification, blake3.blake3(data).hexdigest(), len(data))


def scan(
    context: ScanContext,
    artifacts: Sequence[tuple[Held, bytes]],
    *,
    chunk: int | None = None,
) -> DisclosurePartial:
    """One shard's partial: every artifact read once, in chunks of ``chunk`` bytes (whole when None)."""
    scanner = DisclosureScanner(context, [a for a, _ in artifacts])
    for position, (artifact, data) in enumerate(artifacts):
        sink = scanner.reading(position)
        size = chunk or max(len(data), 1)
        for at in range(0, len(data), size):
            sink.feed(memoryview(data)[at : at + size])
        sink.end(artifact.source_digest)
    return scanner.partial()


def findings(
    answers: Mapping[str, Sequence[str]],
    artifacts: Mapping[str, bytes],
    *,
    n: int = 8,
    allowed: Mapping[str, Sequence[str]] | None = None,
    denied: Mapping[str, Sequence[str]] | None = None,
    classifications: Mapping[str, str] | None = None,
    secrets: Iterable[tuple[str, int, int]] = (),
    chunk: int | None = None,
    shards: int = 1,
) -> dict[tuple[str, str], AnswerFindings]:
    """The findings of each task's answers (``answers``: task id -> answers)
    against ``artifacts`` (id -> bytes; classified ``restricted`` unless
    ``classifications`` says otherwise; every task allows ``public`` unless
    ``allowed`` says otherwise), by (task id, answer)."""
    classes = dict(classifications or {})
    tasks = sorted(answers)
    policies = tuple(
        TaskPolicy(
            task_id=t,
            allowed=tuple(sorted((allowed or {}).get(t, ("public",)))),
            denied=tuple(sorted((denied or {}).get(t, ()))),
        )
        for t in tasks
    )
    distinct = sorted({a for t in tasks for a in answers[t]})
    spec = ScanSpec(
        n=n,
        tasks=policies,
        answers=tuple(distinct),
        answer_tasks=tuple(tuple(i for i, t in enumerate(tasks) if a in answers[t]) for a in distinct),
        secrets=tuple(sorted(secrets)),
    )
    context = ScanContext(spec)
    items = [(held(i, data, classes.get(i, "restricted")), data) for i, data in sorted(artifacts.items())]
    size = max(1, -(-len(items) // shards))
    partials = [scan(context, items[at : at + size], chunk=chunk) for at in range(0, len(items), size)]
    reduced = reduce_disclosures(partials, {p.task_id: p for p in policies})
    by_key = {(f.task_id, f.answer): f for f in reduced}
    from eceb_worker.families.eceb.disclosure import answer_key

    return {(t, a): by_key[(t, answer_key(a))] for t in tasks for a in answers[t] if (t, answer_key(a)) in by_key}


def hits(answer: str, artifacts: Mapping[str, bytes], **options: object) -> list[DisclosureHit]:
    """The listed findings of one answer of one task."""
    found = findings({"t": [answer]}, artifacts, **options)  # type: ignore[arg-type]
    return list(found[("t", answer)].hits) if ("t", answer) in found else []
