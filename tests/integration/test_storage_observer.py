"""What S3 storage tells its observer (eceb_worker/io/observers.py), with
faults put on the wire by a loopback relay in front of the S3 server: every
request attempt by operation, botocore's retries, throttling answers, a
body resumed after its connection broke."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator

import pytest

from eceb_worker.io.objects import ObjectStore
from eceb_worker.io.observers import RetryKind, observe_storage, storage_observer
from tests.support.relays import CuttingRelay, RefusingRelay
from tests.support.s3_server import S3Server


class Recorder:
    """A storage observer that keeps what it is told."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.retries: Counter[RetryKind] = Counter()
        self.throttles = 0

    def request(self, operation: str) -> None:
        self.requests[operation] += 1

    def retried(self, kind: RetryKind) -> None:
        self.retries[kind] += 1

    def throttled(self) -> None:
        self.throttles += 1


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    recording = Recorder()
    observe_storage(recording)
    try:
        yield recording
    finally:
        observe_storage(None)


def test_nothing_is_observed_by_default() -> None:
    observer = storage_observer()
    observer.request("GetObject")
    observer.retried(RetryKind.REQUEST)
    observer.throttled()  # and nothing happens


def test_requests_retries_and_throttling_are_told(recorder: Recorder, s3_server: S3Server, s3_bucket: str) -> None:
    s3_server.client().put_object(Bucket=s3_bucket, Key="input.json", Body=b"{}")
    with RefusingRelay(s3_server.endpoint_url, refusals=2, how="slowdown") as relay:
        data, _ = ObjectStore(relay.endpoint_url).get(f"s3://{s3_bucket}/input.json")
    assert data == b"{}"
    assert recorder.requests == Counter({"GetObject": 3})
    assert recorder.retries == Counter({RetryKind.REQUEST: 2})
    assert recorder.throttles == 2


def test_a_server_error_is_a_retry_but_no_throttling(recorder: Recorder, s3_server: S3Server, s3_bucket: str) -> None:
    s3_server.client().put_object(Bucket=s3_bucket, Key="input.json", Body=b"{}")
    with RefusingRelay(s3_server.endpoint_url, refusals=1, how="internal") as relay:
        store = ObjectStore(relay.endpoint_url)
        assert store.exists(f"s3://{s3_bucket}/input.json")
    assert recorder.requests == Counter({"HeadObject": 2})
    assert recorder.retries == Counter({RetryKind.REQUEST: 1})
    assert recorder.throttles == 0


def test_a_body_broken_off_is_resumed_and_told(recorder: Recorder, s3_server: S3Server, s3_bucket: str) -> None:
    body = os.urandom(1 << 20)
    s3_server.client().put_object(Bucket=s3_bucket, Key="big.bin", Body=body)
    with CuttingRelay(s3_server.endpoint_url, cuts=1, after=64 * 1024) as relay:
        data, _ = ObjectStore(relay.endpoint_url).get(f"s3://{s3_bucket}/big.bin")
    assert data == body
    assert recorder.requests == Counter({"GetObject": 2})
    assert recorder.retries == Counter({RetryKind.RESUME: 1})
