"""``eceb evaluate`` end to end on the enterprise seed: verdicts, exit codes,
atomic and deterministic reports."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from eceb_cli import exit_codes
from eceb_cli.main import main
from eceb_worker.families.eceb.benchmark import Benchmark, task_root
from tests.support.paths import REPO
from tests.support.s3_server import S3Server

SEED = REPO / "examples" / "enterprise-seed"

EXPECTED = {
    # task id: (passes, minimum viable budget, a gate that must appear among its failures)
    "disk-full-escalation": (True, 256, None),
    "db-failover-steps": (True, 512, "quality"),
    "refund-window": (True, 1024, "budget"),
    "log-retention": (True, 512, None),
    "jpy-rounding": (True, 1024, "repeatability"),
    "pii-export-approval": (False, None, "policy"),
    "vpc-subnet-zone": (False, None, "provenance"),
    "breakglass-review": (False, 256, "policy"),
    "incident-timeline": (False, 256, "baseline_missing"),
    "currency-exponents": (True, 512, "answer_terms"),
    "refund-idempotency-naive": (True, 256, None),
    "zero-token-baseline": (False, 128, "baseline_zero_tokens"),
    "model-swap": (False, 128, "comparability"),
    "pii-export-expiry": (False, None, "disclosure"),
    "breakglass-credential": (True, 128, ""),
}


def run_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def evaluate_seed(tmp_path: Path, *extra: str, seed: Path = SEED) -> tuple[int, dict[str, Any], str]:
    report = tmp_path / "report.json"
    code, out, err = run_cli(
        "evaluate",
        str(seed / "benchmark.json"),
        str(seed / "run.json"),
        "--corpus",
        str(SEED / "corpus"),
        "-o",
        str(report),
        *extra,
    )
    return code, json.loads(report.read_text()) if report.exists() else {}, out + err


def test_seed_verdicts(tmp_path: Path) -> None:
    code, report, output = evaluate_seed(tmp_path)
    assert code == exit_codes.TASKS_FAILED
    tasks = {t["task_id"]: t for t in report["tasks"]}
    assert set(tasks) == set(EXPECTED)
    for task_id, (passes, budget, gate) in EXPECTED.items():
        task = tasks[task_id]
        assert task["passed"] is passes, task_id
        assert task["minimum_viable_budget"] == budget, task_id
        if gate:
            assert gate in {a["gate"] for a in task["failed_assertions"]}, task_id
    assert report["summary"] == {
        "passing_tasks": 8,
        "total_tasks": 15,
        "mean_token_savings_bps": 7269,
        "mean_cost_savings_bps": 6127,
        "cost_savings_tasks": 8,
        "token_savings_interval_bps": [5016, 8786],
        "cost_savings_interval_bps": [4237, 7388],
    }
    assert report["uncertainty"] == {
        "method": "bootstrap_percentile",
        "resamples": 1000,
        "confidence_bps": 9500,
        "seed": "3fcfe322865dabd2f1750f5aa1237aab97ea17d3cdeaf2f120ef33247b464041",
    }
    # The seed's repetitions are identical: every resample is the point estimate.
    assert tasks["db-failover-steps"]["token_savings_interval_bps"] == [8433, 8433]
    assert tasks["db-failover-steps"]["cost_savings_interval_bps"] == [7666, 7666]
    assert report["token_counts"] == {"compared": "provider_native", "local": "absent"}
    assert report["claim_class"] == "conformance_seed"
    assert report["non_empirical"] is True
    assert "8/15 tasks pass" in output


def test_uncertainty_none_states_that_it_was_not_estimated(tmp_path: Path) -> None:
    code, report, output = evaluate_seed(tmp_path, "--uncertainty", "none")
    assert code == exit_codes.TASKS_FAILED
    assert report["uncertainty"] == {"method": "not_estimated", "resamples": 0, "confidence_bps": 0, "seed": None}
    assert all(t["token_savings_interval_bps"] is None for t in report["tasks"])
    assert report["summary"]["token_savings_interval_bps"] is None
    assert "uncertainty: not estimated" in output
    assert "savings interval: not estimated for this report" in output


def test_seed_policy_cases_and_gates_all_fail_somewhere(tmp_path: Path) -> None:
    _, report, _ = evaluate_seed(tmp_path)
    failures = [a for t in report["tasks"] for a in t["failed_assertions"]]
    gates = {a["gate"] for a in failures}
    assert {"repetitions", "budget", "quality", "answer_terms", "provenance", "policy", "repeatability"} <= gates
    policy = " ".join(a["message"] for a in failures if a["gate"] == "policy")
    assert "unknown artifact" in policy
    assert "not allowed" in policy
    assert "denied for this task" in policy


def test_seed_figures_trace_to_the_spec(tmp_path: Path) -> None:
    _, report, _ = evaluate_seed(tmp_path)
    task = next(t for t in report["tasks"] if t["task_id"] == "disk-full-escalation")
    # Baseline: 2,400 input tokens of which 1,200 cached at $3 / $0.30 per Mtok, 60 output at $15.
    assert task["baseline_cost_micro_usd"] == 1200 * 3 + 1200 * 3 // 10 + 60 * 15
    # Compiled: 240 input, 60 output per repetition, plus 900 micro-USD of auxiliary cost over 3 repetitions.
    assert task["compiled_cost_micro_usd"] == 240 * 3 + 60 * 15 + (30 + 720 + 150) // 3
    assert task["token_savings_bps"] == 10_000 * (2400 - 240) // 2400
    assert task["cost_savings_bps"] == 10_000 * (4860 - 1920) // 4860
    assert task["quality_floor_milli"] == max(700, 900 - 50)
    negative = next(t for t in report["tasks"] if t["task_id"] == "log-retention")
    assert negative["compiled_prompt_tokens"] > negative["baseline_prompt_tokens"]
    assert negative["token_savings_bps"] == 0


def test_report_validates_against_its_schema(tmp_path: Path) -> None:
    _, report, _ = evaluate_seed(tmp_path)
    schema = json.loads((REPO / "schema" / "report-v0.1.json").read_text())
    Draft202012Validator(schema).validate(report)
    code, out, _ = run_cli("validate", str(tmp_path / "report.json"))
    assert code == 0, out


def subset_seed(tmp_path: Path, keep: set[str]) -> Path:
    """A copy of the seed with only the ``keep`` tasks (run re-pointed at the new task root)."""
    target = tmp_path / "subset"
    target.mkdir()
    shutil.copy(SEED / "registry.jsonl", target)
    benchmark = json.loads((SEED / "benchmark.json").read_text())
    benchmark["tasks"] = [t for t in benchmark["tasks"] if t["task_id"] in keep]
    (target / "benchmark.json").write_text(json.dumps(benchmark))
    run = json.loads((SEED / "run.json").read_text())
    run["observations"] = [o for o in run["observations"] if o["task_id"] in keep]
    run["auxiliary_costs"] = [a for a in run["auxiliary_costs"] if a["task_id"] in keep]
    decoded = msgspec.json.decode((target / "benchmark.json").read_bytes(), type=Benchmark)
    run["benchmark"]["task_root"] = task_root(decoded.tasks)
    (target / "run.json").write_text(json.dumps(run))
    return target


def test_exit_zero_when_every_task_passes(tmp_path: Path) -> None:
    passing = {k for k, v in EXPECTED.items() if v[0]}
    code, report, _ = evaluate_seed(tmp_path, seed=subset_seed(tmp_path, passing))
    assert code == exit_codes.OK
    assert report["summary"]["passing_tasks"] == report["summary"]["total_tasks"] == len(passing)


def test_bad_input_writes_nothing(tmp_path: Path) -> None:
    bad = subset_seed(tmp_path, set(EXPECTED))
    run = json.loads((bad / "run.json").read_text())
    run["observations"][0]["quality_milli"] = -5
    run["observations"][1]["strategy"] = "oracle"
    (bad / "run.json").write_text(json.dumps(run))
    code, report, output = evaluate_seed(tmp_path, seed=bad)
    assert code == exit_codes.BAD_INPUT
    assert report == {}
    assert "observations[0]" in output
    assert "observations[1]" in output
    assert not list(tmp_path.glob(".report.json*"))


def test_corpus_verification_failure(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(SEED / "corpus", corpus)
    (corpus / "runbook" / "disk-full.md").write_text("tampered\n")
    report = tmp_path / "report.json"
    code, _, err = run_cli(
        "evaluate", str(SEED / "benchmark.json"), str(SEED / "run.json"), "--corpus", str(corpus), "-o", str(report)
    )
    assert code == exit_codes.VERIFICATION_FAILED
    assert "STALE  runbook/disk-full.md" in err
    assert not report.exists()


def test_existing_report_survives_a_failed_run(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text("previous")
    code, _, _ = run_cli(
        "evaluate",
        str(SEED / "benchmark.json"),
        str(SEED / "run.json"),
        "--corpus",
        str(tmp_path / "absent"),
        "-o",
        str(report),
    )
    assert code == exit_codes.STORAGE
    assert report.read_text() == "previous"


def shuffled_copy(target: Path, rnd: random.Random) -> Path:
    """The seed with every record order shuffled: tasks, set-valued lists, registry
    lines, observations, auxiliary costs, configurations and selected artifacts."""
    target.mkdir()
    header, *lines = (SEED / "registry.jsonl").read_text().splitlines()
    rnd.shuffle(lines)
    (target / "registry.jsonl").write_text("\n".join([header, *lines]) + "\n")
    benchmark = json.loads((SEED / "benchmark.json").read_text())
    rnd.shuffle(benchmark["tasks"])
    for task in benchmark["tasks"]:
        for field in ("required_artifacts", "allowed_classifications", "denied_artifacts", "required_answer_terms"):
            rnd.shuffle(task.get(field, []))
    (target / "benchmark.json").write_text(json.dumps(benchmark, indent=rnd.choice([None, 1, 4])))
    run = json.loads((SEED / "run.json").read_text())
    for field in ("observations", "auxiliary_costs", "configurations"):
        rnd.shuffle(run[field])
    for observation in run["observations"]:
        rnd.shuffle(observation["selected_artifacts"])
    (target / "run.json").write_text(json.dumps(run, sort_keys=rnd.random() < 0.5))
    return target


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.randoms(use_true_random=False))
def test_report_bytes_do_not_depend_on_record_order(
    tmp_path_factory: pytest.TempPathFactory, rnd: random.Random
) -> None:
    base = tmp_path_factory.mktemp("reference")
    evaluate_seed(base)
    reference = (base / "report.json").read_bytes()
    work = tmp_path_factory.mktemp("shuffled")
    copy = shuffled_copy(work / "seed", rnd)
    code, _, _ = evaluate_seed(work, seed=copy)
    assert code == exit_codes.TASKS_FAILED
    assert (work / "report.json").read_bytes() == reference


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("shard_bytes", ["1", "100000000"])
def test_report_bytes_do_not_depend_on_workers_or_shards(tmp_path: Path, workers: str, shard_bytes: str) -> None:
    reference = tmp_path / "reference"
    reference.mkdir()
    evaluate_seed(reference)
    evaluate_seed(tmp_path, "--workers", workers, "--shard-bytes", shard_bytes)
    assert (tmp_path / "report.json").read_bytes() == (reference / "report.json").read_bytes()


def test_report_is_canonical_json_with_a_final_newline(tmp_path: Path) -> None:
    import rfc8785

    evaluate_seed(tmp_path)
    data = (tmp_path / "report.json").read_bytes()
    assert data.endswith(b"}\n")
    assert rfc8785.dumps(json.loads(data)) + b"\n" == data


def test_validate_every_kind(tmp_path: Path) -> None:
    code, out, _ = run_cli("validate", str(SEED / "benchmark.json"))
    assert code == exit_codes.OK
    assert "task root " in out
    assert "corpus root 58747aa9" in out
    for path in (SEED / "registry.jsonl", SEED / "rules.toml", SEED / "run.json"):
        assert run_cli("validate", str(path))[0] == exit_codes.OK, path
    verification = tmp_path / "verification.json"
    code, out, _ = run_cli("corpus", "verify", str(SEED / "registry.jsonl"), "--source", str(SEED / "corpus"), "--json")
    verification.write_text(out)
    assert run_cli("validate", str(verification))[0] == exit_codes.OK
    unknown = tmp_path / "notes.txt"
    unknown.write_text("hello")
    code, _, err = run_cli("validate", str(unknown))
    assert code == exit_codes.BAD_INPUT
    assert "notes.txt" in err
    code, _, _ = run_cli("validate", str(SEED / "registry.jsonl"), "--benchmark", str(SEED / "benchmark.json"))
    assert code == exit_codes.USAGE


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xef\xbb\xbf" + (SEED / "run.json").read_bytes(), "invalid JSON at byte 0"),
        ((SEED / "run.json").read_bytes()[:300], "invalid JSON at byte 2"),
        ((SEED / "run.json").read_bytes().replace(b'"run_id"', b'"run\x00_id"', 1), "invalid JSON at byte "),
        (b"", "is empty"),
        (b'{"schema": 7}', "field 'schema': 7 is none of"),
        (b"[1, 2]", "has no 'schema' field"),
    ],
)
def test_validate_names_what_does_not_parse(tmp_path: Path, content: bytes, message: str) -> None:
    """A file that names no kind says why, exit 3, with or without --benchmark."""
    path = tmp_path / "run.json"
    path.write_bytes(content)
    for extra in ((), ("--benchmark", str(SEED / "benchmark.json"))):
        code, out, err = run_cli("validate", str(path), *extra)
        assert code == exit_codes.BAD_INPUT, err
        assert message in err
        assert err.count("error:") == 1
        assert out == ""


def test_validate_names_a_lone_surrogate_in_the_run(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_bytes((SEED / "run.json").read_bytes().replace(b'"run_id": "', b'"run_id": "\\ud800', 1))
    for extra in ((), ("--benchmark", str(SEED / "benchmark.json"))):
        code, _, err = run_cli("validate", str(path), *extra)
        assert code == exit_codes.BAD_INPUT, err
        assert "field 'run_id': holds a lone surrogate" in err


def test_validate_lists_repeated_keys_of_the_header_and_of_records_together(tmp_path: Path) -> None:
    run = json.loads((SEED / "run.json").read_text())
    run["observations"][2]["quality_milli"] = "@@"
    text = (
        json.dumps(run)
        .replace('"@@"', '0, "quality_milli": 900', 1)
        .replace('"run_id": ', '"run_id": "x", "run_id": ', 1)
    )
    path = tmp_path / "run.json"
    path.write_text(text)
    code, _, err = run_cli("validate", str(path))
    assert code == exit_codes.BAD_INPUT
    assert f"error: {path}: field 'run_id': duplicate key" in err
    assert f"error: {path}, observations[2]: field 'quality_milli': duplicate key" in err


def test_files_of_the_wrong_kind_are_named_once(tmp_path: Path) -> None:
    code, _, err = run_cli("corpus", "verify", str(SEED / "benchmark.json"), "--source", str(SEED / "corpus"))
    assert code == exit_codes.BAD_INPUT
    assert err.splitlines()[0] == (
        f"error: {SEED / 'benchmark.json'}: is a benchmark (schema 'symgliph.eceb/benchmark-v0.1'), not a registry"
    )
    assert err.count("error:") == 1
    swapped = tmp_path / "swapped"
    swapped.mkdir()
    shutil.copy(SEED / "run.json", swapped / "benchmark.json")
    shutil.copy(SEED / "benchmark.json", swapped / "run.json")
    code, report, output = evaluate_seed(tmp_path, seed=swapped)
    assert code == exit_codes.BAD_INPUT
    assert [line for line in output.splitlines() if line.startswith("error:")] == [
        f"error: {swapped / 'benchmark.json'}: is a run (schema 'symgliph.eceb/run-v0.1'), not a benchmark",
        f"error: {swapped / 'run.json'}: is a benchmark (schema 'symgliph.eceb/benchmark-v0.1'), not a run",
    ]
    assert report == {}
    code, _, err = run_cli("validate", str(SEED / "run.json"), "--benchmark", str(SEED / "registry.jsonl"))
    assert code == exit_codes.BAD_INPUT
    assert "is a registry (schema 'symgliph.eceb/registry-v0.1'), not a benchmark" in err
    code, _, err = run_cli("validate", str(SEED / "benchmark.json"), "--benchmark", str(SEED / "benchmark.json"))
    assert code == exit_codes.USAGE
    assert "is a benchmark" in err
    code, _, err = run_cli("validate", str(SEED / "rules.toml"), "--benchmark", str(SEED / "benchmark.json"))
    assert code == exit_codes.USAGE
    assert f"{SEED / 'rules.toml'} is a rules file" in err
    code, _, err = run_cli("corpus", "verify", str(SEED / "rules.toml"), "--source", str(SEED / "corpus"))
    assert code == exit_codes.BAD_INPUT
    assert "is a rules file (schema 'symgliph.eceb/rules-v0.1'), not a registry" in err
    output = tmp_path / "registry.jsonl"
    code, _, err = run_cli(
        "corpus", "register", str(SEED / "corpus"), "--rules", str(SEED / "benchmark.json"), "-o", str(output)
    )
    assert code == exit_codes.BAD_INPUT
    assert err.splitlines()[0] == (
        f"error: {SEED / 'benchmark.json'}: is a benchmark (schema 'symgliph.eceb/benchmark-v0.1'), not a rules file"
    )
    assert not output.exists()


def test_deeply_nested_record_is_bad_input(tmp_path: Path) -> None:
    bad = subset_seed(tmp_path, set(EXPECTED))
    run = json.loads((bad / "run.json").read_text())
    text = json.dumps(run)
    marker = '"answer": '
    nested = "[" * 3000 + "]" * 3000
    text = text.replace(marker, marker + nested + ', "x": ', 1)
    (bad / "run.json").write_text(text)
    code, report, output = evaluate_seed(tmp_path, seed=bad)
    assert code == exit_codes.BAD_INPUT, output
    assert report == {}
    assert "Traceback" not in output


def test_every_input_from_s3_gives_the_same_report(tmp_path: Path, s3_server: S3Server, s3_bucket: str) -> None:
    """Benchmark, registry, run and corpus all read from S3-compatible storage."""
    local = tmp_path / "local"
    local.mkdir()
    evaluate_seed(local)
    s3_server.upload_tree(SEED, s3_bucket, "seed")
    report = tmp_path / "report.json"
    code, out, err = run_cli(
        "evaluate",
        f"s3://{s3_bucket}/seed/benchmark.json",
        f"s3://{s3_bucket}/seed/run.json",
        "--corpus",
        f"s3://{s3_bucket}/seed/corpus",
        "--endpoint-url",
        s3_server.endpoint_url,
        "-o",
        str(report),
    )
    assert code == exit_codes.TASKS_FAILED, out + err
    assert report.read_bytes() == (local / "report.json").read_bytes()
    for secret in s3_server.secrets:
        assert secret not in out + err
    code, _, err = run_cli(
        "evaluate",
        f"s3://{s3_bucket}/seed/no-such-benchmark.json",
        f"s3://{s3_bucket}/seed/run.json",
        "--corpus",
        f"s3://{s3_bucket}/seed/corpus",
        "--endpoint-url",
        s3_server.endpoint_url,
    )
    assert code == exit_codes.BAD_INPUT
    assert "no-such-benchmark.json" in err


def test_run_problems_confined_to_one_task_fail_that_task_and_the_others_are_evaluated(tmp_path: Path) -> None:
    (tmp_path / "before").mkdir()
    _, seed_report, _ = evaluate_seed(tmp_path / "before")
    changed = subset_seed(tmp_path, set(EXPECTED))
    run = json.loads((changed / "run.json").read_text())
    observations = run["observations"]
    assert (observations[4]["task_id"], observations[4]["budget"]) == ("disk-full-escalation", 256)
    assert (observations[9]["task_id"], observations[9]["budget"]) == ("db-failover-steps", 256)
    observations[4]["budget"] = 300  # compiled, off the ladder
    observations[9]["selected_artifacts"].append(observations[9]["selected_artifacts"][0])  # selected twice
    (changed / "run.json").write_text(json.dumps(run))
    code, report, output = evaluate_seed(tmp_path, seed=changed)
    assert code == exit_codes.TASKS_FAILED, output
    tasks = {t["task_id"]: t for t in report["tasks"]}
    off_ladder = tasks["disk-full-escalation"]
    assert not off_ladder["passed"]
    assert {
        "gate": "off_ladder",
        "strategy": "compiled",
        "budget": 300,
        "repetition": 2,
        "message": "observed at budget 300, which is not on the task's ladder [256, 512, 1024]: not evaluated",
    } in off_ladder["failed_assertions"]
    twice = tasks["db-failover-steps"]
    assert not twice["passed"]
    assert [
        (a["gate"], a["strategy"], a["budget"], a["repetition"])
        for a in twice["failed_assertions"]
        if a["gate"] == "duplicate_selection"
    ] == [("duplicate_selection", "compiled", 256, 1)]
    before = {t["task_id"]: t for t in seed_report["tasks"]}
    for task_id in set(EXPECTED) - {"disk-full-escalation", "db-failover-steps"}:
        assert tasks[task_id] == before[task_id], task_id
    assert report["summary"]["passing_tasks"] == seed_report["summary"]["passing_tasks"] - 2
    assert "off_ladder" in output and "duplicate_selection" in output


def test_a_benchmark_without_tasks_is_bad_input_and_names_every_unknown_task(tmp_path: Path) -> None:
    empty = subset_seed(tmp_path, set())
    run = json.loads((empty / "run.json").read_text())
    seed_run = json.loads((SEED / "run.json").read_text())
    run["observations"] = seed_run["observations"][:3]
    (empty / "run.json").write_text(json.dumps(run))
    code, report, output = evaluate_seed(tmp_path, seed=empty)
    assert code == exit_codes.BAD_INPUT, output
    assert report == {}
    assert "field 'tasks': is empty" in output
    for index in range(3):
        assert f"observations[{index}]: field 'task_id': 'disk-full-escalation' is not a task" in output
    code, _, err = run_cli("validate", str(empty / "run.json"), "--benchmark", str(empty / "benchmark.json"))
    assert code == exit_codes.BAD_INPUT
    assert "observations[2]: field 'task_id'" in err


def seed_with_registry_path(tmp_path: Path, registry_path: str) -> Path:
    """A copy of the seed whose benchmark names its registry as ``registry_path``."""
    copy = subset_seed(tmp_path, set(EXPECTED))
    benchmark = json.loads((copy / "benchmark.json").read_text())
    benchmark["registry"]["path"] = registry_path
    (copy / "benchmark.json").write_text(json.dumps(benchmark))
    return copy


@pytest.mark.parametrize(
    ("registry_path", "reason"),
    [
        ("registry.jsonl\x00", "control characters (U+0000)"),
        ("\x00", "control characters (U+0000)"),
        ("../subset/registry.jsonl", "'..' segment"),
        ("./registry.jsonl", "'.' segment"),
        ("/etc/passwd", "is absolute"),
        ("ABSOLUTE", "is absolute"),
        ("sub\\registry.jsonl", "backslash"),
        ("", "non-empty"),
    ],
)
def test_a_registry_path_must_name_a_file_in_the_benchmarks_tree(
    tmp_path: Path, registry_path: str, reason: str
) -> None:
    if registry_path == "ABSOLUTE":
        registry_path = str(tmp_path / "subset" / "registry.jsonl")  # the registry itself, named absolutely
    copy = seed_with_registry_path(tmp_path, registry_path)
    code, _, err = run_cli("validate", str(copy / "benchmark.json"))
    assert code == exit_codes.BAD_INPUT, err
    assert "field 'registry.path'" in err and reason in err
    code, report, output = evaluate_seed(tmp_path, seed=copy)
    assert (code, report) == (exit_codes.BAD_INPUT, {}), output
    assert "field 'registry.path'" in output


def test_a_registry_path_may_not_leave_the_benchmarks_tree_through_a_symbolic_link(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.copy(SEED / "registry.jsonl", outside / "registry.jsonl")
    copy = seed_with_registry_path(tmp_path, "shared/registry.jsonl")
    (copy / "shared").symlink_to(outside, target_is_directory=True)
    code, _, err = run_cli("validate", str(copy / "benchmark.json"))
    assert code == exit_codes.BAD_INPUT, err
    assert "field 'registry.path'" in err and "leads outside the directory of" in err
    (copy / "shared").unlink()
    (copy / "shared").mkdir()
    (copy / "shared" / "registry.jsonl").symlink_to(copy / "registry.jsonl")  # a link inside the tree is fine
    assert run_cli("validate", str(copy / "benchmark.json"))[0] == exit_codes.OK
