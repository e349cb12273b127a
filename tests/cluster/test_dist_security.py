"""Security of ``eceb-dist``, end to end on real processes: Redis over TLS
with a password (broker and result backend), no credential in any output,
stored state or report, and a job that reads nothing outside the prefixes
it was given.

The cluster here is a TLS-only ``redis-server`` (``tests/support/redis_tls.py``),
two real Celery worker processes and the loopback S3 server. What the S3
server receives is read from its request log (one line per request).
"""

from __future__ import annotations

import base64
import json
import os
import re
import ssl
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest
import trustme

from eceb_cli import exit_codes
from eceb_worker.core.urls import redact_url
from eceb_worker.io.objects import ObjectStore
from tests.support.dist_support import SEED, embedded_report
from tests.support.redis_server import CeleryWorkers, RedisServer, celery_workers
from tests.support.redis_tls import redis_monitor, tls_redis_server
from tests.support.s3_server import S3Server, empty_bucket

WAIT_S = "60"
INPUTS = ("benchmark.json", "run.json", "registry.jsonl")
ESCAPING_PATHS = {2: "../outside.txt", 3: "/abs", 4: "a/../../b"}
"""Registry line number -> an artifact path trying to leave the corpus prefix."""
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_REQUEST_LINE = re.compile(r'"(?P<method>[A-Z]+) (?P<target>\S+) HTTP/[0-9.]+"')


def secret_forms(secret: str) -> set[str]:
    """``secret`` as it could be written: plain, URL-quoted, and inside base64
    (kombu base64-encodes message bodies) at each of the three alignments."""
    forms = {secret, quote(secret, safe="")}
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + secret.encode()).decode()
        forms.add(encoded[4 if shift else 0 : -4])  # the characters only the secret determines
    return forms


@dataclass(frozen=True)
class Request:
    """One request the S3 server received (path-style addressing)."""

    method: str
    bucket: str
    key: str


def s3_requests_since(server: S3Server, offset: int) -> list[Request]:
    """The requests in the S3 server's log after byte ``offset``."""
    with server.log_path.open("rb") as log:
        log.seek(offset)
        text = _ANSI.sub("", log.read().decode("utf-8", errors="replace"))
    requests = []
    for match in _REQUEST_LINE.finditer(text):
        path = match["target"].partition("?")[0]
        bucket, _, key = path.lstrip("/").partition("/")
        requests.append(Request(match["method"], unquote(bucket), unquote(key)))
    return requests


def log_offset(server: S3Server) -> int:
    return server.log_path.stat().st_size


def assert_writes_only_beside(requests: list[Request], out_key: str, *, report: bool) -> None:
    """Every object written is the report (when ``report``) or a temporary
    object beside it (``.<name>.<hex>.partial`` or ``.probe``), written and
    deleted again."""
    directory, name = out_key.rsplit("/", 1)
    sibling = re.compile(rf"{re.escape(directory)}/\.{re.escape(name)}\.[0-9a-f]{{32}}\.(partial|probe)")
    writes = {(r.method, r.key) for r in requests if r.method not in ("GET", "HEAD")}
    temporaries = {key for _method, key in writes if key != out_key}
    assert all(sibling.fullmatch(key) for key in temporaries), sorted(writes)
    expected = {(method, key) for key in temporaries for method in ("PUT", "DELETE")}
    if report:
        expected.add(("PUT", out_key))
        assert any(key.endswith(".partial") for key in temporaries), sorted(writes)
    assert writes == expected


@dataclass(frozen=True)
class Cluster:
    """The TLS Redis server, the workers using it, and the S3 server."""

    redis: RedisServer
    s3: S3Server
    workers: CeleryWorkers

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every credential that must never show anywhere."""
        return (self.redis.password, *self.s3.secrets)

    def assert_no_secret(self, what: str, data: str | bytes) -> None:
        text = data if isinstance(data, str) else data.decode("utf-8", errors="replace")
        for secret in self.secrets:
            for form in secret_forms(secret):
                assert form not in text, f"a credential appeared in {what}"

    def env(self, *, broker_url: str | None = None, ca: bool = True) -> dict[str, str]:
        env = {
            **os.environ,
            "ECEB_BROKER_URL": broker_url or self.redis.url(),
            "ECEB_S3_ENDPOINT_URL": self.s3.endpoint_url,
        }
        env.pop("ECEB_RESULT_BACKEND", None)
        env.pop("ECEB_REDIS_CA_CERTS", None)
        if ca:
            env["ECEB_REDIS_CA_CERTS"] = str(self.redis.ca_path)
        return env

    def dist(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """``eceb-dist ARGS``; checks that no credential is printed."""
        result = subprocess.run(
            [sys.executable, "-m", "eceb_cli.dist", *args],
            capture_output=True,
            text=True,
            env=env if env is not None else self.env(),
            check=False,
            timeout=120,
        )
        self.assert_no_secret(f"the output of eceb-dist {args[0]}", result.stdout + result.stderr)
        return result

    def run_job(
        self, bucket: str, prefix: str, corpus: str, out: str, *options: str
    ) -> tuple[str, subprocess.CompletedProcess[str]]:
        """Submit a job and wait for it; its id and what ``eceb-dist wait`` did."""
        submitted = self.dist(
            "submit",
            f"s3://{bucket}/{prefix}/benchmark.json",
            f"s3://{bucket}/{prefix}/run.json",
            "--corpus",
            corpus,
            "--out",
            out,
            *options,
        )
        assert submitted.returncode == 0, submitted.stderr
        job_id = submitted.stdout.strip()
        waited = self.dist("wait", job_id, "--timeout", WAIT_S)
        assert waited.returncode in (exit_codes.TASKS_FAILED, exit_codes.BAD_INPUT), (
            waited.stderr + self.workers.logs()[-3000:]
        )
        return job_id, waited


@pytest.fixture(scope="module")
def cluster(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A TLS Redis and two workers verifying its certificate (ECEB_REDIS_CA_CERTS)."""
    with tls_redis_server(tmp_path_factory.mktemp("redis-tls")) as server:
        env = {"ECEB_REDIS_CA_CERTS": str(server.ca_path), "ECEB_TASK_MAX_RETRIES": "1"}
        with celery_workers(server.url(), 2, tmp_path_factory.mktemp("tls-workers"), env=env) as workers:
            yield Cluster(redis=server, s3=s3_server, workers=workers)


def escaping_registry() -> bytes:
    """The seed's registry with the paths of some records leaving the corpus."""
    lines = (SEED / "registry.jsonl").read_text(encoding="utf-8").splitlines()
    for number, path in ESCAPING_PATHS.items():
        record = json.loads(lines[number - 1])
        record["path"] = path
        lines[number - 1] = json.dumps(record, separators=(",", ":"), sort_keys=True)
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> Iterator[str]:
    """The seed's inputs under ``inputs/`` and corpus under ``corpus/``;
    decoys beside them: ``corpus-other/`` (the same relative names, other
    bytes), an object named ``corpus``, objects outside every prefix; and
    under ``escape/`` the seed with a registry whose paths try to leave."""
    client = s3_server.client()
    name = f"eceb-sec-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    for input_name in INPUTS:
        client.put_object(Bucket=name, Key=f"inputs/{input_name}", Body=(SEED / input_name).read_bytes())
    relative = s3_server.upload_tree(SEED / "corpus", name, "corpus", threads=4)
    for path in relative:
        client.put_object(Bucket=name, Key=f"corpus-other/{path}", Body=b"decoy: not the registered bytes\n")
    for key in ("corpus", "outside.txt", "b", "abs"):
        client.put_object(Bucket=name, Key=key, Body=b"outside every prefix\n")
    for input_name in ("benchmark.json", "run.json"):
        client.put_object(Bucket=name, Key=f"escape/{input_name}", Body=(SEED / input_name).read_bytes())
    client.put_object(Bucket=name, Key="escape/registry.jsonl", Body=escaping_registry())
    yield name
    empty_bucket(client, name)
    client.delete_bucket(Bucket=name)


@pytest.fixture(scope="module")
def expected_report(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """What ``eceb evaluate`` writes for the seed."""
    return embedded_report(tmp_path_factory.mktemp("embedded-security"))


def registry_paths() -> list[str]:
    lines = (SEED / "registry.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    return [json.loads(line)["path"] for line in lines]


def redis_dump(server: RedisServer) -> tuple[list[bytes], bytes]:
    """Every key of every database, and all their names and values as one blob."""
    client = server.client()
    databases = [int(name[2:]) for name in client.info("keyspace")]
    client.close()
    keys: list[bytes] = []
    blob = bytearray()
    for db in databases:
        client = server.client(db)
        for key in client.scan_iter(count=1000):
            keys.append(key)
            blob += key + b"\n"
            kind = client.type(key).decode()
            values: Any
            if kind == "string":
                values = [client.get(key) or b""]
            elif kind == "hash":
                values = [part for item in client.hgetall(key).items() for part in item]
            elif kind == "list":
                values = client.lrange(key, 0, -1)
            elif kind == "set":
                values = list(client.smembers(key))
            elif kind == "zset":
                values = [member for member, _score in client.zrange(key, 0, -1, withscores=True)]
            else:
                values = [client.dump(key) or b""]
            for value in values:
                blob += value + b"\n"
        client.close()
    return keys, bytes(blob)


def test_tls_job_matches_eceb_evaluate_and_leaks_no_credential(
    cluster: Cluster, bucket: str, expected_report: bytes, tmp_path: Path
) -> None:
    # The server speaks TLS only: its plain-text port is closed.
    client = cluster.redis.client()
    assert client.config_get("port") == {"port": "0"}
    assert client.config_get("tls-port") == {"tls-port": str(cluster.redis.port)}
    client.close()

    out = f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json"
    with redis_monitor(cluster.redis) as executed:
        job_id, waited = cluster.run_job(
            bucket, "inputs", f"s3://{bucket}/corpus", out, "--shard-bytes", "1", "--shard-observations", "1"
        )
        assert waited.returncode == exit_codes.TASKS_FAILED
        local = tmp_path / "report.json"
        fetched = cluster.dist("result", job_id, "-o", str(local))
        assert fetched.returncode == exit_codes.TASKS_FAILED, fetched.stderr
        status = cluster.dist("status", job_id)
    report = local.read_bytes()
    assert report == expected_report
    assert ": done;" in status.stdout
    assert "re-hash shards 12/12; evaluation shards 15/15; failures 0" in status.stdout

    # No credential in the report, the workers' logs, any command Redis ran
    # (task messages, results and job state as they were written, transient
    # ones included) or anything left in Redis.
    cluster.assert_no_secret("the report", report)
    commands = bytes(executed).decode("utf-8", errors="replace")
    assert f'"HSET" "eceb:job:{job_id}"' in commands
    assert '"LPUSH" "eceb"' in commands  # task messages sent to the queue
    assert f'"HSETNX" "eceb:job:{job_id}:answers:' in commands  # the shards' answers
    cluster.assert_no_secret("a command Redis ran", commands)
    logs = cluster.workers.logs()
    assert f"{cluster.workers.names[0]} ready." in logs
    assert f"Connected to rediss://:**@127.0.0.1:{cluster.redis.port}/0" in logs
    # Neither kombu nor Celery fell back to an unverified connection.
    assert "insecure SSL" not in logs
    assert "will not validate" not in logs
    cluster.assert_no_secret("the workers' logs", logs)
    keys, blob = redis_dump(cluster.redis)
    names = [key.decode() for key in keys]
    assert f"eceb:job:{job_id}" in names
    assert f"eceb:job:{job_id}:steps" in names  # the steps published, kept for the watch
    cluster.assert_no_secret("Redis", blob)


def test_tls_certificate_verification_stays_on(cluster: Cluster, tmp_path: Path) -> None:
    unknown_job = "0" * 32
    shown = redact_url(cluster.redis.url())
    assert cluster.redis.password not in shown

    # Without the CA bundle the server's certificate is not trusted: no connection.
    untrusted = cluster.dist("status", unknown_job, env=cluster.env(ca=False))
    assert untrusted.returncode == exit_codes.STORAGE, untrusted.stderr
    assert f"cannot reach the broker {shown}" in untrusted.stderr
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted.stderr

    # The CA bundle in the URL's query works as well as ECEB_REDIS_CA_CERTS, and
    # the URL is shown redacted with its query.
    query = f"ssl_cert_reqs=required&ssl_ca_certs={cluster.redis.ca_path}"
    in_query = cluster.dist(
        "status", unknown_job, env=cluster.env(broker_url=f"{cluster.redis.url()}?{query}", ca=False)
    )
    assert in_query.returncode == exit_codes.NO_SUCH_JOB, in_query.stderr
    assert redact_url(f"{cluster.redis.url()}?{query}") == f"{shown}?{query}"

    # A CA that did not sign the server's certificate is not trusted either;
    # the error shows the URL redacted, its query kept.
    other_ca = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other_ca))
    wrong = f"{cluster.redis.url()}?ssl_cert_reqs=required&ssl_ca_certs={other_ca}"
    distrusted = cluster.dist("status", unknown_job, env=cluster.env(broker_url=wrong, ca=False))
    assert distrusted.returncode == exit_codes.STORAGE, distrusted.stderr
    assert f"cannot reach the broker {shown}?ssl_cert_reqs=required&ssl_ca_certs={other_ca}: " in distrusted.stderr
    assert "CERTIFICATE_VERIFY_FAILED" in distrusted.stderr

    # Turning verification off is refused, before any connection.
    insecure = cluster.env(broker_url=f"{cluster.redis.url()}?ssl_cert_reqs=none")
    refused = cluster.dist("status", unknown_job, env=insecure)
    assert refused.returncode == exit_codes.USAGE, refused.stderr
    assert "the broker URL: ssl_cert_reqs=none would not verify the Redis server's certificate" in refused.stderr
    not_started = cluster.dist("worker", env=insecure)
    assert not_started.returncode == exit_codes.USAGE, not_started.stderr
    assert "ssl_cert_reqs=none would not verify" in not_started.stderr

    missing = cluster.env()
    missing["ECEB_REDIS_CA_CERTS"] = str(tmp_path / "no-such-ca.pem")
    no_file = cluster.dist("status", unknown_job, env=missing)
    assert no_file.returncode == exit_codes.USAGE
    assert "ECEB_REDIS_CA_CERTS: no such file\n" in no_file.stderr
    assert "no-such-ca.pem" not in no_file.stderr

    cluster.assert_no_secret("the workers' logs", cluster.workers.logs())


def test_artifact_paths_escaping_the_corpus_are_bad_input(cluster: Cluster, bucket: str) -> None:
    out = f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json"
    offset = log_offset(cluster.s3)
    _job_id, waited = cluster.run_job(bucket, "escape", f"s3://{bucket}/corpus", out)
    assert waited.returncode == exit_codes.BAD_INPUT
    registry = f"s3://{bucket}/escape/registry.jsonl"
    for number, path in ESCAPING_PATHS.items():
        reason = "is absolute (starts with '/')" if path.startswith("/") else "has a '..' segment"
        assert f"error: {registry}, line {number}: field 'path': {path!r} {reason}" in waited.stderr
    assert "3 problems found." in waited.stderr
    assert "no report was written" in waited.stderr
    assert not ObjectStore(cluster.s3.endpoint_url).exists(out)

    # The job read its three inputs and nothing else: no artifact, no decoy.
    requests = s3_requests_since(cluster.s3, offset)
    assert {r.bucket for r in requests} == {bucket}
    read = {r.key for r in requests if r.method in ("GET", "HEAD")}
    out_key = out.split("/", 3)[3]
    assert read - {out_key} == {f"escape/{name}" for name in INPUTS}
    assert_writes_only_beside(requests, out_key, report=False)


@pytest.mark.parametrize("corpus_prefix", ["corpus", "corpus/"], ids=["no-slash", "trailing-slash"])
def test_job_reads_only_under_its_prefixes(
    cluster: Cluster, bucket: str, expected_report: bytes, tmp_path: Path, corpus_prefix: str
) -> None:
    report_dir = f"reports/{uuid.uuid4().hex}"
    out_key = f"{report_dir}/report.json"
    offset = log_offset(cluster.s3)
    job_id, waited = cluster.run_job(
        bucket, "inputs", f"s3://{bucket}/{corpus_prefix}", f"s3://{bucket}/{out_key}", "--shard-bytes", "40000"
    )
    assert waited.returncode == exit_codes.TASKS_FAILED
    local = tmp_path / "report.json"
    fetched = cluster.dist("result", job_id, "-o", str(local))
    assert fetched.returncode == exit_codes.TASKS_FAILED, fetched.stderr
    assert local.read_bytes() == expected_report

    requests = s3_requests_since(cluster.s3, offset)
    assert requests, "the S3 server logged no request"
    assert {r.bucket for r in requests} == {bucket}
    # No listing: every read names its key.
    assert all(r.key for r in requests), [r for r in requests if not r.key]
    inputs = {f"inputs/{name}" for name in INPUTS}
    corpus = {f"corpus/{path}" for path in registry_paths()}
    reads = {r.key for r in requests if r.method in ("GET", "HEAD")}
    assert reads <= inputs | corpus | {out_key}, sorted(reads - inputs - corpus - {out_key})
    assert corpus <= reads  # every artifact was re-hashed, from under corpus/
    assert not [key for key in reads if key.startswith("corpus-other") or key in ("corpus", "outside.txt")]
    # Writes: the report, through a temporary object beside it.
    assert_writes_only_beside(requests, out_key, report=True)
    cluster.assert_no_secret("the workers' logs", cluster.workers.logs())


def test_object_urls_carrying_credentials_are_refused(cluster: Cluster, bucket: str) -> None:
    secret = cluster.s3.secrets[0]
    inputs = (f"s3://{bucket}/inputs/benchmark.json", f"s3://{bucket}/inputs/run.json")
    out = f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json"
    corpus = cluster.dist("submit", *inputs, "--corpus", f"s3://testing:{secret}@{bucket}/corpus", "--out", out)
    assert corpus.returncode == exit_codes.USAGE, corpus.stderr
    assert "--corpus: an s3:// URL takes no credentials" in corpus.stderr
    output = cluster.dist(
        "submit", *inputs, "--corpus", f"s3://{bucket}/corpus", "--out", f"s3://k:{secret}@{bucket}/r"
    )
    assert output.returncode == exit_codes.USAGE, output.stderr
    assert "--out: an s3:// URL takes no credentials" in output.stderr


def test_rediss_urls_get_verifying_tls_settings(tmp_path: Path) -> None:
    from eceb_worker.cluster.app import make_app, redis_tls_options

    ca = tmp_path / "ca.pem"
    trustme.CA().cert_pem.write_to_path(str(ca))
    required = {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    assert redis_tls_options("redis://:pw@h:6379/0", "the broker URL", str(ca)) is None
    assert redis_tls_options("rediss://:pw@h:6380/0", "the broker URL", None) == required
    assert redis_tls_options("redis://:a@h1/0;rediss://:b@h2/0", "the broker URL", str(ca)) == {
        **required,
        "ssl_ca_certs": str(ca),
    }
    for query in ("ssl_cert_reqs=required", "ssl_cert_reqs=CERT_REQUIRED", f"ssl_ca_certs={ca}"):
        assert redis_tls_options(f"rediss://:pw@h:6380/0?{query}", "the broker URL", None) == required
    for query in ("ssl_cert_reqs=none", "ssl_cert_reqs=CERT_NONE", "ssl_cert_reqs=optional", "ssl_cert_reqs="):
        with pytest.raises(ValueError, match="would not verify the Redis server's certificate") as refused:
            redis_tls_options(f"rediss://:hunter2@h:6380/0?{query}", "the result backend URL", str(ca))
        assert str(refused.value).startswith("the result backend URL: ")
        assert "hunter2" not in str(refused.value)
    for query in ("ssl_check_hostname=false", "ssl_check_hostname=False", "ssl_check_hostname=0"):
        with pytest.raises(ValueError, match="would accept a certificate issued to another host"):
            redis_tls_options(f"rediss://:pw@h:6380/0?{query}", "the broker URL", None)
    with pytest.raises(ValueError, match="ECEB_REDIS_CA_CERTS: no such file"):
        redis_tls_options("rediss://:pw@h:6380/0", "the broker URL", str(tmp_path / "missing.pem"))

    app = make_app("rediss://:pw@h:6380/0", "rediss://:pw@h:6380/1", redis_ca_certs=str(ca))
    assert app.conf.broker_use_ssl == app.conf.redis_backend_use_ssl == {**required, "ssl_ca_certs": str(ca)}
    plain = make_app("redis://:pw@h:6379/0")
    assert not plain.conf.broker_use_ssl
    assert not plain.conf.redis_backend_use_ssl
