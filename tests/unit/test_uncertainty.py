"""Savings intervals (ECEB-0.1 §16, §18): the seeded bootstrap, pinned
against a second, plain implementation written here, and report bytes
that depend neither on record order nor on shard size."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from pathlib import Path

import blake3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eceb_worker.core.canonical import canonical_json
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.families.eceb.disclosure import DISCLOSURE_OFF
from eceb_worker.families.eceb.options import EvaluationOptions
from eceb_worker.families.eceb.planning import evaluation_task_ids, plan_evaluation
from eceb_worker.families.eceb.report import encode_report, report_problems
from eceb_worker.families.eceb.shards import evaluate_tasks_of_run, reduce_evaluation
from eceb_worker.families.eceb.tasks import TaskEvidence, evaluate_task
from eceb_worker.families.eceb.uncertainty import (
    DrawStream,
    Repetitions,
    mean_interval,
    percentile_interval,
    summary_seed,
    task_intervals,
    task_seed,
)
from eceb_worker.families.eceb.verdicts import TaskResult
from eceb_worker.pipeline.embedded import evaluate as evaluate_job
from eceb_worker.pipeline.inputs import CheckedInputs, check_inputs
from tests.support.evaluation_builders import ARTIFACTS, aux, configuration, obs, task
from tests.support.paths import EXAMPLES
from tests.support.profiles import examples

# --- The second implementation: plain loops and fractions, from the documented rules.


def plain_seed(context: str, material: list[str]) -> bytes:
    return blake3.blake3(canonical_json(material), derive_key_context=context).digest()


def plain_word(seed: bytes, k: int) -> int:
    """Word ``k`` of the stream: block ``k // 512`` (4,096 bytes of keyed
    BLAKE3 output of the little-endian counter), bytes ``8 × (k mod 512)``."""
    block = blake3.blake3((k // 512).to_bytes(8, "little"), key=seed).digest(length=4096)
    offset = 8 * (k % 512)
    return int.from_bytes(block[offset : offset + 8], "little")


class PlainDraws:
    def __init__(self, seed: bytes) -> None:
        self.seed, self.k = seed, 0

    def below(self, n: int) -> int:
        while True:
            word = plain_word(self.seed, self.k)
            self.k += 1
            if word < 2**64 - (2**64 % n):
                return word % n


def plain_savings(full: int, part: int) -> int:
    return max(0, math.floor(Fraction(10_000 * (full - part), full)))


def plain_percentiles(values: list[int]) -> tuple[int, int]:
    ordered, count = sorted(values), len(values)
    return ordered[math.floor(Fraction(count * 25, 1000))], ordered[math.ceil(Fraction(count * 975, 1000)) - 1]


def plain_task(seed: bytes, full: Repetitions, part: Repetitions, resamples: int = 1000) -> tuple[object, object]:
    draws = PlainDraws(seed)
    n, m = len(full.tokens), len(part.tokens)
    full_picks = [[draws.below(n) for _ in range(n)] for _ in range(resamples)]
    part_picks = [[draws.below(m) for _ in range(m)] for _ in range(resamples)]
    tokens, costs = [], []
    for fp, pp in zip(full_picks, part_picks, strict=True):
        full_tokens = sum(full.tokens[i] for i in fp) // n
        part_tokens = sum(part.tokens[i] for i in pp) // m
        full_cost = (sum(full.costs[i] for i in fp) + full.auxiliary) // n
        part_cost = (sum(part.costs[i] for i in pp) + part.auxiliary) // m
        tokens.append(plain_savings(full_tokens, part_tokens))
        costs.append(plain_savings(full_cost, part_cost))
    return plain_percentiles(tokens), plain_percentiles(costs)


def plain_mean(seed: bytes, values: list[int], resamples: int = 1000) -> tuple[int, int]:
    draws = PlainDraws(seed)
    k = len(values)
    means = []
    for _ in range(resamples):
        means.append(sum(values[draws.below(k)] for _ in range(k)) // k)
    return plain_percentiles(means)


# --- A small fixture: three repetitions that differ, auxiliary costs on both sides.

FULL_TOKENS = (1000, 1240, 910)
COMPILED_TOKENS = (90, 72, 99)


def fixture_result(*, seed: bytes | None) -> TaskResult:
    the_task = task(required_repetitions=3)
    full = [
        obs("full_permitted_context", None, r, tokens=t, selected=("req", "extra"), context="full")
        for r, t in enumerate(FULL_TOKENS, 1)
    ]
    compiled = [obs(repetition=r, tokens=t, output_cost=r) for r, t in enumerate(COMPILED_TOKENS, 1)]
    evidence = TaskEvidence(
        observations=tuple(reversed(full + compiled)),  # record order does not matter
        auxiliary_costs=(aux("compiled", 100, cost=7), aux("full_permitted_context", None, cost=11)),
    )
    return evaluate_task(
        the_task, evidence, artifacts=ARTIFACTS, configurations={"c": configuration()}, bootstrap_seed=seed
    )


def test_a_tasks_interval_is_the_documented_bootstrap() -> None:
    seed = task_seed("t", "ab" * 32)
    assert seed == plain_seed("symgliph.eceb 0.1 bootstrap seed of a task", ["t", "ab" * 32])
    result = fixture_result(seed=seed)
    assert result.passed and result.token_savings_bps == 9171
    full = Repetitions(tokens=FULL_TOKENS, costs=FULL_TOKENS, auxiliary=11)
    compiled = Repetitions(tokens=COMPILED_TOKENS, costs=(91, 74, 102), auxiliary=7)
    expected = plain_task(seed, full, compiled)
    assert (result.token_savings_interval_bps, result.cost_savings_interval_bps) == expected
    assert expected == ((9010, 9333), (8959, 9300))  # pinned: a change of the rules changes these


def test_without_a_seed_nothing_is_estimated() -> None:
    result = fixture_result(seed=None)
    assert result.token_savings_interval_bps is None and result.cost_savings_interval_bps is None


def test_the_summary_interval_is_the_documented_bootstrap() -> None:
    values = [8433, 7000, 9000, 5000, 6666]
    seed = summary_seed("cd" * 32, "token")
    assert seed == plain_seed("symgliph.eceb 0.1 bootstrap seed of a summary figure", ["cd" * 32, "token"])
    assert mean_interval(seed, values) == plain_mean(seed, values)
    assert mean_interval(seed, [7000]) is None  # one task: not estimated
    assert mean_interval(seed, [7000, 7000]) == (7000, 7000)


def test_rejected_words_are_skipped() -> None:
    """Below ``2^63 + 1`` about half of the words are rejected."""
    seed = bytes(range(32))
    n = 2**63 + 1
    plain = PlainDraws(seed)
    assert DrawStream(seed).draws(n, 2000) == [plain.below(n) for _ in range(2000)]
    stream, plain = DrawStream(seed), PlainDraws(seed)
    assert [stream.below(6) for _ in range(700)] == [plain.below(6) for _ in range(700)]


def test_the_percentile_index_rule() -> None:
    assert percentile_interval(list(range(1000))) == (25, 974)
    assert percentile_interval(list(range(10))) == (0, 9)
    assert percentile_interval(list(range(2000))[::-1]) == (50, 1949)


def test_negative_resampled_savings_saturate_at_zero() -> None:
    full = Repetitions(tokens=(90, 60), costs=(90, 60))
    compiled = Repetitions(tokens=(80, 70), costs=(80, 70))
    tokens, costs = task_intervals(bytes(32), full, compiled, cost=True)
    assert tokens is not None and tokens[0] == 0 and costs is not None and costs[0] == 0
    assert plain_task(bytes(32), full, compiled) == (tokens, costs)


def test_one_repetition_is_not_estimated_and_a_zero_baseline_figure_neither() -> None:
    one = Repetitions(tokens=(100,), costs=(100,))
    two = Repetitions(tokens=(50, 60), costs=(50, 60))
    assert task_intervals(bytes(32), one, two, cost=True) == (None, None)
    assert task_intervals(bytes(32), two, one, cost=True) == (None, None)
    free = Repetitions(tokens=(100, 120), costs=(0, 10))
    tokens, costs = task_intervals(bytes(32), free, two, cost=True)
    assert tokens is not None and costs is None  # a resample of the free repetition has no cost baseline


# --- Whole reports: order and shard size do not matter; "none" states it.

SEED = EXAMPLES / "enterprise-seed"


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seed run with repetitions that differ (tokens and cost, as the
    pricing makes them) and local token counts."""
    run = json.loads((SEED / "run.json").read_text())
    rates = {c["configuration_id"]: c["pricing"]["input_micro_usd_per_mtok"] for c in run["configurations"]}
    for o in run["observations"]:
        step = 40 if o["strategy"] == "full_permitted_context" else 7
        drop = step * (o["repetition"] - 1)
        rate = rates[o["configuration_id"]]
        if (
            o["strategy"] != "naive_top_k"
            and rate % 10**6 == 0
            and o["input_tokens"] - drop >= (o["cached_input_tokens"] or 0)
        ):
            o["input_tokens"] -= drop
            o["input_cost_micro_usd"] -= drop * rate // 10**6
        o["local_prompt_tokens"] = o["input_tokens"] + 5
    path = tmp_path_factory.mktemp("varied") / "run.json"
    path.write_text(json.dumps(run))
    return path


def map_and_reduce(
    inputs: CheckedInputs, shard_observations: int, rnd: random.Random, uncertainty: str = "bootstrap"
) -> bytes:
    benchmark, run = inputs.benchmark, inputs.run
    tasks = {t.task_id: t for t in benchmark.tasks}
    task_ids = evaluation_task_ids(benchmark, run)
    shards = plan_evaluation(
        [len(run.observations.get(t, ())) for t in task_ids], shard_observations=shard_observations
    )
    rnd.shuffle(shards)
    outcomes = [
        o
        for s in shards
        for o in evaluate_tasks_of_run(
            task_ids[s.start : s.end],
            run,
            tasks,
            inputs.registry.by_id(),
            uncertainty=uncertainty,  # type: ignore[arg-type]
        )
    ]
    report = reduce_evaluation(
        outcomes,
        benchmark=benchmark,
        run=run,
        corpus_root=inputs.registry.corpus_root,
        artifact_count=inputs.registry.artifact_count,
        eceb_version="0.1.0",
        disclosure_check=DISCLOSURE_OFF,
        uncertainty=uncertainty,  # type: ignore[arg-type]
    )
    assert report_problems(report, "report.json") == []
    return encode_report(report)


@pytest.fixture(scope="module")
def varied_report(varied: Path) -> bytes:
    """The report of the varied run, its shards in plan order (one shard)."""
    return map_and_reduce(check_inputs(SEED / "benchmark.json", varied), 10**9, random.Random(0))


@settings(max_examples=examples(ci=8, long=25), deadline=None)
@given(st.integers(1, 60), st.randoms(use_true_random=False))
def test_report_bytes_depend_on_neither_record_order_nor_shard_size(
    varied: Path,
    varied_report: bytes,
    tmp_path_factory: pytest.TempPathFactory,
    shard_observations: int,
    rnd: random.Random,
) -> None:
    reference = varied_report
    run = json.loads(varied.read_text())
    rnd.shuffle(run["observations"])
    rnd.shuffle(run["auxiliary_costs"])
    for o in run["observations"]:
        rnd.shuffle(o["selected_artifacts"])
    shuffled = tmp_path_factory.mktemp("shuffled") / "run.json"
    shuffled.write_text(json.dumps(run))
    assert map_and_reduce(check_inputs(SEED / "benchmark.json", shuffled), shard_observations, rnd) == reference


def test_a_varied_run_has_intervals_and_labels_its_local_counts(varied: Path) -> None:
    inputs = check_inputs(SEED / "benchmark.json", varied)
    report, _ = evaluate_job(inputs, StorageSpec(source=str(SEED / "corpus")))
    assert report.uncertainty.method == "bootstrap_percentile" and report.uncertainty.resamples == 1000
    assert report.uncertainty.seed == summary_seed(report.inputs.run_digest, "token").hex()
    passing = [t for t in report.tasks if t.passed]
    assert any(
        t.token_savings_interval_bps and t.token_savings_interval_bps[0] < t.token_savings_interval_bps[1]
        for t in passing
    )
    for t in report.tasks:
        if t.token_savings_interval_bps is not None:
            assert t.passed
    assert report.summary.token_savings_interval_bps is not None
    assert report.token_counts.compared == "provider_native" and report.token_counts.local == "reported_separately"
    group = next(g for t in passing for g in t.groups if g.strategy == "full_permitted_context")
    assert group.local_prompt_tokens == group.prompt_tokens + 5  # type: ignore[operator]


def test_none_states_that_uncertainty_was_not_estimated(varied: Path) -> None:
    inputs = check_inputs(SEED / "benchmark.json", varied)
    evaluation = EvaluationOptions.chosen(disclosure_check=False, uncertainty="none")
    report, _ = evaluate_job(inputs, StorageSpec(source=str(SEED / "corpus")), evaluation=evaluation)
    assert report.uncertainty.method == "not_estimated" and report.uncertainty.seed is None
    assert all(t.token_savings_interval_bps is None and t.cost_savings_interval_bps is None for t in report.tasks)
    assert report.summary.token_savings_interval_bps is None
    assert encode_report(report) == map_and_reduce(inputs, 5, random.Random(1), uncertainty="none")


def test_a_report_whose_intervals_its_tasks_do_not_make_is_named(varied: Path) -> None:
    import msgspec

    inputs = check_inputs(SEED / "benchmark.json", varied)
    report, _ = evaluate_job(inputs, StorageSpec(source=str(SEED / "corpus")))
    assert report_problems(report, "r.json") == []
    summary = msgspec.structs.replace(report.summary, token_savings_interval_bps=(0, 10_000))
    problems = report_problems(msgspec.structs.replace(report, summary=summary), "r.json")
    assert [(p.record, p.field) for p in problems] == [("summary", "token_savings_interval_bps")]
    other = msgspec.structs.replace(report.uncertainty, seed="00" * 32)
    problems = report_problems(msgspec.structs.replace(report, uncertainty=other), "r.json")
    assert ("uncertainty", "seed") in [(p.record, p.field) for p in problems]
    failing = next(t for t in report.tasks if not t.passed)
    tampered = msgspec.structs.replace(failing, token_savings_interval_bps=(1, 2))
    tasks = tuple(tampered if t is failing else t for t in report.tasks)
    problems = report_problems(msgspec.structs.replace(report, tasks=tasks), "r.json")
    assert [p.field for p in problems] == ["token_savings_interval_bps"]


def test_a_bootstrap_holds_one_resample_at_a_time() -> None:
    import tracemalloc

    n = 100_000
    baseline = Repetitions(tokens=tuple(1000 + i % 7 for i in range(n)), costs=tuple(5000 + i % 3 for i in range(n)))
    compiled = Repetitions(tokens=tuple(100 + i % 5 for i in range(n)), costs=tuple(500 + i % 3 for i in range(n)))
    tracemalloc.start()
    try:
        tokens, cost = task_intervals(bytes(32), baseline, compiled, cost=True, resamples=20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert tokens is not None and cost is not None
    assert peak < 16_000_000  # all 2,000,000 draws held at once took over 60 MB
