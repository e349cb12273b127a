"""What a job's steps send each other: frozen Structs that survive JSON and
MessagePack unchanged, carry references only, and refuse what they do not know."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.corpus.planning import plan_rehash
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.corpus.verification import ExpectedArtifact, ShardVerification
from eceb_worker.errors import (
    ErrorKind,
    InputError,
    OutputError,
    Problem,
    ShardLostError,
    StorageError,
    VerificationError,
)
from eceb_worker.families.eceb.planning import EvaluationShard
from eceb_worker.pipeline.messages import (
    CheckedRegistry,
    EvaluateTask,
    HashTask,
    JobInputs,
    JobKind,
    JobMessage,
    RehashAnswer,
    RehashTask,
    ShardAnswer,
    ShardFailed,
    ShardTask,
    Stage,
    shard_index,
    stage_of,
)
from tests.support.helpers import artifact

CHECKED = CheckedRegistry(
    location="s3://b/r.jsonl", etag='"e"', corpus_root="0" * 64, artifact_count=2, rehash_shards=1
)
INPUTS = JobInputs(benchmark="s3://b/b.json", run="s3://b/r.json", etags=(("s3://b/b.json", '"1"'),))


def tasks() -> list[ShardTask]:
    [shard] = plan_rehash([1, 2])
    corpus = StorageSpec(source="s3://b/corpus", endpoint_url="http://127.0.0.1:9000")
    return [
        RehashTask(corpus=corpus, registry=CHECKED, shard=shard, job_id="j"),
        RehashTask(
            corpus=corpus,
            registry=CHECKED,
            shard=shard,
            artifacts=(ExpectedArtifact.of(artifact("a")), ExpectedArtifact.of(artifact("b"))),
        ),
        EvaluateTask(inputs=INPUTS, registry=CHECKED, shard=EvaluationShard(index=3, start=0, end=2, observations=5)),
        HashTask(corpus=corpus, index=7, paths=["a", "b"]),
    ]


@pytest.mark.parametrize("task", tasks(), ids=lambda t: type(t).__name__)
def test_shard_tasks_round_trip_as_json_and_msgpack(task: ShardTask) -> None:
    assert msgspec.convert(msgspec.to_builtins(task), ShardTask) == task
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(task), type=ShardTask) == task
    assert stage_of(task) in Stage
    assert shard_index(task) in (0, 3, 7)


@given(st.integers(0, 10**6), st.sampled_from(list(ErrorKind)), st.text())
def test_answers_round_trip(index: int, kind: ErrorKind, text: str) -> None:
    verification = ShardVerification(start=index, end=index + 1, checked=1, bytes_hashed=3, findings=())
    for answer in (
        RehashAnswer(index=index, verification=verification),
        ShardFailed(index=index, kind=kind, message=text),
    ):
        assert msgspec.convert(msgspec.to_builtins(answer), ShardAnswer) == answer


def test_a_job_sent_without_a_kind_is_an_evaluation() -> None:
    """What a client from before verification jobs sends still reads."""
    sent = {"job_id": "j", "inputs": {"benchmark": "s3://b/b.json", "run": "s3://b/r.json"}}
    sent |= {"corpus": {"source": "s3://b/c"}, "out": "s3://o/r.json", "shard_bytes": 1, "shard_observations": 1}
    assert msgspec.convert(sent, JobMessage).kind is JobKind.EVALUATE


def test_unknown_fields_and_kinds_are_refused() -> None:
    task = msgspec.to_builtins(tasks()[0])
    for bad in ({**task, "corpus_bytes": "never"}, {**task, "type": "pickle"}, {**task, "shard": {"index": -1}}):
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert(bad, ShardTask)


def test_every_error_has_its_kind() -> None:
    assert ErrorKind.of(InputError([Problem(file="f", message="m")])) is ErrorKind.INPUT
    assert ErrorKind.of(VerificationError("v", None)) is ErrorKind.VERIFICATION
    assert ErrorKind.of(OutputError("o")) is ErrorKind.OUTPUT
    assert ErrorKind.of(StorageError("s")) is ErrorKind.STORAGE
    assert ErrorKind.of(ShardLostError("l")) is ErrorKind.STORAGE
    assert ErrorKind.of(KeyError("k")) is ErrorKind.INTERNAL
