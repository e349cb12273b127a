"""Executors run a shard plan: in this process or a local process pool
(:mod:`eceb_worker.executors.inprocess`, the embedded default) or on a
cluster. Every executor runs the same engine map functions."""

from eceb_worker.executors.inprocess import InProcessExecutor, ShardExecutor

__all__ = ["InProcessExecutor", "ShardExecutor"]
