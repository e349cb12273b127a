"""Gate evaluation cut into shards: any shard size, any completion order, one report.

On the seed example here; the same tests on the real corpus ``public-eng-mix``
(31 MB read from disk) are in
``tests/integration/test_evaluation_shards_public_eng_mix.py``."""

from __future__ import annotations

import functools
import random
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.corpus.verification import verify_shard
from eceb_worker.families.eceb.disclosure import DEFAULT_DISCLOSURE_CHECK, TaskFindings, findings_by_task
from eceb_worker.families.eceb.disclosure.context import ScanContext
from eceb_worker.families.eceb.disclosure.findings import reduce_disclosures
from eceb_worker.families.eceb.disclosure.scanner import DisclosureScanner
from eceb_worker.families.eceb.disclosure.spec import TaskPolicy, scan_spec
from eceb_worker.families.eceb.options import IN_PROCESS_EVALUATION
from eceb_worker.families.eceb.planning import EvaluationShard, evaluation_task_ids, plan_evaluation
from eceb_worker.families.eceb.report import encode_report
from eceb_worker.families.eceb.run_index import detach_tasks
from eceb_worker.families.eceb.shards import evaluate_tasks_of_run, reduce_evaluation
from eceb_worker.io.storage import open_storage
from eceb_worker.pipeline.detached import DetachedEvaluation, detach_evaluation, evaluate_detached
from eceb_worker.pipeline.embedded import evaluate
from eceb_worker.pipeline.inputs import CheckedInputs, check_inputs
from eceb_worker.pipeline.messages import CheckedRegistry, EvaluateTask, JobInputs
from eceb_worker.pipeline.shards import Prepared, Workspace
from tests.support.paths import EXAMPLES, SHARED
from tests.support.profiles import examples

CORPORA = {
    EXAMPLES / "enterprise-seed": EXAMPLES / "enterprise-seed" / "corpus",
    EXAMPLES / "public-eng-mix": SHARED / "corpora" / "public-eng-mix" / "files",
}

REGISTRY = CheckedRegistry(location="registry.jsonl", corpus_root="0" * 64, artifact_count=0, rehash_shards=0)
"""The registry a detached shard's task names (a detached shard reads the artifacts lent instead)."""


@pytest.fixture(scope="module", params=[EXAMPLES / "enterprise-seed"], ids=lambda p: p.name)
def example(request: pytest.FixtureRequest) -> tuple[Path, CheckedInputs]:
    path: Path = request.param
    return path, check_inputs(path / "benchmark.json", path / "run.json")


@pytest.fixture(scope="module")
def reference(example: tuple[Path, CheckedInputs]) -> bytes:
    """The report of ``example`` evaluated with the default options (computed once)."""
    return evaluated(example)


def evaluated(example: tuple[Path, CheckedInputs], shard_observations: int | None = None) -> bytes:
    """The report ``eceb evaluate`` writes, its shards of ``shard_observations`` (by default its own)."""
    path, inputs = example
    evaluation = IN_PROCESS_EVALUATION
    if shard_observations is not None:
        evaluation = msgspec.structs.replace(evaluation, shard_observations=shard_observations)
    report, _ = evaluate(inputs, StorageSpec(source=str(CORPORA[path])), evaluation=evaluation)
    return encode_report(report)


@pytest.mark.parametrize("shard_observations", [1, 3, 17, 10**9])
def test_report_bytes_do_not_depend_on_the_evaluation_shard_size(
    example: tuple[Path, CheckedInputs], reference: bytes, shard_observations: int
) -> None:
    assert evaluated(example, shard_observations=shard_observations) == reference


def _findings(inputs: CheckedInputs, corpus_dir: Path) -> dict[str, TaskFindings] | None:
    """The disclosures in the run's answers, found by the re-hash's scan of
    the corpus (one shard) and reduced, by task."""
    spec = scan_spec(inputs.benchmark, inputs.run, 8)
    assert spec is not None
    artifacts = list(inputs.registry.artifacts)
    scanner = DisclosureScanner(ScanContext(spec), artifacts)
    assert verify_shard(artifacts, open_storage(StorageSpec(source=str(corpus_dir))), observer=scanner).findings == ()
    policies = {t.task_id: TaskPolicy.of(t) for t in inputs.benchmark.tasks}
    return findings_by_task(DEFAULT_DISCLOSURE_CHECK, reduce_disclosures([scanner.partial()], policies))


def _map_and_reduce(
    inputs: CheckedInputs, corpus_dir: Path, shard_observations: int, rnd: random.Random, *, twice: bool = False
) -> bytes:
    """The report of the evaluation shards run in ``rnd``'s order, each
    given the disclosures the scan found."""
    benchmark, run = inputs.benchmark, inputs.run
    tasks = {t.task_id: t for t in benchmark.tasks}
    artifacts = inputs.registry.by_id()
    task_ids = evaluation_task_ids(benchmark, run)
    assert task_ids == sorted(tasks.keys() | run.task_ids)
    counts = [len(run.observations.get(t, ())) for t in task_ids]
    shards = plan_evaluation(counts, shard_observations=shard_observations)
    rnd.shuffle(shards)  # completion order
    if twice:
        shards.append(shards[0])
    findings = _findings(inputs, corpus_dir)
    outcomes = [
        o for s in shards for o in evaluate_tasks_of_run(task_ids[s.start : s.end], run, tasks, artifacts, findings)
    ]
    report = reduce_evaluation(
        outcomes,
        benchmark=benchmark,
        run=run,
        corpus_root=inputs.registry.corpus_root,
        artifact_count=inputs.registry.artifact_count,
        eceb_version="0.1.0",
        disclosure_check=DEFAULT_DISCLOSURE_CHECK,
    )
    return encode_report(report)


SEED = EXAMPLES / "enterprise-seed"


@functools.cache
def _seed() -> tuple[CheckedInputs, bytes]:
    """The seed's inputs and the report ``eceb evaluate`` writes for it (computed once)."""
    inputs = check_inputs(SEED / "benchmark.json", SEED / "run.json")
    return inputs, evaluated((SEED, inputs))


@settings(max_examples=examples(ci=30, long=2000))
@given(st.integers(1, 40), st.randoms(use_true_random=False))
def test_shards_completing_in_any_order_reduce_to_the_same_report(shard_observations: int, rnd: random.Random) -> None:
    inputs, reference = _seed()
    assert _map_and_reduce(inputs, SEED / "corpus", shard_observations, rnd) == reference


def test_a_shard_delivered_twice_is_refused(example: tuple[Path, CheckedInputs]) -> None:
    with pytest.raises(ValueError, match="twice"):
        _map_and_reduce(example[1], CORPORA[example[0]], 5, random.Random(0), twice=True)


def test_plan_covers_every_task_once() -> None:
    shards = plan_evaluation([0, 5, 5, 0, 12, 1], shard_observations=6)
    assert [(s.start, s.end, s.observations) for s in shards] == [(0, 2, 5), (2, 4, 5), (4, 5, 12), (5, 6, 1)]
    with pytest.raises(ValueError, match="positive"):
        plan_evaluation([1], shard_observations=0)


@pytest.mark.parametrize("shard_observations", [1, 9, 10**9])
def test_a_detached_shard_evaluates_like_the_run_it_came_from(
    example: tuple[Path, CheckedInputs], shard_observations: int
) -> None:
    """A shard detached for a helper process (its tasks and records, as
    MessagePack) gives the outcomes the holder computes from the run."""
    _, inputs = example
    prepared = Prepared.of(inputs.benchmark, inputs.run)
    artifacts = inputs.registry.by_id()
    counts = [len(inputs.run.observations.get(t, ())) for t in prepared.task_ids]
    decoder = msgspec.msgpack.Decoder(DetachedEvaluation)
    for shard in plan_evaluation(counts, shard_observations=shard_observations):
        ids = prepared.task_ids[shard.start : shard.end]
        expected = evaluate_tasks_of_run(ids, inputs.run, prepared.tasks, artifacts)
        detached = decoder.decode(msgspec.msgpack.encode(_detach(prepared, shard)))
        assert evaluate_detached(detached, artifacts).outcomes == expected


def test_a_part_whose_records_do_not_match_their_positions_is_refused(example: tuple[Path, CheckedInputs]) -> None:
    _, inputs = example
    task_id = sorted(inputs.run.observations)[0]
    part = detach_tasks(inputs.run, [task_id])
    positions, joined = part.observations[task_id]
    broken = msgspec.structs.replace(part, observations={task_id: ([*positions, 10**6], joined)})
    with pytest.raises(ValueError, match="positions"):
        broken.indexed()


def test_a_detached_shard_without_lent_artifacts_is_refused(example: tuple[Path, CheckedInputs]) -> None:
    _, inputs = example
    prepared = Prepared.of(inputs.benchmark, inputs.run)
    shard = plan_evaluation([1] * len(prepared.task_ids))[0]
    with pytest.raises(ValueError, match="without the registry's artifacts"):
        Workspace().run_detached(_detach(prepared, shard))
    lent = _detach(prepared, shard, list(inputs.registry.artifacts))
    workspace = Workspace()
    assert workspace.run_detached(lent) == workspace.run_detached(_detach(prepared, shard))


def _detach(prepared: Prepared, shard: EvaluationShard, artifacts: list[Artifact] | None = None) -> DetachedEvaluation:
    task = EvaluateTask(inputs=JobInputs(), registry=REGISTRY, shard=shard)
    return detach_evaluation(
        task, task_ids=prepared.task_ids, tasks=prepared.tasks, run=prepared.run, artifacts=artifacts
    )
