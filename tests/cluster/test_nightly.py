"""The nightly CronJob end to end, here: its own command line (taken from the
rendered manifest, its ``$(VAR)`` references given loopback values) run
night after night against a real Redis, a worker started with the worker
Deployment's own command line, and the loopback S3 server holding the
bundled example ``examples/enterprise-seed``.

Night one has no baseline (exit 0, ``baseline.json`` and ``latest.json``
written); a night like the last is no regression (exit 0, both replaced); a
night whose run was planted with a regression (a passing task's quality
lowered below its floor) exits 10 naming it, ``latest.json`` replaced and
the baseline kept; the night after still compares with the baseline and
fails again; once that night is accepted (``eceb-dist nightly-accept``), the
next compares with it (exit 0); a night whose job fails exits with the job's
code and changes nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from eceb_cli import exit_codes
from eceb_worker.core.digests import digest_bytes
from tests.support.dist_support import SEED, embedded_report, upload_seed
from tests.support.k8s import command_line, container, deployment_worker, find, pod_spec, render, runnable
from tests.support.redis_server import RedisServer
from tests.support.s3_server import S3Server, empty_bucket

REGRESSED_TASK = "db-failover-steps"
"""A task of the seed that passes (at 512 tokens)."""


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> Iterator[str]:
    """The seed under ``seed/``, its run with a regression planted under
    ``regressed/run.json``, and its corpus less its last artifact under
    ``partial/corpus``."""
    client = s3_server.client()
    name = f"eceb-nightly-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    upload_seed(s3_server, name, "seed")
    s3_server.upload_tree(SEED / "corpus", name, "partial/corpus", threads=4)
    last = json.loads((SEED / "registry.jsonl").read_text(encoding="utf-8").splitlines()[-1])["path"]
    client.delete_object(Bucket=name, Key=f"partial/corpus/{last}")
    run = json.loads((SEED / "run.json").read_bytes())
    for observation in run["observations"]:
        if observation["task_id"] == REGRESSED_TASK and observation["strategy"] == "compiled":
            observation["quality_milli"] = 0  # below the task's floor at every budget
    client.put_object(Bucket=name, Key="regressed/run.json", Body=json.dumps(run, indent=1).encode())
    yield name
    empty_bucket(client, name)
    client.delete_bucket(Bucket=name)


def _loopback_env(container_spec: dict[str, Any], redis: RedisServer) -> dict[str, str]:
    """The literal env values of a container of the in-cluster-redis overlay
    (the broker URLs), with the Redis service replaced by ``redis``."""
    env = {}
    for entry in container_spec["env"]:
        if "value" in entry:
            (value,) = runnable([entry["value"]], {"REDIS_PASSWORD": redis.password})
            env[entry["name"]] = value.replace("@eceb-redis:6379/", f"@127.0.0.1:{redis.port}/")
    assert env == {"ECEB_BROKER_URL": redis.url(0), "ECEB_RESULT_BACKEND": redis.url(1)}
    return env


@pytest.fixture(scope="module")
def worker(redis_server: RedisServer, s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One worker, run as the Deployment runs it (its command line and broker URLs)."""
    spec = container(find(render("in-cluster-redis"), "Deployment", "eceb-worker"), "worker")
    env = {
        **_loopback_env(spec, redis_server),
        "ECEB_S3_ENDPOINT_URL": s3_server.endpoint_url,
        "ECEB_TASK_MAX_RETRIES": "1",
    }
    with deployment_worker(tmp_path_factory.mktemp("nightly-worker"), env) as running:
        yield running.node


@pytest.fixture(scope="module")
def cronjob() -> dict[str, Any]:
    return find(render("in-cluster-redis"), "CronJob", "eceb-nightly")


def _night(
    cronjob: dict[str, Any], redis: RedisServer, s3: S3Server, bucket: str, *, run: str = "seed", corpus: str = "seed"
) -> subprocess.CompletedProcess[str]:
    """One night: the CronJob's command line and environment, with loopback values."""
    spec = pod_spec(cronjob)
    nightly = container(cronjob, "nightly")
    values = {
        "NIGHTLY_BENCHMARK": f"s3://{bucket}/seed/benchmark.json",
        "NIGHTLY_RUN": f"s3://{bucket}/{run}/run.json",
        "NIGHTLY_CORPUS": f"s3://{bucket}/{corpus}/corpus",
        "NIGHTLY_REPORTS": f"s3://{bucket}/nightly/",
    }
    env = {**os.environ, "ECEB_S3_ENDPOINT_URL": s3.endpoint_url, **_loopback_env(nightly, redis)}
    assert spec["restartPolicy"] == "Never"
    result = subprocess.run(
        runnable(command_line(nightly), values), capture_output=True, text=True, env=env, check=False, timeout=300
    )
    for secret in (redis.password, *s3.secrets):
        assert secret not in result.stdout + result.stderr
    return result


def _accept(s3: S3Server, *words: str) -> subprocess.CompletedProcess[str]:
    """``eceb-dist nightly-accept WORDS`` with the nightly container's environment (no broker needed)."""
    env = {**os.environ, "ECEB_S3_ENDPOINT_URL": s3.endpoint_url}
    for variable in ("ECEB_BROKER_URL", "ECEB_RESULT_BACKEND"):
        env.pop(variable, None)
    result = subprocess.run(
        runnable(["eceb-dist", "nightly-accept", *words], {}),
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    for secret in s3.secrets:
        assert secret not in result.stdout + result.stderr
    return result


def _object(s3: S3Server, bucket: str, key: str) -> bytes:
    body: bytes = s3.client().get_object(Bucket=bucket, Key=key)["Body"].read()
    return body


def _reports(s3: S3Server, bucket: str) -> list[str]:
    listed = s3.client().list_objects_v2(Bucket=bucket, Prefix="nightly/")
    return sorted(item["Key"] for item in listed.get("Contents", []))


def test_nights(
    redis_server: RedisServer,
    s3_server: S3Server,
    worker: str,
    bucket: str,
    cronjob: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    expected = embedded_report(tmp_path_factory.mktemp("embedded"))
    latest = f"s3://{bucket}/nightly/latest.json"
    baseline = f"s3://{bucket}/nightly/baseline.json"

    # Night one: nothing to compare; tonight's report is the baseline.
    first = _night(cronjob, redis_server, s3_server, bucket)
    assert first.returncode == 0, first.stdout + first.stderr
    job_one = first.stdout.splitlines()[0]
    assert len(job_one) == 32
    assert f"tonight: 8/15 tasks pass; report s3://{bucket}/nightly/reports/{job_one}.json" in first.stdout
    assert f"no baseline at {baseline}: the first night, nothing to compare" in first.stdout
    assert f"{latest} now holds tonight's report (job {job_one})" in first.stdout
    assert f"{baseline} now holds tonight's report (job {job_one})" in first.stdout
    assert _object(s3_server, bucket, f"nightly/reports/{job_one}.json") == expected
    assert _object(s3_server, bucket, "nightly/latest.json") == expected
    assert _object(s3_server, bucket, "nightly/baseline.json") == expected

    # A night like the last: no regression.
    second = _night(cronjob, redis_server, s3_server, bucket)
    assert second.returncode == 0, second.stdout + second.stderr
    job_two = second.stdout.splitlines()[0]
    assert "0 of 15 task(s) changed" in second.stdout
    assert f"compared with the last accepted report, {baseline}:" in second.stdout
    assert "no regression (8/15 -> 8/15 tasks pass)" in second.stdout
    assert f"{latest} now holds tonight's report (job {job_two})" in second.stdout
    assert f"{baseline} now holds tonight's report (job {job_two})" in second.stdout
    assert _reports(s3_server, bucket) == sorted(
        [
            "nightly/baseline.json",
            "nightly/latest.json",
            f"nightly/reports/{job_one}.json",
            f"nightly/reports/{job_two}.json",
        ]
    )

    # The planted regression: the task that passed fails now, named; the night fails.
    third = _night(cronjob, redis_server, s3_server, bucket, run="regressed")
    assert third.returncode == exit_codes.REGRESSION, third.stdout + third.stderr
    job_three = third.stdout.splitlines()[0]
    assert f"REGRESSION  pass_to_fail: task {REGRESSED_TASK} passed before and fails now" in third.stdout
    assert f"  {REGRESSED_TASK}: PASS -> FAIL" in third.stdout
    assert "REGRESSED: " in third.stdout
    assert "(8/15 -> 7/15 tasks pass)" in third.stdout
    regressed = _object(s3_server, bucket, f"nightly/reports/{job_three}.json")
    assert _object(s3_server, bucket, "nightly/latest.json") == regressed != expected
    # The baseline stays the last accepted report, and the log says how to accept tonight's.
    assert _object(s3_server, bucket, "nightly/baseline.json") == expected
    assert f"{baseline} now holds" not in third.stdout
    assert f"{baseline} unchanged: tonight regressed" in third.stdout
    assert f"eceb-dist nightly-accept {job_three} --reports s3://{bucket}/nightly/" in third.stdout

    # The next night still compares with the baseline: the regression fails it again.
    fourth = _night(cronjob, redis_server, s3_server, bucket, run="regressed")
    assert fourth.returncode == exit_codes.REGRESSION, fourth.stdout + fourth.stderr
    job_four = fourth.stdout.splitlines()[0]
    assert "(8/15 -> 7/15 tasks pass)" in fourth.stdout
    assert _object(s3_server, bucket, "nightly/baseline.json") == expected

    # Refused acceptances leave the baseline: a night with no report, a report that is not one.
    missing = _accept(s3_server, "0" * 32, "--reports", f"s3://{bucket}/nightly/")
    assert missing.returncode == exit_codes.BAD_INPUT, missing.stdout + missing.stderr
    assert f"s3://{bucket}/nightly/reports/{'0' * 32}.json: cannot read: no such object" in missing.stderr
    not_a_report = _accept(s3_server, f"s3://{bucket}/seed/run.json", "--reports", f"s3://{bucket}/nightly")
    assert not_a_report.returncode == exit_codes.BAD_INPUT, not_a_report.stdout + not_a_report.stderr
    assert f"s3://{bucket}/seed/run.json" in not_a_report.stderr
    assert _object(s3_server, bucket, "nightly/baseline.json") == expected

    # The regression accepted (by its night's job id): the nights after compare with it.
    accepted = _accept(s3_server, job_four, "--reports", f"s3://{bucket}/nightly/")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert accepted.stdout == (
        f"{baseline} now holds the report s3://{bucket}/nightly/reports/{job_four}.json (7/15 tasks pass)\n"
    )
    assert _object(s3_server, bucket, "nightly/baseline.json") == regressed
    fifth = _night(cronjob, redis_server, s3_server, bucket, run="regressed")
    assert fifth.returncode == 0, fifth.stdout + fifth.stderr
    assert "no regression (7/15 -> 7/15 tasks pass)" in fifth.stdout

    # A night whose job fails (an artifact missing from its corpus): the job's own exit code, nothing changed.
    before = {key: digest_bytes(_object(s3_server, bucket, key)) for key in _reports(s3_server, bucket)}
    failed = _night(cronjob, redis_server, s3_server, bucket, corpus="partial")
    assert failed.returncode == exit_codes.VERIFICATION_FAILED, failed.stdout + failed.stderr
    assert "no report was written" in failed.stderr
    assert "now holds" not in failed.stdout
    assert {key: digest_bytes(_object(s3_server, bucket, key)) for key in _reports(s3_server, bucket)} == before

    # A misspelled corpus prefix: refused before a job exists (bad input), nothing changed.
    misspelled = _night(cronjob, redis_server, s3_server, bucket, corpus="no-such")
    assert misspelled.returncode == exit_codes.BAD_INPUT, misspelled.stdout + misspelled.stderr
    assert (misspelled.stdout, "is the corpus prefix right?" in misspelled.stderr) == ("", True)
    assert {key: digest_bytes(_object(s3_server, bucket, key)) for key in _reports(s3_server, bucket)} == before


def test_markdown_and_different_roots(
    redis_server: RedisServer, s3_server: S3Server, worker: str, bucket: str, cronjob: dict[str, Any], tmp_path: Any
) -> None:
    """--markdown writes the CI comment; a previous report of another task
    root is refused (exit 3) and left as it was. The previous report is a
    ``latest.json`` alone (a prefix kept before ``baseline.json`` existed):
    it stands in for the baseline."""
    del worker
    prefix = f"s3://{bucket}/other-roots"
    report = json.loads(embedded_report(tmp_path / "embedded"))
    report["inputs"]["task_root"] = "0" * 64
    s3_server.client().put_object(Bucket=bucket, Key="other-roots/latest.json", Body=json.dumps(report).encode())
    env = {
        **os.environ,
        **_loopback_env(container(cronjob, "nightly"), redis_server),
        "ECEB_S3_ENDPOINT_URL": s3_server.endpoint_url,
    }
    words = [
        "eceb-dist",
        "nightly",
        f"s3://{bucket}/seed/benchmark.json",
        f"s3://{bucket}/seed/run.json",
        "--corpus",
        f"s3://{bucket}/seed/corpus",
        "--reports",
        prefix,
        "--markdown",
        str(tmp_path / "comment.md"),
    ]
    refused = subprocess.run(runnable(words, {}), capture_output=True, text=True, env=env, check=False, timeout=300)
    assert refused.returncode == exit_codes.BAD_INPUT, refused.stdout + refused.stderr
    assert "differs from" in refused.stderr and "--allow-different-roots" in refused.stderr
    assert json.loads(_object(s3_server, bucket, "other-roots/latest.json"))["inputs"]["task_root"] == "0" * 64
    allowed = subprocess.run(
        runnable([*words, "--allow-different-roots"], {}), capture_output=True, text=True, env=env, check=False
    )
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    comment = (tmp_path / "comment.md").read_text(encoding="utf-8")
    assert comment.startswith("## eceb compare: no regression")
    assert "| task root |" in comment
