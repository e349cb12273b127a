"""Credentials removed from URLs and texts before they are shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from eceb_worker.core.urls import (
    check_location,
    object_sibling,
    parse_s3_url,
    redact_url,
    s3_location,
    scrub,
    shown_url,
)
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.io.storage import open_storage


def test_redact_url() -> None:
    assert redact_url("redis://:pw@127.0.0.1:6379/0") == "redis://***@127.0.0.1:6379/0"
    assert redact_url("redis://user:pw@127.0.0.1/0") == "redis://***@127.0.0.1/0"
    assert redact_url("rediss://token@127.0.0.1/0") == "rediss://***@127.0.0.1/0"
    assert redact_url("redis://127.0.0.1/0?password=pw&db=2") == "redis://127.0.0.1/0?password=***&db=2"
    assert redact_url("redis://:a@h1/0;redis://:b@h2/0") == "redis://***@h1/0;redis://***@h2/0"
    assert redact_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


def test_scrub_removes_every_form_of_a_password() -> None:
    url = "redis://:p%40ss@127.0.0.1:6379/0"
    text = f"cannot connect to {url}: AUTH p@ss refused (p%40ss)"
    assert scrub(text, [url, None]) == "cannot connect to redis://***@127.0.0.1:6379/0: AUTH *** refused (***)"


@pytest.mark.parametrize(
    "source", ["s3://bucket", "s3://bucket/", "s3://bucket/corpus", "s3://bucket/a/b/", "data/corpus", "corpus"]
)
def test_a_corpus_is_named_without_opening_it_as_its_adapter_names_it(source: str, tmp_path: Path) -> None:
    """The reduce steps name the corpus in the report from its spec alone."""
    spec = StorageSpec(source=source if source.startswith("s3://") else str(tmp_path / source))
    if not spec.is_s3:
        Path(spec.source).mkdir(parents=True)
    assert spec.location == open_storage(spec).location


def test_s3_names() -> None:
    assert s3_location("s3://b/p/q/") == "s3://b/p/q"
    assert object_sibling("s3://b/a/benchmark.json", "registry.jsonl") == "s3://b/a/registry.jsonl"
    with pytest.raises(ValueError, match="credentials"):
        parse_s3_url("s3://key:secret@bucket/p")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("s3://KEY:SECRET@bucket/b.json", "s3://***@bucket/b.json"),
        ("s3://KEY@bucket/b.json", "s3://***@bucket/b.json"),
        ("s3://bucket/b.json?X-Amz-Signature=SECRET", "s3://bucket/b.json"),
        ("s3://bucket/b.json#SECRET", "s3://bucket/b.json"),
        ("https://KEY:SECRET@host/b.json", "https://***@host/b.json"),
    ],
)
def test_credentials_in_any_url_are_refused_and_never_shown(value: str, shown: str) -> None:
    with pytest.raises(ValueError, match="takes no credentials") as caught:
        check_location(value)
    assert str(caught.value).endswith(f": {shown}")
    assert "KEY" not in str(caught.value) and "SECRET" not in str(caught.value)
    with pytest.raises(ValueError, match="takes no credentials"):
        parse_s3_url(value)


def test_locations_are_local_paths_or_s3_urls() -> None:
    check_location("relative/benchmark.json")
    check_location("/abs/path:with@odd?chars#.json")
    check_location("s3://bucket/key.json")
    with pytest.raises(ValueError, match=r"not a local path or an s3://bucket/\.\.\. URL: https://host/x"):
        check_location("https://host/x")
    with pytest.raises(ValueError, match=r"not a local path \(this command reads local files\): s3://bucket/x"):
        check_location("s3://bucket/x", s3=False)


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        ("s3:///KEY:SECRET@bucket/b.json", "s3:///***@bucket/b.json"),
        ("s3:////SECRET@x", "s3:////***@x"),
        ("S3:///SECRET@x", "S3:///***@x"),
        ("HTTPS://KEY:SECRET@host/x", "HTTPS://***@host/x"),
        ("s3://KEY:SEC/RET@bucket/b.json", "s3://***@bucket/b.json"),
        ("redis://:pa#SECRET@127.0.0.1/0", "redis://***@127.0.0.1/0"),
        ("redis://:pa?SECRET@127.0.0.1/0", "redis://***@127.0.0.1/0"),
        ("redis://KEY:SECRET/0", "redis://***/0"),
        ("s3://bucket:SECRET/x", "s3://***/x"),
        ("s3://b%40SECRET/x", "s3://***/x"),
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://[::1]:6379/0", "redis://[::1]:6379/0"),
        ("s3://bucket/key@version.json", "s3://bucket/key@version.json"),
        ("s3:/KEY:SECRET@bucket/x", "s3:/***@bucket/x"),
        ("s3:KEY:SECRET/x", "s3:***"),
    ],
)
def test_redaction_of_malformed_urls(url: str, redacted: str) -> None:
    """Whatever could be user information is redacted, however many slashes
    follow the scheme and whatever its case: everything up to the last ``@``,
    an authority whose "port" is no number (``user:password``), an s3://
    authority that is not a bucket name."""
    assert redact_url(url) == redacted
    assert "SECRET" not in shown_url(url)


@pytest.mark.parametrize(
    "value",
    [
        "s3:///KEY:SECRET@bucket/b.json",
        "s3:////SECRET@x",
        "S3:///SECRET@x",
        "s3:///SECRET@x/",
        "Https:///KEY:SECRET@host/x",
        "s3://KEY:SEC/RET@bucket/b.json",
        "s3://bucket:SECRET/x",
        "s3://b%40SECRET/x",
        "s3:/KEY:SECRET@bucket/x",
        "s3:KEY:SECRET/x",
        "S3:/SECRET@x",
        "redis:/:SECRET@127.0.0.1:6379/0",
    ],
)
def test_malformed_urls_are_refused_without_their_credentials(value: str) -> None:
    with pytest.raises(ValueError, match=r"credentials|not a local path|bucket name") as caught:
        check_location(value)
    assert "SECRET" not in str(caught.value) and "KEY" not in str(caught.value), caught.value


@pytest.mark.parametrize("bucket", ["b", "eceb-inputs", "my.bucket", "Legacy_Bucket", "a" * 255, "0-9"])
def test_bucket_names_botocore_accepts_are_accepted(bucket: str) -> None:
    assert parse_s3_url(f"s3://{bucket}/k") == (bucket, "k")


@pytest.mark.parametrize("bucket", ["bkt1:SECRET", "b%40SECRET", "b c", "bück", "b+c", "a" * 256, "b~c", "b!c", "b*c"])
def test_invalid_bucket_names_are_refused_without_being_shown(bucket: str) -> None:
    with pytest.raises(ValueError, match="not a valid S3 bucket name") as caught:
        parse_s3_url(f"s3://{bucket}/key.json")
    assert bucket not in str(caught.value)
    assert str(caught.value).endswith(": s3://***/key.json"), caught.value
