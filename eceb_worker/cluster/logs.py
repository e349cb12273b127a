"""A worker's log lines: each line about a job names the job and the shard,
as text (the default) or one JSON object a line (``ECEB_LOG_FORMAT=json``,
``eceb-dist worker --log-format json``).

Where the names come from: every task of a job is sent with a label as its
``argsrepr`` (:func:`task_label`: ``(job=<id> shard=rehash:3/12)`` for a
shard, ``(job=<id>)`` for a job's other steps), which Celery keeps with the
message (a retry passes it on, :mod:`eceb_worker.cluster.tasks`), shows
instead of the message's arguments and gives to its own log lines: the
worker's ``Task ... received`` line carries it in the record's ``data``,
and every line logged while a task runs is found through Celery's current
task. :class:`JobFilter` puts both names on each record (``job_id``,
``shard``: None on a line about no job); :class:`TextFormatter` writes them
before the message (``job=<id> shard=rehash:3/12 Task ... succeeded``),
:class:`JsonFormatter` as fields. A shard is named ``<stage>:<index>/<count>``:
its stage (``rehash`` or ``evaluate``), its 0-based index in the stage's
plan (as in failure messages: ``re-hash shard 3``) and the number of shards
the stage planned.

:func:`connect_logging` hooks this into Celery's logging set-up
(``after_setup_logger``, ``after_setup_task_logger``): the handlers Celery
makes get the filter and eceb's formatter.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
import warnings
from datetime import UTC, datetime
from typing import Any, Final

from celery.app.log import TaskFormatter

__all__ = [
    "LOG_FORMATS",
    "JobFilter",
    "JsonFormatter",
    "TextFormatter",
    "connect_logging",
    "formatter",
    "install",
    "label_fields",
    "log_line",
    "task_label",
]

LOG_FORMATS: Final = ("text", "json")
"""The formats a worker's log may have (``ECEB_LOG_FORMAT``)."""
_LABEL: Final = re.compile(r"\(job=(?P<job>[0-9A-Za-z_-]{1,64})(?: shard=(?P<shard>[a-z]{1,16}:\d{1,12}/\d{1,12}))?\)")
_TEXT_FORMAT: Final = "[%(asctime)s: %(levelname)s/%(processName)s] %(message)s"


def task_label(job_id: str, stage: str | None = None, index: int | None = None, count: int | None = None) -> str:
    """The ``argsrepr`` a job's task is sent with: ``(job=<id>)``, or for
    shard ``index`` (0-based) of the ``count`` a stage planned,
    ``(job=<id> shard=<stage>:<index>/<count>)``."""
    if stage is None or index is None or count is None:
        return f"(job={job_id})"
    return f"(job={job_id} shard={stage}:{index}/{count})"


def label_fields(text: object) -> tuple[str | None, str | None]:
    """The job id and shard a :func:`task_label` names (``(None, None)`` for
    any other text, a task not of a job included)."""
    match = _LABEL.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return None, None
    return match["job"], match["shard"]


def _current_label() -> object:
    """The label of the task this process is running (None when none)."""
    from celery._state import get_current_task

    task = get_current_task()
    request = getattr(task, "request", None) if task is not None else None
    return request.get("argsrepr") if request is not None else None


class JobFilter(logging.Filter):
    """Puts ``job_id`` and ``shard`` on every record (None when it is about
    no job): from the task label in Celery's ``data`` for the record (a line
    about a task received), else from the task this process is running.
    Drops nothing."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Name the record's job and shard; True (every record is kept)."""
        if getattr(record, "job_id", None) is None:
            data = getattr(record, "data", None)
            job, shard = label_fields(data.get("args") if isinstance(data, dict) else None)
            if job is None:
                job, shard = label_fields(_current_label())
            record.job_id, record.shard = job, shard
        return True


def _fields_text(record: logging.LogRecord) -> str:
    job, shard = getattr(record, "job_id", None), getattr(record, "shard", None)
    if job is None:
        return ""
    return f"job={job} shard={shard} " if shard else f"job={job} "


class TextFormatter(TaskFormatter):  # type: ignore[misc]
    """Celery's text lines, the record's job and shard written before its
    message (``job=<id> shard=rehash:3/12 ...``) when it names them."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        """The line, with the job's fields before the message."""
        fields = _fields_text(record)
        if not fields:
            return str(super().formatMessage(record))
        message = record.message
        record.message = fields + message
        try:
            return str(super().formatMessage(record))
        finally:
            record.message = message


def _time(created: float) -> str:
    """A record's time: RFC 3339, UTC, milliseconds."""
    moment = datetime.fromtimestamp(created, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class JsonFormatter(logging.Formatter):
    """One JSON object a record, on one line: ``time`` (RFC 3339, UTC),
    ``level``, ``logger``, ``process``, ``message``, ``job_id`` and
    ``shard`` (null when the line is about no job), and ``exception`` (the
    traceback) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON."""
        fields: dict[str, Any] = {
            "time": _time(record.created),
            "level": record.levelname,
            "logger": record.name,
            "process": record.processName,
            "message": record.getMessage(),
            "job_id": getattr(record, "job_id", None),
            "shard": getattr(record, "shard", None),
        }
        if record.exc_info:
            fields["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            fields["exception"] = record.exc_text
        return json.dumps(fields, ensure_ascii=False, default=str)


def formatter(log_format: str, *, colorize: bool = False, fmt: str | None = None) -> logging.Formatter:
    """The formatter of ``log_format`` (one of :data:`LOG_FORMATS`); text
    lines have the format ``fmt`` (Celery's worker format by default)."""
    if log_format == "json":
        return JsonFormatter()
    return TextFormatter(fmt or _TEXT_FORMAT, use_color=colorize)


def install(logger: logging.Logger, log_format: str, *, colorize: bool = False, fmt: str | None = None) -> None:
    """Give every handler of ``logger`` the :class:`JobFilter` and the formatter of ``log_format``."""
    for handler in logger.handlers:
        if not any(isinstance(existing, JobFilter) for existing in handler.filters):
            handler.addFilter(JobFilter())
        handler.setFormatter(formatter(log_format, colorize=colorize, fmt=fmt))


def log_line(message: str, log_format: str, *, logger: str = "eceb.dist", level: int = logging.INFO) -> str:
    """``message`` as one line of ``log_format``: the message itself as
    text, a :class:`JsonFormatter` object as JSON (what ``eceb-dist
    worker`` says before the worker starts)."""
    if log_format != "json":
        return message
    record = logging.LogRecord(logger, level, __file__, 0, message, None, None)
    record.job_id = record.shard = None
    return JsonFormatter().format(record)


def _log_format() -> str:
    from eceb_worker.settings import read_setting

    value: str = read_setting("log_format")
    return value


def _after_setup(logger: logging.Logger, format: str | None = None, colorize: bool = False, **_: Any) -> None:
    """Celery's ``after_setup_logger`` / ``after_setup_task_logger``: eceb's
    filter and formatter on the handlers it made (the multiprocessing
    logger's included)."""
    log_format = _log_format()
    install(logger, log_format, colorize=bool(colorize), fmt=format)
    if logger is logging.getLogger():
        from celery.utils.log import get_multiprocessing_logger

        multiprocessing = get_multiprocessing_logger()
        if multiprocessing is not None:
            install(multiprocessing, log_format, colorize=bool(colorize), fmt=format)


def _show_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None, line: Any = None
) -> None:
    """A warning as a JSON line on standard error (before Celery's logging takes warnings over)."""
    text = log_line(f"{category.__name__}: {message}", "json", logger="py.warnings", level=logging.WARNING)
    sys.stderr.write(text + "\n")


def _say_json(message: str, file: Any = sys.__stderr__) -> None:
    """What Celery's worker says outside its logging (``worker: Warm shutdown
    (MainProcess)``, ...), as a JSON line on the same stream."""
    stream = file if file is not None else sys.__stderr__
    if stream is not None:
        with contextlib.suppress(OSError, ValueError):
            stream.write(log_line(str(message).strip(), "json", logger="celery.apps.worker") + "\n")
            stream.flush()


def _json_start(instance: Any = None, **_: Any) -> None:
    """Celery's ``celeryd_init``: with JSON logs, no start-up banner on
    standard output, and the warnings of the start (running as root, ...)
    and what the worker says outside its logging (its shutdown) as JSON
    lines: every line a worker writes is then JSON."""
    if instance is not None and _log_format() == "json":
        instance.quiet = True
        warnings.showwarning = _show_warning
        from celery.apps import worker

        if hasattr(worker, "safe_say"):
            worker.safe_say = _say_json


def connect_logging() -> None:
    """Hook :func:`install` into Celery's logging set-up (a worker's; once
    per process), and leave out the start-up banner with JSON logs."""
    from celery import signals

    signals.celeryd_init.connect(_json_start, weak=False, dispatch_uid="eceb-json-start")
    signals.after_setup_logger.connect(_after_setup, weak=False, dispatch_uid="eceb-logging")
    signals.after_setup_task_logger.connect(_after_setup, weak=False, dispatch_uid="eceb-task-logging")
