"""Credentials removed from URLs and texts before they are shown."""

from __future__ import annotations

from eceb_worker.core.redaction import redact_url, scrub


def test_redact_url() -> None:
    assert redact_url("redis://:pw@127.0.0.1:6379/0") == "redis://:***@127.0.0.1:6379/0"
    assert redact_url("redis://user:pw@127.0.0.1/0") == "redis://user:***@127.0.0.1/0"
    assert redact_url("rediss://token@127.0.0.1/0") == "rediss://***@127.0.0.1/0"
    assert redact_url("redis://127.0.0.1/0?password=pw&db=2") == "redis://127.0.0.1/0?password=***&db=2"
    assert redact_url("redis://:a@h1/0;redis://:b@h2/0") == "redis://:***@h1/0;redis://:***@h2/0"
    assert redact_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


def test_scrub_removes_every_form_of_a_password() -> None:
    url = "redis://:p%40ss@127.0.0.1:6379/0"
    text = f"cannot connect to {url}: AUTH p@ss refused (p%40ss)"
    assert scrub(text, [url, None]) == "cannot connect to redis://:***@127.0.0.1:6379/0: AUTH *** refused (***)"
