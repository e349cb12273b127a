"""Faults during a distributed job, each with real processes: a worker
process killed mid-shard, a shard delivered twice, the Redis server
restarted mid-job, S3 throttling and errors on the wire.

A job either writes the report ``eceb evaluate`` writes, byte for byte, or
ends failed with a reason and no report; never a partial report.

To catch a job in the middle of a shard, the workers read S3 through a
loopback relay that holds the first request for one corpus object
(:class:`~tests.support.relays.StallingRelay`).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from eceb_cli import exit_codes
from eceb_worker.cluster.app import QUEUE, REDIS_SOCKET_TIMEOUT_S, make_app, restore_interval_s
from eceb_worker.cluster.state import JobStore, Phase
from eceb_worker.io.objects import ObjectStore
from tests.support.dist_support import WAIT_S, dist, embedded_report, seeded_bucket
from tests.support.faults import (
    STALLED,
    eceb_dist,
    finishes_with_the_report,
    has_read_a_job,
    submit_seed,
    unacked_of,
    wait_for,
)
from tests.support.redis_server import CeleryWorkers, RedisServer, celery_workers, running_redis
from tests.support.relays import RefusingRelay, StallingRelay
from tests.support.s3_server import S3Server


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> Iterator[str]:
    """A bucket holding the seed example under ``seed/``."""
    with seeded_bucket(s3_server, "faults") as name:
        yield name


@pytest.fixture(scope="module")
def expected_report(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return embedded_report(tmp_path_factory.mktemp("embedded"))


def test_worker_killed_mid_shard_is_redelivered_and_the_report_is_identical(
    redis_server: RedisServer, s3_server: S3Server, bucket: str, expected_report: bytes, tmp_path: Path
) -> None:
    with (
        celery_workers(redis_server.url(), 1, tmp_path / "workers") as workers,
        StallingRelay(s3_server.endpoint_url, key_suffix=f"corpus/{STALLED}") as relay,
    ):
        job_id, _ = submit_seed(redis_server, s3_server, bucket, relay.endpoint_url)
        wait_for(relay.stalled.is_set, "a worker to start the shard reading " + STALLED)
        [child] = workers.pool_processes()
        os.kill(child, signal.SIGKILL)
        wait_for(lambda: child not in workers.pool_processes(), "the killed process to be replaced")
        relay.release()
        finishes_with_the_report(redis_server, s3_server, job_id, expected_report, tmp_path, workers)
        logs = workers.logs()
        assert "WorkerLostError" in logs or "SIGKILL" in logs, logs[-4000:]
        reads = [path for method, path in relay.requests if method == "GET" and path.endswith(STALLED)]
        # The held read, then the redelivered shard's: the disclosure check
        # scans the bytes the re-hash reads and reads nothing again.
        assert len(reads) == 2, reads


def test_shard_killing_its_worker_every_time_fails_the_job_after_the_bound(
    redis_server: RedisServer, s3_server: S3Server, bucket: str, tmp_path: Path
) -> None:
    """Redelivery after a lost worker process is bounded (ECEB_MAX_DELIVERIES):
    a shard whose process dies every time ends the job as failed, naming it."""
    with (
        celery_workers(redis_server.url(), 1, tmp_path / "workers", env={"ECEB_MAX_DELIVERIES": "2"}) as workers,
        StallingRelay(s3_server.endpoint_url, key_suffix=f"corpus/{STALLED}", every=True) as relay,
    ):
        job_id, out = submit_seed(redis_server, s3_server, bucket, relay.endpoint_url)
        for killed in range(2):
            wait_for(lambda killed=killed: relay.stall_count > killed, f"delivery {killed + 1} of the shard")
            [child] = workers.pool_processes()
            os.kill(child, signal.SIGKILL)
            wait_for(
                lambda child=child: child not in workers.pool_processes() and len(workers.pool_processes()) == 1,
                "the killed process to be replaced",
            )
        waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
        assert waited.returncode == exit_codes.STORAGE, waited.stderr + workers.logs()[-3000:]
        assert "1 of 12 re-hash shards failed; first: re-hash shard " in waited.stderr
        assert "delivered 3 times and the worker process running it was lost each time" in waited.stderr
        assert "no report was written" in waited.stderr
        assert relay.stall_count == 2
        assert not ObjectStore(s3_server.endpoint_url).exists(out)


def test_shard_delivered_twice_changes_nothing(
    redis_server: RedisServer, s3_server: S3Server, bucket: str, expected_report: bytes, tmp_path: Path
) -> None:
    client = redis.Redis.from_url(redis_server.url())
    with (
        celery_workers(redis_server.url(), 2, tmp_path / "workers") as workers,
        StallingRelay(s3_server.endpoint_url, key_suffix=f"corpus/{STALLED}") as relay,
    ):
        job_id, out = submit_seed(redis_server, s3_server, bucket, relay.endpoint_url)
        wait_for(relay.stalled.is_set, "a worker to start the shard reading " + STALLED)
        # The held shard's message waits for its acknowledgement in the
        # broker's "unacked" hash; deliver it a second time, as the broker
        # does when a visibility timeout runs out.
        held = [
            message
            for message in unacked_of(client, job_id)
            if message["headers"]["task"] == "eceb.job_rehash_shard"
            and STALLED in base64.b64decode(message["body"]).decode()
        ]
        assert len(held) == 1, held
        client.lpush(QUEUE, json.dumps(held[0]))
        # The copy finds the shard's lease held by the live original: it is
        # acknowledged and does nothing, and the job waits for the original.
        wait_for(lambda: "already running elsewhere: rehash:" in workers.logs(), "the copy to step aside")
        assert dist(redis_server, s3_server, "status", job_id).stdout.count(": verifying;") == 1
        relay.release()  # now the original finishes
        wait_for(lambda: not unacked_of(client, job_id), "the first delivery to be acknowledged")
        finishes_with_the_report(redis_server, s3_server, job_id, expected_report, tmp_path, workers)
        reads = [path for method, path in relay.requests if method == "GET" and path.endswith(STALLED)]
        # The original's only (the held read resumed), never the copy's; the
        # disclosure check reads nothing again (it scans the bytes the re-hash reads).
        assert 1 <= len(reads) <= 2, reads
        assert ObjectStore(s3_server.endpoint_url).exists(out)
    client.close()


@pytest.fixture(scope="module")
def two_workers(
    redis_server: RedisServer, s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CeleryWorkers]:
    with celery_workers(redis_server.url(), 2, tmp_path_factory.mktemp("celery-workers")) as running:
        yield running


@pytest.mark.parametrize("how", ["slowdown", "internal", "reset"])
def test_s3_faults_inside_a_job_are_retried(
    redis_server: RedisServer,
    s3_server: S3Server,
    two_workers: CeleryWorkers,
    bucket: str,
    expected_report: bytes,
    tmp_path: Path,
    how: str,
) -> None:
    """The first connections to S3 (the coordinator's input reads, then
    shards' corpus reads) meet throttling, server errors or resets."""
    with RefusingRelay(s3_server.endpoint_url, refusals=3, how=how) as relay:
        job_id, _ = submit_seed(redis_server, s3_server, bucket, relay.endpoint_url)
        finishes_with_the_report(redis_server, s3_server, job_id, expected_report, tmp_path, two_workers)
        assert relay.connections > 3


def test_redis_restarted_mid_job_completes_with_the_report(
    s3_server: S3Server, bucket: str, expected_report: bytes, tmp_path: Path
) -> None:
    """Redis keeps its data in an append-only file (as a deployment should):
    the workers reconnect, the shard running during the restart is delivered
    again, and the job completes with the same report."""
    directory = tmp_path / "redis"
    directory.mkdir()
    with contextlib.ExitStack() as redis_stack:
        server = redis_stack.enter_context(running_redis(directory, appendonly=True))
        with (
            celery_workers(server.url(), 1, tmp_path / "workers", env={"ECEB_VISIBILITY_TIMEOUT": "5"}) as workers,
            StallingRelay(s3_server.endpoint_url, key_suffix=f"corpus/{STALLED}") as relay,
        ):
            job_id, _ = submit_seed(server, s3_server, bucket, relay.endpoint_url)
            wait_for(relay.stalled.is_set, "a worker to start the shard reading " + STALLED)
            redis_stack.close()  # the server stops, writing its append-only file
            redis_stack.enter_context(running_redis(directory, port=server.port, appendonly=True))
            relay.release()
            finishes_with_the_report(server, s3_server, job_id, expected_report, tmp_path, workers)
            # (Whether a worker found Redis down depends on when it looked.)
            logs = workers.logs()
            assert logs.count(f"Connected to redis://:**@127.0.0.1:{server.port}/0") >= 2


def test_redis_losing_its_data_mid_job_ends_the_job_clearly(s3_server: S3Server, bucket: str, tmp_path: Path) -> None:
    """A Redis server restarted without persistence forgets the job: waiting
    for it says so, and no report is written."""
    directory = tmp_path / "redis"
    directory.mkdir()
    with contextlib.ExitStack() as redis_stack:
        server = redis_stack.enter_context(running_redis(directory))
        with (
            celery_workers(server.url(), 1, tmp_path / "workers") as workers,
            StallingRelay(s3_server.endpoint_url, key_suffix=f"corpus/{STALLED}") as relay,
        ):
            job_id, out = submit_seed(server, s3_server, bucket, relay.endpoint_url)
            wait_for(relay.stalled.is_set, "a worker to start the shard reading " + STALLED)
            waiting = eceb_dist(server, "wait", job_id, "--timeout", WAIT_S)
            # Until `wait` has read the job's state once (the stalled job reads none meanwhile).
            wait_for(lambda: has_read_a_job(server, waiting), "eceb-dist wait to read the job")
            redis_stack.close()
            redis_stack.enter_context(running_redis(directory, port=server.port))
            relay.release()
            stdout, stderr = waiting.communicate(timeout=90)
            assert waiting.returncode == exit_codes.NO_SUCH_JOB, stdout + stderr + workers.logs()[-3000:]
            assert f"job {job_id} vanished from Redis while it ran" in stderr
            assert "no report was written" in stderr
            assert server.password not in stdout + stderr
            time.sleep(2)  # what is left of the job runs out
            assert not ObjectStore(s3_server.endpoint_url).exists(out)


def test_revoked_shard_ends_the_job_naming_the_cause(
    redis_server: RedisServer, s3_server: S3Server, bucket: str, tmp_path: Path
) -> None:
    """A shard's task terminated by an operator answers as failed, naming
    it: the job ends failed at once (it does not wait for the watch)."""
    with (
        celery_workers(redis_server.url(), 1, tmp_path / "workers") as workers,
        StallingRelay(s3_server.endpoint_url, key_suffix=f"corpus/{STALLED}") as relay,
    ):
        job_id, out = submit_seed(redis_server, s3_server, bucket, relay.endpoint_url)
        wait_for(relay.stalled.is_set, "a worker to start the shard reading " + STALLED)
        client = redis.Redis.from_url(redis_server.url())
        [held] = [
            message["headers"]["id"]
            for message in unacked_of(client, job_id)
            if STALLED in base64.b64decode(message["body"]).decode()
        ]
        client.close()
        app = make_app(redis_server.url())
        app.control.revoke(held, terminate=True, signal="SIGKILL")
        waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
        assert waited.returncode == exit_codes.STORAGE, waited.stderr + workers.logs()[-3000:]
        assert "1 of 12 re-hash shards failed; first: re-hash shard " in waited.stderr, waited.stderr
        assert "revoked (terminated by signal 9); submit the job again" in waited.stderr, waited.stderr
        assert "no report was written" in waited.stderr
        assert not ObjectStore(s3_server.endpoint_url).exists(out)


def test_wait_outlasts_a_redis_restart_then_gives_up_after_the_bound(tmp_path: Path) -> None:
    """``eceb-dist wait`` holding a job's state when Redis stops: it reads
    again, with back-off, and carries on once Redis is back; an outage
    longer than ECEB_REDIS_OUTAGE_S ends it as an unreachable broker does
    (exit 5), never as an internal error."""
    directory = tmp_path / "redis"
    directory.mkdir()
    job_id = uuid.uuid4().hex
    with contextlib.ExitStack() as redis_stack:
        server = redis_stack.enter_context(running_redis(directory, appendonly=True))
        client = server.client()
        JobStore(client).create(job_id, phase=Phase.EVALUATING.value, kind="evaluate", out="s3://b/report.json")
        waiting = eceb_dist(server, "wait", job_id, "--timeout", WAIT_S, ECEB_REDIS_OUTAGE_S="20")
        wait_for(lambda: has_read_a_job(server, waiting), "eceb-dist wait to read the job")
        redis_stack.close()
        time.sleep(1.5)  # wait polls meanwhile, finding no server
        server = redis_stack.enter_context(running_redis(directory, port=server.port, appendonly=True))
        client = server.client()
        JobStore(client).update(job_id, phase=Phase.DONE.value, passing_tasks=2, total_tasks=2)
        stdout, stderr = waiting.communicate(timeout=60)
        assert waiting.returncode == exit_codes.OK, stdout + stderr
        assert "2/2 tasks pass; report written to s3://b/report.json" in stdout

        job_id = uuid.uuid4().hex
        JobStore(client).create(job_id, phase=Phase.EVALUATING.value, kind="evaluate", out="s3://b/report.json")
        waiting = eceb_dist(server, "wait", job_id, "--timeout", WAIT_S, ECEB_REDIS_OUTAGE_S="2")
        wait_for(lambda: has_read_a_job(server, waiting), "eceb-dist wait to read the job")
        client.close()
        redis_stack.close()
        stopped = time.monotonic()
        stdout, stderr = waiting.communicate(timeout=60)
        assert waiting.returncode == exit_codes.STORAGE, stdout + stderr
        assert time.monotonic() - stopped < 15
        assert "unreachable for more than 2 s (ECEB_REDIS_OUTAGE_S)" in stderr, stderr
        assert "internal error" not in stderr
        assert server.password not in stdout + stderr


@pytest.mark.parametrize(("visibility", "interval"), [(1, 1), (5, 2), (20, 10), (3600, 10)])
def test_workers_look_for_unacknowledged_messages_within_the_visibility_timeout(visibility: int, interval: int) -> None:
    """A message a worker held when its connection dropped comes back soon
    after its visibility timeout: kombu's own cadence (a scan every tenth
    10-s timer) would leave it up to 100 s longer, past ``wait`` in the
    restart test below."""
    assert restore_interval_s(visibility) == interval
    options = make_app("redis://127.0.0.1:1/0", visibility_timeout=visibility).conf.broker_transport_options
    assert options == {
        "socket_timeout": REDIS_SOCKET_TIMEOUT_S,
        "socket_connect_timeout": REDIS_SOCKET_TIMEOUT_S,
        "visibility_timeout": visibility,
        "unacked_restore_interval": interval,
        "unacked_restore_throttle": 1,
    }
