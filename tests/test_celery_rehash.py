"""Corpus re-hashing on real Celery workers over a real Redis (ECEB-0.1 §5 at scale).

Every module-scoped worker group (1, then 2 worker processes) runs against
the session's loopback ``redis-server``; the reports must be byte for byte
those of the embedded executor.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from eceb_worker.brokers import redact_url
from eceb_worker.brokers.celery_app import REHASH_TASK, RehashMessage, make_app, rehash_shard
from eceb_worker.brokers.celery_executor import CeleryExecutor
from eceb_worker.corpus import verify_corpus
from eceb_worker.engine.plan import plan_rehash
from eceb_worker.engine.registry import Registry, build_registry
from eceb_worker.engine.verification import DigestCheck, ShardVerification, VerificationReport
from eceb_worker.errors import StorageError
from eceb_worker.executors import InProcessExecutor
from eceb_worker.storage import StorageSpec
from eceb_worker.storage.local import LARGE_FILE_BYTES
from tests.helpers import artifact
from tests.redis_server import CeleryWorkers, RedisServer
from tests.s3_server import S3Server

WAIT_S = 60.0


@pytest.fixture(scope="module")
def client_app(redis_server: RedisServer) -> Iterator[Any]:
    app = make_app(redis_server.url())
    yield app
    app.close()


@pytest.fixture
def executor(client_app: Any, workers: CeleryWorkers) -> CeleryExecutor:
    return CeleryExecutor(client_app, timeout=WAIT_S)


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
    """The smallest shard size cutting the registry into ``count`` shards."""
    sizes = [a.size_bytes for a in registry.artifacts]
    low, high = 1, sum(sizes) + 10**9
    while low < high:
        middle = (low + high) // 2
        if len(plan_rehash(sizes, shard_bytes=middle)) <= count:
            high = middle
        else:
            low = middle + 1
    assert len(plan_rehash(sizes, shard_bytes=low)) == count
    return low


@pytest.fixture(scope="module")
def local_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Registry, StorageSpec]:
    root = tmp_path_factory.mktemp("celery-local") / "corpus"
    registry = write_corpus(root, corpus_files())
    tamper(root, links=True)
    return registry, StorageSpec(source=str(root))


def compare(registry: Registry, spec: StorageSpec, executor: CeleryExecutor, shards: int) -> VerificationReport:
    shard_bytes = shard_bytes_for(registry, shards)
    seen: list[ShardVerification] = []
    started = time.monotonic()
    distributed = verify_corpus(registry, spec, executor=executor, shard_bytes=shard_bytes, on_shard=seen.append)
    elapsed = time.monotonic() - started
    embedded = verify_corpus(registry, spec, executor=InProcessExecutor(1), shard_bytes=shard_bytes)
    assert msgspec.json.encode(distributed) == msgspec.json.encode(embedded)
    planned = plan_rehash([a.size_bytes for a in registry.artifacts], shard_bytes=shard_bytes)
    assert sorted(s.start for s in seen) == [s.start for s in planned]
    assert len(seen) == shards
    assert elapsed < WAIT_S
    # Results come back in shard order, as the embedded executor's do.
    direct = executor.rehash(spec, registry.artifacts, planned)
    assert direct == InProcessExecutor(1).rehash(spec, registry.artifacts, planned)
    assert [s.start for s in direct] == [s.start for s in planned]
    return distributed


@pytest.mark.parametrize("shards", [1, 3, 17])
def test_local_corpus_verifies_as_in_process(
    local_corpus: tuple[Registry, StorageSpec], executor: CeleryExecutor, shards: int
) -> None:
    registry, spec = local_corpus
    report = compare(registry, spec, executor, shards)
    assert {f.path: f.status for f in report.findings} == {
        "big/stale.bin": "stale",
        "big/truncated.bin": "stale",
        "docs/d0/note-00.md": "outside_corpus",
        "docs/d0/note-04.md": "missing",
        "docs/d1/note-05.md": "stale",
        "docs/d2/note-10.md": "missing",
        "docs/d3/note-43.md": "unreadable",
    }


@pytest.mark.parametrize(
    ("task_bytes", "task_workers"), [(None, None), (1, None), (20_000, None), (20_000, 2), (10**12, 3)]
)
def test_shards_sent_together_give_the_same_results(
    local_corpus: tuple[Registry, StorageSpec],
    client_app: Any,
    workers: CeleryWorkers,
    task_bytes: int | None,
    task_workers: int | None,
) -> None:
    """However shards are grouped into tasks, results come back one per shard,
    each the embedded executor's (findings and bytes split back exactly)."""
    registry, spec = local_corpus
    executor = CeleryExecutor(client_app, timeout=WAIT_S, task_bytes=task_bytes, workers=task_workers)
    compare(registry, spec, executor, 17)


def test_shards_apart_are_never_sent_together(
    local_corpus: tuple[Registry, StorageSpec], executor: CeleryExecutor
) -> None:
    registry, spec = local_corpus
    planned = plan_rehash([a.size_bytes for a in registry.artifacts], shard_bytes=shard_bytes_for(registry, 9))
    subset = planned[:3] + planned[5:]  # shards 3 and 4 left out: their artifacts must not be hashed
    assert executor.rehash(spec, registry.artifacts, subset) == InProcessExecutor(1).rehash(
        spec, registry.artifacts, subset
    )


def test_executor_refuses_invalid_grouping(client_app: Any) -> None:
    with pytest.raises(ValueError, match="task_bytes"):
        CeleryExecutor(client_app, task_bytes=0)
    with pytest.raises(ValueError, match="workers"):
        CeleryExecutor(client_app, workers=0)


def test_s3_corpus_verifies_as_in_process(
    s3_server: S3Server, s3_bucket: str, executor: CeleryExecutor, tmp_path: Path
) -> None:
    root = tmp_path / "corpus"
    registry = write_corpus(root, corpus_files())
    tamper(root, links=False)
    s3_server.upload_tree(root, s3_bucket, "corpus")
    spec = StorageSpec(source=f"s3://{s3_bucket}/corpus", endpoint_url=s3_server.endpoint_url, concurrency=8)
    for shards in (1, 17):
        report = compare(registry, spec, executor, shards)
        assert {f.path: f.status for f in report.findings} == {
            "big/stale.bin": "stale",
            "big/truncated.bin": "stale",
            "docs/d1/note-05.md": "stale",
            "docs/d2/note-10.md": "missing",
            "docs/d3/note-43.md": "missing",  # a directory uploads as nothing
        }


class Payload:
    """Unpickling this creates a directory: proof that a pickle was loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.mkdir, (str(self.marker),))


def test_pickled_message_is_refused(
    client_app: Any, workers: CeleryWorkers, local_corpus: tuple[Registry, StorageSpec], tmp_path: Path
) -> None:
    marker = tmp_path / "unpickled"
    pickled = client_app.send_task(REHASH_TASK, args=(Payload(marker),), serializer="pickle")
    # A JSON task sent afterwards runs: the workers are consuming.
    registry, spec = local_corpus
    first = registry.artifacts[0]
    message = RehashMessage(spec=spec, start=0, paths=[first.path], digests=[first.source_digest])
    answered = client_app.send_task(REHASH_TASK, args=(msgspec.to_builtins(message),))
    assert answered.get(timeout=WAIT_S) is not None
    deadline = time.monotonic() + WAIT_S
    refusal = "Refusing to deserialize untrusted content of type pickle"
    while refusal not in workers.logs():
        assert time.monotonic() < deadline, "no worker reported refusing the pickled message"
        time.sleep(0.05)
    assert pickled.state == "PENDING"  # never ran, never answered
    assert not marker.exists()
    answered.forget()


def test_failing_shard_raises_storage_error_naming_it(
    executor: CeleryExecutor, workers: CeleryWorkers, local_corpus: tuple[Registry, StorageSpec], tmp_path: Path
) -> None:
    registry, _ = local_corpus
    spec = StorageSpec(source=str(tmp_path / "absent"))
    shards = plan_rehash([a.size_bytes for a in registry.artifacts], shard_bytes=10**12)
    with pytest.raises(StorageError) as caught:
        executor.rehash(spec, registry.artifacts, shards)
    message = str(caught.value)
    assert f"shard 0 (artifacts 0..{len(registry.artifacts) - 1})" in message
    assert "no such directory" in message
    several = plan_rehash([a.size_bytes for a in registry.artifacts], shard_bytes=1)
    with pytest.raises(StorageError) as caught:
        executor.rehash(spec, registry.artifacts, several)  # all sent as one task
    assert f"shards 0..{len(several) - 1} (artifacts 0..{len(registry.artifacts) - 1})" in str(caught.value)
    deadline = time.monotonic() + 10  # worker logs reach their files a little later
    while "Retry in" not in workers.logs() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "Retry in" in workers.logs()  # retried before failing


def test_worker_logs_show_no_credential(redis_server: RedisServer, s3_server: S3Server, workers: CeleryWorkers) -> None:
    logs = workers.logs()
    assert "ready." in logs
    assert "redis://:**@127.0.0.1" in logs  # Celery's own banner masks the password
    for secret in (redis_server.password, *s3_server.secrets):
        assert secret not in logs


def test_unreachable_broker_is_a_storage_error_without_password(
    local_corpus: tuple[Registry, StorageSpec], redis_server: RedisServer
) -> None:
    from tests.redis_server import _free_loopback_port

    password = "unreachable-pw-never-print"
    app = make_app(f"redis://:{password}@127.0.0.1:{_free_loopback_port()}/0")
    try:
        registry, spec = local_corpus
        started = time.monotonic()
        with pytest.raises(StorageError) as caught:
            verify_corpus(registry, spec, executor=CeleryExecutor(app, timeout=10))
        assert time.monotonic() - started < 5
    finally:
        app.close()
    assert password not in str(caught.value)
    assert "redis://:***@127.0.0.1" in str(caught.value)


def test_task_refuses_malformed_messages(local_corpus: tuple[Registry, StorageSpec]) -> None:
    _, spec = local_corpus
    good = msgspec.to_builtins(RehashMessage(spec=spec, start=0, paths=[], digests=[]))
    answer = rehash_shard(good)
    assert json.loads(json.dumps(answer)) == [0, []]  # JSON-able
    assert msgspec.convert(answer, DigestCheck) == DigestCheck(bytes_hashed=0, failures=())
    for bad in (
        {**good, "paths": ["a.md"]},  # no digest for it
        {**good, "start": -1},
        {**good, "content": "corpus bytes never travel"},
    ):
        with pytest.raises(msgspec.ValidationError):
            rehash_shard(bad)


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


def test_redact_url() -> None:
    assert redact_url("redis://:pw@127.0.0.1:6379/0") == "redis://:***@127.0.0.1:6379/0"
    assert redact_url("redis://user:pw@127.0.0.1/0") == "redis://user:***@127.0.0.1/0"
    assert redact_url("rediss://token@127.0.0.1/0") == "rediss://***@127.0.0.1/0"
    assert redact_url("redis://127.0.0.1/0?password=pw&db=2") == "redis://127.0.0.1/0?password=***&db=2"
    assert redact_url("redis://:a@h1/0;redis://:b@h2/0") == "redis://:***@h1/0;redis://:***@h2/0"
    assert redact_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


def test_engine_imports_no_broker_or_cloud_library() -> None:
    code = (
        "import importlib, pkgutil, sys, eceb_worker.engine as e\n"
        "for m in pkgutil.iter_modules(e.__path__): importlib.import_module(f'eceb_worker.engine.{m.name}')\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'celery', 'kombu', 'redis', 'boto3', 'botocore'}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
