"""A distributed job's state in Redis (:class:`JobStore`): its phase, shard
counts, failures and outcome, read by ``eceb-dist status``/``wait``/``result``
and written by the job's tasks; and the index of recent jobs, read by
``eceb-dist jobs``.
"""

from __future__ import annotations

import time
from typing import Any, Final

from eceb_worker.cluster.backend import policy_of
from eceb_worker.cluster.job_record import TERMINAL_PHASES, JobRecord, Phase, decode_job, job_key
from eceb_worker.cluster.retry import RetryPolicy
from eceb_worker.errors import ErrorKind
from eceb_worker.pipeline.messages import Stage

__all__ = ["JOB_TTL_S", "TERMINAL_PHASES", "JobRecord", "JobStore", "Phase", "decode_job", "job_key"]


JOB_TTL_S: Final = 7 * 24 * 3600
"""A job's state is kept a week after its last change."""
"""The phases of a job that has ended (nothing changes it any more)."""
DONE_FIELDS: Final = {
    Stage.REHASH: "rehash_done",
    Stage.EVALUATE: "eval_done",
    Stage.MAKE: "make_done",
    Stage.LIST: "list_done",
    Stage.HASH: "hash_done",
}
"""The set of shard indexes done, per stage (``eceb:job:<id>:<field>``)."""
TOTAL_FIELDS: Final = {
    Stage.REHASH: "rehash_total",
    Stage.EVALUATE: "eval_total",
    Stage.MAKE: "make_total",
    Stage.LIST: "list_total",
    Stage.HASH: "hash_total",
}
"""The number of shards planned, per stage."""
_DONE_FIELDS: Final = tuple(DONE_FIELDS.values())
_LISTS: Final = ("failures", *_DONE_FIELDS)
JOBS_KEY: Final = "eceb:jobs"
"""The index of jobs: a sorted set of job ids, each scored by the
millisecond (Unix time) its job was created."""
ACTIVE_KEY: Final = "eceb:jobs:active"
"""The jobs in flight: a set of job ids, a job added when it is created and
taken out once it ended (:mod:`eceb_worker.cluster.watch` looks them over)."""
_INDEX_KEPT_MS: Final = 2 * JOB_TTL_S * 1000
"""How long a job stays in the index after it was created: twice the time
its state is kept after its last change (a job whose state is gone is left
out of listings, and dropped from the index, when one finds it)."""


_UPDATE_UNLESS_ENDED: Final = """
local phase = redis.call('HGET', KEYS[1], 'phase')
if not phase or {ended} then
    return 0
end
redis.call('HSET', KEYS[1], 'updated', ARGV[2], unpack(ARGV, 5))
for i = 1, #KEYS - 1 do
    redis.call('EXPIRE', KEYS[i], ARGV[1])
end
if ARGV[3] == '1' then
    redis.call('SREM', KEYS[#KEYS], ARGV[4])
end
return 1
"""
"""KEYS: the job's hash, its lists, then the set of jobs in flight; ARGV:
time to live, now, '1' when the update ends the job, the job's id, then
field, value, ..."""
_UPDATE_UNLESS_ENDED_SCRIPT: Final = _UPDATE_UNLESS_ENDED.replace(
    "{ended}", " or ".join(f"phase == '{value}'" for value in sorted(TERMINAL_PHASES))
)


class JobStore:
    """A job's state in Redis.

    ``eceb:job:<id>`` is a hash of strings: ``phase`` (a :class:`Phase`),
    ``kind`` (``evaluate`` or ``verify``), ``benchmark`` and ``run`` (an
    evaluation's) or ``registry`` (a verification's), ``corpus``, ``out``,
    ``created``/``updated`` (Unix seconds; ``ended`` too, once it has
    ended), ``rehash_total`` and
    ``eval_total`` (shards planned), ``coordinator`` (its task id), and
    on failure ``error_kind`` (an :class:`~eceb_worker.errors.ErrorKind`),
    ``error``, ``problems`` (JSON list of problems), ``verification`` (the
    JSON verification report); when done, ``passing_tasks``/``total_tasks``
    and ``report_digest`` (an evaluation), ``verification`` and ``verified``
    (a verification). ``eceb:job:<id>:failures`` lists the
    shard failures seen so far; the sets ``eceb:job:<id>:rehash_done`` and
    ``eceb:job:<id>:eval_done`` hold the indexes of the shards done, so a
    shard delivered twice counts once (:meth:`get` reports their sizes as
    the fields ``rehash_done`` and ``eval_done``). All expire
    :data:`JOB_TTL_S` after the last change. :data:`JOBS_KEY` indexes the
    jobs by creation (:meth:`recent`).

    Every method is one command, pipeline or script, which ``client``
    retries through a Redis outage (the application's client does:
    :class:`~eceb_worker.cluster.backend.RetryingRedisBackend`) and which
    changes nothing when run twice; a connection still lost after that
    raises ``StorageError`` (``policy``'s bound named).
    """

    _WHAT: Final = "the result backend (job state)"

    def __init__(self, client: Any, policy: RetryPolicy | None = None) -> None:
        self.client = client
        self.policy = policy or RetryPolicy(max_retries=0)
        self._update_script = client.register_script(_UPDATE_UNLESS_ENDED_SCRIPT)

    @classmethod
    def of(cls, app: Any) -> JobStore:
        """The job store in Celery application ``app``'s result backend, with its retry policy."""
        return cls(app.backend.client, policy_of(app))

    def _touch(self, job_id: str, pipe: Any) -> None:
        pipe.hset(job_key(job_id), "updated", str(int(time.time())))
        pipe.expire(job_key(job_id), JOB_TTL_S)
        for suffix in _LISTS:
            pipe.expire(f"{job_key(job_id)}:{suffix}", JOB_TTL_S)

    def create(self, job_id: str, **fields: str | int) -> None:
        """Start the job's hash with ``fields`` (``phase`` among them) and
        index it (jobs created over :data:`_INDEX_KEPT_MS` ago leave the index)."""
        now_ms = time.time_ns() // 1_000_000
        pipe = self.client.pipeline()
        pipe.hset(job_key(job_id), mapping={name: str(value) for name, value in fields.items()})
        self._touch(job_id, pipe)
        pipe.zadd(JOBS_KEY, {job_id: now_ms})
        pipe.sadd(ACTIVE_KEY, job_id)
        pipe.zremrangebyscore(JOBS_KEY, "-inf", now_ms - _INDEX_KEPT_MS)
        pipe.expire(JOBS_KEY, _INDEX_KEPT_MS // 1000)
        with self.policy.reaching(self._WHAT):
            pipe.execute()

    def recent(self, limit: int) -> list[JobRecord]:
        """Up to ``limit`` jobs, the newest first, each as :meth:`get` reads
        it (``StorageError`` for a malformed one). Jobs whose state is gone
        (expired) are left out and dropped from the index."""
        found: list[JobRecord] = []
        start = 0
        while len(found) < limit:
            with self.policy.reaching(self._WHAT):
                ids = [_text(item) for item in self.client.zrevrange(JOBS_KEY, start, start + limit - 1)]
            if not ids:
                break
            start += len(ids)
            gone = []
            for job_id in ids:
                state = self.get(job_id)
                if state is None:
                    gone.append(job_id)
                elif len(found) < limit:
                    found.append(state)
            if gone:
                with self.policy.reaching(self._WHAT):
                    self.client.zrem(JOBS_KEY, *gone)
                start -= len(gone)
        return found

    def update(self, job_id: str, **fields: str | int) -> bool:
        """Set fields of the job's hash, unless the job is unknown or has
        ended (done, failed, cancelled): a step still running when the job
        was cancelled never undoes the cancel. A phase that ends the job
        records when (``ended``). Atomic; True when written."""
        now = str(int(time.time()))
        if str(fields.get("phase")) in TERMINAL_PHASES:
            fields = {**fields, "ended": now}
        values = [str(value) for pair in fields.items() for value in pair]
        ends = "1" if str(fields.get("phase")) in TERMINAL_PHASES else "0"
        with self.policy.reaching(self._WHAT):
            written = self._update_script(
                keys=[job_key(job_id), *(f"{job_key(job_id)}:{suffix}" for suffix in _LISTS), ACTIVE_KEY],
                args=[JOB_TTL_S, now, ends, job_id, *values],
            )
        return bool(written)

    def active(self) -> list[str]:
        """The jobs in flight (created, not yet seen to end)."""
        with self.policy.reaching(self._WHAT):
            members = self.client.smembers(ACTIVE_KEY)
        return sorted(_text(member) for member in members)

    def retire(self, job_id: str) -> None:
        """Take a job that ended, or whose state is gone, out of the jobs in flight."""
        with self.policy.reaching(self._WHAT):
            self.client.srem(ACTIVE_KEY, job_id)

    def advance(self, job_id: str, stage: Stage, index: int) -> None:
        """Count shard ``index`` of ``stage`` done; counting it again changes nothing."""
        pipe = self.client.pipeline()
        pipe.sadd(f"{job_key(job_id)}:{DONE_FIELDS[stage]}", index)
        self._touch(job_id, pipe)
        with self.policy.reaching(self._WHAT):
            pipe.execute()

    def add_failure(self, job_id: str, text: str) -> None:
        """Record a shard failure (run twice through a Redis outage, it may be listed twice)."""
        pipe = self.client.pipeline()
        pipe.rpush(f"{job_key(job_id)}:failures", text)
        self._touch(job_id, pipe)
        with self.policy.reaching(self._WHAT):
            pipe.execute()

    def get(self, job_id: str) -> JobRecord | None:
        """The job's state, decoded (:func:`decode_job`: ``StorageError``
        when malformed), or None for an unknown, expired or lost job."""
        pipe = self.client.pipeline()
        pipe.hgetall(job_key(job_id))
        for field in _DONE_FIELDS:
            pipe.scard(f"{job_key(job_id)}:{field}")
        with self.policy.reaching(self._WHAT):
            raw, *done = pipe.execute()
        if b"phase" not in raw and "phase" not in raw:
            # Unknown, expired, or lost (what a shard still running wrote
            # after Redis lost its data holds no phase).
            return None
        state = {_text(name): _text(value) for name, value in raw.items()}
        state.update((field, str(count)) for field, count in zip(_DONE_FIELDS, done, strict=True))
        return decode_job(job_id, state)

    def phase(self, job_id: str) -> Phase | None:
        """The job's phase alone (what a worker reads): None for an unknown,
        expired or lost job, or a phase this version of eceb does not know."""
        with self.policy.reaching(self._WHAT):
            value = self.client.hget(job_key(job_id), "phase")
        try:
            return None if value is None else Phase(_text(value))
        except ValueError:
            return None

    def failures(self, job_id: str) -> list[str]:
        """Shard failures seen so far."""
        with self.policy.reaching(self._WHAT):
            items = self.client.lrange(f"{job_key(job_id)}:failures", 0, -1)
        return [_text(item) for item in items]

    def finished(self, job_id: str) -> bool:
        """True when the job is done, failed or cancelled (or unknown)."""
        with self.policy.reaching(self._WHAT):
            phase = self.client.hget(job_key(job_id), "phase")
        return phase is None or _text(phase) in TERMINAL_PHASES

    def fail(self, job_id: str, kind: ErrorKind, error: str, **fields: str) -> bool:
        """End the job as failed (unless it already ended); True when it did."""
        return self.update(job_id, phase=Phase.FAILED.value, error_kind=kind.value, error=error, **fields)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
