"""A registration's job (``eceb-dist register``) run in this process, its
steps and shards as the cluster runs them (:class:`~eceb_worker.pipeline.jobs.Job`
over the loopback S3 server): the registry equals ``eceb corpus
register``'s for corpora the cluster tests do not hold (an empty prefix,
folder markers alone, one flat directory cut at its page ends), and the
partials it reads are checked.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import msgspec
import pytest

from eceb_worker.corpus.registration import ListedRow
from eceb_worker.corpus.rules import parse_rules
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.errors import InputError
from eceb_worker.pipeline.jobs import Job, MapStage, ThisProcess, run_job
from eceb_worker.pipeline.messages import HashRangeTask, JobInputs, JobKind, JobMessage, ListTask, RegistrationOptions
from eceb_worker.pipeline.shards import Workspace
from tests.support.s3_server import S3Server

RULES = b'schema = "symgliph.eceb/rules-v0.1"\n[[rule]]\nglob = "**"\nkind = "code"\nclassification = "internal"\n'


def _message(s3_server: S3Server, source: str, out: str, shard_bytes: int = 1) -> JobMessage:
    return JobMessage(
        job_id=uuid.uuid4().hex,
        kind=JobKind.REGISTER,
        inputs=JobInputs(endpoint_url=s3_server.endpoint_url),
        corpus=StorageSpec(source=source, endpoint_url=s3_server.endpoint_url),
        out=out,
        shard_bytes=shard_bytes,
        registration=RegistrationOptions(rules=parse_rules(RULES, "rules.toml"), rules_name="rules.toml"),
    )


def _local(s3_server: S3Server, source: str, tmp_path: Path) -> bytes:
    rules = tmp_path / "rules.toml"
    rules.write_bytes(RULES)
    out = tmp_path / f"{uuid.uuid4().hex}.jsonl"
    result = subprocess.run(
        [
            *(sys.executable, "-m", "eceb_cli", "corpus", "register", source),
            *("--rules", str(rules), "-o", str(out), "--endpoint-url", s3_server.endpoint_url),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return out.read_bytes()


@pytest.mark.parametrize(
    ("keys", "shard_bytes"),
    [
        ((), 1),
        (("markers/", "a/b/"), 1),
        (tuple(f"flat/{index:04d} x.md" for index in range(1100)), 256 * 1024 * 1024),
        (("one.md",), 1),
    ],
    ids=["empty", "folder-markers-alone", "one-flat-directory", "one-object"],
)
def test_the_job_in_this_process_writes_the_registry_eceb_corpus_register_writes(
    s3_server: S3Server, s3_bucket: str, tmp_path: Path, keys: tuple[str, ...], shard_bytes: int
) -> None:
    client = s3_server.client(max_pool_connections=16)

    def put(key: str) -> None:
        client.put_object(Bucket=s3_bucket, Key=f"corpus/{key}", Body=b"" if key.endswith("/") else key.encode())

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(put, keys))
    source, out = f"s3://{s3_bucket}/corpus", f"s3://{s3_bucket}/out/registry.jsonl"
    finished = run_job(Job(_message(s3_server, source, out, shard_bytes)), ThisProcess())
    registry = client.get_object(Bucket=s3_bucket, Key="out/registry.jsonl")["Body"].read()
    assert registry == _local(s3_server, source, tmp_path)
    assert finished.registered is not None
    assert finished.registered.artifact_count == len([k for k in keys if not k.endswith("/")])


def test_a_hash_shard_refuses_rows_that_are_not_those_planned(s3_server: S3Server, s3_bucket: str) -> None:
    client = s3_server.client()
    for key in ("a.md", "b.md", "c.md"):
        client.put_object(Bucket=s3_bucket, Key=f"corpus/{key}", Body=b"x")
    job = Job(_message(s3_server, f"s3://{s3_bucket}/corpus", f"s3://{s3_bucket}/out/registry.jsonl"))
    workspace = Workspace()
    listed = job.start()
    answers = [workspace.run(task) for task in listed.tasks if isinstance(task, ListTask)]
    hashing = job.after(listed.stage, answers)
    assert isinstance(hashing, MapStage)
    task = next(task for task in hashing.tasks if isinstance(task, HashRangeTask))
    moved = msgspec.structs.replace(task, range=msgspec.structs.replace(task.range, first_path="z.md"))
    with pytest.raises(InputError, match="are not the rows its listing shard wrote"):
        workspace.run(moved)


def test_a_row_reused_by_an_incremental_registration_is_not_read(s3_server: S3Server, s3_bucket: str) -> None:
    """The seam of an incremental registration: a row given a previous
    digest by the listing shard's ``reuse`` is registered with it and its
    listed size, its object never read (here: deleted once listed)."""
    from eceb_worker.io.objects import ObjectStore
    from eceb_worker.io.storage import open_storage
    from eceb_worker.pipeline.register_job import hash_shard, list_shard

    client = s3_server.client()
    for key in ("kept.md", "same.md"):
        client.put_object(Bucket=s3_bucket, Key=f"corpus/{key}", Body=key.encode())
    message = _message(s3_server, f"s3://{s3_bucket}/corpus", f"s3://{s3_bucket}/out/registry.jsonl", 10**9)
    job = Job(message)
    listing = job.start()
    previous = "ab" * 32

    def reuse(rows: Iterator[ListedRow]) -> Iterator[ListedRow]:
        for row in rows:
            yield msgspec.structs.replace(row, reuse_digest=previous) if row.path == "same.md" else row

    store = ObjectStore(s3_server.endpoint_url)
    answers = [list_shard(task, store.client, reuse=reuse) for task in listing.tasks if isinstance(task, ListTask)]
    client.delete_object(Bucket=s3_bucket, Key="corpus/same.md")
    hashing = job.after(listing.stage, answers)
    assert isinstance(hashing, MapStage)
    (task,) = [task for task in hashing.tasks if isinstance(task, HashRangeTask)]
    answer = hash_shard(task, open_storage(task.corpus), store.client, read_range=store.get_range)
    assert answer.problem_count == 0
    assert answer.bytes_hashed == len(b"kept.md")
    lines = store.get(answer.partial)[0].splitlines()
    reused = msgspec.json.decode(lines[1])
    assert (reused["path"], reused["source_digest"], reused["size_bytes"]) == ("same.md", previous, len(b"same.md"))
