"""The work of a job in a real Redis (eceb_worker/cluster/work.py) and the
watch over it (eceb_worker/cluster/watch.py): leases taken, renewed and
taken over, answers kept once, and the steps published again when lost
(docs/DISTRIBUTED.md, "No job waits for ever")."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from eceb_worker.cluster.state import JobStore, Phase
from eceb_worker.cluster.steps import Bounds, Step, reduce_step, shard_step
from eceb_worker.cluster.views import waiting_lines, waiting_steps
from eceb_worker.cluster.watch import WATCH_KEY, Watcher, publish_reduce, watch_job, watch_jobs
from eceb_worker.cluster.work import WorkStore
from tests.support.redis_server import RedisServer

BOUNDS = Bounds()


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[Any]:
    """A database of its own (the cluster tests' jobs are in database 0), emptied."""
    connection = redis_server.client(db=7)
    connection.flushdb()
    yield connection
    connection.flushdb()
    connection.close()


@pytest.fixture
def work(client: Any) -> WorkStore:
    return WorkStore(client, BOUNDS, lambda what: contextlib.nullcontext())


def _record(task: str = "eceb.job_rehash_shard") -> Step:
    return Step(task=task, args=[{"shard": 1}], task_id=str(uuid.uuid4()), label="job=x")


def _job(client: Any, work: WorkStore, shards: int = 2) -> str:
    """A job in flight whose re-hash stage of ``shards`` shards was published."""
    job_id = uuid.uuid4().hex
    JobStore(client).create(job_id, phase=Phase.VERIFYING.value, kind="evaluate")
    records = {shard_step("rehash", i): (_record(), True) for i in range(shards)}
    records[reduce_step("rehash")] = (_record("eceb.job_verified"), False)
    assert work.record_stage(job_id, "rehash", shards, records)
    return job_id


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_lease_is_held_by_one_process_renewed_by_it_alone_and_taken_over_when_its_process_is_gone(
    client: Any, work: WorkStore
) -> None:
    job_id, step = _job(client, work), shard_step("rehash", 0)
    lease = work.take(job_id, step, "w1")
    assert lease is not None
    assert work.take(job_id, step, "w2") is None  # another worker's live lease
    assert work.take(job_id, step, "w1") is None  # this process holds it: alive
    assert work.renew(job_id, step, lease)
    other = lease.__class__(worker="w1", pid=lease.pid, since_ms=lease.since_ms, token="not-this-holding")
    assert not work.renew(job_id, step, other)
    # The holder's process is gone (same worker, same host): taken over at once.
    key = work.key(job_id, f"lease:{step}")
    client.set(key, client.get(key).replace(str(lease.pid).encode(), str(_dead_pid()).encode(), 1))
    taken = work.take(job_id, step, "w1")
    assert taken is not None and taken.token != lease.token
    assert not work.renew(job_id, step, lease)
    work.release(job_id, step, lease)  # not its holding: the lease stays
    assert client.exists(key)
    work.release(job_id, step, taken)
    assert not client.exists(key)


def test_a_shards_first_answer_stays(client: Any, work: WorkStore) -> None:
    job_id = _job(client, work)
    assert work.answer(job_id, "rehash", 0, b"first") == 1
    assert work.answer(job_id, "rehash", 0, b"second") == 1
    assert work.answers(job_id, "rehash") == [b"first"]
    assert work.finished(job_id, shard_step("rehash", 0))


def test_a_stage_is_recorded_once(client: Any, work: WorkStore) -> None:
    job_id = _job(client, work)
    again = {shard_step("rehash", 0): (_record(), True)}
    assert not work.record_stage(job_id, "rehash", 1, again)
    assert work.planned(job_id, "rehash") == 2


def test_the_watch_publishes_again_a_lapsed_step_and_an_untaken_one_and_nothing_else(
    client: Any, work: WorkStore
) -> None:
    job_id = _job(client, work, shards=3)
    sent: list[Step] = []
    steps = work.steps(job_id)
    # Shard 0 started, its lease lapsed (its process killed whole).
    assert work.take(job_id, shard_step("rehash", 0), "w1") is not None
    client.delete(work.key(job_id, f"lease:{shard_step('rehash', 0)}"))
    # Shard 1 published long ago, never started, not in the queue (lost).
    old = int(client.hget(work.key(job_id, "published"), "rehash:1")) - BOUNDS.untaken_s * 1000 - 1
    client.hset(work.key(job_id, "published"), "rehash:1", old)
    # Shard 2 published long ago too, but still waiting in the queue.
    client.hset(work.key(job_id, "published"), "rehash:2", old)
    queued = {steps["rehash:2"].task_id}
    found = watch_job(work, JobStore(client), sent.append, job_id, lambda: queued)
    assert found == ["rehash:0 (lapsed)", "rehash:1 (untaken)"]
    assert [s.task_id for s in sent] == [steps["rehash:0"].task_id, steps["rehash:1"].task_id]
    # Published again now (claimed for a while): the next look publishes nothing.
    assert watch_job(work, JobStore(client), sent.append, job_id, lambda: queued) == []
    progress = work.progress(job_id, steps)
    assert progress.republished == {"rehash:0": 1, "rehash:1": 1}
    assert "rehash:0" not in progress.started
    # What status shows meanwhile.
    shown = waiting_steps(steps, progress, int(old + BOUNDS.untaken_s * 1000 + 2000))
    assert [(s.step, s.state, s.republished) for s in shown] == [
        ("rehash:0", "queued", 1),
        ("rehash:1", "queued", 1),
        ("rehash:2", "queued", 0),
    ]
    assert waiting_lines(shown, 3, [], "verifying")[-1] == (
        "  no live worker: the job waits until a worker starts (eceb-dist worker)"
    )


def test_a_step_published_again_up_to_the_bound_fails_its_job_naming_it(client: Any, work: WorkStore) -> None:
    job_id = _job(client, work, shards=1)
    step = shard_step("rehash", 0)
    client.hset(work.key(job_id, "republished"), step, BOUNDS.republish_limit)
    assert work.take(job_id, step, "w1") is not None
    client.delete(work.key(job_id, f"lease:{step}"))
    assert watch_job(work, JobStore(client), lambda record: None, job_id, set) == []
    state = JobStore(client).get(job_id)
    assert state is not None
    assert state.phase is Phase.FAILED
    assert state.error == (
        f"re-hash shard 0 was published {BOUNDS.republish_limit + 1} times and never finished (revoked, or "
        "lost with its worker each time); submit the job again"
    )


def test_the_reduce_is_published_once_every_shard_answered(client: Any, work: WorkStore) -> None:
    job_id = _job(client, work, shards=2)
    sent: list[Step] = []
    work.answer(job_id, "rehash", 0, b"{}")
    assert not publish_reduce(work, sent.append, job_id, "rehash")
    work.answer(job_id, "rehash", 1, b"{}")
    assert publish_reduce(work, sent.append, job_id, "rehash")
    assert not publish_reduce(work, sent.append, job_id, "rehash")  # the last shard run twice
    assert [s.task for s in sent] == ["eceb.job_verified"]


def test_jobs_that_ended_leave_the_watch(client: Any, work: WorkStore) -> None:
    job_id = _job(client, work, shards=1)
    jobs = JobStore(client)
    jobs.update(job_id, phase=Phase.DONE.value)
    watch_jobs(work, jobs, lambda record: None, set)
    assert job_id not in jobs.active()


def test_one_worker_looks_over_the_jobs_in_a_watch_interval(client: Any, work: WorkStore) -> None:
    job_id = _job(client, work, shards=1)
    assert work.take(job_id, shard_step("rehash", 0), "w1") is not None
    client.delete(work.key(job_id, "lease:rehash:0"))
    first = Watcher(work, JobStore(client), "w1", lambda record: None, set)
    second = Watcher(work, JobStore(client), "w2", lambda record: None, set)
    assert first.watch_once() == {job_id: ["rehash:0 (lapsed)"]}
    assert second.watch_once() == {}  # within the interval: w1 watches
    assert client.get(WATCH_KEY) == b"w1"
