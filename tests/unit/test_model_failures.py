"""The one classification of failed model calls (eceb_worker/io/models/failures.py):
statuses, Retry-After, timeouts and connection errors."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx2
import pytest

from eceb_worker.io.models.failures import (
    connection_failure,
    error_kind,
    retry_after_s,
    status_failure,
    timeout_failure,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("status", "transient", "maybe_billed", "fatal"),
    [
        (400, False, False, False),
        (401, False, False, True),
        (403, False, False, True),
        (404, False, False, False),
        (408, True, False, False),
        (409, True, False, False),
        (413, False, False, False),
        (422, False, False, False),
        (429, True, False, False),
        (500, True, True, False),
        (502, True, True, False),
        (503, True, True, False),
        (529, True, True, False),
    ],
)
def test_status_classification(status: int, transient: bool, maybe_billed: bool, fatal: bool) -> None:
    error = status_failure(party="openai", api="openai-chat", status=status, kind="x_error", headers={}, now=NOW)
    assert (error.transient, error.maybe_billed, error.fatal, error.status) == (transient, maybe_billed, fatal, status)
    assert error.party == "openai"
    assert str(error).startswith(f"openai (openai-chat) answered HTTP {status} (x_error)")


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"Retry-After": "2"}, 2.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"Retry-After": "2", "retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "nonsense", "Retry-After": "3"}, 3.0),
        ({"Retry-After": "Thu, 01 Jan 2026 00:00:30 GMT"}, 30.0),
        ({"Retry-After": "Wed, 31 Dec 2025 23:59:00 GMT"}, 0.0),
        ({"Retry-After": "-4"}, None),
        ({"Retry-After": "inf"}, None),
        ({"Retry-After": "soon"}, None),
    ],
)
def test_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_s(headers, NOW) == expected
    error = status_failure(party="p", api="a", status=429, kind="", headers=headers, now=NOW)
    assert error.retry_after_s == expected


def test_error_kind_keeps_identifiers_only() -> None:
    assert error_kind("invalid_request_error", "invalid_api_key") == "invalid_request_error/invalid_api_key"
    assert error_kind("rate_limit_error", None, "rate_limit_error") == "rate_limit_error"
    assert error_kind("Incorrect API key provided: sk-pl***1234", {"nested": 1}, "x" * 65) == ""


def test_timeouts_are_transient_and_billed_unless_nothing_was_sent() -> None:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    read = timeout_failure(party="p", api="a", timeout_s=30, cause=httpx2.ReadTimeout("t", request=request))
    assert (read.transient, read.maybe_billed, read.status, read.fatal) == (True, True, None, False)
    assert str(read) == "p (a): no answer within 30 s (ReadTimeout)"
    for cause in (httpx2.ConnectTimeout("t", request=request), httpx2.PoolTimeout("t", request=request)):
        error = timeout_failure(party="p", api="a", timeout_s=1.5, cause=cause)
        assert (error.transient, error.maybe_billed) == (True, False)
    assert timeout_failure(party="p", api="a", timeout_s=1, cause=None).maybe_billed


def test_connection_errors_are_billed_only_once_the_request_may_have_left() -> None:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/messages")
    lost = connection_failure(party="p", api="a", cause=httpx2.RemoteProtocolError("gone", request=request))
    assert (lost.transient, lost.maybe_billed) == (True, True)
    assert "lost before the answer (RemoteProtocolError)" in str(lost)
    refused = connection_failure(party="p", api="a", cause=httpx2.ConnectError("refused", request=request))
    assert (refused.transient, refused.maybe_billed) == (True, False)
    assert "could not send the request (ConnectError)" in str(refused)
