"""Validation of benchmarks and runs: every problem class, all reported together."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.benchmark import task_root
from eceb_worker.io.locations import Locator
from eceb_worker.pipeline.inputs import check_benchmark, check_inputs, check_run_records, registry_location
from tests.support.paths import REPO

SEED = REPO / "examples" / "enterprise-seed"


def seed_copy(tmp_path: Path) -> tuple[Path, Path, dict[str, Any], dict[str, Any]]:
    for name in ("registry.jsonl",):
        (tmp_path / name).write_bytes((SEED / name).read_bytes())
    benchmark = json.loads((SEED / "benchmark.json").read_text())
    run = json.loads((SEED / "run.json").read_text())
    return tmp_path / "benchmark.json", tmp_path / "run.json", benchmark, run


def write(path: Path, value: dict[str, Any]) -> None:
    path.write_text(json.dumps(value))


def problems(call: Any) -> list[Problem]:
    with pytest.raises(InputError) as caught:
        call()
    return caught.value.problems


def located(found: list[Problem]) -> set[tuple[str, str, str]]:
    return {(Path(p.file).name, p.record, p.field) for p in found}


def load_and_check(benchmark: Path, run: Path) -> None:
    inputs = check_inputs(benchmark, run)
    check_run_records(inputs.run, inputs.benchmark)


def test_seed_is_consistent() -> None:
    inputs = check_inputs(SEED / "benchmark.json", SEED / "run.json")
    check_run_records(inputs.run, inputs.benchmark)
    assert len(inputs.benchmark.tasks) == 15
    assert inputs.run.observation_count == 95


def test_record_problems_alone_are_all_reported(tmp_path: Path) -> None:
    bench_path, run_path, benchmark, run = seed_copy(tmp_path)
    write(bench_path, benchmark)
    run["observations"][3]["input_cost_micro_usd"] += 7
    run["observations"][40]["context_digest"] = "F" * 64
    run["observations"][41]["selected_artifacts"][0]["observed_digest"] = "g" * 64
    write(run_path, run)
    inputs = check_inputs(bench_path, run_path)  # the header is fine: records are checked later
    found = located(problems(lambda: check_run_records(inputs.run, inputs.benchmark)))
    assert found == {
        ("run.json", "observations[3]", "input_cost_micro_usd"),
        ("run.json", "observations[40]", "context_digest"),
        ("run.json", "observations[41]", "selected_artifacts[0].observed_digest"),
    }


def test_every_benchmark_problem_class_in_one_run(tmp_path: Path) -> None:
    bench_path, _, benchmark, _ = seed_copy(tmp_path)
    tasks = benchmark["tasks"]
    tasks[0]["required_artifacts"].append("runbook/missing.md")  # not in registry
    tasks[1]["denied_artifacts"] = ["runbook/db-failover.md"]  # required and denied
    tasks[2]["required_artifacts"].append("policy/customer-pii-handling.md")  # classification not allowed
    tasks[3]["budget_ladder"] = [512, 512, 256]  # not ascending
    tasks[4]["task_id"] = tasks[5]["task_id"]  # duplicate id
    tasks[6]["denied_artifacts"] = ["nowhere.md"]  # denied but unknown
    tasks[7]["allowed_classifications"] = ["public", "public", "internal"]  # duplicate entry
    benchmark["registry"]["corpus_root"] = "0" * 64  # wrong pin
    write(bench_path, benchmark)
    found = located(problems(lambda: check_benchmark(bench_path)))
    assert {
        ("benchmark.json", "tasks[0] (disk-full-escalation)", "required_artifacts"),
        ("benchmark.json", "tasks[1] (db-failover-steps)", "denied_artifacts"),
        ("benchmark.json", "tasks[2] (refund-window)", "required_artifacts"),
        ("benchmark.json", "tasks[3] (log-retention)", "budget_ladder[1]"),
        ("benchmark.json", "tasks[3] (log-retention)", "budget_ladder[2]"),
        ("benchmark.json", "tasks[5]", "task_id"),
        ("benchmark.json", "tasks[6] (vpc-subnet-zone)", "denied_artifacts"),
        ("benchmark.json", "tasks[7] (breakglass-review)", "allowed_classifications"),
        ("benchmark.json", "registry", "corpus_root"),
    } <= found


def test_benchmark_schema_problems_are_all_listed(tmp_path: Path) -> None:
    bench_path, _, benchmark, _ = seed_copy(tmp_path)
    benchmark["tasks"][0]["required_repetitions"] = 0
    benchmark["tasks"][1]["budget_ladder"] = [0, 10]
    benchmark["tasks"][2]["allowed_classifications"] = ["secret"]
    benchmark["tasks"][3]["minimum_quality_milli"] = 1001
    benchmark["tasks"][4]["colour"] = "red"
    del benchmark["tasks"][5]["query"]
    write(bench_path, benchmark)
    found = located(problems(lambda: check_benchmark(bench_path)))
    assert {
        ("benchmark.json", "tasks[0]", "required_repetitions"),
        ("benchmark.json", "tasks[1]", "budget_ladder[0]"),
        ("benchmark.json", "tasks[2]", "allowed_classifications[0]"),
        ("benchmark.json", "tasks[3]", "minimum_quality_milli"),
        ("benchmark.json", "tasks[4]", "colour"),
        ("benchmark.json", "tasks[5]", "query"),
    } <= found


def test_every_run_problem_class_in_one_run(tmp_path: Path) -> None:
    bench_path, run_path, benchmark, run = seed_copy(tmp_path)
    write(bench_path, benchmark)
    o = run["observations"]
    o[0]["task_id"] = "no-such-task"
    o[4]["budget"] = 300  # compiled budget off the ladder: a failure of its task, not bad input
    o[1]["budget"] = 64  # baseline with a budget
    o[5]["configuration_id"] = "nope"
    o[6]["cached_input_tokens"] = o[6]["input_tokens"] + 1
    o[7]["input_cost_micro_usd"] += 5  # does not follow pricing
    o[7]["output_cost_micro_usd"] += 5
    o[8]["selected_artifacts"].append(o[8]["selected_artifacts"][0])  # selected twice: likewise
    o[10]["repetition"] = o[9]["repetition"]  # duplicate repetition in its group
    run["auxiliary_costs"].append(
        {"task_id": "log-retention", "strategy": "compiled", "budget": 1024, "kind": "other", "cost_micro_usd": 5}
    )
    run["configurations"].append(run["configurations"][0])
    run["corpus_root"] = "1" * 64
    run["benchmark"]["task_root"] = "2" * 64
    write(run_path, run)
    found = located(problems(lambda: load_and_check(bench_path, run_path)))
    expected = {
        ("run.json", "observations[0]", "task_id"),
        ("run.json", "observations[1]", "budget"),
        ("run.json", "observations[5]", "configuration_id"),
        ("run.json", "observations[6]", "cached_input_tokens"),
        ("run.json", "observations[7]", "input_cost_micro_usd"),
        ("run.json", "observations[7]", "output_cost_micro_usd"),
        ("run.json", "observations[10]", "repetition"),
        ("run.json", f"auxiliary_costs[{len(run['auxiliary_costs']) - 1}]", ""),
        ("run.json", "configurations[2]", "configuration_id"),
        ("run.json", "", "corpus_root"),
        ("run.json", "benchmark", "task_root"),
    }
    assert expected <= found, expected - found
    assert not {record for _, record, _ in found} & {"observations[4]", "observations[8]"}


def test_run_schema_problems_are_listed_per_observation(tmp_path: Path) -> None:
    bench_path, run_path, benchmark, run = seed_copy(tmp_path)
    write(bench_path, benchmark)
    o = run["observations"]
    o[3]["quality_milli"] = 1200
    o[3]["strategy"] = "retrieval"
    o[17]["repetition"] = 0
    del o[20]["answer"]
    run["claim_class"] = "marketing"
    write(run_path, run)
    found = located(problems(lambda: load_and_check(bench_path, run_path)))
    assert {
        ("run.json", "observations[3]", "quality_milli"),
        ("run.json", "observations[3]", "strategy"),
        ("run.json", "observations[17]", "repetition"),
        ("run.json", "observations[20]", "answer"),
        ("run.json", "", "claim_class"),
    } <= found


def test_problems_of_all_three_files_come_together(tmp_path: Path) -> None:
    bench_path, run_path, benchmark, run = seed_copy(tmp_path)
    benchmark["tasks"][0]["budget_ladder"] = [2, 1]
    write(bench_path, benchmark)
    run["observations"][0]["latency_ms"] = -1
    write(run_path, run)
    registry = tmp_path / "registry.jsonl"
    registry.write_text(registry.read_text().replace('"kind":"code"', '"kind":"wiki"'))
    files = {Path(p.file).name for p in problems(lambda: load_and_check(bench_path, run_path))}
    assert files == {"benchmark.json", "registry.jsonl", "run.json"}


def test_invalid_json_names_the_file(tmp_path: Path) -> None:
    bench_path, run_path, benchmark, _ = seed_copy(tmp_path)
    write(bench_path, benchmark)
    run_path.write_text("{")
    found = problems(lambda: load_and_check(bench_path, run_path))
    assert found[0].file == str(run_path)
    assert "invalid JSON" in found[0].message


def test_registry_problems_come_with_benchmark_schema_problems(tmp_path: Path) -> None:
    bench_path, run_path, benchmark, run = seed_copy(tmp_path)
    benchmark["tasks"][0]["minimum_quality_milli"] = 2000
    write(bench_path, benchmark)
    write(run_path, run)
    registry = tmp_path / "registry.jsonl"
    registry.write_text(registry.read_text().replace('"kind":"code"', '"kind":"slack"'))
    files = {Path(p.file).name for p in problems(lambda: check_inputs(bench_path, run_path))}
    assert {"benchmark.json", "registry.jsonl"} <= files


def test_integers_beyond_the_json_safe_range_are_bad_input(tmp_path: Path) -> None:
    bench_path, run_path, benchmark, run = seed_copy(tmp_path)
    write(bench_path, benchmark)
    run["observations"][0]["latency_ms"] = 10**30
    run["factorial_experiment"] = {"factors": ["model", "model"]}
    write(run_path, run)
    found = located(problems(lambda: load_and_check(bench_path, run_path)))
    assert ("run.json", "observations[0]", "latency_ms") in found
    assert ("run.json", "factorial_experiment", "factors") in found


def rename_task(benchmark: dict[str, Any], run: dict[str, Any], old: str, new: str) -> None:
    for task in benchmark["tasks"]:
        if task["task_id"] == old:
            task["task_id"] = new
    for record in (*run["observations"], *run["auxiliary_costs"]):
        if record["task_id"] == old:
            record["task_id"] = new


@pytest.mark.parametrize("task_id", ["t[1x", "a[²]", "x[0", "q[9/", "o[1]"])
def test_costs_beyond_the_safe_range_name_the_records_of_their_group(tmp_path: Path, task_id: str) -> None:
    bench_path, run_path, benchmark, run = seed_copy(tmp_path)
    rename_task(benchmark, run, "disk-full-escalation", task_id)
    write(bench_path, benchmark)
    for index in (3, 4):  # compiled@256, with observations[5] and auxiliary_costs[0], [1], [2]
        run["observations"][index]["input_tokens"] = 2**51
        run["observations"][index]["input_cost_micro_usd"] = 3 * 2**51  # follows the pricing
    write(run_path, run)
    found = problems(lambda: load_and_check(bench_path, run_path))
    beyond = [p for p in found if "beyond 2^53 - 1" in p.message]
    assert [(p.record, p.field) for p in beyond] == [
        ("auxiliary_costs[0]", ""),
        ("auxiliary_costs[1]", ""),
        ("auxiliary_costs[2]", ""),
        ("observations[3]", ""),
        ("observations[4]", ""),
        ("observations[5]", ""),
    ]
    assert all(p.file == str(run_path) and f"{task_id}/compiled/256" in p.message for p in beyond)


def test_a_task_whose_groups_each_stay_in_the_safe_range_is_consistent(tmp_path: Path) -> None:
    # Together beyond 2^53 - 1, each strategy/budget group within it: no problem.
    bench_path, run_path, benchmark, run = seed_copy(tmp_path)
    write(bench_path, benchmark)
    for index in (1, 3):  # the baseline and compiled@256 of disk-full-escalation
        run["observations"][index]["cached_input_tokens"] = None
        run["observations"][index]["input_tokens"] = 2**51
        run["observations"][index]["input_cost_micro_usd"] = 3 * 2**51  # follows the pricing
    write(run_path, run)
    assert 2 * 3 * 2**51 > 2**53 - 1 > 3 * 2**51 + 10**6
    load_and_check(bench_path, run_path)


def test_run_problems_come_in_record_order_whatever_the_task_ids(tmp_path: Path) -> None:
    bench_path, run_path, benchmark, run = seed_copy(tmp_path)
    rename_task(benchmark, run, "disk-full-escalation", "b[10]")
    rename_task(benchmark, run, "db-failover-steps", "a[2]")
    write(bench_path, benchmark)
    for index in (11, 2, 10, 3):
        run["observations"][index]["latency_ms"] = -1
    run["observations"][6]["configuration_id"] = "nope"
    write(run_path, run)
    found = problems(lambda: load_and_check(bench_path, run_path))  # with the header's task root
    assert [p.record for p in found if p.record != "benchmark"] == [f"observations[{i}]" for i in (2, 3, 6, 10, 11)]


def test_an_empty_task_list_is_a_problem_and_every_observation_is_named(tmp_path: Path) -> None:
    bench_path, run_path, benchmark, run = seed_copy(tmp_path)
    benchmark["tasks"] = []
    write(bench_path, benchmark)
    run["benchmark"]["task_root"] = task_root(())
    write(run_path, run)
    found = problems(lambda: load_and_check(bench_path, run_path))
    assert ("benchmark.json", "", "tasks") in located(found)
    unknown = {p.record for p in found if p.field == "task_id" and "is not a task of the benchmark" in p.message}
    assert unknown == {f"observations[{i}]" for i in range(len(run["observations"]))} | {
        f"auxiliary_costs[{i}]" for i in range(len(run["auxiliary_costs"]))
    }
    assert problems(lambda: check_benchmark(bench_path))[0].field == "tasks"


@pytest.mark.parametrize("relative", ["registry\x00.jsonl", "../registry.jsonl", "a/../../registry.jsonl", "/registry"])
def test_an_object_registry_path_is_checked_like_a_local_one(relative: str) -> None:
    benchmark = Locator().locate("s3://bucket/seed/benchmark.json")
    with pytest.raises(InputError) as caught:
        registry_location(benchmark, relative)
    assert [(p.file, p.field) for p in caught.value.problems] == [("s3://bucket/seed/benchmark.json", "registry.path")]
    assert registry_location(benchmark, "registries/r.jsonl").name == "s3://bucket/seed/registries/r.jsonl"
