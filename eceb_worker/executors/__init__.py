"""Executors run a job's map stages (:class:`~eceb_worker.pipeline.jobs.Executor`):
:class:`~eceb_worker.executors.inprocess.InProcessExecutor` in this process
and helper processes (the embedded default); the cluster runs them as
Celery chords (:mod:`eceb_worker.cluster.tasks`). Every executor runs the
same shard tasks (:class:`~eceb_worker.pipeline.shards.Workspace`)."""

from eceb_worker.executors.inprocess import InProcessExecutor

__all__ = ["InProcessExecutor"]
