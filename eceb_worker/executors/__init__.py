"""Executors run a job's map stages (:class:`~eceb_worker.pipeline.jobs.Executor`):
:class:`~eceb_worker.executors.inprocess.InProcessExecutor` in this process
and helper processes (the embedded default); the cluster runs them as
Celery tasks, one a shard (:mod:`eceb_worker.cluster.tasks`). Every executor runs the
same shard tasks (:class:`~eceb_worker.pipeline.shards.Workspace`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eceb_worker.executors.inprocess import InProcessExecutor

__all__ = ["InProcessExecutor"]


def __getattr__(name: str) -> Any:
    """:class:`InProcessExecutor`, imported when first asked for: a helper
    process imports ``eceb_worker.executors.helpers`` without the executor."""
    if name == "InProcessExecutor":
        from eceb_worker.executors.inprocess import InProcessExecutor

        return InProcessExecutor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
