"""What is read or run again, and what never is: a digest that differs from
the registry's is read again before it is reported (eceb_worker/corpus/verification.py),
a bucket that does not exist is final (eceb_worker/io/s3.py, eceb_worker/cluster/retry.py),
and the checksum setting that decides what botocore sends (eceb_worker/settings.py)."""

from __future__ import annotations

from collections.abc import Sequence

import botocore.exceptions
import pytest

from eceb_worker.cluster.retry import RetryPolicy
from eceb_worker.core.digests import CHECK_READS, digest_bytes
from eceb_worker.corpus.verification import HashResult, confirm_mismatches, shard_verification
from eceb_worker.errors import ArtifactMissing, ArtifactUnreadable, NoSuchBucketError, OutputError, StorageError
from eceb_worker.io.s3 import Role, make_s3_client, s3_error
from eceb_worker.settings import load_settings, read_setting
from tests.support.helpers import artifact

REGISTERED = b"registered bytes"
ARTIFACTS = [artifact("a", content=REGISTERED), artifact("b", content=REGISTERED), artifact("c", content=REGISTERED)]


def found(data: bytes) -> HashResult:
    return len(data), digest_bytes(data)


class Storage:
    """Answers each path's reads from a script, one entry a read; records the reads."""

    def __init__(self, script: dict[str, list[HashResult]]) -> None:
        self.script = script
        self.reads: list[str] = []

    def hash_artifacts(self, paths: Sequence[str], observer: object = None) -> list[HashResult]:
        self.reads += paths
        return [self.script[path].pop(0) for path in paths]


def confirm(script: dict[str, list[HashResult]]) -> tuple[list[HashResult], list[str]]:
    storage = Storage(script)
    first = storage.hash_artifacts([a.path for a in ARTIFACTS])
    return confirm_mismatches(ARTIFACTS, first, storage.hash_artifacts), storage.reads[len(ARTIFACTS) :]


def test_a_mismatch_is_stale_only_once_two_reads_agree() -> None:
    changed, garbled, garbled_again = found(b"changed bytes"), found(b"garbled once"), found(b"garbled twice")
    results, again = confirm(
        {
            "a": [found(REGISTERED)],  # verifies: never read again
            "b": [changed, changed],  # the store holds other bytes
            "c": [garbled, found(REGISTERED)],  # corrupted once on its way
        }
    )
    assert results == [found(REGISTERED), changed, found(REGISTERED)]
    assert again == ["b", "c"]
    assert [f.status for f in shard_verification(ARTIFACTS, results).findings] == ["stale"]

    results, again = confirm(
        {
            "a": [garbled, garbled_again, garbled],
            "b": [changed, garbled, changed],
            "c": [garbled, ArtifactMissing("c", "gone")],
        }
    )
    assert results[:2] == [garbled, changed]
    assert isinstance(results[2], ArtifactMissing)
    assert again == ["a", "b", "c", "a", "b"]


def test_bytes_that_never_agree_are_unreadable_after_the_bound() -> None:
    reads = [found(f"garbled {i}".encode()) for i in range(CHECK_READS)]
    results, again = confirm({"a": list(reads), "b": [found(REGISTERED)], "c": [found(REGISTERED)]})
    assert again == ["a"] * (CHECK_READS - 1)
    [unreadable] = [r for r in results if not isinstance(r, tuple)]
    assert isinstance(unreadable, ArtifactUnreadable)
    assert str(unreadable) == f"a: its bytes differed on each of {CHECK_READS} reads (corrupted in transit?)"
    [finding] = shard_verification(ARTIFACTS, results).findings
    assert (finding.status, finding.observed_digest, finding.detail) == ("unreadable", None, unreadable.detail)


def no_such_bucket() -> botocore.exceptions.ClientError:
    return botocore.exceptions.ClientError(
        {"Error": {"Code": "NoSuchBucket", "Message": "The specified bucket does not exist"}}, "GetObject"
    )


def test_a_missing_bucket_is_final_for_every_role_and_never_retried() -> None:
    policy = RetryPolicy(max_retries=3)
    for role in (Role.ARTIFACT, Role.READING, Role.LISTING):
        error = s3_error(no_such_bucket(), role, "s3://gone/x", "a.txt")
        assert isinstance(error, NoSuchBucketError), role
        assert not policy.retries(error, 0), role
    assert str(s3_error(no_such_bucket(), Role.READING, "s3://gone/x")) == "s3://gone/x: no such bucket"
    assert str(s3_error(no_such_bucket(), Role.LISTING, "s3://gone/x")) == "s3://gone/x: cannot list (NoSuchBucket)"
    assert isinstance(s3_error(no_such_bucket(), Role.WRITING, "s3://gone/x"), OutputError)
    assert policy.retries(StorageError("s3://b/x: cannot reach the endpoint (ConnectionError)"), 0)


def test_checksums_are_sent_only_when_required_unless_set() -> None:
    assert load_settings({}).s3_checksums == "when_required"
    assert read_setting("s3_checksums", {"ECEB_S3_CHECKSUMS": " When_Supported "}) == "when_supported"
    with pytest.raises(ValueError, match=r"^ECEB_S3_CHECKSUMS must be one of when_required, when_supported$"):
        read_setting("s3_checksums", {"ECEB_S3_CHECKSUMS": "x"})
    for mode in ("when_required", "when_supported"):
        config = make_s3_client("http://127.0.0.1:9", checksums=mode).meta.config
        assert (config.request_checksum_calculation, config.response_checksum_validation) == (mode, mode)
    with pytest.raises(ValueError, match="checksum mode"):
        make_s3_client("http://127.0.0.1:9", checksums="always")
