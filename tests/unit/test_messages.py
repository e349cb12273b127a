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
from eceb_worker.families.eceb.disclosure import DISCLOSURE_OFF
from eceb_worker.families.eceb.options import EvaluationOptions
from eceb_worker.families.eceb.planning import EvaluationShard
from eceb_worker.pipeline.messages import (
    JOB_MESSAGE_VERSION,
    CheckedRegistry,
    EvaluateTask,
    HashTask,
    JobInputs,
    JobKind,
    RehashAnswer,
    RehashTask,
    ShardAnswer,
    ShardFailed,
    ShardTask,
    Stage,
    job_message,
    shard_index,
    shard_task,
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
    assert job_message(sent).kind is JobKind.EVALUATE


def test_a_version_1_job_message_runs_with_the_same_options() -> None:
    """A job the previous eceb submitted (no ``version``; its options as
    separate fields) is read with the same options, and what this eceb
    sends reads back unchanged."""
    sent = {"job_id": "j", "inputs": {"benchmark": "s3://b/b.json", "run": "s3://b/r.json"}, "out": "s3://o/r.json"}
    sent |= {"corpus": {"source": "s3://b/c"}, "shard_bytes": 1, "shard_observations": 7, "uncertainty": "none"}
    sent |= {"disclosure_check": {"enabled": False}, "registry": None}
    message = job_message(sent)
    assert message.version == JOB_MESSAGE_VERSION == 2
    assert message.evaluation == EvaluationOptions(
        disclosure_check=DISCLOSURE_OFF, uncertainty="none", shard_observations=7
    )
    assert job_message(msgspec.to_builtins(message)) == message
    assert job_message({k: v for k, v in sent.items() if k not in ("uncertainty", "disclosure_check")}).evaluation == (
        EvaluationOptions(shard_observations=7)
    )
    assert job_message({**sent, "version": 1}) == message


def test_a_version_1_evaluation_shard_runs_with_the_same_options() -> None:
    shard = EvaluationShard(index=3, start=0, end=2, observations=5)
    task = EvaluateTask(inputs=INPUTS, registry=CHECKED, shard=shard, evaluation=EvaluationOptions(uncertainty="none"))
    sent = msgspec.to_builtins(task)
    old = {k: v for k, v in sent.items() if k != "evaluation"} | {"uncertainty": "none"}
    assert shard_task(old) == msgspec.structs.replace(
        task, evaluation=EvaluationOptions(disclosure_check=DISCLOSURE_OFF, uncertainty="none")
    )
    assert shard_task({**old, "disclosure_check": sent["evaluation"]["disclosure_check"]}).evaluation == (
        EvaluationOptions(uncertainty="none")
    )
    assert shard_task(sent) == task


@pytest.mark.parametrize("version", [0, 3, "2", None, True])
def test_a_job_message_of_another_version_is_refused_by_name(version: object) -> None:
    sent = {"version": version, "inputs": {}, "corpus": {"source": "s3://b/c"}, "shard_bytes": 1}
    with pytest.raises(msgspec.ValidationError, match=r"job message version .*: this eceb reads versions 1 and 2"):
        job_message(sent)
    with pytest.raises(msgspec.ValidationError, match="shard_observations"):
        job_message({"inputs": {}, "corpus": {"source": "s3://b/c"}, "shard_bytes": 1, "shard_observations": 0})


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
