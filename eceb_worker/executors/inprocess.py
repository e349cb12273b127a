"""The embedded executor: shard tasks run in this process and, when there is
enough work to pay for them, in helper processes too (fresh interpreters,
never forks: BLAKE3's thread pool does not survive a fork; see
:mod:`eceb_worker.executors.helpers`).

The calling process always works: it takes shards from the end of the plan
while each helper, fed by a thread of its own, takes them from the start. So
no core idles while helpers start, a one-shard plan starts no process, and
the last shards finish together.
"""

from __future__ import annotations

from collections.abc import Sequence

from eceb_worker.executors.scheduler import HELPER_MIN_WORK_BYTES, TaskStream
from eceb_worker.pipeline.jobs import AnswerCallback, MapStage, ThisProcess
from eceb_worker.pipeline.messages import ShardAnswer, ShardTask
from eceb_worker.pipeline.shards import Workspace

__all__ = ["HELPER_MIN_WORK_BYTES", "InProcessExecutor"]


class InProcessExecutor:
    """Runs a map stage's tasks in this process, helped by up to
    ``workers - 1`` helper processes when the work pays for them (see
    :data:`HELPER_MIN_WORK_BYTES`): an :class:`~eceb_worker.pipeline.jobs.Executor`.

    Raises whatever a task raises (``StorageError`` for a failing storage);
    tasks not started yet are dropped and helpers stopped first. Raises
    ValueError for ``workers`` below 1.
    """

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.workers = workers

    def map(self, stage: MapStage, workspace: Workspace, on_answer: AnswerCallback | None = None) -> list[ShardAnswer]:
        """Run every task of ``stage``; answers in task order."""
        tasks = stage.tasks
        if stage.single_core_bytes is None:
            helpers = len(tasks) - 1
        else:
            helpers = stage.single_core_bytes // HELPER_MIN_WORK_BYTES
        helpers = max(0, min(helpers, self.workers - 1, len(tasks) - 1))
        if helpers == 0:
            return ThisProcess().map(stage, workspace, on_answer)
        return self._share(tasks, helpers, workspace, on_answer)

    @staticmethod
    def _share(
        tasks: Sequence[ShardTask],
        helpers: int,
        workspace: Workspace,
        on_answer: AnswerCallback | None,
    ) -> list[ShardAnswer]:
        """Run every task once on this thread and ``helpers`` helper
        processes (the one scheduler, :class:`~eceb_worker.executors.scheduler.TaskStream`:
        helpers take tasks from the start, each as ``workspace`` detaches
        it, this thread from the end) and return the answers in task order.
        ``on_answer`` runs in this thread."""
        with TaskStream(workspace, workers=helpers + 1, local=True, on_answer=on_answer) as stream:
            stream.add(tasks, last=True)
            while stream.helpers < helpers:
                stream.start_helper()
            return stream.finish()
