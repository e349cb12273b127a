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

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from eceb_worker.executors.helpers import HelperProcess
from eceb_worker.pipeline.jobs import AnswerCallback, MapStage, ThisProcess
from eceb_worker.pipeline.messages import ShardAnswer, ShardTask
from eceb_worker.pipeline.shards import Workspace

if TYPE_CHECKING:
    from eceb_worker.pipeline.detached import DetachedEvaluation, DetachedRehash

__all__ = ["HELPER_MIN_WORK_BYTES", "InProcessExecutor"]

HELPER_MIN_WORK_BYTES: Final = 512 * 1024 * 1024
"""Single-core work, in byte-equivalents, that pays for one helper process:
about 0.12 s, twice what a helper takes to start (some 50 ms before it
hashes its first file). Counted for a local corpus as the bytes of files
under ``LARGE_FILE_BYTES`` plus ``DEFAULT_FILE_COST_BYTES`` per such file
(:attr:`~eceb_worker.pipeline.jobs.MapStage.single_core_bytes`); larger
files are hashed on all cores wherever they run, so a corpus of large files
is hashed in this process alone. About 15,000 files of 4 KiB per helper."""


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

    def _share(
        self,
        tasks: Sequence[ShardTask],
        helpers: int,
        workspace: Workspace,
        on_answer: AnswerCallback | None,
    ) -> list[ShardAnswer]:
        """Run every task once and return the answers in task order.

        This thread runs tasks taken from the end with ``workspace``; each of
        ``helpers`` helper processes answers tasks taken from the start, fed
        by a thread of its own, each task as ``workspace`` detaches it
        (an evaluation shard of a held job travels with its records).
        ``on_answer`` runs in this thread.
        """
        results: list[ShardAnswer | None] = [None] * len(tasks)

        def done(index: int, value: ShardAnswer) -> None:
            results[index] = value
            if on_answer is not None:
                on_answer(value)

        import queue
        import threading

        waiting = deque(range(len(tasks)))  # popleft by feeders, pop by this thread: both atomic
        finished: queue.SimpleQueue[tuple[int, ShardAnswer] | BaseException | None] = queue.SimpleQueue()
        stop = threading.Event()

        def claim(*, lend: bool = False) -> tuple[int, ShardTask | DetachedEvaluation | DetachedRehash] | None:
            """The next task from the start, as the helper receives it; None when none is left."""
            try:
                index = waiting.popleft()
            except IndexError:
                return None
            return index, workspace.detach(tasks[index], lend=lend)

        def feed(helper: HelperProcess) -> None:
            # The helper's first shard lends what the job's later shards share.
            # The next request is made while the helper answers the one before.
            try:
                claimed = None if stop.is_set() else claim(lend=True)
                while claimed is not None:
                    index, request = claimed
                    helper.send(request)
                    claimed = None if stop.is_set() else claim()
                    finished.put((index, helper.answer()))
                helper.close()
            except BaseException as exc:  # handed to the caller's thread, which raises it
                finished.put(exc)
            finally:
                finished.put(None)

        def drain(*, block: bool) -> int:
            """Report finished helper tasks; returns how many feeders ended."""
            ended = 0
            while True:
                try:
                    item = finished.get(block=block)
                except queue.Empty:
                    return ended
                if item is None:
                    ended += 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    done(*item)
                if block:
                    return ended

        processes: list[HelperProcess] = []
        feeders: list[threading.Thread] = []
        try:
            for _ in range(helpers):
                processes.append(HelperProcess())
                feeders.append(threading.Thread(target=feed, args=(processes[-1],), name="eceb-helper", daemon=True))
                feeders[-1].start()
            ended = 0
            while True:
                ended += drain(block=False)
                try:
                    index = waiting.pop()
                except IndexError:
                    break
                done(index, workspace.run(tasks[index]))
            while ended < len(feeders):
                ended += drain(block=True)
        except BaseException:
            stop.set()
            for helper in processes:
                helper.close(kill=True)
            raise
        finally:
            for feeder in feeders:
                feeder.join()
        return [r for r in results if r is not None]
