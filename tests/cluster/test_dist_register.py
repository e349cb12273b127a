"""``eceb-dist register``: a registry built on real Celery workers over a
real Redis, from a loopback S3 server, equals the registry ``eceb corpus
register`` writes from the same bucket byte for byte (keys with spaces,
``+``, ``%``, quotes and non-ASCII characters, nested prefixes, objects at
the root of the prefix, folder markers), for one and two workers and
several shard sizes; files no rule classifies fail the job grouped as
``eceb corpus register`` groups them, nothing written; a worker killed
mid-listing or mid-hash leaves the same registry; a cancelled job leaves
nothing. Each module's workers take a broker database of their own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from eceb_cli import exit_codes
from tests.support.dist_support import dist
from tests.support.faults import SHORT_BOUNDS, bounds_settings, wait_for
from tests.support.redis_server import CeleryWorkers, RedisServer, celery_workers
from tests.support.relays import StallingRelay
from tests.support.s3_server import S3Server, fresh_bucket

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

WAIT_S = "180"
BROKER_DB = 9
"""The broker database of this module's shared workers (each fault test takes one of its own)."""

KEYS = (
    "root.md",
    "a",
    "a b",
    "a b/inside.md",
    "a!/bang.md",
    "a+c.md",
    "a%20d.md",
    "100% sure.md",
    'q"uote.md',
    "with space/and+plus/50%.md",
    "é/ü.md",
    "日本/語 テキスト.md",
    "emoji/🙂.md",
    "docs/one.md",
    "docs/two/three.md",
    "deep/1/2/3/4.md",
    "deep/1/x.md",
    "deep/2/y.md",
    *(f"many/{index:03d}/file {index}.md" for index in range(24)),
)
"""The corpus's files (under ``corpus/``): what ``eceb corpus register`` must see, each once."""
MARKERS = ("markers/", "docs/empty/")
"""Folder markers (keys ending with ``/``): never registered."""
OUTSIDE = ("corpus-other/leak.md", "corpusx.md")
"""Keys beside the corpus prefix: never listed."""

RULES = """schema = "symgliph.eceb/rules-v0.1"

[[rule]]
glob = "docs/**"
kind = "runbook"

[[rule]]
glob = "many/**"
classification = "public"

[[rule]]
glob = "**"
kind = "code"
classification = "internal"
"""

UNCLASSIFIED_RULES = """schema = "symgliph.eceb/rules-v0.1"

[[rule]]
glob = "docs/**"
kind = "runbook"

[[rule]]
glob = "src/**"
kind = "code"

[[rule]]
glob = "**/*.md"
classification = "internal"
"""
UNCLASSIFIED_KEYS = (
    "docs/fine.md",
    "src/main.py",
    "src/util.py",
    "misc/a.txt",
    "misc/b.txt",
    "misc/c.txt",
    "misc/d.txt",
    "misc/e.md",
    "top.txt",
    "bad//double.md",
    "docs/also fine.md",
)


class ListingStall(StallingRelay):
    """A relay holding the first listing request of a listing shard (a
    ListObjectsV2 with ``start-after``, no delimiter), until released."""

    def __init__(self, upstream_url: str) -> None:
        super().__init__(upstream_url, key_suffix="")

    def _hold(self, method: str, path: str) -> bool:
        query = path.partition("?")[2]
        if method != "GET" or "list-type=2" not in query or "start-after=" not in query or "delimiter=" in query:
            return False
        with self._lock:
            if self.stalled.is_set():
                return False
            self.stall_count += 1
            self.stalled.set()
        self._released.wait()
        return True


def _put(s3_server: S3Server, bucket: str, prefix: str, keys: tuple[str, ...]) -> None:
    client = s3_server.client()
    for key in keys:
        body = b"" if key.endswith("/") else f"the text of {key}\n".encode() * (1 + len(key) % 7)
        client.put_object(Bucket=bucket, Key=f"{prefix}{key}", Body=body)


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> Iterator[str]:
    """A bucket holding the corpus under ``corpus/`` (with folder markers
    and keys beside the prefix), and one with unclassified files under
    ``unclassified/``."""
    with fresh_bucket(s3_server, "eceb-register") as name:
        _put(s3_server, name, "corpus/", (*KEYS, *MARKERS))
        _put(s3_server, name, "", OUTSIDE)
        _put(s3_server, name, "unclassified/", UNCLASSIFIED_KEYS)
        yield name


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rules") / "rules.toml"
    path.write_text(RULES, encoding="utf-8")
    return path


def _eceb(s3_server: S3Server, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eceb_cli", *args, "--endpoint-url", s3_server.endpoint_url],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def local_registry(s3_server: S3Server, bucket: str, rules: Path, tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The registry ``eceb corpus register`` writes from the same bucket."""
    out = tmp_path_factory.mktemp("local") / "registry.jsonl"
    result = _eceb(s3_server, "corpus", "register", f"s3://{bucket}/corpus", "--rules", str(rules), "-o", str(out))
    assert result.returncode == 0, result.stderr
    data = out.read_bytes()
    lines = data.splitlines()
    assert len(lines) == 1 + len(KEYS)
    return data


@pytest.fixture(scope="module", params=[1, 2], ids=["1-worker", "2-workers"])
def register_workers(
    request: pytest.FixtureRequest,
    redis_server: RedisServer,
    s3_server: S3Server,  # first: the workers inherit its fake credentials
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[CeleryWorkers]:
    """One, then two, workers on this module's broker database."""
    log_dir = tmp_path_factory.mktemp("register-workers")
    broker = redis_server.url(BROKER_DB)
    with celery_workers(broker, request.param, log_dir, env={"ECEB_TASK_MAX_RETRIES": "1"}) as running:
        yield running


def _register(
    redis_server: RedisServer, s3_server: S3Server, broker: str, source: str, rules: Path, out: str, *options: str
) -> str:
    result = dist(
        redis_server, s3_server, "register", source, "--rules", str(rules), "--out", out, *options, broker_url=broker
    )
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    assert len(job_id) == 32, result.stdout
    return job_id


def _object(s3_server: S3Server, url: str) -> bytes | None:
    bucket, key = url.removeprefix("s3://").split("/", 1)
    client = s3_server.client()
    try:
        body: bytes = client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except client.exceptions.NoSuchKey:
        return None
    return body


def _parts(s3_server: S3Server, out: str) -> list[str]:
    """The keys left under the partials' prefix of every job writing ``out``."""
    bucket, key = out.removeprefix("s3://").split("/", 1)
    directory, _, name = key.rpartition("/")
    listed = s3_server.client().list_objects_v2(Bucket=bucket, Prefix=f"{directory}/.{name}.parts/")
    return [item["Key"] for item in listed.get("Contents", [])]


@pytest.mark.parametrize("shard_bytes", ["1", "100000", None], ids=["one-file-each", "a-few-files", "default"])
def test_a_registry_built_on_the_cluster_is_the_one_eceb_corpus_register_writes(
    redis_server: RedisServer,
    s3_server: S3Server,
    register_workers: CeleryWorkers,
    bucket: str,
    rules: Path,
    local_registry: bytes,
    shard_bytes: str | None,
) -> None:
    broker = redis_server.url(BROKER_DB)
    out = f"s3://{bucket}/registries/{uuid.uuid4().hex}/registry.jsonl"
    options = ("--shard-bytes", shard_bytes) if shard_bytes else ()
    job_id = _register(redis_server, s3_server, broker, f"s3://{bucket}/corpus/", rules, out, *options)
    waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S, broker_url=broker)
    assert waited.returncode == 0, waited.stderr
    root = json.loads(local_registry.splitlines()[0])["corpus_root"]
    assert f"registered {len(KEYS)} artifacts (" in waited.stdout, waited.stdout
    assert f"corpus root {root}; registry written to {out}" in waited.stdout, waited.stdout
    assert _object(s3_server, out) == local_registry
    result = subprocess.run(
        [sys.executable, "-m", "eceb_cli.dist", "result", job_id],
        capture_output=True,
        env={**os.environ, "ECEB_BROKER_URL": broker, "ECEB_S3_ENDPOINT_URL": s3_server.endpoint_url},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == local_registry
    status = json.loads(dist(redis_server, s3_server, "status", job_id, "--json", broker_url=broker).stdout)
    assert status["kind"] == "register"
    assert status["phase"] == "done"
    assert status["artifact_count"] == len(KEYS)
    assert status["corpus_root"] == root
    assert status["list_done"] == status["list_total"] > 1
    assert status["hash_done"] == status["hash_total"] >= 1
    if shard_bytes == "1":
        assert status["hash_total"] == len(KEYS)
    assert _parts(s3_server, out) == []
    line = dist(redis_server, s3_server, "status", job_id, broker_url=broker).stdout
    assert f"{job_id}: done; listing shards " in line, line
    if shard_bytes is None:
        listed = json.loads(dist(redis_server, s3_server, "jobs", "--json", broker_url=broker).stdout)
        assert {"job_id": job_id, "kind": "register", "phase": "done"}.items() <= next(
            job for job in listed if job["job_id"] == job_id
        ).items()


@pytest.mark.two_workers
def test_files_no_rule_classifies_fail_the_job_grouped_as_eceb_corpus_register_groups_them(
    redis_server: RedisServer,
    s3_server: S3Server,
    register_workers: CeleryWorkers,
    bucket: str,
    tmp_path: Path,
) -> None:
    rules = tmp_path / "partial-rules.toml"
    rules.write_text(UNCLASSIFIED_RULES, encoding="utf-8")
    local = _eceb(
        s3_server, "corpus", "register", f"s3://{bucket}/unclassified", "--rules", str(rules), "-o", str(tmp_path / "x")
    )
    assert local.returncode == exit_codes.BAD_INPUT, local.stderr
    assert not (tmp_path / "x").exists()
    broker = redis_server.url(BROKER_DB)
    out = f"s3://{bucket}/registries/{uuid.uuid4().hex}/registry.jsonl"
    job_id = _register(redis_server, s3_server, broker, f"s3://{bucket}/unclassified", rules, out)
    waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S, broker_url=broker)
    assert waited.returncode == exit_codes.BAD_INPUT, waited.stderr
    expected = [
        line.replace(" (-v lists every file)", "") for line in local.stderr.splitlines() if line.startswith("error: ")
    ]
    found = [line for line in waited.stderr.splitlines() if line.startswith("error: ")]
    assert found == expected
    assert "files under misc/: no rule gives them a kind and a classification: misc/a.txt, misc/b.txt" in (
        waited.stderr
    )
    assert "bad//double.md: field 'path': has an empty segment" in waited.stderr
    assert f"job {job_id} failed; no registry was written" in waited.stderr
    assert _object(s3_server, out) is None
    wait_for(lambda: _parts(s3_server, out) == [], "the failed job's partials to be deleted")


@pytest.mark.parametrize("where", ["listing", "hashing"])
def test_a_worker_killed_mid_listing_or_mid_hash_leaves_the_same_registry(
    redis_server: RedisServer,
    s3_server: S3Server,
    bucket: str,
    rules: Path,
    local_registry: bytes,
    tmp_path: Path,
    where: str,
) -> None:
    """The only worker killed whole while a listing shard's listing (or a
    hash shard's read) is held by the relay; a worker started after it
    runs the lost shard again once its lease lapsed: the same registry."""
    broker = redis_server.url(10 if where == "listing" else 11)
    relay = (
        ListingStall(s3_server.endpoint_url)
        if where == "listing"
        else StallingRelay(s3_server.endpoint_url, key_suffix="corpus/docs/one.md")
    )
    env = {**bounds_settings(SHORT_BOUNDS), "ECEB_S3_ENDPOINT_URL": relay.endpoint_url}
    out = f"s3://{bucket}/registries/{uuid.uuid4().hex}/registry.jsonl"
    with relay:
        with celery_workers(broker, 1, tmp_path / "doomed", env=env) as doomed:
            job_id = _register(redis_server, s3_server, broker, f"s3://{bucket}/corpus", rules, out)
            wait_for(relay.stalled.is_set, f"a worker to start {where}")
            os.killpg(doomed.pids[0], signal.SIGKILL)
        relay.release()
        with celery_workers(broker, 1, tmp_path / "survivor", env=env) as survivor:
            waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S, broker_url=broker)
            assert waited.returncode == 0, waited.stderr + survivor.logs()[-4000:]
            assert "published again (lapsed)" in survivor.logs()
    assert _object(s3_server, out) == local_registry
    assert _parts(s3_server, out) == []


def test_a_cancelled_registration_writes_nothing_and_leaves_no_partial(
    redis_server: RedisServer, s3_server: S3Server, bucket: str, rules: Path, tmp_path: Path
) -> None:
    broker = redis_server.url(12)
    out = f"s3://{bucket}/registries/{uuid.uuid4().hex}/registry.jsonl"
    with StallingRelay(s3_server.endpoint_url, key_suffix="corpus/docs/two/three.md") as relay:
        env = {"ECEB_S3_ENDPOINT_URL": relay.endpoint_url}
        with celery_workers(broker, 1, tmp_path / "workers", env=env):
            job_id = _register(redis_server, s3_server, broker, f"s3://{bucket}/corpus", rules, out)
            wait_for(relay.stalled.is_set, "a hash shard to start")
            cancelled = dist(redis_server, s3_server, "cancel", job_id, broker_url=broker)
            assert cancelled.returncode == 0, cancelled.stderr
            relay.release()
            waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S, broker_url=broker)
            assert waited.returncode == exit_codes.JOB_CANCELLED, waited.stderr
            assert "no registry was written" in waited.stderr
            wait_for(lambda: _parts(s3_server, out) == [], "the cancelled job's partials to be deleted")
    assert _object(s3_server, out) is None


def test_what_cannot_be_registered_is_refused_before_anything_is_queued(
    redis_server: RedisServer, s3_server: S3Server, bucket: str, rules: Path, tmp_path: Path
) -> None:
    broker = redis_server.url(13)

    def refused(*args: str) -> subprocess.CompletedProcess[str]:
        return dist(redis_server, s3_server, "register", *args, broker_url=broker)

    inside = refused(f"s3://{bucket}/corpus", "--rules", str(rules), "--out", f"s3://{bucket}/corpus/registry.jsonl")
    assert inside.returncode == exit_codes.OUTPUT, inside.stderr
    assert "lies under the corpus" in inside.stderr
    directory = refused(str(tmp_path), "--rules", str(rules), "--out", f"s3://{bucket}/r.jsonl")
    assert directory.returncode == exit_codes.USAGE, directory.stderr
    local_out = refused(f"s3://{bucket}/corpus", "--rules", str(rules), "--out", str(tmp_path / "r.jsonl"))
    assert local_out.returncode == exit_codes.USAGE, local_out.stderr
    bad_rules = tmp_path / "bad.toml"
    bad_rules.write_text('schema = "symgliph.eceb/rules-v0.1"\n[[rule]]\nglob = "**"\n', encoding="utf-8")
    invalid = refused(f"s3://{bucket}/corpus", "--rules", str(bad_rules), "--out", f"s3://{bucket}/r.jsonl")
    assert invalid.returncode == exit_codes.BAD_INPUT, invalid.stderr
    assert "sets neither kind nor classification" in invalid.stderr
    missing = refused("s3://no-such-bucket-eceb/corpus", "--rules", str(rules), "--out", f"s3://{bucket}/r.jsonl")
    assert missing.returncode == exit_codes.STORAGE, missing.stderr
    assert "NoSuchBucket" in missing.stderr
    assert redis_server.client(13).keys("eceb:job:*") == []


@pytest.mark.two_workers
def test_an_incremental_registration_reads_only_what_changed_and_writes_the_same_bytes(
    redis_server: RedisServer,
    s3_server: S3Server,
    register_workers: CeleryWorkers,
    rules: Path,
    tmp_path: Path,
) -> None:
    """Registered once (its listing snapshot beside it), the corpus then
    changes (an object rewritten, one added, one removed): registered
    again with ``--previous``, only the two new versions are read, and the
    registry is byte for byte what ``eceb corpus register`` writes of the
    corpus as it is now; its own snapshot lets the next night reuse again."""
    broker = redis_server.url(BROKER_DB)
    with fresh_bucket(s3_server, "eceb-incremental") as name:
        _put(s3_server, name, "corpus/", KEYS)
        first = f"s3://{name}/registries/first/registry.jsonl"
        job_id = _register(redis_server, s3_server, broker, f"s3://{name}/corpus", rules, first)
        waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S, broker_url=broker)
        assert waited.returncode == 0, waited.stderr
        snapshot = _object(s3_server, f"s3://{name}/registries/first/registry.listing.jsonl")
        assert snapshot is not None and snapshot.count(b"\n") == 1 + len(KEYS)
        client = s3_server.client()
        client.put_object(Bucket=name, Key="corpus/a b", Body=b"rewritten tonight\n")
        client.put_object(Bucket=name, Key="corpus/docs/new one.md", Body=b"added tonight\n")
        client.delete_object(Bucket=name, Key="corpus/deep/2/y.md")
        second = f"s3://{name}/registries/second/registry.jsonl"
        job_id = _register(redis_server, s3_server, broker, f"s3://{name}/corpus", rules, second, "--previous", first)
        waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S, broker_url=broker)
        assert waited.returncode == 0, waited.stderr
        assert f"(hashed 2, took the digests of {len(KEYS) - 2} from the previous registry)" in waited.stdout
        local = tmp_path / "registry.jsonl"
        result = _eceb(s3_server, "corpus", "register", f"s3://{name}/corpus", "--rules", str(rules), "-o", str(local))
        assert result.returncode == 0, result.stderr
        assert _object(s3_server, second) == local.read_bytes()
        again = f"s3://{name}/registries/third/registry.jsonl"
        job_id = _register(redis_server, s3_server, broker, f"s3://{name}/corpus", rules, again, "--previous", second)
        waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S, broker_url=broker)
        assert waited.returncode == 0, waited.stderr
        assert f"(hashed 0, took the digests of {len(KEYS)} from the previous registry)" in waited.stdout
        assert _object(s3_server, again) == local.read_bytes()
