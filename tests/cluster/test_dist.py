"""``eceb-dist``: distributed evaluation on real Celery workers over a real
Redis, with inputs, corpus and report in a loopback S3 server.

The report a job writes must be byte for byte the one ``eceb evaluate``
writes from the same files, for any worker count and shard size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from eceb_cli import exit_codes
from eceb_worker.core.urls import object_sibling
from eceb_worker.errors import ErrorKind, InputError, OutputError
from eceb_worker.io.objects import ObjectStore
from eceb_worker.pipeline.messages import Stage
from tests.support.dist_support import SEED, WAIT_S, dist, embedded_report, submit, upload_seed
from tests.support.helpers import run_with_closed_reader
from tests.support.redis_server import CeleryWorkers, RedisServer
from tests.support.s3_server import S3Server, empty_bucket

TAMPERED = "policy/data-classification.md"


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> Iterator[str]:
    """A bucket holding the seed under ``seed/`` and a tampered copy under ``tampered/``."""
    client = s3_server.client()
    name = f"eceb-dist-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    upload_seed(s3_server, name, "seed")
    upload_seed(s3_server, name, "tampered")
    client.put_object(Bucket=name, Key=f"tampered/corpus/{TAMPERED}", Body=b"edited after registration\n")
    yield name
    empty_bucket(client, name)
    client.delete_bucket(Bucket=name)


@pytest.fixture(scope="module")
def expected_report(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return embedded_report(tmp_path_factory.mktemp("embedded"))


@pytest.mark.parametrize(
    ("shard_bytes", "shard_observations"),
    [("1", "1"), ("40000", "25"), ("1000000000", "1000000")],
    ids=["one-per-shard", "middle", "one-shard"],
)
def test_report_is_byte_identical_to_eceb_evaluate(
    redis_server: RedisServer,
    s3_server: S3Server,
    workers: CeleryWorkers,
    bucket: str,
    expected_report: bytes,
    tmp_path: Path,
    shard_bytes: str,
    shard_observations: str,
) -> None:
    out = f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json"
    job_id = submit(
        redis_server,
        s3_server,
        f"s3://{bucket}/seed",
        out,
        "--shard-bytes",
        shard_bytes,
        "--shard-observations",
        shard_observations,
    )
    waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
    assert waited.returncode == exit_codes.TASKS_FAILED, waited.stderr + workers.logs()[-3000:]
    assert f"8/15 tasks pass; report written to {out}" in waited.stdout
    local = tmp_path / "report.json"
    fetched = dist(redis_server, s3_server, "result", job_id, "-o", str(local))
    assert fetched.returncode == exit_codes.TASKS_FAILED, fetched.stderr
    assert local.read_bytes() == expected_report
    status = dist(redis_server, s3_server, "status", job_id)
    assert status.returncode == 0
    rehash_shards = 12 if shard_bytes == "1" else None
    assert ": done;" in status.stdout
    assert "failures 0" in status.stdout
    if rehash_shards is not None:
        assert "re-hash shards 12/12" in status.stdout
        assert "evaluation shards 15/15" in status.stdout
    if shard_bytes == "1000000000":
        assert "re-hash shards 1/1; evaluation shards 1/1" in status.stdout
    # Only the report is left under its prefix: the temporary object is gone.
    listed = s3_server.client().list_objects_v2(Bucket=bucket, Prefix=out.rsplit("/", 1)[0].split("/", 3)[3])
    assert [item["Key"] for item in listed["Contents"]] == [out.split("/", 3)[3]]


@pytest.mark.two_workers
def test_a_job_without_uncertainty_is_byte_identical_to_eceb_evaluate(
    redis_server: RedisServer, s3_server: S3Server, workers: CeleryWorkers, bucket: str, tmp_path: Path
) -> None:
    """``--uncertainty none`` reaches every shard and the reduce: the same
    bytes as ``eceb evaluate --uncertainty none``, which say it was not estimated."""
    expected = embedded_report(tmp_path / "embedded", SEED, None, "--uncertainty", "none")
    assert b'"uncertainty":{"confidence_bps":0,"method":"not_estimated"' in expected
    out = f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json"
    job_id = submit(
        redis_server, s3_server, f"s3://{bucket}/seed", out, "--shard-observations", "5", "--uncertainty", "none"
    )
    waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
    assert waited.returncode == exit_codes.TASKS_FAILED, waited.stderr + workers.logs()[-3000:]
    local = tmp_path / "report.json"
    assert dist(redis_server, s3_server, "result", job_id, "-o", str(local)).returncode == exit_codes.TASKS_FAILED
    assert local.read_bytes() == expected


@pytest.mark.two_workers
def test_tampered_corpus_fails_naming_the_artifact(
    redis_server: RedisServer, s3_server: S3Server, workers: CeleryWorkers, bucket: str
) -> None:
    out = f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json"
    job_id = submit(redis_server, s3_server, f"s3://{bucket}/tampered", out, "--shard-bytes", "1")
    waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
    assert waited.returncode == exit_codes.VERIFICATION_FAILED, waited.stderr
    assert f"STALE  {TAMPERED}" in waited.stderr
    assert "corpus verification failed: 1 of 12 artifacts do not match the registry" in waited.stderr
    assert "no report was written" in waited.stderr
    status = dist(redis_server, s3_server, "status", job_id)
    assert ": failed;" in status.stdout
    assert "verification error" in status.stdout
    result = dist(redis_server, s3_server, "result", job_id)
    assert result.returncode == exit_codes.VERIFICATION_FAILED
    assert not ObjectStore(s3_server.endpoint_url).exists(out)


@pytest.mark.two_workers
def test_missing_input_fails_as_bad_input(
    redis_server: RedisServer, s3_server: S3Server, workers: CeleryWorkers, bucket: str
) -> None:
    out = f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json"
    # Refused at submission, every missing input named.
    result = dist(
        redis_server,
        s3_server,
        "submit",
        f"s3://{bucket}/seed/no-such-benchmark.json",
        f"s3://{bucket}/seed/no-such-run.json",
        "--corpus",
        f"s3://{bucket}/seed/corpus",
        "--out",
        out,
    )
    assert result.returncode == exit_codes.BAD_INPUT, result.stderr
    assert f"s3://{bucket}/seed/no-such-benchmark.json: cannot read: no such object" in result.stderr
    assert f"s3://{bucket}/seed/no-such-run.json: cannot read: no such object" in result.stderr
    assert result.stdout == ""
    # The registry the benchmark names is only read by the job.
    client = s3_server.client()
    for name in ("benchmark.json", "run.json"):
        client.copy_object(
            Bucket=bucket, Key=f"no-registry/{name}", CopySource={"Bucket": bucket, "Key": f"seed/{name}"}
        )
    job_id = submit(redis_server, s3_server, f"s3://{bucket}/no-registry", out)
    waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
    assert waited.returncode == exit_codes.BAD_INPUT, waited.stderr
    assert f"s3://{bucket}/no-registry/registry.jsonl: cannot read: no such object" in waited.stderr
    assert not ObjectStore(s3_server.endpoint_url).exists(out)


def test_unwritable_output_is_refused_at_submission(
    redis_server: RedisServer, s3_server: S3Server, bucket: str
) -> None:
    result = dist(
        redis_server,
        s3_server,
        "submit",
        f"s3://{bucket}/seed/benchmark.json",
        f"s3://{bucket}/seed/run.json",
        "--corpus",
        f"s3://{bucket}/seed/corpus",
        "--out",
        "s3://eceb-no-such-bucket-for-reports/report.json",
    )
    assert result.returncode == exit_codes.OUTPUT, result.stderr
    assert "s3://eceb-no-such-bucket-for-reports/report.json: no such bucket" in result.stderr
    assert result.stdout == ""


def test_swapped_inputs_are_refused_at_submission(redis_server: RedisServer, s3_server: S3Server, bucket: str) -> None:
    """Each input of the wrong kind is named once, before anything is queued."""
    result = dist(
        redis_server,
        s3_server,
        "submit",
        f"s3://{bucket}/seed/run.json",
        f"s3://{bucket}/seed/benchmark.json",
        "--corpus",
        f"s3://{bucket}/seed/corpus",
        "--out",
        f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json",
    )
    assert result.returncode == exit_codes.BAD_INPUT, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert lines == [
        f"error: s3://{bucket}/seed/run.json: is a run (schema 'symgliph.eceb/run-v0.1'), not a benchmark",
        f"error: s3://{bucket}/seed/benchmark.json: is a benchmark (schema 'symgliph.eceb/benchmark-v0.1'), not a run",
    ]
    assert result.stdout == ""
    verify = dist(
        redis_server,
        s3_server,
        "verify",
        f"s3://{bucket}/seed/benchmark.json",
        "--corpus",
        f"s3://{bucket}/seed/corpus",
    )
    assert verify.returncode == exit_codes.BAD_INPUT, verify.stderr
    assert "is a benchmark (schema 'symgliph.eceb/benchmark-v0.1'), not a registry" in verify.stderr


def test_unknown_job_and_local_inputs_are_refused(redis_server: RedisServer, s3_server: S3Server) -> None:
    unknown = dist(redis_server, s3_server, "status", "0" * 32)
    assert unknown.returncode == exit_codes.NO_SUCH_JOB
    local = dist(
        redis_server,
        s3_server,
        "submit",
        str(SEED / "benchmark.json"),
        str(SEED / "run.json"),
        "--corpus",
        str(SEED / "corpus"),
        "--out",
        "s3://b/report.json",
    )
    assert local.returncode == exit_codes.USAGE
    assert "must be an s3://bucket/key URL" in local.stderr


def test_a_result_backend_refused_or_unreachable_at_start_fails_at_once(
    redis_server: RedisServer, s3_server: S3Server
) -> None:
    """A database number the server refuses, or no server at all, is storage
    unavailable (exit 5) for every command, at once: the outage retry is for
    a connection lost while a command runs."""
    for backend in (redis_server.url(99999), "redis://127.0.0.1:1/0"):
        for args in (("status", "0" * 32), ("wait", "0" * 32), ("cancel", "0" * 32), ("result", "0" * 32, "-o", "-")):
            started = time.monotonic()
            done = dist(redis_server, s3_server, *args, result_backend=backend)
            assert done.returncode == exit_codes.STORAGE, (args, done.stderr)
            assert "cannot reach the result backend redis://" in done.stderr, done.stderr
            assert redis_server.password not in done.stderr
            assert time.monotonic() - started < 20


def test_submission_refuses_what_no_worker_could_use(
    redis_server: RedisServer, s3_server: S3Server, bucket: str
) -> None:
    def submitted(benchmark: str, corpus: str) -> subprocess.CompletedProcess[str]:
        return dist(
            redis_server,
            s3_server,
            "submit",
            benchmark,
            f"s3://{bucket}/seed/run.json",
            "--corpus",
            corpus,
            "--out",
            f"s3://{bucket}/reports/refused.json",
        )

    credentials = submitted(f"s3://AKIAEXAMPLE:topsecret@{bucket}/seed/benchmark.json", f"s3://{bucket}/seed/corpus")
    assert credentials.returncode == exit_codes.USAGE
    assert "BENCHMARK: an s3:// URL takes no credentials, query or fragment" in credentials.stderr
    assert "topsecret" not in credentials.stderr
    no_bucket = submitted("s3://eceb-no-such-input-bucket/seed/benchmark.json", f"s3://{bucket}/seed/corpus")
    assert no_bucket.returncode == exit_codes.BAD_INPUT
    assert "s3://eceb-no-such-input-bucket/seed/benchmark.json: cannot read: no such bucket" in no_bucket.stderr
    relative = submitted(f"s3://{bucket}/seed/benchmark.json", "relative/corpus")
    assert relative.returncode == exit_codes.USAGE
    assert "'relative/corpus' is a relative path" in relative.stderr
    for refused in (credentials, no_bucket, relative):
        assert refused.stdout == ""


def test_a_misspelled_corpus_prefix_is_refused_before_a_job_exists(
    redis_server: RedisServer, s3_server: S3Server, bucket: str
) -> None:
    """The corpus prefix must hold the registry's first artifact (one HEAD):
    a misspelled prefix or bucket is bad input at once, for ``submit`` and
    ``verify``; no job is queued."""

    def jobs() -> set[str]:
        listed = dist(redis_server, s3_server, "jobs", "--json", "--limit", "100000")
        return {job["job_id"] for job in json.loads(listed.stdout)}

    first = (SEED / "registry.jsonl").read_text(encoding="utf-8").splitlines()[1]
    path = json.loads(first)["path"]
    before = jobs()
    registry = f"s3://{bucket}/seed/registry.jsonl"
    for corpus, reason in (
        (f"s3://{bucket}/seed/corpsu", "no object under this prefix"),
        (f"s3://{bucket}-typo/seed/corpus", f"no such bucket {bucket}-typo"),
    ):
        for words in (
            ("submit", f"s3://{bucket}/seed/benchmark.json", f"s3://{bucket}/seed/run.json"),
            ("verify", registry),
        ):
            result = dist(
                redis_server, s3_server, *words, "--corpus", corpus, "--out", f"s3://{bucket}/reports/refused.json"
            )
            assert result.returncode == exit_codes.BAD_INPUT, (words, result.stdout + result.stderr)
            assert result.stdout == ""
            first_artifact = f"the registry's first artifact, {path} (line 2 of {registry}), is not there"
            assert f"{corpus}: {reason}; {first_artifact}" in result.stderr
            assert "is the corpus prefix right? Nothing was submitted" in result.stderr
    assert jobs() == before


def test_a_step_still_running_never_undoes_a_cancel(redis_server: RedisServer) -> None:
    import redis

    from eceb_worker.cluster.state import JobStore, Phase

    store = JobStore(redis.Redis.from_url(redis_server.url()))
    job_id = uuid.uuid4().hex
    assert not store.update(job_id, phase="loading")  # unknown job: nothing is created
    assert store.get(job_id) is None
    store.create(job_id, phase="queued", out="s3://b/report.json")
    assert store.update(job_id, phase="loading")
    assert store.update(job_id, phase="cancelled")
    assert not store.update(job_id, phase="verifying", rehash_total=3)
    assert not store.fail(job_id, ErrorKind.INTERNAL, "too late")
    state = store.get(job_id)
    assert state is not None
    assert state.phase is Phase.CANCELLED
    assert state.rehash_total is None and state.error is None
    store.client.close()


def test_result_refuses_a_report_replaced_or_deleted_after_the_job(
    redis_server: RedisServer, s3_server: S3Server, bucket: str, tmp_path: Path
) -> None:
    import blake3
    import redis

    from eceb_worker.cluster.state import JobStore

    store = JobStore(redis.Redis.from_url(redis_server.url()))
    out = f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json"
    objects = ObjectStore(s3_server.endpoint_url)
    objects.put_atomic(out, b"the report this job wrote")
    job_id = uuid.uuid4().hex
    store.create(
        job_id,
        phase="done",
        out=out,
        passing_tasks=1,
        total_tasks=1,
        report_digest=blake3.blake3(b"the report this job wrote").hexdigest(),
    )
    fetched = dist(redis_server, s3_server, "result", job_id, "-o", str(tmp_path / "report.json"))
    assert fetched.returncode == exit_codes.OK, fetched.stderr
    assert (tmp_path / "report.json").read_bytes() == b"the report this job wrote"

    objects.put_atomic(out, b"another job's report")
    replaced = dist(redis_server, s3_server, "result", job_id, "-o", str(tmp_path / "replaced.json"))
    assert replaced.returncode == exit_codes.STORAGE
    assert f"{out}: no longer holds the report of job {job_id}" in replaced.stderr
    assert not (tmp_path / "replaced.json").exists()

    objects.delete(out)
    gone = dist(redis_server, s3_server, "result", job_id)
    assert gone.returncode == exit_codes.STORAGE
    assert f"{out}: the report of job {job_id} is gone" in gone.stderr
    assert gone.stdout == ""
    store.client.close()


def test_object_store_reads_and_writes_atomically(s3_server: S3Server, bucket: str, tmp_path: Path) -> None:
    store = ObjectStore(s3_server.endpoint_url)
    url = f"s3://{bucket}/atomic/{uuid.uuid4().hex}/report.json"
    store.put_atomic(url, b"first")
    store.put_atomic(url, b"second")
    data, etag = store.get(url)
    assert data == b"second"
    with pytest.raises(InputError, match="changed while the job ran"):
        store.get(url, etag='"0"')
    listed: Any = s3_server.client().list_objects_v2(Bucket=bucket, Prefix=url.split("/", 3)[3].rsplit("/", 1)[0])
    assert [item["Key"] for item in listed["Contents"]] == [url.split("/", 3)[3]]
    with pytest.raises(OutputError, match="no such bucket"):
        store.put_atomic("s3://no-such-bucket-here/report.json", b"x")
    assert store.get(url, etag=etag)[0] == b"second"
    large = f"s3://{bucket}/atomic/{uuid.uuid4().hex}/listing.jsonl"  # more than one chunk, streamed to a file
    body = bytes(range(256)) * 40_000
    store.put_atomic(large, body)
    store.download(large, tmp_path / "listing.jsonl")
    assert (tmp_path / "listing.jsonl").read_bytes() == body
    with pytest.raises(InputError):
        store.download(f"s3://{bucket}/atomic/missing.jsonl", tmp_path / "missing.jsonl")


def test_object_sibling() -> None:
    assert object_sibling("s3://b/a/benchmark.json", "registry.jsonl") == "s3://b/a/registry.jsonl"
    assert object_sibling("s3://b/a/benchmark.json", "../r/registry.jsonl") == "s3://b/r/registry.jsonl"
    assert object_sibling("s3://b/benchmark.json", "registry.jsonl") == "s3://b/registry.jsonl"
    for bad in ("../registry.jsonl", "/registry.jsonl"):
        with pytest.raises(ValueError, match="registry"):
            object_sibling("s3://b/benchmark.json", bad)


def test_cancelled_job_ends_without_report(redis_server: RedisServer, s3_server: S3Server) -> None:
    import redis

    from eceb_worker.cluster.state import JobStore

    store = JobStore(redis.Redis.from_url(redis_server.url()))
    job_id = uuid.uuid4().hex
    store.create(job_id, phase="verifying", rehash_total=3, out="s3://b/report.json")
    store.advance(job_id, Stage.REHASH, 1)
    store.advance(job_id, Stage.REHASH, 1)  # delivered twice, counted once
    status = dist(redis_server, s3_server, "status", job_id)
    assert "verifying; re-hash shards 1/3" in status.stdout
    cancelled = dist(redis_server, s3_server, "cancel", job_id)
    assert cancelled.returncode == 0, cancelled.stderr
    assert store.finished(job_id)
    watched = dist(redis_server, s3_server, "status", "--watch", job_id)
    assert watched.returncode == 0
    assert ": cancelled;" in watched.stdout
    for command in ("wait", "result"):
        ended = dist(redis_server, s3_server, command, job_id)
        assert ended.returncode == exit_codes.JOB_CANCELLED
        assert "no report was written" in ended.stderr
    again = dist(redis_server, s3_server, "cancel", job_id)
    assert "already ended (cancelled)" in again.stdout
    store.client.close()


@pytest.mark.two_workers
def test_a_corpus_in_a_missing_bucket_fails_as_storage_without_retries(
    redis_server: RedisServer, s3_server: S3Server, workers: CeleryWorkers, bucket: str
) -> None:
    """NoSuchBucket is final: the shard fails at once, never "Retry in".
    (``submit`` refuses such a corpus; the job is queued as a bucket
    deleted after submission would leave it.)"""
    from eceb_cli.submission import evaluation_message
    from eceb_worker.cluster.client import Cluster

    out = f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json"
    missing = f"no-such-bucket-{uuid.uuid4().hex[:8]}"
    message = evaluation_message(
        f"s3://{bucket}/seed/benchmark.json",
        f"s3://{bucket}/seed/run.json",
        corpus=f"s3://{missing}/corpus",
        out=out,
        endpoint_url=s3_server.endpoint_url,
        shard_bytes=1_000_000_000,
    )
    Cluster(redis_server.url()).submit(message, created=int(time.time()), corpus=message.corpus.source, out=out)
    job_id = message.job_id
    waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
    assert waited.returncode == exit_codes.STORAGE, waited.stderr
    assert "1 of 1 re-hash shards failed; first: re-hash shard 0:" in waited.stderr
    assert "no such bucket" in waited.stderr
    status = dist(redis_server, s3_server, "status", job_id)
    assert "failures 1" in status.stdout
    logs = workers.logs()
    assert not [line for line in logs.splitlines() if "Retry in" in line and missing in line], logs[-4000:]
    assert not ObjectStore(s3_server.endpoint_url).exists(out)


def test_status_into_a_closed_pipe_keeps_its_exit_code(redis_server: RedisServer) -> None:
    import redis

    from eceb_worker.cluster.state import JobStore

    store = JobStore(redis.Redis.from_url(redis_server.url()))
    job_id = uuid.uuid4().hex
    store.create(job_id, phase="queued", kind="evaluate")
    store.client.close()
    command = (sys.executable, "-m", "eceb_cli.dist", "status")
    env = {**os.environ, "ECEB_BROKER_URL": redis_server.url()}
    done = run_with_closed_reader("stdout", *command, job_id, env=env)
    assert (done.returncode, done.stderr) == (exit_codes.OK, b"")
    unknown = run_with_closed_reader("stderr", *command, uuid.uuid4().hex, env=env)
    assert (unknown.returncode, unknown.stdout) == (exit_codes.NO_SUCH_JOB, b"")


@pytest.mark.two_workers
def test_restricted_text_and_secrets_reach_no_message_key_or_log(
    redis_server: RedisServer,
    s3_server: S3Server,
    workers: CeleryWorkers,
    bucket: str,
    expected_report: bytes,
    tmp_path: Path,
) -> None:
    """The disclosure scan runs in the re-hash shards on the cluster: its
    partial results, the chords' stored answers and the job state hold ids,
    offsets and counts, never the planted restricted line or secret."""
    import redis

    client = redis.Redis.from_url(redis_server.url())
    out = f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json"
    job_id = submit(redis_server, s3_server, f"s3://{bucket}/seed", out, "--shard-bytes", "1")
    waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
    assert waited.returncode == exit_codes.TASKS_FAILED, waited.stderr + workers.logs()[-3000:]
    stored: list[bytes] = []
    for key in client.scan_iter(count=1000):
        stored.append(key)
        kind = client.type(key)
        if kind == b"string":
            stored.append(client.get(key) or b"")
        elif kind == b"hash":
            stored.extend(b for pair in client.hgetall(key).items() for b in pair)
        elif kind == b"list":
            stored.extend(client.lrange(key, 0, -1))
        elif kind in (b"set", b"zset"):
            stored.extend(client.zrange(key, 0, -1) if kind == b"zset" else client.smembers(key))
    client.close()
    assert any(b"disclosure" in value or b"holders" in value or b"rehash" in value for value in stored)
    quoted = (SEED / "corpus" / "policy" / "customer-pii-handling.md").read_text().splitlines()[-1]
    everything = b"\n".join(stored).decode("utf-8", "replace") + workers.logs() + waited.stdout + waited.stderr
    everything = everything.casefold()
    for restricted in (quoted, "SYNTHETIC-NOT-A-SECRET-0000", "syntheticnotasecret0000", "data protection officer"):
        assert restricted.casefold() not in everything, restricted
    local = tmp_path / "report.json"
    assert dist(redis_server, s3_server, "result", job_id, "-o", str(local)).returncode == exit_codes.TASKS_FAILED
    assert local.read_bytes() == expected_report


def test_a_job_state_corrupted_in_redis_is_a_storage_error_never_internal(
    redis_server: RedisServer, s3_server: S3Server
) -> None:
    from eceb_worker.cluster.state import JobStore

    client = redis_server.client(db=6)  # a database of its own: other tests list their jobs
    job_id = uuid.uuid4().hex
    JobStore(client).create(job_id, phase="evaluating", kind="evaluate", rehash_total="twelve", out="s3://b/r.json")
    expected = (
        f"error: storage: the state of job {job_id} in the result backend (eceb:job:{job_id}) is malformed: "
        "field 'rehash_total' is not an integer\n"
    )
    try:
        for words in (
            ("status", job_id),
            ("status", "--json", job_id),
            ("wait", job_id),
            ("result", job_id),
            ("jobs",),
        ):
            result = dist(redis_server, s3_server, *words, broker_url=redis_server.url(db=6))
            assert result.returncode == exit_codes.STORAGE, (words, result.stderr)
            assert (result.stdout, result.stderr) == ("", expected), words
    finally:
        client.flushdb()
        client.close()


def test_one_submit_makes_one_celery_application(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from celery import Celery

    import eceb_cli.cluster_commands as commands
    import eceb_worker.cluster.app as app_module
    from eceb_cli.submission import evaluation_message
    from eceb_worker.cluster.state import JobStore, Phase

    made: list[object] = []
    original = Celery.__init__

    def counted(self: Celery, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(Celery, "__init__", counted)
    monkeypatch.setattr(commands, "check_submission", lambda message: None)  # reads no input here
    app_module.worker_app.cache_clear()
    url = redis_server.url(db=7)  # away from the workers of the other tests
    message = evaluation_message(
        "s3://b/benchmark.json", "s3://b/run.json", corpus="s3://b/corpus", out="s3://b/report.json", endpoint_url=None
    )
    with click.Context(click.Command("submit")) as ctx:  # the command line's options, as --broker-url keeps them
        commands.ClusterOptions(broker_url=url).keep(ctx)
        cluster = commands.submit_job(message)
    try:
        assert len(made) == 1 and cluster.app is made[0]
        assert app_module.worker_app.cache_info().currsize == 0  # importing the module made none
        assert capsys.readouterr().out == f"{message.job_id}\n"
        state = JobStore.of(cluster.app).get(message.job_id)
        assert state is not None and state.phase is Phase.QUEUED and state.coordinator
    finally:
        cluster.app.close()
        client = redis_server.client(db=7)
        client.flushdb()
        client.close()
