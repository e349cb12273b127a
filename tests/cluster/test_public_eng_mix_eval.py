"""``eceb evaluate`` on real input: the public-eng-mix benchmark and its synthetic
run over the real corpus (../shared/corpora/public-eng-mix), from disk and from
the loopback S3 server."""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from eceb_cli import exit_codes
from eceb_cli.main import main
from tests.support.dist_support import dist
from tests.support.paths import REPO
from tests.support.redis_server import RedisServer, celery_workers
from tests.support.s3_server import S3Server, empty_bucket

EXAMPLE = REPO / "examples" / "public-eng-mix"
CORPUS = REPO.parent / "shared" / "corpora" / "public-eng-mix" / "files"

# task id: (passes, minimum viable budget, gates that must appear among its failed assertions)
EXPECTED: dict[str, tuple[bool, int | None, set[str]]] = {
    "alertmanager-chart-persistence": (True, 1024, set()),
    "alertmanager-route-defaults": (False, None, {"repeatability", "no_viable_budget"}),
    "alertmanager-silence-api": (True, 1024, {"policy"}),  # naive_top_k only: reported, not deciding
    "c-unwind-abi": (True, 8192, {"quality"}),
    "cncf-dependency-licenses": (True, 2048, {"provenance", "answer_terms", "quality"}),
    "distributor-embargo-hosted-deploy": (True, 1024, {"answer_terms", "quality"}),
    "droplet-graceful-shutdown": (True, 1024, set()),
    "eks-endpoint-defaults": (False, None, {"provenance", "no_viable_budget"}),
    "etcd-db-quota-low-space": (True, 1024, {"provenance", "answer_terms", "quality"}),
    "github-poc-exploit-policy": (True, 512, set()),
    "github-token-leak-response": (True, 512, set()),
    "k8s-security-fix-timeline": (True, 2048, set()),
    "kube-api-error-budget-burn": (True, 2048, {"answer_terms", "quality"}),
    "openssl-alpn-use-after-free": (True, 512, set()),
    "pin-guarantee-and-unsoundness": (False, None, {"policy", "quality", "no_viable_budget"}),
    "rwop-access-mode": (True, 2048, {"answer_terms"}),
    "silence-state-filter-change": (True, 1024, set()),
    "streetlights-dim-command": (True, 2048, {"answer_terms", "quality"}),
    "twilio-lookup-carrier": (True, 1024, set()),
    "vpc-nat-gateway-count": (True, 4096, {"budget"}),
}


@pytest.fixture(scope="module")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.fail(
            f"the public corpus is expected at {CORPUS} (../shared/corpora/public-eng-mix/files beside the checkout)",
            pytrace=False,
        )
    return CORPUS


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout + result.stderr


def evaluate(source: str, report: Path, *extra: str) -> tuple[int, str]:
    return invoke(
        "evaluate",
        str(EXAMPLE / "benchmark.json"),
        str(EXAMPLE / "run.json"),
        "--corpus",
        source,
        "-o",
        str(report),
        "--quiet",
        *extra,
    )


@pytest.fixture(scope="module")
def disk_report(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Path]:
    report = tmp_path_factory.mktemp("disk") / "report.json"
    code, output = evaluate(str(corpus), report)
    return code, output, report


def registry() -> dict[str, dict[str, Any]]:
    lines = (EXAMPLE / "registry.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    return {record["artifact_id"]: record for record in map(json.loads, lines)}


def test_checked_in_run_is_what_make_run_writes(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLE / "make_run.py"), "--out-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    written = (tmp_path / "run.json").read_bytes()
    assert written == (EXAMPLE / "run.json").read_bytes(), "stale: run python examples/public-eng-mix/make_run.py"
    assert len(written) < 1_000_000
    run = json.loads(written)
    assert run["claim_class"] == "conformance_seed"
    assert run["non_empirical"] is True
    assert all("synthetic" in c["pricing"]["source"] for c in run["configurations"])


def test_benchmark_is_grounded_in_the_corpus(corpus: Path) -> None:
    """Required and denied artifacts exist, every kind is required somewhere, every
    classification is required or denied somewhere, and every answer term occurs
    in the task's required files."""
    artifacts = registry()
    benchmark = json.loads((EXAMPLE / "benchmark.json").read_text(encoding="utf-8"))
    assert {t["task_id"] for t in benchmark["tasks"]} == set(EXPECTED)
    kinds, classifications = set(), set()
    for task in benchmark["tasks"]:
        for artifact_id in task["required_artifacts"]:
            kinds.add(artifacts[artifact_id]["kind"])
            classifications.add(artifacts[artifact_id]["classification"])
            assert artifacts[artifact_id]["classification"] in task["allowed_classifications"], artifact_id
        for artifact_id in task.get("denied_artifacts", []):
            classifications.add(artifacts[artifact_id]["classification"])
        text = "".join((corpus / artifacts[i]["path"]).read_text(encoding="utf-8") for i in task["required_artifacts"])
        folded = unicodedata.normalize("NFKC", text).casefold()
        for term in task["required_answer_terms"]:
            assert unicodedata.normalize("NFKC", term).casefold() in folded, (task["task_id"], term)
    assert len(kinds) == 9
    assert classifications == {"public", "internal", "confidential", "restricted"}
    code, output = invoke("validate", str(EXAMPLE / "benchmark.json"))
    assert code == exit_codes.OK, output


def test_verdicts_from_disk(disk_report: tuple[int, str, Path]) -> None:
    code, output, path = disk_report
    assert code == exit_codes.TASKS_FAILED, output
    report = json.loads(path.read_text(encoding="utf-8"))
    tasks = {t["task_id"]: t for t in report["tasks"]}
    assert set(tasks) == set(EXPECTED)
    for task_id, (passes, budget, gates) in EXPECTED.items():
        task = tasks[task_id]
        failed = {a["gate"] for a in task["failed_assertions"]}
        assert task["passed"] is passes, (task_id, task["failed_assertions"])
        assert task["minimum_viable_budget"] == budget, task_id
        assert gates <= failed, (task_id, failed)
        if not gates:
            assert failed == set(), (task_id, task["failed_assertions"])
        if passes:
            assert task["compiled_prompt_tokens"] <= budget
            assert 0 < task["token_savings_bps"] <= 10_000
    assert report["summary"]["passing_tasks"] == sum(v[0] for v in EXPECTED.values()) == 17
    assert report["summary"]["total_tasks"] == 20
    assert report["claim_class"] == "conformance_seed"
    assert report["non_empirical"] is True
    assert report["inputs"]["artifact_count"] == 2419
    assert "17/20 tasks pass" in output


def test_policy_failures_name_the_denied_artifacts(disk_report: tuple[int, str, Path]) -> None:
    report = json.loads(disk_report[2].read_text(encoding="utf-8"))
    tasks = {t["task_id"]: t for t in report["tasks"]}
    pin = [a for a in tasks["pin-guarantee-and-unsoundness"]["failed_assertions"] if a["gate"] == "policy"]
    assert {a["budget"] for a in pin} == {2048, 4096, 8192}
    assert all("RUSTSEC-2023-0005" in a["message"] and "denied for this task" in a["message"] for a in pin)
    silence = tasks["alertmanager-silence-api"]
    assert {a["strategy"] for a in silence["failed_assertions"]} == {"naive_top_k"}
    assert silence["policy_violations"] == 0
    assert silence["policy_violations_all_groups"] == 6


def test_report_validates_against_its_schema(disk_report: tuple[int, str, Path]) -> None:
    path = disk_report[2]
    schema = json.loads((REPO / "schema" / "report-v0.1.json").read_text(encoding="utf-8"))
    Draft202012Validator(schema).validate(json.loads(path.read_text(encoding="utf-8")))
    code, output = invoke("validate", str(path))
    assert code == exit_codes.OK, output


@pytest.fixture(scope="module")
def example_bucket(s3_server: S3Server, corpus: Path) -> Iterator[str]:
    """A bucket holding the example's benchmark, run and registry under
    ``public-eng-mix/`` and the real corpus under ``public-eng-mix/files/``."""
    client = s3_server.client()
    name = f"eceb-public-eng-mix-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    assert len(s3_server.upload_tree(corpus, name, "public-eng-mix/files")) == 2419
    for file in ("benchmark.json", "run.json", "registry.jsonl"):
        client.put_object(Bucket=name, Key=f"public-eng-mix/{file}", Body=(EXAMPLE / file).read_bytes())
    yield name
    empty_bucket(client, name)
    client.delete_bucket(Bucket=name)


def test_same_report_bytes_from_s3(
    disk_report: tuple[int, str, Path], s3_server: S3Server, example_bucket: str, tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    code, output = evaluate(
        f"s3://{example_bucket}/public-eng-mix/files", report, "--endpoint-url", s3_server.endpoint_url
    )
    assert code == exit_codes.TASKS_FAILED, output
    assert report.read_bytes() == disk_report[2].read_bytes()
    for secret in s3_server.secrets:
        assert secret not in output


def test_eceb_dist_on_two_workers_writes_the_same_report(
    disk_report: tuple[int, str, Path],
    redis_server: RedisServer,
    s3_server: S3Server,
    example_bucket: str,
    tmp_path: Path,
) -> None:
    """The real-corpus example, stored in S3, submitted to two workers: the
    report is the one ``eceb evaluate`` writes from disk, byte for byte."""
    prefix = f"s3://{example_bucket}/public-eng-mix"
    out = f"{prefix}/reports/{uuid.uuid4().hex}.json"
    with celery_workers(redis_server.url(), 2, tmp_path / "workers") as workers:
        submitted = dist(
            redis_server,
            s3_server,
            "submit",
            f"{prefix}/benchmark.json",
            f"{prefix}/run.json",
            "--corpus",
            f"{prefix}/files",
            "--out",
            out,
            "--shard-bytes",
            "4000000",
            "--shard-observations",
            "40",
        )
        assert submitted.returncode == exit_codes.OK, submitted.stderr
        job_id = submitted.stdout.strip()
        waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", "120")
        assert waited.returncode == exit_codes.TASKS_FAILED, waited.stderr + workers.logs()[-3000:]
        assert f"17/20 tasks pass; report written to {out}" in waited.stdout
        fetched = dist(redis_server, s3_server, "result", job_id, "-o", str(tmp_path / "report.json"))
        assert fetched.returncode == exit_codes.TASKS_FAILED, fetched.stderr
        assert (tmp_path / "report.json").read_bytes() == disk_report[2].read_bytes()
        status = dist(redis_server, s3_server, "status", job_id)
        assert "failures 0" in status.stdout
        # Both workers took part.
        for log in workers.log_paths:
            assert "eceb.job_rehash_shard" in log.read_text(encoding="utf-8")
