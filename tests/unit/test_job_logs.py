"""A worker's log lines name the job and the shard: the task label, the
filter that reads it, the text and JSON formatters
(eceb_worker/cluster/logs.py)."""

from __future__ import annotations

import json
import logging
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.cluster.logs import (
    JobFilter,
    JsonFormatter,
    TextFormatter,
    formatter,
    label_fields,
    log_line,
    task_label,
)

JOB = "4ca06809eedb44618093cc7ab8178f79"


def _record(message: str = "Task %s received", *args: object, data: object = None) -> logging.LogRecord:
    record = logging.LogRecord("celery.worker.strategy", logging.INFO, __file__, 1, message, args or None, None)
    if data is not None:
        record.data = data
    return record


def test_a_shard_label_names_the_job_stage_index_and_count() -> None:
    assert task_label(JOB) == f"(job={JOB})"
    assert task_label(JOB, "rehash", 3, 12) == f"(job={JOB} shard=rehash:3/12)"
    assert label_fields(task_label(JOB, "evaluate", 0, 13)) == (JOB, "evaluate:0/13")
    assert label_fields(task_label(JOB)) == (JOB, None)


@given(st.integers(min_value=0, max_value=10**9), st.integers(min_value=1, max_value=10**9))
def test_every_label_reads_back(index: int, count: int) -> None:
    assert label_fields(task_label(JOB, "rehash", index, count)) == (JOB, f"rehash:{index}/{count}")


@pytest.mark.parametrize(
    "text",
    [None, 3, "", "({'job_id': 'x'},)", f"job={JOB}", f"(job={JOB}) trailing", f"(job={JOB} shard=rehash:3)", "(job=)"],
)
def test_other_arguments_name_no_job(text: object) -> None:
    assert label_fields(text) == (None, None)


def test_the_filter_reads_the_label_celery_logs_with_a_received_task() -> None:
    record = _record(data={"id": "t1", "name": "eceb.job_rehash_shard", "args": task_label(JOB, "rehash", 3, 12)})
    assert JobFilter().filter(record)
    assert (record.job_id, record.shard) == (JOB, "rehash:3/12")  # type: ignore[attr-defined]


def test_a_line_about_no_task_names_no_job() -> None:
    record = _record("ready.")
    assert JobFilter().filter(record)
    assert (record.job_id, record.shard) == (None, None)  # type: ignore[attr-defined]


def test_text_lines_carry_the_job_and_shard_before_the_message() -> None:
    line_format = "[%(levelname)s/%(processName)s] %(message)s"
    record = _record("Task %s received", "eceb.job_rehash_shard", data={"args": task_label(JOB, "rehash", 3, 12)})
    JobFilter().filter(record)
    text = TextFormatter(line_format, use_color=False).format(record)
    assert text == f"[INFO/MainProcess] job={JOB} shard=rehash:3/12 Task eceb.job_rehash_shard received"
    step = _record("job done: %d/%d tasks pass", 7, 13, data={"args": task_label(JOB)})
    JobFilter().filter(step)
    assert (
        TextFormatter(line_format, use_color=False).format(step)
        == f"[INFO/MainProcess] job={JOB} job done: 7/13 tasks pass"
    )
    plain = _record("ready.")
    JobFilter().filter(plain)
    assert TextFormatter(line_format, use_color=False).format(plain) == "[INFO/MainProcess] ready."


def test_json_lines_are_one_object_each_with_the_job_fields() -> None:
    record = _record(
        'Task %s "received"\nsecond line é', "eceb.evaluate_shard", data={"args": task_label(JOB, "evaluate", 0, 13)}
    )
    JobFilter().filter(record)
    line = JsonFormatter().format(record)
    assert "\n" not in line
    found = json.loads(line)
    assert found["message"] == 'Task eceb.evaluate_shard "received"\nsecond line é'
    assert (found["job_id"], found["shard"], found["level"], found["logger"]) == (
        JOB,
        "evaluate:0/13",
        "INFO",
        "celery.worker.strategy",
    )
    assert found["process"] == "MainProcess"
    assert found["time"].endswith("Z") and len(found["time"]) == len("2025-01-31T02:00:00.000Z")
    assert "exception" not in found


def test_json_lines_carry_the_traceback() -> None:
    try:
        raise RuntimeError("planted")
    except RuntimeError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", None, sys.exc_info())
    found = json.loads(JsonFormatter().format(record))
    assert found["job_id"] is None and found["shard"] is None
    assert "RuntimeError: planted" in found["exception"]


def test_a_line_before_the_worker_starts_follows_the_format() -> None:
    assert log_line("starting a worker on redis://***@h:6379/0", "text") == "starting a worker on redis://***@h:6379/0"
    found = json.loads(log_line("starting a worker on redis://***@h:6379/0", "json"))
    assert found["message"] == "starting a worker on redis://***@h:6379/0" and found["logger"] == "eceb.dist"
    assert isinstance(formatter("json"), JsonFormatter) and isinstance(formatter("text"), TextFormatter)
