"""Listing an S3 corpus by key ranges (:mod:`eceb_worker.io.s3_listing`),
through the real client against the loopback S3 server: the ranges of a
plan list every object once, as the one listing ``eceb corpus register``
makes lists them (keys URL-encoded on the wire, decoded by botocore), and a
job's partials are written and deleted under their prefix only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eceb_worker.corpus.registration import ListingPlanner
from eceb_worker.errors import NoSuchBucketError
from eceb_worker.io.s3 import make_s3_client
from eceb_worker.io.s3_corpus import S3Storage
from eceb_worker.io.s3_listing import delete_under, list_level, list_range, plan_listing, write_partial
from tests.support.s3_server import S3Server

KEYS = (
    "root.md",
    "a",
    "a b",
    "a b/x.md",
    "a!/y.md",
    "a+c.md",
    "a%20d.md",
    "100% sure.md",
    "é/ü.md",
    "日本/語 テキスト.md",
    "emoji/🙂.md",
    "docs/one.md",
    "docs/two/three.md",
    "deep/1/2/3/4.md",
    "deep/1/x.md",
    *(f"flat/{index:02d} f.md" for index in range(13)),
    *(f"wide/{index:02d}/f.md" for index in range(9)),
    "markers/",
)


@pytest.fixture
def corpus(s3_server: S3Server, s3_bucket: str) -> str:
    client = s3_server.client()
    for key in KEYS:
        client.put_object(Bucket=s3_bucket, Key=f"corpus/{key}", Body=key.encode())
    client.put_object(Bucket=s3_bucket, Key="corpus-beside/x.md", Body=b"x")
    return s3_bucket


def _client(s3_server: S3Server) -> Any:
    return make_s3_client(s3_server.endpoint_url)


@pytest.mark.parametrize(
    ("page_keys", "max_entries", "target", "limit"),
    [(1000, 10_000, 64, 255), (2, 5, 3, 6), (3, 100, 100, 4), (1, 1, 1, 1)],
    ids=["defaults", "small-pages", "thinned", "one-cut"],
)
def test_the_ranges_of_a_plan_list_every_object_once_as_the_one_listing_does(
    s3_server: S3Server, corpus: str, page_keys: int, max_entries: int, target: int, limit: int
) -> None:
    client = _client(s3_server)
    planner = ListingPlanner(target=target, limit=limit)
    shards = plan_listing(
        client, corpus, "corpus/", where="s3://b/corpus", planner=planner, page_keys=page_keys, max_entries=max_entries
    )
    assert 1 < len(shards) <= limit + 1 or limit == 1
    listed = [
        entry
        for shard in shards
        for entry in list_range(client, corpus, "corpus/", shard, where="s3://b/corpus", page_keys=page_keys)
    ]
    whole = list(S3Storage(f"s3://{corpus}/corpus", endpoint_url=s3_server.endpoint_url).list_entries())
    assert listed == whole
    assert [entry.path for entry in listed] == sorted(key for key in KEYS if not key.endswith("/"))
    assert all(entry.etag and entry.last_modified is not None for entry in listed)


def test_keys_travel_url_encoded_and_come_back_as_written(s3_server: S3Server, corpus: str) -> None:
    client = _client(s3_server)
    sent: list[str] = []
    raw: list[bytes] = []
    client.meta.events.register("before-send.s3.ListObjectsV2", lambda request, **_: sent.append(request.url))
    client.meta.events.register(
        "after-call.s3.ListObjectsV2", lambda http_response, **_: raw.append(http_response.content)
    )
    level = list_level(client, corpus, "corpus/", where="s3://b/corpus")
    assert "corpus/a b/" in level.prefixes and "corpus/日本/" in level.prefixes
    shards = plan_listing(client, corpus, "corpus/", where="s3://b/corpus")
    paths = {entry.path for shard in shards for entry in list_range(client, corpus, "corpus/", shard, where="w")}
    assert {"a b", "a+c.md", "a%20d.md", "100% sure.md", "日本/語 テキスト.md", "emoji/🙂.md"} <= paths
    assert all("encoding-type=url" in url for url in sent)
    body = b"".join(raw)
    assert b"corpus/a%2Bc.md" in body and b"corpus/a%2520d.md" in body and b"100%25%20sure.md" in body


def test_a_missing_bucket_cannot_be_listed(s3_server: S3Server) -> None:
    with pytest.raises(NoSuchBucketError, match="NoSuchBucket"):
        plan_listing(
            _client(s3_server), "no-such-bucket-listing", "corpus/", where="s3://no-such-bucket-listing/corpus"
        )


def test_partials_are_written_and_deleted_under_their_prefix_only(
    s3_server: S3Server, corpus: str, tmp_path: Path
) -> None:
    client = _client(s3_server)
    local = tmp_path / "rows.jsonl"
    local.write_bytes(b"rows\n")
    write_partial(client, f"s3://{corpus}/out/.r.jsonl.parts/job/list-000000-a.jsonl", local)
    write_partial(client, f"s3://{corpus}/out/.r.jsonl.parts/job/hash-000000-b.jsonl", b"lines\n")
    write_partial(client, f"s3://{corpus}/out/.r.jsonl.parts/other/hash-000000-c.jsonl", b"kept\n")
    assert delete_under(client, corpus, "out/.r.jsonl.parts/job/", where="w") == 2
    left = [item["Key"] for item in client.list_objects_v2(Bucket=corpus, Prefix="out/")["Contents"]]
    assert left == ["out/.r.jsonl.parts/other/hash-000000-c.jsonl"]
    with pytest.raises(ValueError, match="not a prefix"):
        delete_under(client, corpus, "out", where="w")
