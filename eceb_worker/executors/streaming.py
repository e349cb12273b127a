"""A corpus verified while its registry is checked (ECEB-0.1 §5): ``eceb
corpus verify`` in this process and helper processes, holding no artifact.

The registry is read as a stream, as a cluster's coordinator reads it
(:meth:`~eceb_worker.pipeline.jobs.Job.start` with no held inputs): each
re-hash shard is a byte range of the registry file that the process running
it reads, checks against the range's digest and decodes. Shards are handed
out as the check closes them, so that helper processes hash while this
process is still checking; this process joins them once the check is done.
The check's verdict comes first: a registry with any problem raises its
:class:`~eceb_worker.errors.InputError` (every problem, nothing reported)
whatever the hashing found, and a storage failure met meanwhile is raised
only after the registry has passed. The report is the same bytes as
:func:`~eceb_worker.pipeline.jobs.verify_corpus` gives for the registry
held whole, whatever the number of workers or the shard size.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Sequence
from types import TracebackType
from typing import Final

from eceb_worker.corpus.planning import DEFAULT_FILE_COST_BYTES, RehashShard
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.corpus.verification import VerificationReport
from eceb_worker.executors.helpers import HelperProcess
from eceb_worker.executors.inprocess import HELPER_MIN_WORK_BYTES
from eceb_worker.io.local_corpus import LARGE_FILE_BYTES
from eceb_worker.pipeline.embedded import verify_message
from eceb_worker.pipeline.jobs import AnswerCallback, Finished, Job
from eceb_worker.pipeline.messages import (
    CheckedRegistry,
    RehashTask,
    ShardAnswer,
    ShardTask,
)
from eceb_worker.pipeline.shards import Workspace

__all__ = ["TaskStream", "single_core_bytes", "verify_streamed"]

AHEAD: Final = 4
"""Requests a helper is sent ahead of its answers while tasks are still
being added (each some 700 bytes: far less than a pipe holds, so that
sending never waits on the helper); once every task is added, one, so that
the last tasks are shared out evenly."""

EARLY_HELPER_REGISTRY_BYTES: Final = 8 * 1024 * 1024
"""A registry file of this size or more (some 40,000 lines) has a helper
process started before it is read, rather than once its first block is
checked: the helper's start-up (some 50 ms) overlaps the check."""

_Finished = tuple[int, ShardAnswer] | BaseException | None
"""What a feeder thread hands over: an answer, its failure, or its end."""


def verify_streamed(
    registry: str,
    corpus: StorageSpec,
    *,
    workers: int,
    shard_bytes: int,
    on_answer: AnswerCallback | None = None,
) -> VerificationReport:
    """Re-hash every artifact of the registry file ``registry`` (a path)
    from ``corpus`` (ECEB-0.1 §5) on this process and up to ``workers - 1``
    helper processes, while the registry is checked (see the module).

    Memory does not grow with the registry: one block of it being checked,
    the plan, the findings. Raises :class:`~eceb_worker.errors.InputError`
    with every problem of the registry, then ``StorageError`` when the
    storage as a whole fails; ValueError for ``workers`` below 1.
    """
    job = Job(verify_message(registry, corpus, shard_bytes))
    # Tasks of shards closed while the registry is checked: where their lines
    # are and their digest is all a re-hash task needs of the registry; its
    # root and counts, not known yet, are left empty.
    reading = CheckedRegistry(location=registry, corpus_root="", artifact_count=0, rehash_shards=0)
    with TaskStream(job.workspace, workers=workers, local=not corpus.is_s3, on_answer=on_answer) as stream:
        if _file_bytes(registry) >= EARLY_HELPER_REGISTRY_BYTES:
            stream.start_helper()  # ready by the time the first block is checked

        def add(shards: Sequence[RehashShard]) -> None:
            stream.add([RehashTask(corpus=corpus, registry=reading, shard=shard) for shard in shards])

        stage = job.start(on_shards=add)
        stream.add(stage.tasks[stream.added :])
        answers = stream.finish()
    finished = job.after(stage.stage, answers)
    assert isinstance(finished, Finished) and finished.verification is not None
    return finished.verification


def _file_bytes(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # the check says why


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
    """Shard tasks run as they come: helper processes take them from the
    start as soon as they are added (one helper per
    :data:`~eceb_worker.executors.inprocess.HELPER_MIN_WORK_BYTES` of
    single-core work added, up to ``workers - 1``), and :meth:`finish`, once
    every task is added, has this thread take them from the end until all
    are answered.

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

    def add(self, tasks: Sequence[ShardTask]) -> None:
        """Add the next tasks of the plan, in plan order; start the helpers
        they pay for. Failures of the tasks that ran meanwhile are kept for
        :meth:`finish`."""
        if not tasks:
            return
        with self._ready:
            start = len(self._tasks)
            self._tasks.extend(tasks)
            self._waiting.extend(range(start, len(self._tasks)))
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
        calls of ten milliseconds and more)."""
        try:
            sent: deque[int] = deque()
            while True:
                while len(sent) <= (1 if self._closed else AHEAD) and (index := self._claim(wait=not sent)) is not None:
                    helper.send(self._tasks[index])
                    sent.append(index)
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
