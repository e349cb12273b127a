"""``eceb-dist`` with a registry that is not in corpus-root order: the
coordinator scans it as a stream, re-hash shards read their own byte
ranges of it, and reports, findings and problems are exactly those of the
in-process commands (real Celery workers, Redis and a loopback S3 server)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import redis

from eceb_cli import exit_codes
from eceb_worker.cluster.state import JobStore
from eceb_worker.errors import InputError
from eceb_worker.io.objects import ObjectStore
from eceb_worker.pipeline.inputs import check_inputs
from tests.support.dist_support import SEED, WAIT_S, dist, embedded_report, submit, upload_seed
from tests.support.redis_server import CeleryWorkers, RedisServer, celery_workers
from tests.support.s3_server import S3Server, empty_bucket

TAMPERED = ("policy/data-classification.md", "code/billing/invoice.py")
REMOVED = "chat/incident-2026-03-14.md"


def shuffled_registry(seed: int = 3) -> bytes:
    header, *lines = (SEED / "registry.jsonl").read_bytes().splitlines()
    random.Random(seed).shuffle(lines)
    return b"\n".join([header, *lines]) + b"\n"


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> Iterator[str]:
    """The seed with its registry's lines shuffled under ``shuffled/``; the
    same with two artifacts edited and one removed under ``tampered/``; and
    with a duplicated registry line under ``duplicated/``."""
    client = s3_server.client()
    name = f"eceb-dist-scan-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    registry = shuffled_registry()
    for prefix in ("shuffled", "tampered", "duplicated"):
        upload_seed(s3_server, name, prefix)
        client.put_object(Bucket=name, Key=f"{prefix}/registry.jsonl", Body=registry)
    for path in TAMPERED:
        client.put_object(Bucket=name, Key=f"tampered/corpus/{path}", Body=b"edited after registration\n")
    client.delete_object(Bucket=name, Key=f"tampered/corpus/{REMOVED}")
    lines = registry.splitlines(keepends=True)
    client.put_object(Bucket=name, Key="duplicated/registry.jsonl", Body=b"".join([*lines, lines[5]]))
    yield name
    empty_bucket(client, name)
    client.delete_bucket(Bucket=name)


@pytest.fixture(scope="module")
def workers(
    redis_server: RedisServer,
    s3_server: S3Server,  # first: the workers inherit its fake credentials
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[CeleryWorkers]:
    """Two worker processes: the coordinating steps and the shards run in different processes."""
    log_dir = tmp_path_factory.mktemp("celery-workers")
    with celery_workers(redis_server.url(), 2, log_dir, env={"ECEB_TASK_MAX_RETRIES": "1"}) as running:
        yield running


@pytest.mark.parametrize("shard_bytes", ["1", "40000"])
def test_report_of_a_shuffled_registry_is_byte_identical(
    redis_server: RedisServer,
    s3_server: S3Server,
    workers: CeleryWorkers,
    bucket: str,
    tmp_path: Path,
    shard_bytes: str,
) -> None:
    out = f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json"
    job_id = submit(redis_server, s3_server, f"s3://{bucket}/shuffled", out, "--shard-bytes", shard_bytes)
    waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
    assert waited.returncode == exit_codes.TASKS_FAILED, waited.stderr + workers.logs()[-3000:]
    local = tmp_path / "report.json"
    assert dist(redis_server, s3_server, "result", job_id, "-o", str(local)).returncode == exit_codes.TASKS_FAILED
    assert local.read_bytes() == embedded_report(tmp_path / "embedded")
    if shard_bytes == "1":
        assert "re-hash shards 12/12" in dist(redis_server, s3_server, "status", job_id).stdout


def test_findings_of_a_shuffled_registry_come_in_corpus_root_order(
    redis_server: RedisServer, s3_server: S3Server, workers: CeleryWorkers, bucket: str, tmp_path: Path
) -> None:
    out = f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json"
    job_id = submit(redis_server, s3_server, f"s3://{bucket}/tampered", out, "--shard-bytes", "1")
    waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
    assert waited.returncode == exit_codes.VERIFICATION_FAILED, waited.stderr + workers.logs()[-3000:]
    assert not ObjectStore(s3_server.endpoint_url).exists(out)
    client = redis.Redis.from_url(redis_server.url())
    state = JobStore(client).get(job_id)
    client.close()
    assert state is not None
    assert state.verification_json is not None
    distributed = json.loads(state.verification_json)
    # The same corpus verified in-process against the registry as eceb writes it.
    verified = subprocess.run(
        [
            sys.executable,
            "-m",
            "eceb_cli",
            "corpus",
            "verify",
            str(SEED / "registry.jsonl"),
            "--source",
            f"s3://{bucket}/tampered/corpus",
            "--json",
            "--unregistered",
            "ignore",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "ECEB_S3_ENDPOINT_URL": s3_server.endpoint_url},
        check=False,
    )
    assert verified.returncode == exit_codes.VERIFICATION_FAILED, verified.stderr
    assert distributed == json.loads(verified.stdout)
    assert [f["path"] for f in distributed["findings"]] == sorted([*TAMPERED, REMOVED])
    lines = [line for line in waited.stderr.splitlines() if line.startswith(("STALE", "MISSING"))]
    assert [line.split()[1] for line in lines] == sorted([*TAMPERED, REMOVED])


def test_registry_problems_are_those_eceb_evaluate_finds(
    redis_server: RedisServer, s3_server: S3Server, workers: CeleryWorkers, bucket: str, tmp_path: Path
) -> None:
    out = f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json"
    job_id = submit(redis_server, s3_server, f"s3://{bucket}/duplicated", out)
    waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
    assert waited.returncode == exit_codes.BAD_INPUT, waited.stderr + workers.logs()[-3000:]
    client = redis.Redis.from_url(redis_server.url())
    state = JobStore(client).get(job_id)
    client.close()
    assert state is not None
    for name in ("benchmark.json", "run.json"):
        (tmp_path / name).write_bytes((SEED / name).read_bytes())
    (tmp_path / "registry.jsonl").write_bytes(
        ObjectStore(s3_server.endpoint_url).get(f"s3://{bucket}/duplicated/registry.jsonl")[0]
    )
    with pytest.raises(InputError) as local:
        check_inputs(tmp_path / "benchmark.json", tmp_path / "run.json")
    registry_url = f"s3://{bucket}/duplicated/registry.jsonl"
    expected = [
        msgspec.structs.replace(problem, file=registry_url) if problem.file.endswith("registry.jsonl") else problem
        for problem in local.value.problems
    ]
    assert state.problems is not None
    found = list(state.problems)
    assert found == expected
    assert [p.file for p in found] == [registry_url] * len(found)
    assert any("duplicate artifact_id" in p.message for p in found)
    assert not ObjectStore(s3_server.endpoint_url).exists(out)
