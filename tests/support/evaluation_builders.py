"""Builders for evaluation tests: a tiny registry, tasks and observations."""

from __future__ import annotations

from typing import Any

import blake3
import msgspec

from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.families.eceb.benchmark import Task, query_digest
from eceb_worker.families.eceb.run import (
    AuxiliaryCost,
    Configuration,
    Decoding,
    JudgeProfile,
    ModelIdentity,
    Observation,
    PricingSnapshot,
    SelectedArtifact,
    Tokenizer,
)
from eceb_worker.families.eceb.tasks import TaskEvidence, evaluate_task
from eceb_worker.families.eceb.verdicts import TaskResult
from tests.support.helpers import artifact

ARTIFACTS: dict[str, Artifact] = {
    a.artifact_id: a
    for a in [
        artifact("req", classification="internal", content=b"required"),
        artifact("extra", classification="public", content=b"extra"),
        artifact("secret", classification="restricted", content=b"secret"),
        artifact("denied", classification="internal", content=b"denied"),
    ]
}
STALE = blake3.blake3(b"old").hexdigest()


def task(**overrides: Any) -> Task:
    fields: dict[str, Any] = {
        "task_id": "t",
        "query": "What is required?",
        "required_artifacts": ("req",),
        "allowed_classifications": ("public", "internal"),
        "denied_artifacts": ("denied",),
        "budget_ladder": (100, 200, 300),
        "minimum_quality_milli": 700,
        "maximum_quality_regression_milli": 100,
        "required_answer_terms": ("Straße",),
        "required_repetitions": 2,
    }
    fields.update(overrides)
    return Task(**fields)


def configuration(configuration_id: str = "c", *, model: str = "m", input_rate: int = 1_000_000) -> Configuration:
    return Configuration(
        configuration_id=configuration_id,
        model=ModelIdentity(provider="p", name=model, revision="r1"),
        judge=JudgeProfile(profile="j", model=ModelIdentity(provider="p", name="judge")),
        tokenizer=Tokenizer(name="tok"),
        decoding=Decoding(temperature_milli=0, max_output_tokens=100),
        pricing=PricingSnapshot(
            source="list",
            date="2026-07-01",
            input_micro_usd_per_mtok=input_rate,
            cached_input_micro_usd_per_mtok=input_rate // 10,
            output_micro_usd_per_mtok=input_rate * 4,
        ),
    )


def obs(
    strategy: str = "compiled",
    budget: int | None = 100,
    repetition: int = 1,
    *,
    the_task: Task | None = None,
    tokens: int = 90,
    quality: int = 900,
    answer: str = "see STRASSE 1",
    selected: tuple[str, ...] = ("req",),
    digests: dict[str, str] | None = None,
    context: str = "ctx",
    cost: int | None = None,
    output_cost: int = 0,
    cached: int | None = None,
    configuration_id: str = "c",
    query: str | None = None,
) -> Observation:
    t = the_task or task()
    return Observation(
        task_id=t.task_id,
        strategy=strategy,  # type: ignore[arg-type]
        budget=budget,
        repetition=repetition,
        configuration_id=configuration_id,
        query_digest=query_digest(t.query if query is None else query),
        input_tokens=tokens,
        cached_input_tokens=cached,
        output_tokens=0,
        input_cost_micro_usd=tokens if cost is None else cost,
        output_cost_micro_usd=output_cost,
        latency_ms=100,
        quality_milli=quality,
        answer=answer,
        selected_artifacts=tuple(
            SelectedArtifact(
                artifact_id=i,
                observed_digest=(digests or {}).get(i, ARTIFACTS[i].source_digest if i in ARTIFACTS else STALE),
            )
            for i in selected
        ),
        context_digest=blake3.blake3(context.encode()).hexdigest(),
    )


def reps(n: int, **kwargs: Any) -> list[Observation]:
    return [obs(repetition=r, **kwargs) for r in range(1, n + 1)]


def baseline(n: int = 2, **kwargs: Any) -> list[Observation]:
    kwargs.setdefault("tokens", 1000)
    kwargs.setdefault("selected", ("req", "extra"))
    kwargs.setdefault("context", "full")
    return reps(n, strategy="full_permitted_context", budget=None, **kwargs)


def aux(strategy: str = "compiled", budget: int | None = 100, cost: int = 0, kind: str = "embedding") -> AuxiliaryCost:
    return AuxiliaryCost(task_id="t", strategy=strategy, budget=budget, kind=kind, cost_micro_usd=cost)  # type: ignore[arg-type]


def evaluate(
    observations: list[Observation],
    the_task: Task | None = None,
    auxiliary: list[AuxiliaryCost] | None = None,
    configurations: list[Configuration] | None = None,
    factorial: Any = None,
) -> TaskResult:
    configs = configurations or [configuration()]
    return evaluate_task(
        the_task or task(),
        TaskEvidence(observations=tuple(observations), auxiliary_costs=tuple(auxiliary or ())),
        artifacts=ARTIFACTS,
        configurations={c.configuration_id: c for c in configs},
        factorial=factorial,
    )


def gates(result: TaskResult) -> set[tuple[str, str, int | None]]:
    """(gate, strategy, budget) of every failed assertion."""
    return {(a.gate, a.strategy, a.budget) for a in result.failed_assertions}


def replace(o: Observation, **changes: Any) -> Observation:
    return msgspec.structs.replace(o, **changes)
