"""Corpus verification on real Celery workers over a real Redis
(``eceb-dist verify``, ECEB-0.1 §5 at scale).

Every module-scoped worker group (1, then 2 worker processes) runs against
the session's loopback ``redis-server``; the verification report must be
byte for byte the one ``eceb corpus verify --json`` prints, whatever the
shard size, and the exit codes the same.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from eceb_cli import exit_codes
from eceb_worker.cluster.app import make_app
from eceb_worker.cluster.tasks import SHARD_TASKS
from eceb_worker.corpus.planning import plan_rehash
from eceb_worker.corpus.registry import Registry, build_registry, registry_lines
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.corpus.verification import ExpectedArtifact
from eceb_worker.io.local_corpus import LARGE_FILE_BYTES
from eceb_worker.pipeline.messages import CheckedRegistry, RehashAnswer, RehashTask, ShardTask, Stage
from eceb_worker.pipeline.shards import Workspace
from tests.support.dist_support import WAIT_S, dist
from tests.support.helpers import artifact
from tests.support.redis_server import CeleryWorkers, RedisServer
from tests.support.s3_server import S3Server


@pytest.fixture(scope="module")
def client_app(redis_server: RedisServer) -> Iterator[Any]:
    app = make_app(redis_server.url())
    yield app
    app.close()


def corpus_files() -> dict[str, bytes]:
    rng = random.Random(7)
    files = {f"docs/d{i % 4}/note-{i:02d}.md": rng.randbytes(rng.randrange(0, 6000)) for i in range(44)}
    files["big/clean.bin"] = rng.randbytes(LARGE_FILE_BYTES + 4321)  # hashed on all cores by BLAKE3
    files["big/stale.bin"] = rng.randbytes(LARGE_FILE_BYTES * 2)
    files["big/truncated.bin"] = rng.randbytes(LARGE_FILE_BYTES + 1)
    files["empty.md"] = b""
    files["nested/deeper/still/ok.txt"] = b"fine\n"
    return files


def write_corpus(root: Path, files: dict[str, bytes]) -> Registry:
    for name, content in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return build_registry(artifact(name, content=content) for name, content in files.items())


def tamper(root: Path, *, links: bool) -> None:
    """Make every kind of finding the storage can report."""
    (root / "docs/d1/note-05.md").write_bytes(b"changed")
    (root / "docs/d2/note-10.md").unlink()
    big = bytearray((root / "big/stale.bin").read_bytes())
    big[LARGE_FILE_BYTES + 17] ^= 0xFF  # same size, one byte flipped
    (root / "big/stale.bin").write_bytes(bytes(big))
    (root / "big/truncated.bin").write_bytes((root / "big/truncated.bin").read_bytes()[:1000])
    (root / "docs/d3/note-43.md").unlink()
    (root / "docs/d3/note-43.md").mkdir()
    if links:
        outside = root.parent / "outside.md"
        outside.write_bytes(b"not in the corpus")
        (root / "docs/d0/note-00.md").unlink()
        (root / "docs/d0/note-00.md").symlink_to(outside)
        (root / "docs/d0/note-04.md").unlink()
        (root / "docs/d0/note-04.md").symlink_to(root / "nowhere")


def shard_bytes_for(registry: Registry, count: int) -> int:
    """The smallest shard size cutting the registry into ``count`` shards, as a
    job cuts them (the last ones shrinking: it knows the count)."""
    sizes = [a.size_bytes for a in registry.artifacts]
    low, high = 1, sum(sizes) + 10**9
    while low < high:
        middle = (low + high) // 2
        if len(plan_rehash(sizes, shard_bytes=middle, taper=True)) <= count:
            high = middle
        else:
            low = middle + 1
    assert len(plan_rehash(sizes, shard_bytes=low, taper=True)) == count
    return low


@pytest.fixture(scope="module")
def local_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Registry, Path, Path]:
    """A tampered corpus in a directory, and its registry file beside it."""
    directory = tmp_path_factory.mktemp("verify-local")
    root = directory / "corpus"
    registry = write_corpus(root, corpus_files())
    tamper(root, links=True)
    registry_file = directory / "registry.jsonl"
    registry_file.write_bytes(b"".join(registry_lines(registry)))
    return registry, registry_file, root


def embedded(
    registry_file: Path, source: str, *, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``eceb corpus verify REGISTRY --source SOURCE --json --unregistered ignore`` (the
    cluster does not look for unregistered files)."""
    command = ["corpus", "verify", str(registry_file), "--source", source, "--json", "--unregistered", "ignore"]
    return subprocess.run(
        [sys.executable, "-m", "eceb_cli", *command],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )


def verify_on_cluster(
    redis_server: RedisServer, s3_server: S3Server, registry: str, source: str, *options: str
) -> tuple[str, subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """``eceb-dist verify`` then ``wait`` and ``result``: the job id and what the last two printed."""
    submitted = dist(redis_server, s3_server, "verify", registry, "--corpus", source, *options)
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
    fetched = dist(redis_server, s3_server, "result", job_id)
    return job_id, waited, fetched


LOCAL_FINDINGS = {
    "big/stale.bin": "stale",
    "big/truncated.bin": "stale",
    "docs/d0/note-00.md": "outside_corpus",
    "docs/d0/note-04.md": "missing",
    "docs/d1/note-05.md": "stale",
    "docs/d2/note-10.md": "missing",
    "docs/d3/note-43.md": "unreadable",
}


@pytest.mark.parametrize("shards", [1, 3, 17])
def test_local_corpus_verifies_as_eceb_corpus_verify(
    redis_server: RedisServer,
    s3_server: S3Server,
    workers: CeleryWorkers,
    local_corpus: tuple[Registry, Path, Path],
    shards: int,
) -> None:
    registry, registry_file, root = local_corpus
    shard_bytes = str(shard_bytes_for(registry, shards))
    job_id, waited, fetched = verify_on_cluster(
        redis_server, s3_server, str(registry_file), str(root), "--shard-bytes", shard_bytes
    )
    expected = embedded(registry_file, str(root))
    assert expected.returncode == exit_codes.VERIFICATION_FAILED
    assert fetched.returncode == waited.returncode == exit_codes.VERIFICATION_FAILED, waited.stderr
    assert fetched.stdout == expected.stdout
    text = subprocess.run(
        [
            sys.executable,
            "-m",
            "eceb_cli",
            "corpus",
            "verify",
            str(registry_file),
            "--source",
            str(root),
            "--unregistered",
            "ignore",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (waited.stdout, waited.stderr) == (text.stdout, text.stderr)
    report = json.loads(fetched.stdout)
    assert {f["path"]: f["status"] for f in report["findings"]} == LOCAL_FINDINGS
    status = dist(redis_server, s3_server, "status", job_id)
    assert f"done; re-hash shards {shards}/{shards}; failures 0" in status.stdout
    assert f"{report['verified_count']}/{report['artifact_count']} artifacts verified" in status.stdout


def test_s3_corpus_verifies_as_eceb_corpus_verify(
    redis_server: RedisServer, s3_server: S3Server, s3_bucket: str, workers: CeleryWorkers, tmp_path: Path
) -> None:
    root = tmp_path / "corpus"
    registry = write_corpus(root, corpus_files())
    tamper(root, links=False)
    s3_server.upload_tree(root, s3_bucket, "corpus")
    registry_file = tmp_path / "registry.jsonl"
    registry_file.write_bytes(b"".join(registry_lines(registry)))
    client = s3_server.client()
    client.put_object(Bucket=s3_bucket, Key="registry.jsonl", Body=registry_file.read_bytes())
    source = f"s3://{s3_bucket}/corpus"
    expected = embedded(registry_file, source, env={"ECEB_S3_ENDPOINT_URL": s3_server.endpoint_url})
    assert expected.returncode == exit_codes.VERIFICATION_FAILED, expected.stderr
    for shards in (1, 17):
        out = f"s3://{s3_bucket}/reports/{uuid.uuid4().hex}.json"
        _, waited, fetched = verify_on_cluster(
            redis_server,
            s3_server,
            f"s3://{s3_bucket}/registry.jsonl",
            source,
            "--shard-bytes",
            str(shard_bytes_for(registry, shards)),
            "--out",
            out,
        )
        assert waited.returncode == fetched.returncode == exit_codes.VERIFICATION_FAILED, waited.stderr
        assert fetched.stdout == expected.stdout
        stored = client.get_object(Bucket=s3_bucket, Key=out.split("/", 3)[3])["Body"].read()
        assert stored.decode() == expected.stdout
        assert {f["path"]: f["status"] for f in json.loads(fetched.stdout)["findings"]} == {
            "big/stale.bin": "stale",
            "big/truncated.bin": "stale",
            "docs/d1/note-05.md": "stale",
            "docs/d2/note-10.md": "missing",
            "docs/d3/note-43.md": "missing",  # a directory uploads as nothing
        }


@pytest.mark.two_workers
def test_a_verified_corpus_exits_0(
    redis_server: RedisServer, s3_server: S3Server, workers: CeleryWorkers, tmp_path: Path
) -> None:
    root = tmp_path / "corpus"
    registry = write_corpus(root, {"a.md": b"a", "b/c.md": b"c"})
    registry_file = tmp_path / "registry.jsonl"
    registry_file.write_bytes(b"".join(registry_lines(registry)))
    _, waited, fetched = verify_on_cluster(redis_server, s3_server, str(registry_file), str(root))
    assert waited.returncode == fetched.returncode == exit_codes.OK, waited.stderr
    assert fetched.stdout == embedded(registry_file, str(root)).stdout
    assert waited.stdout.startswith("verified: 2/2 artifacts match")


class Payload:
    """Unpickling this creates a directory: proof that a pickle was loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.mkdir, (str(self.marker),))


def rehash_task(registry: Registry, root: Path) -> RehashTask:
    """A shard task carrying the first artifact of ``registry``."""
    checked = CheckedRegistry(
        location="", corpus_root=registry.corpus_root, artifact_count=registry.artifact_count, rehash_shards=1
    )
    [shard] = plan_rehash([registry.artifacts[0].size_bytes])
    return RehashTask(
        corpus=StorageSpec(source=str(root)),
        registry=checked,
        shard=shard,
        artifacts=(ExpectedArtifact.of(registry.artifacts[0]),),
    )


@pytest.mark.two_workers
def test_pickled_message_is_refused(
    client_app: Any,
    redis_server: RedisServer,
    s3_server: S3Server,
    workers: CeleryWorkers,
    local_corpus: tuple[Registry, Path, Path],
    tmp_path: Path,
) -> None:
    marker = tmp_path / "unpickled"
    pickled = client_app.send_task(SHARD_TASKS[Stage.REHASH], args=(Payload(marker),), serializer="pickle")
    # A job sent afterwards runs: the workers are consuming.
    _, registry_file, root = local_corpus
    _, waited, _ = verify_on_cluster(redis_server, s3_server, str(registry_file), str(root))
    assert waited.returncode == exit_codes.VERIFICATION_FAILED, waited.stderr  # ran to its end (its planted findings)
    deadline = time.monotonic() + float(WAIT_S)
    refusal = "Refusing to deserialize untrusted content of type pickle"
    while refusal not in workers.logs():
        assert time.monotonic() < deadline, "no worker reported refusing the pickled message"
        time.sleep(0.05)
    assert pickled.state == "PENDING"  # never ran, never answered
    assert not marker.exists()


@pytest.mark.two_workers
def test_failing_shard_fails_the_job_naming_it(
    redis_server: RedisServer, s3_server: S3Server, workers: CeleryWorkers, local_corpus: tuple[Registry, Path, Path]
) -> None:
    registry, registry_file, root = local_corpus
    absent = str(root.parent / "absent")
    _, waited, _ = verify_on_cluster(redis_server, s3_server, str(registry_file), absent, "--shard-bytes", "1")
    assert waited.returncode == exit_codes.STORAGE, waited.stderr
    assert f"of {registry.artifact_count} re-hash shards failed; first: re-hash shard " in waited.stderr
    assert "no such directory" in waited.stderr
    assert "no report was written" in waited.stderr
    deadline = time.monotonic() + 10  # worker logs reach their files a little later
    while "Retry in" not in workers.logs() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "Retry in" in workers.logs()  # retried before failing


@pytest.mark.two_workers
def test_worker_logs_show_no_credential(redis_server: RedisServer, s3_server: S3Server, workers: CeleryWorkers) -> None:
    logs = workers.logs()
    assert "ready." in logs
    assert "redis://:**@127.0.0.1" in logs  # Celery's own banner masks the password
    for secret in (redis_server.password, *s3_server.secrets):
        assert secret not in logs


def test_unreachable_broker_is_a_storage_error_without_password(
    local_corpus: tuple[Registry, Path, Path], s3_server: S3Server
) -> None:
    from tests.support.redis_server import _free_loopback_port

    _, registry_file, root = local_corpus
    password = "unreachable-pw-never-print"
    broker = f"redis://:{password}@127.0.0.1:{_free_loopback_port()}/0"
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "eceb_cli.dist", "verify", str(registry_file), "--corpus", str(root)],
        capture_output=True,
        text=True,
        env={**os.environ, "ECEB_BROKER_URL": broker},
        check=False,
    )
    assert time.monotonic() - started < 10
    assert result.returncode == exit_codes.STORAGE, result.stderr
    assert password not in result.stdout + result.stderr
    assert "redis://***@127.0.0.1" in result.stderr


def test_shard_tasks_refuse_malformed_messages(local_corpus: tuple[Registry, Path, Path]) -> None:
    registry, _, root = local_corpus
    good = msgspec.to_builtins(rehash_task(registry, root))
    answer = Workspace().run(msgspec.convert(good, ShardTask))
    assert json.loads(json.dumps(msgspec.to_builtins(answer)))["type"] == "rehash"  # JSON-able
    assert isinstance(answer, RehashAnswer)
    assert answer.verification.checked == 1
    for bad in (
        {**good, "shard": {**good["shard"], "start": -1}},
        {**good, "type": "unknown"},
        {**good, "content": "corpus bytes never travel"},
    ):
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert(bad, ShardTask)


def test_app_configuration() -> None:
    conf = make_app("redis://127.0.0.1:1/0", visibility_timeout=7200, max_tasks_per_child=50).conf
    assert conf.accept_content == ["json"]
    assert conf.result_accept_content == ["json"]
    assert conf.task_serializer == conf.result_serializer == "json"
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.result_expires == 86400
    assert conf.broker_transport_options["visibility_timeout"] == 7200
    assert conf.worker_max_tasks_per_child == 50
    assert conf.result_backend == "redis://127.0.0.1:1/0"
    assert make_app("redis://127.0.0.1:1/0", "redis://127.0.0.1:1/1").conf.result_backend == "redis://127.0.0.1:1/1"
    with pytest.raises(ValueError, match="at least 1"):
        make_app("redis://127.0.0.1:1/0", visibility_timeout=0)


@pytest.mark.two_workers
def test_a_report_never_overwrites_an_input(
    redis_server: RedisServer, s3_server: S3Server, s3_bucket: str, workers: CeleryWorkers, tmp_path: Path
) -> None:
    root = tmp_path / "corpus"
    registry = write_corpus(root, {"a.md": b"a"})
    body = b"".join(registry_lines(registry))
    client = s3_server.client()
    client.put_object(Bucket=s3_bucket, Key="registry.jsonl", Body=body)
    url = f"s3://{s3_bucket}/registry.jsonl"
    _, waited, _ = verify_on_cluster(
        redis_server, s3_server, url, str(root), "--out", f"s3://{s3_bucket}//registry.jsonl"
    )
    assert waited.returncode == exit_codes.OUTPUT, waited.stderr
    assert "is an input of this job" in waited.stderr
    assert client.get_object(Bucket=s3_bucket, Key="registry.jsonl")["Body"].read() == body


@pytest.mark.two_workers
def test_a_registry_that_is_not_a_regular_file_fails_the_job_as_bad_input(
    redis_server: RedisServer, s3_server: S3Server, workers: CeleryWorkers, tmp_path: Path
) -> None:
    """A FIFO would hold a worker for ever, a device fill its memory."""
    fifo = tmp_path / "registry.jsonl"
    os.mkfifo(fifo)
    for registry in (str(fifo), "/dev/zero"):
        _, waited, _ = verify_on_cluster(redis_server, s3_server, registry, str(tmp_path))
        assert waited.returncode == exit_codes.BAD_INPUT, waited.stderr
        assert f"{registry}: cannot read: not a regular file" in waited.stderr
