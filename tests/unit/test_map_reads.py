"""``map_reads``: the concurrent reads of an ``s3://`` corpus, on daemon threads."""

from __future__ import annotations

import threading

import pytest

from eceb_worker.errors import StorageError
from eceb_worker.io.s3 import map_reads


def test_results_come_in_position_order() -> None:
    assert map_reads(lambda position: position * position, 50, 7) == [p * p for p in range(50)]


def test_reads_run_on_daemon_threads_at_most_workers_at_a_time() -> None:
    running, peak, lock = [0], [0], threading.Lock()
    barrier = threading.Barrier(3, timeout=30)

    def read(position: int) -> bool:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        if position < 3:
            barrier.wait()  # three at once, or the barrier breaks
        with lock:
            running[0] -= 1
        return threading.current_thread().daemon

    assert all(map_reads(read, 9, 3))
    assert peak[0] == 3


def test_the_first_failure_by_position_is_raised() -> None:
    def read(position: int) -> int:
        if position in (2, 5):
            raise StorageError(f"read {position} failed")
        return position

    with pytest.raises(StorageError, match="read 2 failed"):
        map_reads(read, 6, 1)
