"""Observable jobs on real ``eceb-dist worker`` processes over a real Redis,
the seed in a loopback S3 server: every worker log line about a job names
the job and the shard (text and JSON), Prometheus metrics scraped over HTTP
(summed over the prefork children), ``status --json``, progress on a
terminal, and the warning when no worker consumes the queue.

The tests run on a Redis database of their own (``DB``): no other module's
jobs or messages meet these workers.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from eceb_cli import exit_codes
from tests.support.dist_support import SEED, WAIT_S, embedded_report, seeded_bucket
from tests.support.dist_workers import DistWorker, dist_at, dist_worker, samples, scrape
from tests.support.redis_server import RedisServer
from tests.support.relays import RefusingRelay
from tests.support.s3_server import S3Server

DB = 7
REHASH_SHARDS = 12
EVALUATION_SHARDS = 15
NO_WORKER = "no worker consumes the queue 'eceb'"
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


@pytest.fixture(scope="module")
def broker(redis_server: RedisServer) -> str:
    """This module's broker and backend: a database of its own, emptied first."""
    redis_server.client(DB).flushdb()
    return redis_server.url(DB)


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> Iterator[str]:
    with seeded_bucket(s3_server, "obs") as name:
        yield name


@pytest.fixture(scope="module")
def expected_report(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return embedded_report(tmp_path_factory.mktemp("embedded"))


def _corpus_bytes() -> int:
    """The bytes of every artifact the seed's registry lists."""
    lines = (SEED / "registry.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    return sum(json.loads(line)["size_bytes"] for line in lines if line.strip())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _submit(
    broker: str, redis: RedisServer, s3: S3Server, bucket: str, endpoint_url: str | None = None
) -> tuple[str, str]:
    """Submit the seed, one artifact and one observation a shard; the job id and the submission's standard error."""
    out = f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json"
    prefix = f"s3://{bucket}/seed"
    result = dist_at(
        broker,
        redis,
        s3,
        "submit",
        f"{prefix}/benchmark.json",
        f"{prefix}/run.json",
        "--corpus",
        f"{prefix}/corpus",
        "--out",
        out,
        "--shard-bytes",
        "1",
        "--shard-observations",
        "1",
        endpoint_url=endpoint_url,
    )
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    assert len(job_id) == 32, result.stdout
    return job_id, result.stderr


def _wait_on_a_terminal(broker: str, redis: RedisServer, s3: S3Server, job_id: str) -> tuple[int, str]:
    """``eceb-dist wait JOB`` with its standard error a terminal (a pty): its exit code and what it wrote there."""
    main, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # rows, columns
    env = {**os.environ, "ECEB_BROKER_URL": broker, "ECEB_S3_ENDPOINT_URL": s3.endpoint_url}
    env.pop("ECEB_RESULT_BACKEND", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "eceb_cli.dist", "wait", job_id, "--timeout", WAIT_S],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=secondary,
        env=env,
    )
    os.close(secondary)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(main, 65536)
            except OSError:  # the other end closed
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    process.wait(timeout=120)
    reader.join(timeout=10)
    os.close(main)
    text = b"".join(chunks).decode("utf-8", errors="replace")
    assert redis.password not in text
    return process.returncode, text


def _lines_of(worker: DistWorker, job_id: str) -> list[str]:
    return [line for line in worker.stderr().splitlines() if job_id in line]


def test_text_log_lines_name_the_job_and_every_shard(
    broker: str, redis_server: RedisServer, s3_server: S3Server, bucket: str, tmp_path: Path
) -> None:
    """Celery's own lines (received, succeeded) and eceb's name the job and
    the shard, ``shard=<stage>:<index>/<count>``; a worker consumes the
    queue, so nothing warns; ``wait`` shows progress bars on a terminal;
    ``status --json`` has the job's start time and elapsed seconds."""
    with dist_worker(broker, tmp_path / "worker", "--concurrency", "1") as worker:
        job_id, submitted = _submit(broker, redis_server, s3_server, bucket)
        assert NO_WORKER not in submitted
        code, terminal = _wait_on_a_terminal(broker, redis_server, s3_server, job_id)
        assert code == exit_codes.TASKS_FAILED, terminal + worker.stderr()[-3000:]
        status = dist_at(broker, redis_server, s3_server, "status", job_id, "--json")
    assert NO_WORKER not in terminal
    # The bars of both stages were drawn on the terminal (tqdm: "<id> re-hash: ... 12/12").
    assert f"{job_id[:8]} re-hash" in terminal and f"/{REHASH_SHARDS}" in terminal, terminal
    assert f"{job_id[:8]} evaluation" in terminal and f"/{EVALUATION_SHARDS}" in terminal, terminal
    lines = _lines_of(worker, job_id)
    for stage, task, count in (
        ("rehash", "eceb.job_rehash_shard", REHASH_SHARDS),
        ("evaluate", "eceb.evaluate_shard", EVALUATION_SHARDS),
    ):
        for index in range(count):
            named = [line for line in lines if f"job={job_id} shard={stage}:{index}/{count} " in line]
            assert any(f"Task {task}[" in line and "received" in line for line in named), (stage, index)
            assert any(f"Task {task}[" in line and "succeeded" in line for line in named), (stage, index)
    # Every line about one of the job's tasks names the job (the worker ran no other job).
    task_lines = [line for line in worker.stderr().splitlines() if "Task eceb." in line]
    assert task_lines and all(f"job={job_id}" in line for line in task_lines)
    assert any(f"job={job_id} Task eceb.coordinate[" in line for line in lines)
    assert any(f"job={job_id} job done: 8/15 tasks pass" in line for line in lines)
    assert any(f"job={job_id} planned {REHASH_SHARDS} re-hash shards" in line for line in lines)
    assert status.returncode == 0, status.stderr
    found = json.loads(status.stdout)
    assert found["job_id"] == job_id and found["phase"] == "done" and found["kind"] == "evaluate"
    assert RFC3339.match(found["started_at"]) and RFC3339.match(found["ended_at"])
    assert isinstance(found["elapsed_s"], int) and 0 <= found["elapsed_s"] <= int(WAIT_S)
    assert (found["shards_done"], found["shards_total"]) == (27, 27)
    assert (found["rehash_done"], found["rehash_total"]) == (REHASH_SHARDS, REHASH_SHARDS)
    assert (found["passing_tasks"], found["total_tasks"]) == (8, 15)
    assert found["failures"] == [] and found["error"] is None


def test_json_logs_and_metrics_summed_over_the_prefork_children(
    broker: str, redis_server: RedisServer, s3_server: S3Server, bucket: str, tmp_path: Path, expected_report: bytes
) -> None:
    """``--log-format json``: every line the worker writes, on either
    stream, is one JSON object, and those about the job name it and its
    shard. ``--metrics-port``: shards done, bytes hashed, S3 requests and
    durations, counted by child processes that are each replaced after one
    task (``ECEB_MAX_TASKS_PER_CHILD=1``), scraped from the parent as their sums."""
    port = _free_port()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    options = (
        "--concurrency",
        "2",
        "--log-format",
        "json",
        "--metrics-port",
        str(port),
        "--metrics-address",
        "127.0.0.1",
    )
    env = {"ECEB_MAX_TASKS_PER_CHILD": "1", "TMPDIR": str(scratch)}
    with dist_worker(broker, tmp_path / "worker", *options, env=env) as worker:
        assert list(scratch.glob("eceb-metrics-*")), "the worker made no directory for its counts"
        job_id, _ = _submit(broker, redis_server, s3_server, bucket)
        waited = dist_at(broker, redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
        assert waited.returncode == exit_codes.TASKS_FAILED, waited.stderr + worker.stderr()[-3000:]
        exposed = samples(scrape(port))
        assert waited.stderr == ""  # on a pipe: no progress bar, no warning
        local = tmp_path / "report.json"
        assert dist_at(broker, redis_server, s3_server, "result", job_id, "-o", str(local)).returncode == 1
        assert local.read_bytes() == expected_report
    assert not list(scratch.glob("eceb-metrics-*")), "the worker left its counts behind"
    records = [json.loads(line) for line in worker.stderr().splitlines()]
    said = [json.loads(line) for line in worker.stdout().splitlines() if line.strip()]  # no banner
    assert [record["message"] for record in said] == ["worker: Warm shutdown (MainProcess)"]
    assert records[0]["message"].startswith("starting a worker on redis://***@127.0.0.1:")
    for record in records:
        assert set(record) >= {"time", "level", "logger", "message", "job_id", "shard", "process"}
        assert re.match(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$", record["time"])
    about_job = [record for record in records if job_id in record["message"] or record["job_id"] == job_id]
    assert about_job and all(record["job_id"] == job_id for record in about_job)
    shards = {record["shard"] for record in about_job if "succeeded" in record["message"] and record["shard"]}
    assert shards == {f"rehash:{i}/{REHASH_SHARDS}" for i in range(REHASH_SHARDS)} | {
        f"evaluate:{i}/{EVALUATION_SHARDS}" for i in range(EVALUATION_SHARDS)
    }
    # Each child ran one task: the counts below come from many processes.
    children = {record["process"] for record in about_job if record["shard"]}
    assert len(children) >= REHASH_SHARDS, children
    assert exposed['eceb_shards_done_total{kind="rehash"}'] == REHASH_SHARDS
    assert exposed['eceb_shards_done_total{kind="evaluate"}'] == EVALUATION_SHARDS
    assert exposed.get('eceb_shards_failed_total{kind="rehash"}', 0) == 0
    assert exposed["eceb_bytes_hashed_total"] == _corpus_bytes()
    assert exposed['eceb_shard_duration_seconds_count{kind="rehash"}'] == REHASH_SHARDS
    assert exposed['eceb_shard_duration_seconds_count{kind="evaluate"}'] == EVALUATION_SHARDS
    # Each re-hash shard read its artifact; the coordinator and the last step read and wrote more.
    assert exposed['eceb_s3_requests_total{operation="GetObject"}'] >= REHASH_SHARDS
    assert exposed['eceb_s3_requests_total{operation="PutObject"}'] >= 1


def test_worker_uses_its_own_endpoint_and_counts_throttling(
    broker: str, redis_server: RedisServer, s3_server: S3Server, bucket: str, tmp_path: Path, expected_report: bytes
) -> None:
    """The submitter reaches S3 directly; the worker is configured with
    another endpoint, a relay that first answers SlowDown: the job reads
    through the worker's endpoint (the relay sees its requests), succeeds,
    and the throttling answers and botocore's retries are counted."""
    port = _free_port()
    with RefusingRelay(s3_server.endpoint_url, refusals=3, how="slowdown") as relay:
        options = ("--concurrency", "1", "--metrics-port", str(port), "--metrics-address", "127.0.0.1")
        with dist_worker(broker, tmp_path / "worker", *options, "--endpoint-url", relay.endpoint_url) as worker:
            job_id, _ = _submit(broker, redis_server, s3_server, bucket)
            waited = dist_at(broker, redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
            assert waited.returncode == exit_codes.TASKS_FAILED, waited.stderr + worker.stderr()[-3000:]
            exposed = samples(scrape(port))
        assert any(path.endswith("/seed/corpus/" + "policy/data-classification.md") for _, path in relay.requests)
    local = tmp_path / "report.json"
    assert dist_at(broker, redis_server, s3_server, "result", job_id, "-o", str(local)).returncode == 1
    assert local.read_bytes() == expected_report
    assert exposed["eceb_s3_throttles_total"] >= 3
    assert exposed['eceb_s3_retries_total{kind="request"}'] >= 3


def test_a_job_submitted_through_an_endpoint_workers_cannot_reach_succeeds(
    broker: str, redis_server: RedisServer, s3_server: S3Server, bucket: str, tmp_path: Path, expected_report: bytes
) -> None:
    """The submitter uses a relay that is gone by the time any worker runs;
    the worker, configured with the S3 server's own address, never uses the
    submitter's endpoint and writes the same report."""
    with RefusingRelay(s3_server.endpoint_url, refusals=0, how="slowdown") as relay:
        job_id, submitted = _submit(broker, redis_server, s3_server, bucket, endpoint_url=relay.endpoint_url)
        assert relay.requests, "the submission's checks went through its endpoint"
    assert NO_WORKER in submitted  # no worker runs yet: the job waits for one
    options = ("--concurrency", "1", "--endpoint-url", s3_server.endpoint_url)
    with dist_worker(broker, tmp_path / "worker", *options) as worker:
        waited = dist_at(broker, redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
        assert waited.returncode == exit_codes.TASKS_FAILED, waited.stderr + worker.stderr()[-3000:]
    assert NO_WORKER not in waited.stderr
    local = tmp_path / "report.json"
    assert dist_at(broker, redis_server, s3_server, "result", job_id, "-o", str(local)).returncode == 1
    assert local.read_bytes() == expected_report


def test_jobs_lists_the_newest_first_and_warns_without_workers(
    broker: str, redis_server: RedisServer, s3_server: S3Server, bucket: str
) -> None:
    """With no worker running: ``submit`` and ``wait`` warn (and still
    exit as they would), ``jobs`` lists the two jobs just submitted newest
    first (JSON and text), ``status --json`` shows a queued job."""
    first, warned_first = _submit(broker, redis_server, s3_server, bucket)
    second, warned_second = _submit(broker, redis_server, s3_server, bucket)
    assert NO_WORKER in warned_first and NO_WORKER in warned_second
    waited = dist_at(broker, redis_server, s3_server, "wait", second, "--timeout", "1")
    assert waited.returncode == exit_codes.JOB_NOT_FINISHED
    assert NO_WORKER in waited.stderr
    listed = dist_at(broker, redis_server, s3_server, "jobs", "--json", "--limit", "2")
    assert listed.returncode == 0, listed.stderr
    found = json.loads(listed.stdout)
    assert [job["job_id"] for job in found] == [second, first]
    for job in found:
        assert job["kind"] == "evaluate" and job["phase"] == "queued"
        assert RFC3339.match(job["started_at"]) and job["ended_at"] is None
        assert isinstance(job["age_s"], int) and job["age_s"] >= 0 and job["elapsed_s"] == job["age_s"]
        assert (job["shards_done"], job["shards_total"]) == (0, 0)
    table = dist_at(broker, redis_server, s3_server, "jobs")
    assert table.returncode == 0, table.stderr
    rows = table.stdout.splitlines()
    assert rows[0].split() == ["JOB", "KIND", "PHASE", "AGE", "SHARDS"]
    assert rows[1].split()[:3] == [second, "evaluate", "queued"] and rows[1].split()[-1] == "-"
    assert rows[2].split()[:3] == [first, "evaluate", "queued"]
    status = dist_at(broker, redis_server, s3_server, "status", first, "--json")
    assert status.returncode == 0, status.stderr
    state = json.loads(status.stdout)
    assert state["phase"] == "queued" and RFC3339.match(state["started_at"]) and isinstance(state["elapsed_s"], int)
    for job_id in (first, second):  # no later worker of this module runs them
        assert dist_at(broker, redis_server, s3_server, "cancel", job_id).returncode == 0
    unknown = dist_at(broker, redis_server, s3_server, "status", uuid.uuid4().hex, "--json")
    assert unknown.returncode == exit_codes.NO_SUCH_JOB


def _group_command_lines(pgid: int) -> dict[int, bytes]:
    """``/proc/PID/cmdline`` of every live process of the process group ``pgid``."""
    lines: dict[int, bytes] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[3]) == pgid:
                lines[int(entry.name)] = (entry / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile
    return lines


def test_no_process_eceb_starts_has_the_password_on_its_command_line(
    broker: str, redis_server: RedisServer, s3_server: S3Server, bucket: str, tmp_path: Path
) -> None:
    """The worker's main process, its pool and whatever they start during a
    job (read from ``/proc/PID/cmdline`` while the job runs): the broker URL
    is in the environment only, and no command line holds the password."""
    password = redis_server.password.encode()
    seen: dict[int, bytes] = {}
    with dist_worker(broker, tmp_path / "worker", "--concurrency", "2") as worker:
        job_id, _ = _submit(broker, redis_server, s3_server, bucket)
        phase, deadline = "queued", time.monotonic() + 120
        while phase not in ("done", "failed", "cancelled"):
            assert time.monotonic() < deadline, worker.stderr()[-3000:]
            seen.update(_group_command_lines(worker.pid))
            phase = json.loads(dist_at(broker, redis_server, s3_server, "status", job_id, "--json").stdout)["phase"]
        seen.update(_group_command_lines(worker.pid))
    assert worker.pid in seen and len(seen) >= 3, seen  # the main process and its two pool processes at least
    leaking = [pid for pid, line in seen.items() if password in line]
    assert not leaking, "a command line holds the Redis password"
