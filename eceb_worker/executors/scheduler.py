"""The one scheduler of shard tasks over this process and helper processes
(:class:`TaskStream`): helpers, each fed by a thread of its own, take tasks
from the start of the plan, this process from its end, so that no core idles
while helpers start and the last shards finish together. ``eceb corpus
verify`` streams a plan into it as the registry is checked
(:mod:`eceb_worker.executors.streaming`); the embedded executor hands it a
plan known whole (:mod:`eceb_worker.executors.inprocess`).
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Sequence
from types import TracebackType
from typing import Final

from eceb_worker.corpus.planning import DEFAULT_FILE_COST_BYTES
from eceb_worker.executors.helpers import HelperProcess
from eceb_worker.io.local_corpus import LARGE_FILE_BYTES
from eceb_worker.pipeline.jobs import AnswerCallback
from eceb_worker.pipeline.messages import RehashTask, ShardAnswer, ShardTask
from eceb_worker.pipeline.shards import Workspace

__all__ = ["HELPER_MIN_WORK_BYTES", "TaskStream", "single_core_bytes"]

HELPER_MIN_WORK_BYTES: Final = 512 * 1024 * 1024
"""Single-core work, in byte-equivalents, that pays for one helper process:
about 0.12 s, twice what a helper takes to start (some 50 ms before it
hashes its first file). Counted for a local corpus as the bytes of files
under ``LARGE_FILE_BYTES`` plus ``DEFAULT_FILE_COST_BYTES`` per such file
(:attr:`~eceb_worker.pipeline.jobs.MapStage.single_core_bytes`); larger
files are hashed on all cores wherever they run, so a corpus of large files
is hashed in this process alone. About 15,000 files of 4 KiB per helper."""


AHEAD: Final = 4
"""Requests a helper is sent ahead of its answers while tasks are still
being added (each some 700 bytes: far less than a pipe holds, so that
sending never waits on the helper); once every task is added, one, so that
the last tasks are shared out evenly."""

_Finished = tuple[int, ShardAnswer] | BaseException | None
"""What a feeder thread hands over: an answer, its failure, or its end."""


def single_core_bytes(task: ShardTask, *, local: bool) -> int:
    """A re-hash task's work on one core, in byte-equivalents (as
    :attr:`~eceb_worker.pipeline.jobs.MapStage.single_core_bytes` counts it):
    a shard of one file of ``LARGE_FILE_BYTES`` or more is hashed on all
    cores wherever it runs (0); any other shard of a local corpus counts its
    bytes and ``DEFAULT_FILE_COST_BYTES`` per file (a shard mixing large and
    small files is counted whole). A shard read from object storage counts
    as a helper's worth: it waits on the network."""
    if not isinstance(task, RehashTask):
        return HELPER_MIN_WORK_BYTES
    shard = task.shard
    if not local:
        return HELPER_MIN_WORK_BYTES
    if shard.count == 1 and shard.size_bytes >= LARGE_FILE_BYTES:
        return 0
    return shard.size_bytes + DEFAULT_FILE_COST_BYTES * shard.count


class TaskStream:
    """The one scheduler of shard tasks over this process and helper
    processes (``eceb corpus verify`` as the registry is checked, and
    :class:`~eceb_worker.executors.inprocess.InProcessExecutor` for a plan
    known whole).

    Shard tasks run as they come: helper processes take them from the
    start as soon as they are added (one helper per
    :data:`HELPER_MIN_WORK_BYTES` of
    single-core work added, up to ``workers - 1``; or those started with
    :meth:`start_helper`), each as ``workspace`` detaches it (a helper's
    first lends what the job's later shards share: :meth:`~eceb_worker.pipeline.shards.Workspace.detach`),
    and :meth:`finish`, once every task is added, has this thread take them
    from the end until all are answered.

    A context manager: leaving it on an error stops and kills the helpers.
    ``on_answer`` is called in this thread, for each answer, in completion
    order (while tasks are added, for the answers already in).
    """

    def __init__(
        self, workspace: Workspace, *, workers: int, local: bool, on_answer: AnswerCallback | None = None
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self._workspace = workspace
        self._workers = workers
        self._local = local
        self._on_answer = on_answer
        self._tasks: list[ShardTask] = []
        self._answers: dict[int, ShardAnswer] = {}
        self._waiting: deque[int] = deque()  # popleft by feeders, pop by this thread
        self._ready = threading.Condition()
        self._closed = False  # every task added
        self._stop = threading.Event()
        self._finished: queue.SimpleQueue[_Finished] = queue.SimpleQueue()
        self._helpers: list[HelperProcess] = []
        self._feeders: list[threading.Thread] = []
        self._work = 0
        self._ended = 0  # feeders that ended
        self._error: BaseException | None = None

    @property
    def added(self) -> int:
        """How many tasks were added so far (a task's index is its position)."""
        return len(self._tasks)

    @property
    def helpers(self) -> int:
        """How many helper processes were started so far."""
        return len(self._helpers)

    def add(self, tasks: Sequence[ShardTask], *, last: bool = False) -> None:
        """Add the next tasks of the plan, in plan order (``last``: the plan
        ends with them); start the helpers they pay for. Failures of the
        tasks that ran meanwhile are kept for :meth:`finish`."""
        if not tasks and not last:
            return
        with self._ready:
            start = len(self._tasks)
            self._tasks.extend(tasks)
            self._waiting.extend(range(start, len(self._tasks)))
            self._closed = self._closed or last
            self._ready.notify_all()
        self._work += sum(single_core_bytes(task, local=self._local) for task in tasks)
        while len(self._helpers) < self._workers - 1 and self._work >= HELPER_MIN_WORK_BYTES * (len(self._helpers) + 1):
            self._start_helper()
        self._drain(block=False)

    def finish(self) -> list[ShardAnswer]:
        """Every task added is answered: this thread runs the tasks no helper
        took, from the end. Returns the answers in task order. Raises what a
        task raised (the first failure seen)."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()
        while self._error is None:
            self._drain(block=False)
            try:
                index = self._waiting.pop()
            except IndexError:
                break
            self._done(index, self._workspace.run(self._tasks[index]))
        self._drain(block=False)
        while self._error is None and self._ended < len(self._feeders):
            self._drain(block=True)
        if self._error is not None:
            raise self._error
        return [self._answers[index] for index in range(len(self._tasks))]

    def __enter__(self) -> TaskStream:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if kind is not None or self._error is not None:
            self._stop.set()
            with self._ready:
                self._closed = True
                self._ready.notify_all()
            for helper in self._helpers:
                helper.close(kill=True)
        for feeder in self._feeders:
            feeder.join()

    def start_helper(self) -> None:
        """Start one more helper now, unless ``workers - 1`` run already."""
        if len(self._helpers) < self._workers - 1:
            self._start_helper()

    def _start_helper(self) -> None:
        helper = HelperProcess()
        self._helpers.append(helper)
        feeder = threading.Thread(target=self._feed, args=(helper,), name="eceb-helper", daemon=True)
        self._feeders.append(feeder)
        feeder.start()

    def _claim(self, *, wait: bool) -> int | None:
        """The next task's index from the start; with ``wait``, waiting for
        one until every task is added. None when there is none."""
        with self._ready:
            while not self._stop.is_set():
                if self._waiting:
                    try:
                        return self._waiting.popleft()
                    except IndexError:  # this thread took the last one meanwhile
                        continue
                if self._closed or not wait:
                    return None
                self._ready.wait()
            return None

    def _feed(self, helper: HelperProcess) -> None:
        """A feeder thread: up to :data:`AHEAD` requests sent beyond the one
        being answered, so that the helper keeps working while this process
        holds the interpreter (checking a block of the registry takes single
        calls of ten milliseconds and more). The helper's first request
        lends what the job's later shards share."""
        try:
            sent: deque[int] = deque()
            lend = True
            while True:
                while len(sent) <= (1 if self._closed else AHEAD) and (index := self._claim(wait=not sent)) is not None:
                    helper.send(self._workspace.detach(self._tasks[index], lend=lend))
                    sent.append(index)
                    lend = False
                if not sent:
                    break
                index = sent.popleft()
                self._finished.put((index, helper.answer()))
            helper.close()
        except BaseException as exc:  # handed to the caller's thread, which raises it
            self._finished.put(exc)
        finally:
            self._finished.put(None)

    def _drain(self, *, block: bool) -> None:
        """Take what the feeders handed over (one item, waiting for it, with
        ``block``): answers, the first failure (kept), their ends."""
        while True:
            try:
                item = self._finished.get(block=block)
            except queue.Empty:
                return
            if item is None:
                self._ended += 1
            elif isinstance(item, BaseException):
                if self._error is None:
                    self._error = item
            else:
                self._done(*item)
            if block:
                return

    def _done(self, index: int, answer: ShardAnswer) -> None:
        self._answers[index] = answer
        if self._on_answer is not None:
            self._on_answer(answer)
