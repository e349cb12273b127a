"""The vocabulary of a job's work on the cluster (docs/DISTRIBUTED.md,
"No job waits for ever"): its steps and how they are named, a step as
published, a lease, where a job's steps stand, and the bounds of a lost
step (:mod:`eceb_worker.cluster.work` keeps them in Redis).
"""

from __future__ import annotations

import os
import socket
from typing import Any, Final

import msgspec

from eceb_worker.pipeline.messages import Stage

__all__ = [
    "BOUNDS_SETTING",
    "COORDINATE",
    "REDUCE_TASKS",
    "SHARD_TASKS",
    "WORKERS_KEY",
    "Bounds",
    "Lease",
    "Progress",
    "Step",
    "bounds_of",
    "pid_alive",
    "queued_task_ids",
    "reduce_step",
    "shard_step",
    "step_stage",
    "this_host",
]

COORDINATE: Final = "coordinate"
"""The first step of every job."""

SHARD_TASKS: Final = {
    Stage.REHASH: "eceb.job_rehash_shard",
    Stage.EVALUATE: "eceb.evaluate_shard",
    Stage.MAKE: "eceb.make_shard",
    Stage.LIST: "eceb.list_shard",
    Stage.HASH: "eceb.hash_shard",
}
"""The task that runs one shard of each stage."""
REDUCE_TASKS: Final = {
    Stage.REHASH: "eceb.job_verified",
    Stage.EVALUATE: "eceb.job_finish",
    Stage.MAKE: "eceb.run_finish",
    Stage.LIST: "eceb.register_listed",
    Stage.HASH: "eceb.register_finish",
}
"""The task that reduces each stage's answers (published by its last shard to answer)."""

WORKERS_KEY: Final = "eceb:workers"
"""The workers alive: a sorted set of worker names, each scored by the
millisecond (Unix time) it last said so."""


class Bounds(msgspec.Struct, frozen=True, kw_only=True):
    """How soon a lost step runs again (docs/SETTINGS.md).

    Fields:
        lease_s: a step's lease lapses this long after its last renewal
            (``ECEB_LEASE_S``).
        heartbeat_s: how often a running step renews its lease, and a
            worker says it is alive (``ECEB_HEARTBEAT_S``).
        watch_s: how often the steps of the jobs in flight are looked over
            (``ECEB_WATCH_S``).
        untaken_s: a step published this long ago that no process started,
            and that no longer waits in the queue, was lost (``ECEB_UNTAKEN_S``).
        republish_limit: a step published again this many times that still
            did not finish fails its job (``ECEB_MAX_DELIVERIES``).
    """

    lease_s: int = 20
    heartbeat_s: int = 5
    watch_s: int = 10
    untaken_s: int = 30
    republish_limit: int = 3

    @property
    def worker_alive_s(self) -> int:
        """A worker not heard from for this long is not alive."""
        return 3 * self.heartbeat_s


BOUNDS_SETTING: Final = "eceb_work_bounds"
"""The Celery configuration key holding the application's :class:`Bounds` (set by ``make_app``)."""


def bounds_of(app: Any) -> Bounds:
    """The bounds of a lost step of Celery application ``app`` (the defaults when it has none)."""
    bounds = app.conf.get(BOUNDS_SETTING)
    return bounds if isinstance(bounds, Bounds) else Bounds()


class Step(msgspec.Struct, frozen=True, kw_only=True):
    """A step as it is published.

    Fields:
        task: the Celery task's name.
        args: its positional arguments (JSON builtins).
        task_id: its task id (every publication of the step keeps it).
        label: its ``argsrepr`` (:func:`~eceb_worker.cluster.logs.task_label`).
    """

    task: str
    args: list[Any]
    task_id: str
    label: str = ""


class Lease(msgspec.Struct, frozen=True, kw_only=True):
    """Who runs a step.

    Fields:
        worker: the host of the process running it.
        pid: that process's id.
        since_ms: when it took the step, Unix milliseconds.
        token: what tells this holding from another of the same step.
    """

    worker: str
    pid: int
    since_ms: int
    token: str


def shard_step(stage: str, index: int) -> str:
    """The step of shard ``index`` of ``stage`` (``rehash:3``)."""
    return f"{stage}:{index}"


def reduce_step(stage: str) -> str:
    """The step reducing ``stage``'s answers (``reduce:rehash``)."""
    return f"reduce:{stage}"


def step_stage(step: str) -> tuple[str, int] | None:
    """The stage and index of a shard step; None for another step."""
    stage, _, index = step.partition(":")
    return (stage, int(index)) if index.isdigit() and stage != "reduce" else None


def pid_alive(pid: int) -> bool:
    """A process ``pid`` runs on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Progress(msgspec.Struct, frozen=True, kw_only=True):
    """Where a job's steps stand (:meth:`WorkStore.progress`).

    Fields:
        finished: the steps finished.
        started: the steps started since they were last published.
        published: when each step was last published (Unix ms).
        republished: how often each was published again.
        leases: the leases held, of the steps asked about.
    """

    finished: set[str]
    started: set[str]
    published: dict[str, int]
    republished: dict[str, int]
    leases: dict[str, Lease]


def this_host() -> str:
    """The name of the host running this process (what tells whether a lease's process is gone)."""
    return socket.gethostname()


def queued_task_ids(client: Any, queue: str) -> set[str]:
    """The task ids of the messages waiting in the broker's ``queue`` (kombu's
    Redis list and its priority lists), read through the broker's ``client``."""
    found: set[str] = set()
    for key in (queue, *(f"{queue}\x06\x16{priority}" for priority in (3, 6, 9))):
        for raw in client.lrange(key, 0, -1):
            try:
                message = msgspec.json.decode(raw)
                found.add(str(message["headers"]["id"]))
            except (msgspec.DecodeError, KeyError, TypeError):
                continue
    return found
