"""Every setting eceb reads from the environment, in one table
(:data:`SETTINGS`), parsed and checked in one place (:func:`load_settings`).

The same table is docs/SETTINGS.md (a test keeps the two equal). A setting
given on the command line (``--broker-url``, ``--endpoint-url``, ...) or as
an argument overrides the environment; an empty variable counts as unset.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, Final

import msgspec

__all__ = ["SETTINGS", "Setting", "Settings", "load_settings", "read_setting"]


def _text(value: str) -> str:
    return value


def _flag(value: str) -> bool:
    return value.strip().lower() not in ("", "0", "false", "no", "off")


def _integer(minimum: int) -> Callable[[str], int]:
    def parse(value: str) -> int:
        try:
            number = int(value.strip())
        except ValueError:
            number = None
        if number is None or number < minimum:
            raise ValueError(f"must be an integer of at least {minimum}")
        return number

    return parse


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        text = value.strip().lower()
        if text not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return text

    return parse


def _port(value: str) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        number = None
    if number is None or not 0 < number < 65536:
        raise ValueError("must be a port number from 1 to 65535")
    return number


class Setting(msgspec.Struct, frozen=True):
    """One environment variable.

    Attributes:
        name: the variable, e.g. ``ECEB_BROKER_URL``.
        field: the :class:`Settings` field it sets.
        default: its value when unset (``None``: none).
        meaning: what it is for (the docs table's text).
        parse: turns its text into the value; raises ValueError saying why
            not, never repeating the text.
    """

    name: str
    field: str
    default: Any
    meaning: str
    parse: Callable[[str], Any] = _text


SETTINGS: Final[tuple[Setting, ...]] = (
    Setting(
        "ECEB_S3_ENDPOINT_URL",
        "s3_endpoint_url",
        None,
        "S3-compatible endpoint for s3:// inputs, corpora and reports (MinIO, Ceph, ...); none for AWS",
    ),
    Setting(
        "ECEB_S3_CHECKSUMS",
        "s3_checksums",
        "when_required",
        "when S3 requests carry flexible checksums (botocore's request_checksum_calculation and "
        "response_checksum_validation): when_required, as stores that refuse them need "
        "(eceb checks BLAKE3 digests itself), or when_supported",
        _choice("when_required", "when_supported"),
    ),
    Setting("ECEB_BROKER_URL", "broker_url", "redis://127.0.0.1:6379/0", "Celery broker URL (redis:// or rediss://)"),
    Setting(
        "ECEB_RESULT_BACKEND",
        "result_backend",
        None,
        "Celery result backend and job state, a Redis URL (default: the broker)",
    ),
    Setting(
        "ECEB_REDIS_CA_CERTS",
        "redis_ca_certs",
        None,
        "PEM file of the certificate authorities that sign a TLS Redis server's certificate (rediss:// URLs)",
    ),
    Setting(
        "ECEB_VISIBILITY_TIMEOUT",
        "visibility_timeout_s",
        3600,
        "seconds a delivered, unacknowledged task may run before the broker hands it to another worker; "
        "keep it above the longest shard",
        _integer(1),
    ),
    Setting(
        "ECEB_MAX_TASKS_PER_CHILD",
        "max_tasks_per_child",
        1000,
        "tasks a worker process runs before it is replaced",
        _integer(1),
    ),
    Setting(
        "ECEB_TASK_MAX_RETRIES",
        "task_max_retries",
        3,
        "retries of a cluster task whose storage failed as a whole (exponential back-off with jitter, up to 60 s)",
        _integer(0),
    ),
    Setting(
        "ECEB_MAX_DELIVERIES",
        "max_deliveries",
        3,
        "starts of one attempt of a task whose worker process died while running it, before it fails",
        _integer(1),
    ),
    Setting(
        "ECEB_LEASE_S",
        "lease_s",
        20,
        "seconds a running step's lease lasts after its last renewal; a step whose lease lapses (its process "
        "killed, or frozen) is published again",
        _integer(2),
    ),
    Setting(
        "ECEB_HEARTBEAT_S",
        "heartbeat_s",
        5,
        "seconds between two renewals of a running step's lease, and between two of a worker's signs of life; "
        "less than ECEB_LEASE_S",
        _integer(1),
    ),
    Setting(
        "ECEB_WATCH_S",
        "watch_s",
        10,
        "seconds between two looks over the jobs in flight (by one worker at a time) for a step to publish again",
        _integer(1),
    ),
    Setting(
        "ECEB_UNTAKEN_S",
        "untaken_s",
        30,
        "seconds after which a step that was published, that no worker started and that no longer waits in "
        "the queue (lost with a worker, or by Redis) is published again",
        _integer(1),
    ),
    Setting(
        "ECEB_REDIS_OUTAGE_S",
        "redis_outage_s",
        60,
        "seconds a lost connection to Redis (broker or result backend) is tried again, by workers and "
        "eceb-dist, before the step or command fails (exit 5)",
        _integer(1),
    ),
    Setting(
        "ECEB_LOG_FORMAT",
        "log_format",
        "text",
        "what a worker's log lines look like: text, or json (one JSON object a line); each line about a job "
        "names the job and the shard",
        _choice("text", "json"),
    ),
    Setting(
        "ECEB_METRICS_PORT",
        "metrics_port",
        None,
        "TCP port on which a worker serves Prometheus metrics (/metrics); none: no metrics",
        _port,
    ),
    Setting(
        "ECEB_METRICS_ADDRESS",
        "metrics_address",
        "0.0.0.0",  # noqa: S104 - a pod's metrics are scraped from outside it
        "address a worker's metrics server listens on (ECEB_METRICS_PORT)",
    ),
    Setting("ECEB_DEBUG", "debug", False, "print the traceback of an internal error (exit 70)", _flag),
    Setting(
        "ECEB_PAIR_PROVIDER",
        "pair_provider",
        None,
        "the provider executable eceb pair freeze freezes instead of the benchmark's provider.executable "
        "(a name looked up on PATH, or a path relative to the working directory)",
    ),
)
"""Every environment variable eceb reads."""


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """The settings in force (see :data:`SETTINGS` for each field's variable and meaning)."""

    s3_endpoint_url: str | None
    s3_checksums: str
    broker_url: str
    result_backend: str | None
    redis_ca_certs: str | None
    visibility_timeout_s: int
    max_tasks_per_child: int
    task_max_retries: int
    max_deliveries: int
    lease_s: int
    heartbeat_s: int
    watch_s: int
    untaken_s: int
    redis_outage_s: int
    log_format: str
    metrics_port: int | None
    metrics_address: str
    debug: bool
    pair_provider: str | None


def load_settings(environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """The settings from ``environ`` (by default the process's environment),
    with ``overrides`` (by field name; ``None`` leaves the variable's value)
    in their place. An override is checked as the variable's text would be.

    Raises ValueError naming the variable, never repeating its value (it
    may be a password given to the wrong variable), for a value that does
    not parse.
    """
    return Settings(**{s.field: _value(s, environ, overrides.get(s.field)) for s in SETTINGS})


def read_setting(field: str, environ: Mapping[str, str] | None = None) -> Any:
    """One setting (by its :class:`Settings` field name), as :func:`load_settings`
    reads it; raises ValueError as it does, and KeyError for an unknown field."""
    setting = next((s for s in SETTINGS if s.field == field), None)
    if setting is None:
        raise KeyError(field)
    return _value(setting, environ, None)


def _value(setting: Setting, environ: Mapping[str, str] | None, given: Any) -> Any:
    source = os.environ if environ is None else environ
    text = source.get(setting.name, "") if given is None else str(given)
    if given is None and not text.strip():
        return setting.default
    try:
        return setting.parse(text)
    except ValueError as exc:
        raise ValueError(f"{setting.name} {exc}") from None
