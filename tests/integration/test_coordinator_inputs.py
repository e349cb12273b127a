"""What the distributed coordinator loads instead of the whole registry:
checking the inputs while keeping no registry artifact must find exactly the
problems checking them with every artifact finds, the evaluation must be the
same with only the artifacts the run refers to, and the in-process commands'
output must not change."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import blake3
import pytest

from eceb_cli import exit_codes
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.disclosure import DISCLOSURE_OFF
from eceb_worker.families.eceb.planning import evaluation_task_ids
from eceb_worker.families.eceb.shards import evaluate_tasks_of_run, reduce_evaluation
from eceb_worker.io.locations import Locator
from eceb_worker.pipeline.inputs import (
    check_inputs,
    load_benchmark,
    load_referenced_artifacts,
    load_run,
    referenced_artifact_ids,
)
from tests.support.dist_support import embedded_report
from tests.support.paths import REPO

SEED = REPO / "examples" / "enterprise-seed"
PUBLIC = REPO / "examples" / "public-eng-mix"
PUBLIC_CORPUS = REPO.parent / "shared" / "corpora" / "public-eng-mix" / "files"


def seed_copy(tmp_path: Path) -> tuple[Path, Path, dict[str, Any], dict[str, Any]]:
    shutil.copy(SEED / "registry.jsonl", tmp_path / "registry.jsonl")
    benchmark = json.loads((SEED / "benchmark.json").read_text())
    run = json.loads((SEED / "run.json").read_text())
    return tmp_path / "benchmark.json", tmp_path / "run.json", benchmark, run


def outcome(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except InputError as exc:
        return exc.problems


def shuffle_registry(path: Path, seed: int = 0) -> None:
    header, *lines = path.read_bytes().splitlines()
    random.Random(seed).shuffle(lines)
    path.write_bytes(b"\n".join([header, *lines]) + b"\n")


def mutate_benchmark(benchmark: dict[str, Any], run: dict[str, Any], registry: Path) -> None:
    tasks = benchmark["tasks"]
    tasks[0]["required_artifacts"].append("runbook/missing.md")
    tasks[1]["denied_artifacts"] = ["runbook/db-failover.md"]
    tasks[2]["required_artifacts"].append("policy/customer-pii-handling.md")
    tasks[3]["budget_ladder"] = [512, 512, 256]
    tasks[6]["denied_artifacts"] = ["nowhere.md"]
    benchmark["registry"]["corpus_root"] = "0" * 64


def mutate_run(benchmark: dict[str, Any], run: dict[str, Any], registry: Path) -> None:
    o = run["observations"]
    o[0]["task_id"] = "no-such-task"
    o[5]["configuration_id"] = "nope"
    o[7]["input_cost_micro_usd"] += 5
    run["corpus_root"] = "1" * 64


def mutate_registry(benchmark: dict[str, Any], run: dict[str, Any], registry: Path) -> None:
    lines = registry.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace('"kind":"', '"kind":"wiki","x":"')
    lines.append(lines[4])  # a duplicate
    registry.write_text("".join(lines))


def mutate_registry_and_benchmark_schema(benchmark: dict[str, Any], run: dict[str, Any], registry: Path) -> None:
    benchmark["tasks"][0]["minimum_quality_milli"] = 2000
    registry.write_text(registry.read_text().replace('"kind":"code"', '"kind":"slack"'))


def mutate_registry_count(benchmark: dict[str, Any], run: dict[str, Any], registry: Path) -> None:
    lines = registry.read_text().splitlines(keepends=True)
    registry.write_text("".join(lines[:-1]))


def remove_registry(benchmark: dict[str, Any], run: dict[str, Any], registry: Path) -> None:
    registry.unlink()


def shuffled(benchmark: dict[str, Any], run: dict[str, Any], registry: Path) -> None:
    shuffle_registry(registry)


MUTATIONS: dict[str, Callable[[dict[str, Any], dict[str, Any], Path], None]] = {
    "none": lambda benchmark, run, registry: None,
    "shuffled registry": shuffled,
    "benchmark problems": mutate_benchmark,
    "run problems": mutate_run,
    "registry problems": mutate_registry,
    "registry and benchmark schema problems": mutate_registry_and_benchmark_schema,
    "registry count": mutate_registry_count,
    "no registry": remove_registry,
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_scanning_finds_what_loading_whole_finds(mutation: str, tmp_path: Path) -> None:
    bench_path, run_path, benchmark, run = seed_copy(tmp_path)
    MUTATIONS[mutation](benchmark, run, tmp_path / "registry.jsonl")
    bench_path.write_text(json.dumps(benchmark))
    run_path.write_text(json.dumps(run))
    loaded = outcome(lambda: check_inputs(bench_path, run_path))
    scanned = outcome(lambda: check_inputs(bench_path, run_path, keep=frozenset(), shard_bytes=40_000))
    if isinstance(loaded, list):
        assert loaded  # some problem
        assert all(isinstance(p, Problem) for p in loaded)
        assert scanned == loaded
        return
    assert scanned.benchmark == loaded.benchmark
    assert scanned.run == loaded.run
    assert scanned.corpus_root == loaded.corpus_root
    assert scanned.registry.header == loaded.registry.header
    assert scanned.registry.artifact_count == len(loaded.registry.artifacts)
    assert scanned.registry.in_root_order == (mutation == "none")
    named = {a for t in loaded.benchmark.tasks for a in (*t.required_artifacts, *t.denied_artifacts)}
    assert scanned.registry.artifacts == tuple(a for a in loaded.registry.artifacts if a.artifact_id in named)
    assert scanned.registry_location == str(tmp_path / "registry.jsonl")


@pytest.mark.parametrize("example", [SEED, PUBLIC], ids=["enterprise-seed", "public-eng-mix"])
def test_the_referenced_artifacts_evaluate_as_the_whole_registry(example: Path) -> None:
    full = check_inputs(example / "benchmark.json", example / "run.json")
    scanned = check_inputs(example / "benchmark.json", example / "run.json", keep=frozenset())
    benchmark, run = load_benchmark(example / "benchmark.json"), load_run(example / "run.json")
    referenced = load_referenced_artifacts(scanned.registry_location, benchmark, run)
    everything = full.registry.by_id()
    assert set(referenced) == referenced_artifact_ids(benchmark, run) & set(everything)
    assert len(referenced) < len(everything) or example == SEED
    task_ids = evaluation_task_ids(benchmark, run)
    assert task_ids == evaluation_task_ids(full.benchmark, full.run)
    tasks = {t.task_id: t for t in benchmark.tasks}
    with_referenced = evaluate_tasks_of_run(task_ids, run, tasks, referenced)
    with_everything = evaluate_tasks_of_run(task_ids, full.run, tasks, everything)
    assert with_referenced == with_everything
    count = len(everything)

    def reduced(outcomes: Any, run: Any) -> Any:
        return reduce_evaluation(
            outcomes,
            benchmark=benchmark,
            run=run,
            corpus_root=scanned.corpus_root,
            artifact_count=count,
            eceb_version="x",
            disclosure_check=DISCLOSURE_OFF,
        )

    assert reduced(with_referenced, run) == reduced(with_everything, full.run)


def test_a_missing_registry_is_named_as_load_registry_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "registry.jsonl"
    with pytest.raises(InputError) as opened:
        list(Locator().locate(missing).chunks())
    with pytest.raises(InputError) as ranged:
        Locator().locate(missing).read_range(0, 1)
    from eceb_worker.pipeline.inputs import load_registry

    with pytest.raises(InputError) as loaded:
        load_registry(missing)
    assert opened.value.problems == loaded.value.problems == ranged.value.problems


def digest(data: bytes) -> str:
    return str(blake3.blake3(data).hexdigest())


# The outputs of the in-process commands, as they were before the
# distributed coordinator stopped loading the registry whole (the report
# names eceb's version: these change with it; the seed gained its disclosure and
# abstention tasks, and every report its disclosure_check, its savings
# intervals, `uncertainty`, `token_counts` and the groups' `local_prompt_tokens`,
# and every task its `baseline_composition`).
SEED_REPORT = "0f29609402e8f5b3e8b844853f666cd826287385fd74bc3f7d998d5cb9513742"
PUBLIC_REPORT = "56b37d40ebe084e16d4f8f5a8f6aa6a3175799d289872e40dd3a314df89f1e8a"
TAMPERED_VERIFICATION = "a01a15cc3617f409cfef7687acfba768e002bb7edcbd40eae496e3dab8520f5a"


def test_eceb_evaluate_reports_are_unchanged(tmp_path: Path) -> None:
    assert digest(embedded_report(tmp_path, SEED)) == SEED_REPORT
    assert digest(embedded_report(tmp_path, PUBLIC, PUBLIC_CORPUS)) == PUBLIC_REPORT


def test_eceb_corpus_verify_findings_are_unchanged(tmp_path: Path) -> None:
    """Four findings of four kinds, in corpus-root order, the same bytes as before
    (unregistered files not looked for, as before)."""
    corpus = tmp_path / "corpus"
    shutil.copytree(SEED / "corpus", corpus)
    (corpus / "rfc" / "rfc-0007-log-retention.md").write_bytes(b"edited\n")
    with (corpus / "api_spec" / "payments-openapi.yaml").open("ab") as stream:
        stream.write(b"edited too\n")
    (corpus / "chat" / "incident-2026-03-14.md").unlink()
    (corpus / "issue" / "ENG-4411.md").unlink()
    (corpus / "issue" / "ENG-4411.md").mkdir()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "eceb_cli",
            "corpus",
            "verify",
            str(SEED / "registry.jsonl"),
            "--source",
            str(corpus),
            "--json",
            "--workers",
            "1",
            "--unregistered",
            "ignore",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == exit_codes.VERIFICATION_FAILED, result.stderr
    report = json.loads(result.stdout)
    report.pop("source")  # the temporary directory
    assert [f["path"] for f in report["findings"]] == [
        "api_spec/payments-openapi.yaml",
        "chat/incident-2026-03-14.md",
        "issue/ENG-4411.md",
        "rfc/rfc-0007-log-retention.md",
    ]
    assert digest(json.dumps(report, sort_keys=True, separators=(",", ":")).encode()) == TAMPERED_VERIFICATION


def test_findings_are_reduced_into_corpus_root_order() -> None:
    """Shards cut in any order of the registry's lines give the findings in
    the order of the registry's canonical records (ECEB-0.1 §5)."""
    from eceb_worker.corpus.registry import build_registry
    from eceb_worker.corpus.verification import reduce_verification, shard_verification
    from eceb_worker.errors import ArtifactMissing
    from tests.support.helpers import artifact

    names = ["notes", "notes 2", 'a"b', "a#b", "a\\b", "caf\u00e9", "z\u0001", "Z", "a b", "a"]
    registry = build_registry(artifact(name, path=f"p{i}", content=bytes([i])) for i, name in enumerate(names))
    for seed in range(5):
        lines = list(registry.artifacts)
        random.Random(seed).shuffle(lines)
        shards = []
        for start in range(0, len(lines), 3):
            part = lines[start : start + 3]
            missing = [ArtifactMissing(a.path, "") for a in part]
            shards.append(shard_verification(part, missing, start=start))
        random.Random(seed).shuffle(shards)
        report = reduce_verification(shards, corpus_root=registry.corpus_root, artifact_count=len(lines), source="s")
        assert [f.artifact_id for f in report.findings] == [a.artifact_id for a in registry.artifacts]
