"""A job's work in Redis: every step it publishes (its message kept), who
runs each (a lease its process renews), each shard's answer, and what has
finished (docs/DISTRIBUTED.md, "No job waits for ever").

A *step* is one task of a job: ``coordinate``, a shard (``rehash:3``,
``evaluate:0``), or the reduce of a stage (``reduce:rehash``,
``reduce:evaluate``). Keys, beside the job's own hash
(:mod:`eceb_worker.cluster.state`), each expiring with it:

* ``eceb:job:<id>:steps``: step -> :class:`Step` (its task, arguments and
  task id, as first published); ``stage:<stage>`` -> the stage's shard
  count, once its steps are recorded;
* ``eceb:job:<id>:published``: step -> when it was last published (Unix
  milliseconds; a reduce recorded with its stage is unpublished until every
  shard answered);
* ``eceb:job:<id>:republished``: step -> how often it was published again;
* ``eceb:job:<id>:started``: the steps a process started since they were
  last published (one started whose lease is gone was lost);
* ``eceb:job:<id>:finished``: the steps that ended (a shard once answered);
* ``eceb:job:<id>:answers:<stage>``: shard index -> its answer (JSON);
* ``eceb:job:<id>:lease:<step>``: the step's :class:`Lease`, lapsing
  :attr:`Bounds.lease_s` after its last renewal.

``eceb:workers`` scores each worker by the millisecond it last said it is
alive. Every write is one command, pipeline or script, harmless when run
twice.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Final

import msgspec

from eceb_worker.cluster.backend import policy_of
from eceb_worker.cluster.retry import RetryPolicy
from eceb_worker.cluster.state import JOB_TTL_S, job_key
from eceb_worker.cluster.steps import (
    WORKERS_KEY,
    Bounds,
    Lease,
    Progress,
    Step,
    bounds_of,
    pid_alive,
    shard_step,
)

__all__ = ["WorkStore", "sender", "work_of"]

STEP_SUFFIXES: Final = ("steps", "published", "republished", "started", "finished")
"""The keys of a job's work (``eceb:job:<id>:<suffix>``) that live as long as its state."""

Reaching = Callable[[str], AbstractContextManager[None]]

_STEP: Final = msgspec.json.Decoder(Step)
_LEASE: Final = msgspec.json.Decoder(Lease)

_RENEW: Final = """
local held = redis.call('GET', KEYS[1])
if held and string.find(held, ARGV[1], 1, true) then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
"""KEYS: the lease; ARGV: the holding's token, the time to live (ms)."""

_RELEASE: Final = """
local held = redis.call('GET', KEYS[1])
if held and string.find(held, ARGV[1], 1, true) then
    return redis.call('DEL', KEYS[1])
end
return 0
"""
"""KEYS: the lease; ARGV: the holding's token."""

_TAKE_OVER: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
    return 1
end
return 0
"""
"""KEYS: the lease; ARGV: the gone holder's lease as read, the new lease, its time to live (ms)."""

_RECORD_STAGE: Final = """
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then
    return 0
end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
for i = 5, #ARGV, 3 do
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
    if ARGV[i + 2] ~= '' then
        redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 2])
    end
end
redis.call('EXPIRE', KEYS[1], ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[1])
return 1
"""
"""KEYS: the steps hash, the published hash; ARGV: time to live (s), the
stage's marker, its shard count, now (ms), then step, record, published
('' for not yet), ... Records nothing when the marker exists."""


class WorkStore:
    """The work of jobs in ``client``'s Redis (the result backend's), each
    command retried through an outage by ``reaching(what)`` (the retry
    policy's :meth:`~eceb_worker.cluster.retry.RetryPolicy.reaching`)."""

    def __init__(self, client: Any, bounds: Bounds, reaching: Reaching) -> None:
        self.client = client
        self.bounds = bounds
        self.reaching = reaching
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self._take_over = client.register_script(_TAKE_OVER)
        self._record = client.register_script(_RECORD_STAGE)

    @staticmethod
    def key(job_id: str, suffix: str) -> str:
        """The key ``eceb:job:<id>:<suffix>``."""
        return f"{job_key(job_id)}:{suffix}"

    # -- publishing ------------------------------------------------------

    def record(self, job_id: str, step: str, record: Step, *, published: bool = True) -> None:
        """Keep ``record`` as the step's publication, published now (or not yet)."""
        pipe = self.client.pipeline()
        pipe.hset(self.key(job_id, "steps"), step, msgspec.json.encode(record))
        if published:
            pipe.hset(self.key(job_id, "published"), step, _now_ms())
        pipe.srem(self.key(job_id, "started"), step)
        for suffix in ("steps", "published"):
            pipe.expire(self.key(job_id, suffix), JOB_TTL_S)
        with self.reaching("the result backend (job steps)"):
            pipe.execute()

    def record_stage(self, job_id: str, stage: str, shards: int, records: Mapping[str, tuple[Step, bool]]) -> bool:
        """Keep every step of ``stage`` (its ``shards`` shards and its reduce:
        step -> (record, published now)), unless the stage was recorded
        already (the step planning it ran twice): True when recorded now."""
        now = _now_ms()
        args: list[Any] = [JOB_TTL_S, f"stage:{stage}", shards, now]
        for step, (record, published) in records.items():
            args += [step, msgspec.json.encode(record), now if published else ""]
        keys = [self.key(job_id, "steps"), self.key(job_id, "published")]
        with self.reaching("the result backend (job steps)"):
            return bool(self._record(keys=keys, args=args))

    def published(self, job_id: str, step: str, *, again: bool = False) -> None:
        """Note that ``step`` was published now (``again``: once more)."""
        pipe = self.client.pipeline()
        pipe.hset(self.key(job_id, "published"), step, _now_ms())
        pipe.srem(self.key(job_id, "started"), step)
        if again:
            pipe.hincrby(self.key(job_id, "republished"), step, 1)
            pipe.expire(self.key(job_id, "republished"), JOB_TTL_S)
        with self.reaching("the result backend (job steps)"):
            pipe.execute()

    def delay(self, job_id: str, step: str, seconds: float) -> None:
        """Note that ``step`` will not be started for ``seconds`` (a retry
        after its back-off): it counts as published then."""
        pipe = self.client.pipeline()
        pipe.hset(self.key(job_id, "published"), step, _now_ms() + int(seconds * 1000))
        pipe.srem(self.key(job_id, "started"), step)
        with self.reaching("the result backend (job steps)"):
            pipe.execute()

    def claim(self, job_id: str, step: str, seconds: int) -> bool:
        """Claim the publication of ``step`` for ``seconds`` (one process
        publishes it, whoever else finds it due meanwhile)."""
        with self.reaching("the result backend (job steps)"):
            return bool(self.client.set(self.key(job_id, f"claim:{step}"), b"1", nx=True, ex=max(1, seconds)))

    def steps(self, job_id: str) -> dict[str, Step]:
        """Every step recorded, by name."""
        with self.reaching("the result backend (job steps)"):
            raw = self.client.hgetall(self.key(job_id, "steps"))
        return {_text(name): _STEP.decode(value) for name, value in raw.items() if not _text(name).startswith("stage:")}

    def step(self, job_id: str, step: str) -> Step | None:
        """One step's record, None when it has none."""
        with self.reaching("the result backend (job steps)"):
            raw = self.client.hget(self.key(job_id, "steps"), step)
        return None if raw is None else _STEP.decode(raw)

    def planned(self, job_id: str, stage: str) -> int | None:
        """How many shards ``stage`` recorded, None before it did."""
        with self.reaching("the result backend (job steps)"):
            value = self.client.hget(self.key(job_id, "steps"), f"stage:{stage}")
        return None if value is None else int(value)

    # -- running ---------------------------------------------------------

    def take(self, job_id: str, step: str, worker: str) -> Lease | None:
        """Take the step's lease for this process of host ``worker``: the
        lease, or None when a live process holds it (the lease of a process
        of this host that is gone is taken over)."""
        lease = Lease(worker=worker, pid=os.getpid(), since_ms=_now_ms(), token=uuid.uuid4().hex)
        key, ttl = self.key(job_id, f"lease:{step}"), self.bounds.lease_s * 1000
        encoded = msgspec.json.encode(lease)
        for _ in range(3):
            with self.reaching("the result backend (step lease)"):
                if self.client.set(key, encoded, nx=True, px=ttl):
                    break
                held = self.client.get(key)
            if held is None:
                continue  # lapsed meanwhile
            other = _LEASE.decode(held)
            if other.worker != worker or pid_alive(other.pid):
                return None
            with self.reaching("the result backend (step lease)"):
                if self._take_over(keys=[key], args=[held, encoded, ttl]):
                    break
        else:
            return None
        pipe = self.client.pipeline()
        pipe.sadd(self.key(job_id, "started"), step)
        pipe.expire(self.key(job_id, "started"), JOB_TTL_S)
        with self.reaching("the result backend (step lease)"):
            pipe.execute()
        return lease

    def renew(self, job_id: str, step: str, lease: Lease) -> bool:
        """Extend the lease while this holding has it; False once it lost it."""
        key = self.key(job_id, f"lease:{step}")
        with self.reaching("the result backend (step lease)"):
            return bool(self._renew(keys=[key], args=[lease.token, self.bounds.lease_s * 1000]))

    def release(self, job_id: str, step: str, lease: Lease) -> None:
        """Give the lease up (when this holding still has it)."""
        with self.reaching("the result backend (step lease)"):
            self._release(keys=[self.key(job_id, f"lease:{step}")], args=[lease.token])

    @contextmanager
    def holding(self, job_id: str, step: str, lease: Lease) -> Iterator[None]:
        """Renew ``lease`` every :attr:`Bounds.heartbeat_s` seconds, on a
        thread of its own (however long the step's work blocks), until the
        block ends; then release it."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(self.bounds.heartbeat_s):
                try:
                    self.renew(job_id, step, lease)
                except Exception:  # noqa: S112 - Redis away: the lease may lapse, the step then runs again
                    continue

        thread = threading.Thread(target=beat, name="eceb-lease", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            self.release(job_id, step, lease)

    def finish(self, job_id: str, step: str) -> None:
        """Mark ``step`` finished."""
        pipe = self.client.pipeline()
        pipe.sadd(self.key(job_id, "finished"), step)
        pipe.expire(self.key(job_id, "finished"), JOB_TTL_S)
        with self.reaching("the result backend (job steps)"):
            pipe.execute()

    def finished(self, job_id: str, step: str) -> bool:
        """``step`` finished."""
        with self.reaching("the result backend (job steps)"):
            return bool(self.client.sismember(self.key(job_id, "finished"), step))

    def answer(self, job_id: str, stage: str, index: int, answer: bytes) -> int:
        """Keep a shard's answer (the first kept stays: a shard run twice
        answers the same) and mark it finished; how many shards of the
        stage have answered."""
        key = self.key(job_id, f"answers:{stage}")
        pipe = self.client.pipeline()
        pipe.hsetnx(key, str(index), answer)
        pipe.expire(key, JOB_TTL_S)
        pipe.sadd(self.key(job_id, "finished"), shard_step(stage, index))
        pipe.expire(self.key(job_id, "finished"), JOB_TTL_S)
        pipe.hlen(key)
        with self.reaching("the result backend (shard answers)"):
            return int(pipe.execute()[-1])

    def answered(self, job_id: str, stage: str) -> int:
        """How many shards of ``stage`` have answered."""
        with self.reaching("the result backend (shard answers)"):
            return int(self.client.hlen(self.key(job_id, f"answers:{stage}")))

    def answers(self, job_id: str, stage: str) -> list[bytes]:
        """Every answer of ``stage``, in no order."""
        with self.reaching("the result backend (shard answers)"):
            return list(self.client.hvals(self.key(job_id, f"answers:{stage}")))

    def drop_answers(self, job_id: str, stage: str) -> None:
        """Forget ``stage``'s answers (its reduce finished with them)."""
        with self.reaching("the result backend (shard answers)"):
            self.client.delete(self.key(job_id, f"answers:{stage}"))

    # -- looking over ----------------------------------------------------

    def progress(self, job_id: str, steps: Iterable[str]) -> Progress:
        """Where ``steps`` stand."""
        names = list(steps)
        pipe = self.client.pipeline()
        pipe.smembers(self.key(job_id, "finished"))
        pipe.smembers(self.key(job_id, "started"))
        pipe.hgetall(self.key(job_id, "published"))
        pipe.hgetall(self.key(job_id, "republished"))
        if names:
            pipe.mget([self.key(job_id, f"lease:{step}") for step in names])
        with self.reaching("the result backend (job steps)"):
            results = pipe.execute()
        leases = {}
        if names:
            for step, value in zip(names, results[4], strict=True):
                if value is not None:
                    leases[step] = _LEASE.decode(value)
        return Progress(
            finished={_text(v) for v in results[0]},
            started={_text(v) for v in results[1]},
            published={_text(k): int(v) for k, v in results[2].items()},
            republished={_text(k): int(v) for k, v in results[3].items()},
            leases=leases,
        )

    def alive(self, worker: str) -> None:
        """Say that ``worker`` is alive now (workers long silent are dropped)."""
        now = _now_ms()
        pipe = self.client.pipeline()
        pipe.zadd(WORKERS_KEY, {worker: now})
        pipe.zremrangebyscore(WORKERS_KEY, "-inf", now - 20 * self.bounds.worker_alive_s * 1000)
        pipe.expire(WORKERS_KEY, JOB_TTL_S)
        with self.reaching("the result backend (workers)"):
            pipe.execute()

    def gone(self, worker: str) -> None:
        """Say that ``worker`` stopped."""
        with self.reaching("the result backend (workers)"):
            self.client.zrem(WORKERS_KEY, worker)

    def live_workers(self) -> list[str]:
        """The workers heard from within :attr:`Bounds.worker_alive_s` seconds."""
        since = _now_ms() - self.bounds.worker_alive_s * 1000
        with self.reaching("the result backend (workers)"):
            return sorted(_text(name) for name in self.client.zrangebyscore(WORKERS_KEY, since, "+inf"))


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def work_of(app: Any) -> WorkStore:
    """The work store in Celery application ``app``'s result backend, with its bounds and retry policy."""
    return WorkStore(app.backend.client, bounds_of(app), policy_of(app).reaching)


def sender(app: Any, policy: RetryPolicy) -> Callable[[Step], None]:
    """What publishes a step through ``app``'s broker: its task, arguments
    and task id, its label kept (retried through an outage by ``policy``)."""

    def send(record: Step) -> None:
        with policy.reaching("the broker"):
            app.send_task(
                record.task, args=tuple(record.args), task_id=record.task_id, argsrepr=record.label, kwargsrepr="{}"
            )

    return send
