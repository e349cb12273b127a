"""Reading a registry object as a stream and by byte ranges, pinned to one
version, against the loopback S3 server (what the distributed coordinator
and its re-hash shards do instead of downloading the registry whole)."""

from __future__ import annotations

import operator
import random

import pytest

from eceb_worker.corpus.checked_lines import registry_range_artifacts
from eceb_worker.errors import InputError, StorageError
from eceb_worker.io.locations import Locator
from eceb_worker.io.objects import ObjectStore
from eceb_worker.pipeline.inputs import check_inputs
from tests.support.paths import REPO
from tests.support.relays import CuttingRelay
from tests.support.s3_server import S3Server

SEED = REPO / "examples" / "enterprise-seed"
BODY = bytes(random.Random(0).randbytes(3 * 1024 * 1024 + 17))


def put(s3_server: S3Server, bucket: str, key: str, body: bytes) -> str:
    s3_server.client().put_object(Bucket=bucket, Key=key, Body=body)
    return f"s3://{bucket}/{key}"


def test_stream_and_ranges_of_one_version(s3_server: S3Server, s3_bucket: str) -> None:
    url = put(s3_server, s3_bucket, "registry.jsonl", BODY)
    store = ObjectStore(s3_server.endpoint_url)
    stream, etag = store.open(url, buffer_bytes=64 * 1024)
    with stream:
        parts = []
        while chunk := stream.read(100_000):
            parts.append(chunk)
    assert b"".join(parts) == BODY
    assert store.get(url)[1] == etag
    assert store.get_range(url, 0, 1, etag=etag) == BODY[:1]
    assert store.get_range(url, 1000, 2_000_017, etag=etag) == BODY[1000:2_000_017]
    assert store.get_range(url, len(BODY) - 3, len(BODY)) == BODY[-3:]
    with pytest.raises(StorageError, match="cannot read"):
        store.get_range(url, len(BODY), len(BODY) + 5)
    with pytest.raises(ValueError, match="not a byte range"):
        store.get_range(url, 5, 5)
    put(s3_server, s3_bucket, "registry.jsonl", BODY[::-1])
    for call in (lambda: store.open(url, etag=etag), lambda: store.get_range(url, 0, 10, etag=etag)):
        with pytest.raises(InputError, match="changed while the job ran"):
            call()
    missing = f"s3://{s3_bucket}/no-such-registry.jsonl"
    for call in (lambda: store.open(missing), lambda: store.get_range(missing, 0, 1)):
        with pytest.raises(InputError, match="cannot read: no such object"):
            call()


def test_a_broken_stream_resumes_where_it_stopped(s3_server: S3Server, s3_bucket: str) -> None:
    url = put(s3_server, s3_bucket, "big registry.jsonl", BODY)
    with CuttingRelay(s3_server.endpoint_url, cuts=3, after=700_000) as relay:
        stream, _ = ObjectStore(relay.endpoint_url).open(url)
        with stream:
            assert stream.read() == BODY
        assert relay.connections == 4
        ranges = [path for method, path in relay.requests if method == "GET"]
        assert len(ranges) == 4
    with CuttingRelay(s3_server.endpoint_url, cuts=4, after=700_000) as relay:
        stream, _ = ObjectStore(relay.endpoint_url).open(url)
        with stream, pytest.raises(StorageError, match=r"big registry\.jsonl"):
            stream.read()


def test_a_reader_pins_the_version_it_first_opened(s3_server: S3Server, s3_bucket: str) -> None:
    url = put(s3_server, s3_bucket, "registry.jsonl", BODY)
    location = Locator(s3_server.endpoint_url).locate(url)
    assert next(iter(location.chunks()))[:10] == BODY[:10]
    assert location.read_range(10, 20) == BODY[10:20]
    put(s3_server, s3_bucket, "registry.jsonl", BODY[::-1])
    with pytest.raises(InputError, match="changed while the job ran"):
        next(iter(location.chunks()))
    with pytest.raises(InputError, match="changed while the job ran"):
        location.read_range(0, 10)


@pytest.mark.parametrize("order", ["as written", "shuffled"])
def test_scanning_a_registry_object_agrees_with_loading_it(s3_server: S3Server, s3_bucket: str, order: str) -> None:
    registry = (SEED / "registry.jsonl").read_bytes()
    if order == "shuffled":
        header, *lines = registry.splitlines()
        random.Random(1).shuffle(lines)
        registry = b"\n".join([header, *lines]) + b"\n"
    for name in ("benchmark.json", "run.json"):
        put(s3_server, s3_bucket, f"seed/{name}", (SEED / name).read_bytes())
    put(s3_server, s3_bucket, "seed/registry.jsonl", registry)
    benchmark, run = f"s3://{s3_bucket}/seed/benchmark.json", f"s3://{s3_bucket}/seed/run.json"
    loaded = check_inputs(benchmark, run, Locator(s3_server.endpoint_url))
    reader = Locator(s3_server.endpoint_url)
    scanned = check_inputs(benchmark, run, reader, keep=frozenset(), shard_bytes=40_000)
    assert scanned.corpus_root == loaded.corpus_root
    assert scanned.registry.in_root_order == (order == "as written")
    assert scanned.registry_location == f"s3://{s3_bucket}/seed/registry.jsonl"
    assert set(reader.etags) == {benchmark, run, scanned.registry_location}
    decoded = []
    for shard in scanned.registry.shards:
        data = reader.locate(scanned.registry_location).read_range(shard.byte_start, shard.byte_end)
        decoded += registry_range_artifacts(data, shard, name="r")
    fields = operator.attrgetter("artifact_id", "path", "source_digest", "size_bytes")
    assert sorted(map(fields, decoded)) == sorted(map(fields, loaded.registry.artifacts))
