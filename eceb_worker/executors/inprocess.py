"""The embedded executor: shards run in this process and, when there is
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
from collections.abc import Callable, Sequence
from typing import Final, Protocol, TypeVar

from eceb_worker.engine.artifacts import Artifact
from eceb_worker.engine.plan import DEFAULT_FILE_COST_BYTES, RehashShard
from eceb_worker.engine.verification import (
    HashOutcome,
    ShardVerification,
    hash_paths,
    shard_verification,
    verify_artifacts,
)
from eceb_worker.executors.helpers import Checked, CheckRequest, Hashed, HashRequest, HelperProcess, Request
from eceb_worker.storage import StorageSpec, shared_storage
from eceb_worker.storage.local import LARGE_FILE_BYTES

__all__ = ["HELPER_MIN_WORK_BYTES", "InProcessExecutor", "ShardExecutor"]

HELPER_MIN_WORK_BYTES: Final = 512 * 1024 * 1024
"""Single-core work, in byte-equivalents, that pays for one helper process:
about 0.12 s, twice what a helper takes to start (some 50 ms before it
hashes its first file). Counted for a local corpus as the bytes of files
under ``LARGE_FILE_BYTES`` plus ``DEFAULT_FILE_COST_BYTES`` per such file;
larger files are hashed on all cores wherever they run, so a corpus of large
files is hashed in this process alone. About 15,000 files of 4 KiB per
helper."""

T = TypeVar("T")
R = TypeVar("R")


class ShardExecutor(Protocol):
    """Runs re-hash shards against one corpus and returns their results.

    ``on_result`` is called in the caller's thread once per finished shard,
    in completion order (for progress display). Results come back in shard
    order.
    """

    def rehash(
        self,
        spec: StorageSpec,
        artifacts: Sequence[Artifact],
        shards: Sequence[RehashShard],
        on_result: Callable[[ShardVerification], object] | None = None,
    ) -> list[ShardVerification]:
        """Verify every shard of ``artifacts`` (ECEB-0.1 §5)."""
        ...

    def hash_paths(
        self,
        spec: StorageSpec,
        batches: Sequence[Sequence[str]],
        on_result: Callable[[list[HashOutcome]], object] | None = None,
    ) -> list[list[HashOutcome]]:
        """Hash every batch of paths (used to register a corpus)."""
        ...


class InProcessExecutor:
    """Runs shards in this process, helped by up to ``workers - 1`` helper
    processes when the work pays for them (see :data:`HELPER_MIN_WORK_BYTES`).

    Raises whatever a shard raises (``StorageError`` for a failing storage);
    shards not started yet are dropped and helpers stopped first.
    """

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.workers = workers

    def rehash(
        self,
        spec: StorageSpec,
        artifacts: Sequence[Artifact],
        shards: Sequence[RehashShard],
        on_result: Callable[[ShardVerification], object] | None = None,
    ) -> list[ShardVerification]:
        """Verify every shard; see :class:`ShardExecutor`."""
        if spec.is_s3:
            helpers = len(shards) - 1
        else:
            small = [a.size_bytes for a in artifacts if a.size_bytes < LARGE_FILE_BYTES]
            helpers = (sum(small) + DEFAULT_FILE_COST_BYTES * len(small)) // HELPER_MIN_WORK_BYTES

        def here(shard: RehashShard) -> ShardVerification:
            storage = shared_storage(spec)
            part = artifacts[shard.start : shard.end]
            return verify_artifacts(storage, part, start=shard.start, threads=storage.concurrency)

        def request(shard: RehashShard) -> Request:
            part = artifacts[shard.start : shard.end]
            return CheckRequest(spec=spec, paths=[a.path for a in part], digests=[a.source_digest for a in part])

        def result(shard: RehashShard, answer: Checked | Hashed) -> ShardVerification:
            assert isinstance(answer, Checked)
            return shard_verification(artifacts[shard.start : shard.end], answer.result, start=shard.start)

        return self._share(shards, helpers, here, request, result, on_result)

    def hash_paths(
        self,
        spec: StorageSpec,
        batches: Sequence[Sequence[str]],
        on_result: Callable[[list[HashOutcome]], object] | None = None,
    ) -> list[list[HashOutcome]]:
        """Hash every batch of paths; see :class:`ShardExecutor`."""

        def here(batch: Sequence[str]) -> list[HashOutcome]:
            storage = shared_storage(spec)
            return hash_paths(storage, batch, threads=storage.concurrency)

        def request(batch: Sequence[str]) -> Request:
            return HashRequest(spec=spec, paths=list(batch))

        def result(_: Sequence[str], answer: Checked | Hashed) -> list[HashOutcome]:
            assert isinstance(answer, Hashed)
            return answer.outcomes

        return self._share(batches, len(batches) - 1, here, request, result, on_result)

    def _share(
        self,
        tasks: Sequence[T],
        helpers: int,
        here: Callable[[T], R],
        request: Callable[[T], Request],
        result: Callable[[T, Checked | Hashed], R],
        on_result: Callable[[R], object] | None,
    ) -> list[R]:
        """Run every task once and return the results in task order.

        This thread runs ``here(task)`` on tasks taken from the end; each of
        up to ``helpers`` helper processes (capped by ``workers - 1`` and
        ``len(tasks) - 1``) answers ``request(task)`` for tasks taken from
        the start, fed by a thread of its own, and ``result`` turns its
        answer into the task's result. ``on_result`` runs in this thread.
        """
        helpers = max(0, min(helpers, self.workers - 1, len(tasks) - 1))
        results: list[R | None] = [None] * len(tasks)

        def done(index: int, value: R) -> None:
            results[index] = value
            if on_result is not None:
                on_result(value)

        if helpers == 0:
            for index, task in enumerate(tasks):
                done(index, here(task))
            return [r for r in results if r is not None]

        import queue
        import threading

        waiting = deque(range(len(tasks)))  # popleft by feeders, pop by this thread: both atomic
        finished: queue.SimpleQueue[tuple[int, R] | BaseException | None] = queue.SimpleQueue()
        stop = threading.Event()

        def feed(helper: HelperProcess) -> None:
            try:
                while not stop.is_set():
                    try:
                        index = waiting.popleft()
                    except IndexError:
                        break
                    finished.put((index, result(tasks[index], helper.call(request(tasks[index])))))
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
                done(index, here(tasks[index]))
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
