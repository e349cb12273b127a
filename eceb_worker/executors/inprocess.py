"""The embedded executor: shards run in this process, or in a pool of
worker processes started with ``spawn`` (never ``fork``: BLAKE3's thread
pool does not survive a fork)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Protocol, TypeVar

from eceb_worker.engine.artifacts import Artifact
from eceb_worker.engine.plan import RehashShard
from eceb_worker.engine.verification import HashOutcome, ShardVerification, hash_paths, verify_artifacts
from eceb_worker.storage import StorageSpec, shared_storage

__all__ = ["InProcessExecutor", "ShardExecutor"]

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


def rehash_shard(spec: StorageSpec, start: int, artifacts: Sequence[Artifact]) -> ShardVerification:
    """Map step of verification for one shard (runs in a pool process)."""
    storage = shared_storage(spec)
    return verify_artifacts(storage, artifacts, start=start, threads=storage.concurrency)


def hash_batch(spec: StorageSpec, paths: Sequence[str]) -> list[HashOutcome]:
    """Map step of registration for one batch of paths (runs in a pool process)."""
    storage = shared_storage(spec)
    return hash_paths(storage, paths, threads=storage.concurrency)


class InProcessExecutor:
    """Runs shards inline (``workers == 1``) or on ``workers`` spawned processes.

    Raises whatever a shard raises (``StorageError`` for a failing storage);
    pending shards are cancelled first.
    """

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.workers = workers

    def _run(self, calls: Sequence[tuple[Callable[..., R], tuple[object, ...]]], on_result: Callable[[R], object] | None) -> list[R]:
        if self.workers == 1 or len(calls) <= 1:
            results = []
            for fn, args in calls:
                result = fn(*args)
                if on_result is not None:
                    on_result(result)
                results.append(result)
            return results
        context = multiprocessing.get_context("spawn")
        slots: list[R | None] = [None] * len(calls)
        with ProcessPoolExecutor(max_workers=min(self.workers, len(calls)), mp_context=context) as pool:
            pending: dict[Future[R], int] = {pool.submit(fn, *args): i for i, (fn, args) in enumerate(calls)}
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        index = pending.pop(future)
                        slots[index] = future.result()
                        if on_result is not None:
                            on_result(slots[index])  # type: ignore[arg-type]
            except BaseException:
                for future in pending:
                    future.cancel()
                raise
        return [s for s in slots if s is not None]

    def rehash(
        self,
        spec: StorageSpec,
        artifacts: Sequence[Artifact],
        shards: Sequence[RehashShard],
        on_result: Callable[[ShardVerification], object] | None = None,
    ) -> list[ShardVerification]:
        """Verify every shard; see :class:`ShardExecutor`."""
        calls = [(rehash_shard, (spec, s.start, list(artifacts[s.start : s.end]))) for s in shards]
        return self._run(calls, on_result)

    def hash_paths(
        self,
        spec: StorageSpec,
        batches: Sequence[Sequence[str]],
        on_result: Callable[[list[HashOutcome]], object] | None = None,
    ) -> list[list[HashOutcome]]:
        """Hash every batch of paths; see :class:`ShardExecutor`."""
        calls = [(hash_batch, (spec, list(batch))) for batch in batches]
        return self._run(calls, on_result)
