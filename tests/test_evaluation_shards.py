"""Gate evaluation cut into shards: any shard size, any completion order, one report."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.engine.benchmark import task_root
from eceb_worker.engine.plan import plan_evaluation
from eceb_worker.engine.report import ReportInputs, encode_report
from eceb_worker.engine.run_evaluation import evaluate_tasks_of_run, reduce_evaluation
from eceb_worker.evaluate import evaluate_verified
from eceb_worker.inputs import EvaluationInputs, load_inputs

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = [REPO / "examples" / "enterprise-seed", REPO / "examples" / "public-eng-mix"]


@pytest.fixture(scope="module", params=EXAMPLES, ids=lambda p: p.name)
def inputs(request: pytest.FixtureRequest) -> EvaluationInputs:
    example: Path = request.param
    return load_inputs(example / "benchmark.json", example / "run.json")


@pytest.mark.parametrize("shard_observations", [1, 3, 17, 10**9])
def test_report_bytes_do_not_depend_on_the_evaluation_shard_size(
    inputs: EvaluationInputs, shard_observations: int
) -> None:
    reference = encode_report(evaluate_verified(inputs, len(inputs.registry.artifacts)))
    sharded = evaluate_verified(inputs, len(inputs.registry.artifacts), shard_observations=shard_observations)
    assert encode_report(sharded) == reference


def _map_and_reduce(
    inputs: EvaluationInputs, shard_observations: int, rnd: random.Random, *, twice: bool = False
) -> bytes:
    benchmark, run = inputs.benchmark, inputs.run
    tasks = {t.task_id: t for t in benchmark.tasks}
    artifacts = {a.artifact_id: a for a in inputs.registry.artifacts}
    task_ids = sorted(tasks.keys() | run.task_ids)
    counts = [len(run.observations.get(t, ())) for t in task_ids]
    shards = plan_evaluation(counts, shard_observations=shard_observations)
    rnd.shuffle(shards)  # completion order
    if twice:
        shards.append(shards[0])
    outcomes = [o for s in shards for o in evaluate_tasks_of_run(task_ids[s.start : s.end], run, tasks, artifacts)]

    def report_inputs(digest: str) -> ReportInputs:
        return ReportInputs(
            benchmark_id=benchmark.benchmark_id,
            task_root=task_root(benchmark.tasks),
            corpus_root=inputs.registry.corpus_root,
            artifact_count=len(inputs.registry.artifacts),
            run_id=run.header.run_id,
            run_digest=digest,
        )

    report = reduce_evaluation(
        outcomes, header=run.header, recorded_task_ids=run.task_ids, inputs=report_inputs, eceb_version="0.1.0"
    )
    return encode_report(report)


@given(st.integers(1, 40), st.randoms(use_true_random=False))
def test_shards_completing_in_any_order_reduce_to_the_same_report(shard_observations: int, rnd: random.Random) -> None:
    inputs = load_inputs(EXAMPLES[0] / "benchmark.json", EXAMPLES[0] / "run.json")
    reference = encode_report(evaluate_verified(inputs, len(inputs.registry.artifacts)))
    assert _map_and_reduce(inputs, shard_observations, rnd) == reference


def test_a_shard_delivered_twice_is_refused(inputs: EvaluationInputs) -> None:
    with pytest.raises(ValueError, match="twice"):
        _map_and_reduce(inputs, 5, random.Random(0), twice=True)


def test_plan_covers_every_task_once() -> None:
    shards = plan_evaluation([0, 5, 5, 0, 12, 1], shard_observations=6)
    assert [(s.start, s.end, s.observations) for s in shards] == [(0, 2, 5), (2, 4, 5), (4, 5, 12), (5, 6, 1)]
    with pytest.raises(ValueError, match="positive"):
        plan_evaluation([1], shard_observations=0)
