"""A distributed job against an S3-compatible store that refuses flexible
checksums (400 InvalidArgument to any ``x-amz-checksum-*`` header or
``aws-chunked`` body): submitting, the workers' reads and the report's
atomic write all go through it, and the report is the one ``eceb evaluate``
writes."""

from __future__ import annotations

import uuid
from pathlib import Path

from eceb_cli import exit_codes
from tests.support.dist_support import WAIT_S, dist, embedded_report, submit, upload_seed
from tests.support.redis_server import RedisServer, celery_workers
from tests.support.relays import ChecksumRefusingRelay
from tests.support.s3_server import S3Server


def test_a_job_reads_and_writes_a_store_that_refuses_checksums(
    redis_server: RedisServer, s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    expected = embedded_report(tmp_path)
    upload_seed(s3_server, s3_bucket, "seed")
    out = f"s3://{s3_bucket}/reports/{uuid.uuid4().hex}/report.json"
    with (
        celery_workers(redis_server.url(), 1, tmp_path / "workers") as workers,
        ChecksumRefusingRelay(s3_server.endpoint_url) as relay,
    ):
        job_id = submit(redis_server, s3_server, f"s3://{s3_bucket}/seed", out, "--endpoint-url", relay.endpoint_url)
        waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
        assert waited.returncode == exit_codes.TASKS_FAILED, waited.stderr + workers.logs()[-4000:]
        assert relay.refused == []
        writes = [path for method, path in relay.requests if method == "PUT" and "/reports/" in path]
        assert writes, relay.requests
    stored = s3_server.client().get_object(Bucket=s3_bucket, Key=out.split("/", 3)[3])["Body"].read()
    assert stored == expected
