"""``eceb-dist run``: a run made on real Celery workers over a real Redis,
its outputs in a loopback S3 server, against the loopback provider (a real
HTTP server speaking the OpenAI wire protocol, driven through the SDK).

The run, transcripts and judgments are the bytes ``eceb run`` writes for
the same provider answering deterministically (every byte but the measured
latencies); a worker killed mid-call leaves its call of unknown outcome,
never silently paid again; the job goes on with ``--resume``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from eceb_cli import exit_codes
from tests.support.dist_support import dist
from tests.support.faults import wait_for
from tests.support.loopback_provider import LoopbackProvider, running_loopback_provider
from tests.support.making import answer_script, eceb_run, write_benchmark, write_corpus, write_profile
from tests.support.redis_server import CeleryWorkers, RedisServer, celery_workers, running_redis
from tests.support.s3_server import S3Server, fresh_bucket

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

KEY = "sk-loopback-test-key"
WAIT_S = "180"


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> Iterator[str]:
    with fresh_bucket(s3_server, "eceb-run") as name:
        yield name


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackProvider]:
    directory = tmp_path_factory.mktemp("provider")
    with running_loopback_provider(directory, answer_script(), api_key=KEY, deterministic=True) as running:
        yield running


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, provider: LoopbackProvider) -> Path:
    """A benchmark, corpus and profile (the example context system), and ``eceb run``'s outputs of them."""
    root = tmp_path_factory.mktemp("made")
    write_corpus(root)
    write_benchmark(root, repetitions=2)
    write_profile(root, provider.openai_base_url)
    (root / "local").mkdir()
    local = eceb_run(root, "-o", str(root / "local" / "run.json"), key=KEY)
    assert local.returncode == 0, local.stderr
    return root


@pytest.fixture(scope="module")
def run_workers(
    redis_server: RedisServer, s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CeleryWorkers]:
    log_dir = tmp_path_factory.mktemp("run-workers")
    env = {"ECEB_TEST_KEY": KEY, "ECEB_TASK_MAX_RETRIES": "1"}
    with celery_workers(redis_server.url(), 2, log_dir, env=env) as running:
        yield running


def _submit(
    redis_server: RedisServer, s3_server: S3Server, root: Path, out: str, *options: str, broker_url: str | None = None
) -> str:
    result = dist(
        redis_server,
        s3_server,
        "run",
        str(root / "benchmark.json"),
        str(root / "profile.json"),
        "--corpus",
        str(root / "corpus"),
        "--out",
        out,
        *options,
        broker_url=broker_url,
    )
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    assert len(job_id) == 32, result.stdout
    return job_id


def _without_latency(data: bytes) -> dict[str, Any]:
    run: dict[str, Any] = json.loads(data)
    for observation in run["observations"]:
        observation["latency_ms"] = 0
    return run


def _objects(s3_server: S3Server, out: str) -> dict[str, bytes]:
    bucket, key = out.removeprefix("s3://").split("/", 1)
    stem = key.removesuffix(".json")
    client = s3_server.client()
    return {
        name: client.get_object(Bucket=bucket, Key=f"{stem}{suffix}")["Body"].read()
        for name, suffix in (("run", ".json"), ("transcripts", ".transcripts.jsonl"), ("judgments", ".judgments.jsonl"))
    }


@pytest.mark.parametrize("shard_executions", ["1", "5", "1000"], ids=["one-each", "five", "one-shard"])
def test_a_run_made_on_the_cluster_is_the_run_eceb_run_makes(
    redis_server: RedisServer,
    s3_server: S3Server,
    run_workers: CeleryWorkers,
    bucket: str,
    made: Path,
    shard_executions: str,
) -> None:
    out = f"s3://{bucket}/runs/{uuid.uuid4().hex}/run.json"
    job_id = _submit(redis_server, s3_server, made, out, "--shard-executions", shard_executions)
    waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
    assert waited.returncode == 0, waited.stderr
    objects = _objects(s3_server, out)
    local = made / "local"
    assert objects["transcripts"] == (local / "run.transcripts.jsonl").read_bytes()
    assert objects["judgments"] == (local / "run.judgments.jsonl").read_bytes()
    assert _without_latency(objects["run"]) == _without_latency((local / "run.json").read_bytes())
    result = dist(redis_server, s3_server, "result", job_id)
    assert result.returncode == 0, result.stderr
    assert result.stdout.encode() == objects["run"]
    status = dist(redis_server, s3_server, "status", job_id)
    assert status.returncode == 0, status.stderr
    assert "done" in status.stdout


def test_a_worker_killed_mid_call_leaves_it_of_unknown_outcome_never_paid_again(
    redis_server: RedisServer,
    s3_server: S3Server,
    bucket: str,
    made: Path,
    tmp_path: Path,
) -> None:
    """The whole worker is killed while its calls wait on a slow provider:
    the watch publishes the shard again, the calls it had in flight are of
    unknown outcome, the job fails (exit 9) naming them; resumed with
    ``--rerun-unknown`` it completes, and no call was answered twice."""
    root = tmp_path / "slow"
    root.mkdir()
    write_corpus(root)
    write_benchmark(root, repetitions=1)
    with running_loopback_provider(tmp_path / "provider", answer_script(delay_ms=3000), api_key=KEY) as slow:
        write_profile(root, slow.openai_base_url, in_flight=2)
        env = {
            "ECEB_TEST_KEY": KEY,
            "ECEB_LEASE_S": "4",
            "ECEB_HEARTBEAT_S": "1",
            "ECEB_WATCH_S": "2",
            "ECEB_UNTAKEN_S": "6",
        }
        out = f"s3://{bucket}/runs/{uuid.uuid4().hex}/run.json"
        broker = redis_server.url(5)  # a database of its own: no other worker of the module takes the shard
        with celery_workers(broker, 1, tmp_path / "doomed", env=env) as doomed:
            job_id = _submit(redis_server, s3_server, root, out, "--shard-executions", "100", broker_url=broker)
            deadline = time.monotonic() + 60
            while slow.stats()["total"] == 0:
                assert time.monotonic() < deadline, "no call reached the provider"
                time.sleep(0.1)
            os.killpg(doomed.pids[0], signal.SIGKILL)
        with celery_workers(broker, 1, tmp_path / "survivor", env=env):
            waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S, broker_url=broker)
            assert waited.returncode == exit_codes.EXECUTION_REFUSED, waited.stderr
            assert "unknown outcome" in waited.stderr
            status = dist(redis_server, s3_server, "status", job_id, broker_url=broker)
            assert "outcome unknown: " in status.stdout, status.stdout
            shown = json.loads(dist(redis_server, s3_server, "status", job_id, "--json", broker_url=broker).stdout)
            assert shown["making"]["unknown_count"] >= 1
            assert shown["making"]["possible_micro_usd"] > 0
            resumed = _submit(
                redis_server,
                s3_server,
                root,
                out,
                "--shard-executions",
                "100",
                "--resume",
                job_id,
                "--rerun-unknown",
                broker_url=broker,
            )
            waited = dist(redis_server, s3_server, "wait", resumed, "--timeout", WAIT_S, broker_url=broker)
            assert waited.returncode == 0, waited.stderr
        sent = slow.stats()["total"]
    objects = _objects(s3_server, out)
    run = json.loads(objects["run"])
    calls = objects["transcripts"].count(b"\n")
    retry_costs = [c for c in run["auxiliary_costs"] if c["kind"] == "retry"]
    assert retry_costs, "the upper bound of a call of unknown outcome is not counted"
    # Every request the provider received is a call of the run, or a call of unknown outcome sent again.
    assert sent == calls + len(retry_costs)
    assert len(run["observations"]) * 2 == calls


def _benchmark_root(tmp_path: Path, name: str, *, repetitions: int) -> Path:
    root = tmp_path / name
    root.mkdir()
    write_corpus(root)
    write_benchmark(root, repetitions=repetitions)
    return root


def test_two_workers_racing_for_the_last_authorized_calls_send_exactly_those(
    redis_server: RedisServer,
    s3_server: S3Server,
    run_workers: CeleryWorkers,
    bucket: str,
    tmp_path: Path,
) -> None:
    """Seven paid calls authorized, two workers with four executions in
    flight each (a shard each): the provider receives exactly seven, and
    the job is refused (exit 9) naming the authorized count."""
    root = _benchmark_root(tmp_path, "authorized", repetitions=2)
    with running_loopback_provider(tmp_path / "provider", answer_script(delay_ms=200), api_key=KEY) as counted:
        write_profile(root, counted.openai_base_url, in_flight=4, spending={"authorized_executions": 7})
        out = f"s3://{bucket}/runs/{uuid.uuid4().hex}/run.json"
        job_id = _submit(redis_server, s3_server, root, out, "--shard-executions", "5")
        waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
        assert waited.returncode == exit_codes.EXECUTION_REFUSED, waited.stderr
        assert "all 7 authorized paid calls have started" in waited.stderr
        assert counted.stats()["total"] == 7
    client = s3_server.client()
    key = out.removeprefix(f"s3://{bucket}/")
    assert "Contents" not in client.list_objects_v2(Bucket=bucket, Prefix=key), "a refused job wrote its run"


def test_redis_restarted_mid_run_completes_and_pays_nothing_twice(
    s3_server: S3Server, bucket: str, tmp_path: Path
) -> None:
    """Redis keeps its data in an append-only file: stopped while calls are
    in flight and started again, the journal, the shared limits and the
    job's steps carry on; the run is complete and every call was sent once."""
    root = _benchmark_root(tmp_path, "restart", repetitions=3)
    directory = tmp_path / "redis"
    directory.mkdir()
    with (
        running_loopback_provider(tmp_path / "provider", answer_script(delay_ms=300), api_key=KEY) as counted,
        contextlib.ExitStack() as redis_stack,
    ):
        write_profile(root, counted.openai_base_url, in_flight=3)
        server = redis_stack.enter_context(running_redis(directory, appendonly=True))
        env = {"ECEB_TEST_KEY": KEY, "ECEB_VISIBILITY_TIMEOUT": "5"}
        with celery_workers(server.url(), 2, tmp_path / "workers", env=env):
            out = f"s3://{bucket}/runs/{uuid.uuid4().hex}/run.json"
            job_id = _submit(server, s3_server, root, out, "--shard-executions", "10")
            wait_for(lambda: counted.stats()["total"] >= 6, "calls to reach the provider", timeout=60)
            redis_stack.close()  # the server stops, writing its append-only file
            time.sleep(1)
            redis_stack.enter_context(running_redis(directory, port=server.port, appendonly=True))
            waited = dist(server, s3_server, "wait", job_id, "--timeout", WAIT_S)
            assert waited.returncode == 0, waited.stderr
        objects = _objects(s3_server, out)
        calls = objects["transcripts"].count(b"\n")
        assert counted.stats()["total"] == calls, "a call was sent twice"
    assert "0 observations" not in waited.stdout  # (exit 0: every execution of the plan was made)


def _limited(profile: Path, *, requests_per_minute: int) -> None:
    """Give the profile's model and judge (one provider) a request limit."""
    document = json.loads(profile.read_text())
    document["model"]["requests_per_minute"] = requests_per_minute
    document["judge"]["model"]["requests_per_minute"] = requests_per_minute
    profile.write_text(json.dumps(document, indent=2))


def _most_in_ten_seconds(per_second: dict[str, int]) -> int:
    """The most requests any ten consecutive whole seconds received."""
    counts = {int(second): count for second, count in per_second.items()}
    if not counts:
        return 0
    first, last = min(counts), max(counts)
    return max(sum(counts.get(s, 0) for s in range(start, start + 10)) for start in range(first - 9, last + 1))


def test_a_429_storm_slows_every_worker_and_the_shared_limit_holds(
    redis_server: RedisServer,
    s3_server: S3Server,
    run_workers: CeleryWorkers,
    bucket: str,
    tmp_path: Path,
) -> None:
    """600 requests a minute (ten-second windows of 100) shared by two
    workers that could send far more; the provider answers storms of 429s
    with Retry-After (twenty requests in a row, three times): at the
    server, no ten seconds ever hold more than the limit plus 5 %, and the
    run completes."""
    root = _benchmark_root(tmp_path, "storm", repetitions=12)  # 96 executions, 192 calls and the 429s
    storm = {str(n): "429" for start in (20, 90, 160) for n in range(start, start + 20)}
    script = answer_script(faults=storm, retry_after_s=1)
    with running_loopback_provider(tmp_path / "provider", script, api_key=KEY) as counted:
        _limited(write_profile(root, counted.openai_base_url, in_flight=8), requests_per_minute=600)
        out = f"s3://{bucket}/runs/{uuid.uuid4().hex}/run.json"
        job_id = _submit(redis_server, s3_server, root, out, "--shard-executions", "20")
        waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
        assert waited.returncode == 0, waited.stderr
        stats = counted.stats()
    assert stats["faults"].get("429", 0) == 60
    most = _most_in_ten_seconds(stats["per_second"])
    assert most <= 105, f"{most} requests in ten seconds, over the shared limit of 100 (+5 %)"
    assert len(json.loads(_objects(s3_server, out)["run"])["observations"]) == 96


def test_a_cancelled_run_starts_no_further_call_and_writes_nothing(
    redis_server: RedisServer,
    s3_server: S3Server,
    run_workers: CeleryWorkers,
    bucket: str,
    tmp_path: Path,
) -> None:
    """``cancel`` mid-run: the shards running stop starting calls (what is
    in flight finishes and is journaled), the job ends cancelled (exit 8)
    and no run is written."""
    root = _benchmark_root(tmp_path, "cancel", repetitions=6)
    with running_loopback_provider(tmp_path / "provider", answer_script(delay_ms=500), api_key=KEY) as counted:
        write_profile(root, counted.openai_base_url, in_flight=2)
        out = f"s3://{bucket}/runs/{uuid.uuid4().hex}/run.json"
        job_id = _submit(redis_server, s3_server, root, out, "--shard-executions", "100")
        wait_for(lambda: counted.stats()["total"] >= 2, "calls to reach the provider", timeout=60)
        cancelled = dist(redis_server, s3_server, "cancel", job_id)
        assert cancelled.returncode == 0, cancelled.stderr
        waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
        assert waited.returncode == exit_codes.JOB_CANCELLED, waited.stderr
        time.sleep(3)  # what was in flight at the cancel has ended
        settled = counted.stats()["total"]
        time.sleep(3)
        assert counted.stats()["total"] == settled, "calls went on after the job was cancelled"
        assert settled < 2 * 48, "the whole plan was made after the cancel"
    key = out.removeprefix(f"s3://{bucket}/")
    assert "Contents" not in s3_server.client().list_objects_v2(Bucket=bucket, Prefix=key)
