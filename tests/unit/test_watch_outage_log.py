"""While Redis is away, the watch of a worker says so in one line each time
it tries, without a traceback; an unexpected failure keeps its traceback."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from eceb_worker.cluster.watch import Watcher
from eceb_worker.errors import StorageError

pytestmark = pytest.mark.unit


class _Away:
    """A work store whose Redis is away: ``alive`` raises ``error``, then stops the watcher."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.bounds = SimpleNamespace(watch_s=60, heartbeat_s=0.01)
        self.watcher: Watcher | None = None

    def alive(self, _name: str) -> None:
        assert self.watcher is not None
        self.watcher._stop.set()
        raise self.error


def _one_turn(error: Exception, caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    work: Any = _Away(error)
    watcher = Watcher(work, jobs=Any, name="eceb@host", send=lambda *_: None, queued=set)  # type: ignore[arg-type]
    work.watcher = watcher
    with caplog.at_level(logging.WARNING, logger="eceb.cluster.watch"):
        thread = threading.Thread(target=watcher._run)
        thread.start()
        thread.join(timeout=30)
    assert not thread.is_alive()
    return [record for record in caplog.records if record.name == "eceb.cluster.watch"]


@pytest.mark.parametrize(
    "error",
    [
        StorageError("the result backend (watch) unreachable for more than 60 s (ECEB_REDIS_OUTAGE_S)"),
        RedisConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused."),
    ],
)
def test_redis_away_is_one_line_without_a_traceback(error: Exception, caplog: pytest.LogCaptureFixture) -> None:
    records = _one_turn(error, caplog)
    assert len(records) == 1
    assert records[0].levelno == logging.WARNING
    assert records[0].exc_info is None
    assert "cannot reach Redis; it tries again" in records[0].getMessage()


def test_an_unexpected_failure_keeps_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    records = _one_turn(KeyError("bug"), caplog)
    assert len(records) == 1
    assert records[0].exc_info is not None
