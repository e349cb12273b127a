"""No job waits for ever (docs/DISTRIBUTED.md), with the default bounds: a
whole worker killed mid-shard (its main process and its pool), with another
worker alive; a worker frozen beyond its lease, then resumed; the soak. With
shorter bounds, set as an operator sets them: a whole worker killed with
none left until one starts once every bound has run out, and what
``eceb-dist status`` and ``wait`` say meanwhile. Each job ends with the
report ``eceb evaluate`` writes.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from eceb_cli import exit_codes
from eceb_worker.cluster.state import JobStore, Phase
from eceb_worker.cluster.steps import Bounds
from tests.support.dist_support import dist, embedded_report, seeded_bucket
from tests.support.faults import (
    SHORT_BOUNDS,
    STALL_TIMEOUT_S,
    STALLED,
    bounds_settings,
    eceb_dist,
    finishes_with_the_report,
    has_read_a_job,
    holder_of,
    submit_seed,
    unacked_of,
    wait_for,
)
from tests.support.redis_server import CeleryWorkers, RedisServer, celery_workers, running_redis
from tests.support.relays import StallingRelay
from tests.support.s3_server import S3Server

BOUNDS = Bounds()
"""The default bounds (every test but the one with no worker left keeps them)."""
LOST_SHARD_BOUND_S = BOUNDS.lease_s + BOUNDS.watch_s + BOUNDS.heartbeat_s
"""How soon a shard lost with its worker is published again, at most."""


def _lost_shard_bound_s(bounds: Bounds) -> int:
    """How soon a shard lost with its worker is published again, at most, with ``bounds``."""
    return bounds.lease_s + bounds.watch_s + bounds.heartbeat_s


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> Iterator[str]:
    """A bucket holding the seed example under ``seed/``."""
    with seeded_bucket(s3_server, "leases") as name:
        yield name


@pytest.fixture(scope="module")
def expected_report(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return embedded_report(tmp_path_factory.mktemp("embedded"))


def test_the_default_bounds_run_a_lost_shard_again_within_a_minute() -> None:
    assert LOST_SHARD_BOUND_S < 60
    assert BOUNDS.untaken_s + BOUNDS.watch_s < 60


@contextlib.contextmanager
def _a_worker_holding_a_shard(
    redis_server: RedisServer, s3_server: S3Server, bucket: str, tmp_path: Path
) -> Iterator[tuple[CeleryWorkers, StallingRelay, str, int, str]]:
    """Two workers running the seed job, one of them holding the shard that
    reads :data:`STALLED` (its read held by the relay): the workers, the
    relay, the job id, the holder's index and the shard's step."""
    with (
        celery_workers(redis_server.url(), 2, tmp_path / "workers") as workers,
        StallingRelay(s3_server.endpoint_url, key_suffix=f"corpus/{STALLED}") as relay,
    ):
        job_id, _ = submit_seed(redis_server, s3_server, bucket, relay.endpoint_url)
        wait_for(relay.stalled.is_set, "a worker to start the shard reading " + STALLED)
        holder, step = holder_of(redis_server, job_id, workers)
        yield workers, relay, job_id, holder, step


def test_whole_worker_killed_mid_shard_its_shard_runs_on_the_other_within_a_minute(
    redis_server: RedisServer, s3_server: S3Server, bucket: str, expected_report: bytes, tmp_path: Path
) -> None:
    """``kill -9`` of a worker's whole process group (its main process and
    its pool) while it runs a shard, another worker alive: the lease lapses,
    the other worker's watch publishes the shard again, and the job ends
    with the identical report within 60 s of the kill."""
    with _a_worker_holding_a_shard(redis_server, s3_server, bucket, tmp_path) as (workers, relay, job_id, holder, step):
        os.killpg(workers.pids[holder], signal.SIGKILL)
        killed = time.monotonic()
        relay.release()
        finishes_with_the_report(redis_server, s3_server, job_id, expected_report, tmp_path, workers)
        took = time.monotonic() - killed
        assert took < 60, f"the job ended {took:.0f} s after the kill"
        survivor = workers.logs()
        assert f"job {job_id}: {_shard_name(step)} published again (lapsed)" in survivor, survivor[-4000:]


def _shard_name(step: str) -> str:
    stage, index = step.split(":")
    return f"{'re-hash' if stage == 'rehash' else 'evaluation'} shard {index}"


def test_whole_worker_killed_with_none_left_the_job_waits_saying_so_then_ends_once_one_starts(
    redis_server: RedisServer,
    s3_server: S3Server,
    bucket: str,
    expected_report: bytes,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The only worker killed whole mid-shard: ``status`` and ``wait
    --timeout`` say the shard was lost and no worker is alive; a worker
    started once every bound has run out (twice the longest, after the
    kill) publishes the shard again at once, and the job ends with the
    identical report. The bounds are :data:`SHORT_BOUNDS`, set in the
    environment of every process the test starts (the workers, the
    commands, the submission), so that the wait lasts half a minute rather
    than the minute the default bounds take."""
    for name, value in bounds_settings(SHORT_BOUNDS).items():
        monkeypatch.setenv(name, value)
    lost_bound_s = _lost_shard_bound_s(SHORT_BOUNDS)
    later_s = 2 * max(lost_bound_s, SHORT_BOUNDS.untaken_s + SHORT_BOUNDS.watch_s)
    with StallingRelay(s3_server.endpoint_url, key_suffix=f"corpus/{STALLED}") as relay:
        with celery_workers(redis_server.url(), 1, tmp_path / "first") as workers:
            job_id, _ = submit_seed(redis_server, s3_server, bucket, relay.endpoint_url)
            wait_for(relay.stalled.is_set, "a worker to start the shard reading " + STALLED)
            _, step = holder_of(redis_server, job_id, workers)
            name = _shard_name(step)
            running = dist(redis_server, s3_server, "status", job_id).stdout
            assert f"waiting for {name}: running on {workers.names[0]} (pid " in running, running
            os.killpg(workers.pids[0], signal.SIGKILL)
            killed = time.monotonic()
        relay.release()

        def says_lost() -> bool:
            status = dist(redis_server, s3_server, "status", job_id).stdout
            return f"waiting for {name}: lost (" in status and "no live worker" in status

        wait_for(
            says_lost, "status to show the shard lost and no live worker", timeout=STALL_TIMEOUT_S + 3 * lost_bound_s
        )
        waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", "1")
        assert waited.returncode == exit_codes.JOB_NOT_FINISHED, waited.stderr
        assert f"waiting for {name}: lost (" in waited.stderr, waited.stderr
        assert "no live worker: the job waits until a worker starts" in waited.stderr, waited.stderr
        as_json = dist(redis_server, s3_server, "status", job_id, "--json").stdout
        assert '"live_workers":[]' in as_json and f'"step":"{step}","name":"{name}","state":"lost"' in as_json
        time.sleep(max(0.0, later_s - (time.monotonic() - killed)))
        with celery_workers(redis_server.url(), 1, tmp_path / "second") as later:
            started = time.monotonic()
            finishes_with_the_report(redis_server, s3_server, job_id, expected_report, tmp_path, later)
            took = time.monotonic() - started
            assert took < 60, f"the job ended {took:.0f} s after a worker started"
            assert f"job {job_id}: {name} published again (lapsed)" in later.logs()


def test_worker_frozen_beyond_its_lease_then_resumed_changes_nothing(
    redis_server: RedisServer, s3_server: S3Server, bucket: str, expected_report: bytes, tmp_path: Path
) -> None:
    """A worker stopped (SIGSTOP) mid-shard for longer than its lease: the
    shard runs again on the other worker and the job ends with the report;
    resumed, the frozen worker finishes its copy late, which changes
    nothing (the report, the counts and the failures stay)."""
    with _a_worker_holding_a_shard(redis_server, s3_server, bucket, tmp_path) as (workers, relay, job_id, holder, step):
        os.killpg(workers.pids[holder], signal.SIGSTOP)
        try:
            finishes_with_the_report(redis_server, s3_server, job_id, expected_report, tmp_path, workers)
        finally:
            os.killpg(workers.pids[holder], signal.SIGCONT)
        relay.release()  # the frozen copy's read ends; it runs again and answers late
        client = redis_server.client()
        try:
            wait_for(lambda: not unacked_of(client, job_id), "the late copy to finish and be acknowledged")
        finally:
            client.close()
        # The late copy found its lease gone and its shard answered: the job's
        # counts, failures and report are as they were.
        finishes_with_the_report(redis_server, s3_server, job_id, expected_report, tmp_path, workers)
        assert f"job {job_id}: {_shard_name(step)} published again (lapsed)" in workers.logs()


SOAK_JOBS = int(os.environ.get("ECEB_SOAK_JOBS", "6"))
"""Jobs in a row in the soak, each meeting a Redis restart (6; ``ECEB_SOAK_JOBS=20`` for a longer soak)."""
SHARDS = 27
"""The shards of the seed job (12 re-hash, 15 evaluation)."""
LONG_DOWN_S = 10.0
"""How long Redis stays down in the second job's restart (up to a second in the others')."""


@pytest.mark.soak
def test_redis_restarted_at_a_random_instant_of_each_of_many_jobs_every_job_ends_with_the_report(
    s3_server: S3Server, bucket: str, expected_report: bytes, tmp_path: Path
) -> None:
    """Redis (append-only, as a deployment keeps it) restarted at a random
    instant of each of ``SOAK_JOBS`` jobs of 27 shards in a row, down for up to a
    second (ten in the second job), while two workers run them and
    ``eceb-dist wait`` follows them: the first while a shard is held
    mid-read (it finishes while Redis is down), the others at random.
    Whatever the restart meets (a message taken from the queue, an answer,
    a lease renewal, a reduce), every job ends with the report ``eceb
    evaluate`` writes, each shard counted once, with the default bounds."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    directory = tmp_path / "redis"
    directory.mkdir()
    with contextlib.ExitStack() as redis_stack:
        server = redis_stack.enter_context(running_redis(directory, appendonly=True))

        def restart(down: float, during: Callable[[], object] = lambda: None) -> None:
            redis_stack.close()
            during()
            time.sleep(down)
            redis_stack.enter_context(running_redis(directory, port=server.port, appendonly=True))

        with celery_workers(server.url(), 2, tmp_path / "workers") as workers:
            for number in range(SOAK_JOBS):
                with StallingRelay(s3_server.endpoint_url, key_suffix=f"corpus/{STALLED}") as relay:
                    # The job is held at one shard until `wait` follows it.
                    job_id, out = submit_seed(server, s3_server, bucket, relay.endpoint_url)
                    timeout = str(3 * (BOUNDS.untaken_s + BOUNDS.watch_s) + 60)
                    waiting = eceb_dist(server, "wait", job_id, "--timeout", timeout)
                    # (A command that cannot reach Redis when it starts fails at once.)
                    wait_for(lambda w=waiting: has_read_a_job(server, w), "eceb-dist wait to read the job")
                    wait_for(relay.stalled.is_set, "a worker to start the shard reading " + STALLED)
                    if number == 0:  # the held shard finishes while Redis is down
                        restart(rng.uniform(0.0, 1.0), during=relay.release)
                    else:  # after a random number of shards
                        relay.release()
                        target = rng.randrange(SHARDS + 1)
                        wait_for(lambda t=target, j=job_id: _shards_done(server, j) >= t, f"{target} shards done")
                        restart(LONG_DOWN_S if number == 1 else rng.uniform(0.0, 1.0))
                    stdout, stderr = waiting.communicate(timeout=int(timeout) + 60)
                context = f"job {number}, random seed {seed}:\n{stdout}{stderr}{workers.logs()[-6000:]}"
                assert waiting.returncode == exit_codes.TASKS_FAILED, context
                assert "internal error" not in stderr, context
                _wrote_the_report_counting_each_shard_once(server, s3_server, job_id, out, expected_report)
            finishes_with_the_report(server, s3_server, job_id, expected_report, tmp_path, workers)


def _shards_done(server: RedisServer, job_id: str) -> int:
    """How many shards of job ``job_id`` are done (the job ended: all of them)."""
    client = server.client()
    try:
        state = JobStore(client).get(job_id)
    finally:
        client.close()
    if state is None or state.phase.ended:
        return SHARDS
    return state.rehash_done + state.eval_done


def _wrote_the_report_counting_each_shard_once(
    server: RedisServer, s3_server: S3Server, job_id: str, out: str, expected_report: bytes
) -> None:
    """What :func:`finishes_with_the_report` checks through ``eceb-dist``,
    read directly: the report at ``out`` is ``expected_report``, each shard
    counted once, no failure."""
    bucket, key = out.removeprefix("s3://").split("/", 1)
    assert s3_server.client().get_object(Bucket=bucket, Key=key)["Body"].read() == expected_report
    client = server.client()
    try:
        state = JobStore(client).get(job_id)
        failures = JobStore(client).failures(job_id)
    finally:
        client.close()
    assert state is not None
    assert (state.phase, state.rehash_done, state.eval_done) == (Phase.DONE, 12, 15), state
    assert not failures
