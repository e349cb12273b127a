"""What a worker lends the execution shards of ``eceb-dist run``
(:class:`~eceb_worker.pipeline.making.shards.MakingServices`): the job's
journal of paid calls and the providers' pacing, both in the result
backend's Redis so that every worker of the cluster shares them.

- the journal (:class:`~eceb_worker.cluster.run_journal.RedisRunJournal`):
  every attempt of a paid call decided and recorded by one script, so that
  the authorized count and the spending stop hold across workers, and two
  workers racing for the last authorized call send one;
- the pacing (:func:`~eceb_worker.cluster.pacing.shared_pacer`): each
  provider's request and token windows, and a 429's pause, shared by every
  thread of every worker (and by jobs running at once against it).

Every command is retried through a Redis outage by the application's
retry policy (``ECEB_REDIS_OUTAGE_S``).
"""

from __future__ import annotations

import os
from typing import Any

from eceb_worker.cluster.backend import policy_of
from eceb_worker.families.eceb.making.journal import JournalBinding
from eceb_worker.io.storage import shared_storage
from eceb_worker.pipeline.making.inputs import MakingInputs
from eceb_worker.pipeline.making.pacing import Pacer
from eceb_worker.pipeline.making.shards import ClusterJournal, MakingWorkspace
from eceb_worker.pipeline.messages import MakeTask
from eceb_worker.pipeline.shards import Workspace

__all__ = ["ClusterServices", "lend_making"]


class ClusterServices:
    """The journal and pacing of made runs in Celery application ``app``'s
    result backend (see the module)."""

    def __init__(self, app: Any) -> None:
        self._app = app

    def journal(self, journal_id: str, binding: JournalBinding, *, bind: bool = False) -> ClusterJournal:
        """The job's journal: bound and its limits recorded (``bind``, the
        job's first step), or attached to as it is (shards and the reduce).
        ``InputError`` when bound to another plan."""
        from eceb_worker.cluster.run_journal import RedisRunJournal

        client, reaching = self._app.backend.client, policy_of(self._app).reaching
        if bind:
            return RedisRunJournal.open(client, journal_id, binding, reaching=reaching)
        return RedisRunJournal.attach(client, journal_id, plan_digest=binding.plan_digest, reaching=reaching)

    def pacer(self, *, key: str, requests_per_minute: int = 0, tokens_per_minute: int = 0) -> Pacer:
        """A provider's pacer shared by every worker."""
        from eceb_worker.cluster.pacing import shared_pacer

        return shared_pacer(
            self._app.backend.client,
            key=key,
            requests_per_minute=requests_per_minute,
            tokens_per_minute=tokens_per_minute,
            reaching=policy_of(self._app).reaching,
        )

    def ended(self, job_id: str) -> bool:
        """The job ended (cancelled, or failed): its shards start no further call."""
        from eceb_worker.cluster.state import JobStore

        return JobStore.of(self._app).finished(job_id)


def lend_making(workspace: Workspace, app: Any) -> None:
    """Let ``workspace`` (a worker process's) make runs with ``app``'s services."""

    def load(task: MakeTask) -> MakingInputs:
        locator = workspace.locator(task.inputs.endpoint_url, task.inputs.etags)
        inputs, _ = workspace.making_inputs(task.inputs, task.making, locator)
        return inputs

    workspace.making = MakingWorkspace(
        ClusterServices(app), load, lambda task: shared_storage(task.corpus), environ=os.environ
    )
