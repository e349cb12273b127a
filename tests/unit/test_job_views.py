"""A job's state as ``eceb-dist status --json`` and ``eceb-dist jobs`` show
it: start time, elapsed seconds, ages and progress, all integers
(eceb_worker/cluster/views.py); and a worker's own S3 endpoint in the
messages it runs (eceb_worker/pipeline/messages.py, ``with_endpoint``)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from eceb_worker.cluster.state import Phase, decode_job
from eceb_worker.cluster.views import (
    JobStatus,
    age_text,
    job_status,
    job_summary,
    jobs_lines,
    progress_text,
    rfc3339,
    step_name,
    waiting_lines,
    waiting_steps,
)
from eceb_worker.corpus.planning import RehashShard
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.errors import StorageError
from eceb_worker.families.eceb.planning import EvaluationShard
from eceb_worker.pipeline.messages import (
    CheckedRegistry,
    EvaluateTask,
    HashTask,
    JobInputs,
    JobKind,
    JobMessage,
    RehashTask,
    with_endpoint,
)

CREATED = 1_738_288_800  # 2025-01-31T02:00:00Z
VERIFICATION = (
    '{"schema":"symgliph.eceb/verification-v0.1","corpus_root":"' + "0" * 64 + '","source":"s3://c/p",'
    '"artifact_count":1,"verified_count":1,"bytes_hashed":5,"findings":[]}'
)
"""A verification report as a finished verification records it."""


def test_rfc3339_is_utc_with_z() -> None:
    assert rfc3339(CREATED) == "2025-01-31T02:00:00Z"
    assert rfc3339(0) == "1970-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "?"),
        (-5, "0s"),
        (0, "0s"),
        (59, "59s"),
        (60, "1m 00s"),
        (187, "3m 07s"),
        (3599, "59m 59s"),
        (3600, "1h 00m"),
        (7500, "2h 05m"),
        (86399, "23h 59m"),
        (86400, "1d 00h"),
        (273600, "3d 04h"),
    ],
)
def test_ages_read_as_people_say_them(seconds: int | None, text: str) -> None:
    assert age_text(seconds) == text


def test_progress_is_done_of_planned() -> None:
    assert progress_text(0, 0) == "-"
    assert progress_text(3, 25) == "3/25"


def test_a_running_job_has_run_since_it_was_submitted() -> None:
    state = {"phase": "verifying", "kind": "verify", "created": str(CREATED), "rehash_total": "12", "rehash_done": "5"}
    summary = job_summary(decode_job("a" * 32, state), CREATED + 187)
    assert summary.started_at == "2025-01-31T02:00:00Z" and summary.ended_at is None
    assert (summary.age_s, summary.elapsed_s) == (187, 187)
    assert (summary.shards_done, summary.shards_total) == (5, 12)


def test_an_ended_job_stopped_its_clock() -> None:
    state = {
        "phase": "done",
        "created": str(CREATED),
        "ended": str(CREATED + 42),
        "updated": str(CREATED + 50),
        "rehash_total": "12",
        "rehash_done": "12",
        "eval_total": "13",
        "eval_done": "13",
        "passing_tasks": "7",
        "total_tasks": "13",
        "out": "s3://b/report.json",
        "report_digest": "d" * 64,
    }
    status = job_status(decode_job("b" * 32, state), [], CREATED + 3600)
    assert (status.age_s, status.elapsed_s) == (3600, 42)
    assert status.ended_at == "2025-01-31T02:00:42Z"
    assert (status.passing_tasks, status.total_tasks, status.verified) == (7, 13, None)
    assert (status.shards_done, status.shards_total) == (25, 25)
    decoded = msgspec.json.decode(msgspec.json.encode(status), type=JobStatus)
    assert decoded == status
    # A state written before ``ended`` was recorded: its last change counts.
    older = job_summary(decode_job("b" * 32, {k: v for k, v in state.items() if k != "ended"}), CREATED + 3600)
    assert older.elapsed_s == 50


def test_a_failed_job_shows_why_and_what_failed() -> None:
    state = {
        "phase": "failed",
        "kind": "verify",
        "created": str(CREATED),
        "ended": str(CREATED + 3),
        "error_kind": "storage",
        "error": "cannot reach the endpoint",
        "verified": "0",
        "rehash_total": "2",
    }
    status = job_status(decode_job("c" * 32, state), ["re-hash shard 1: boom"], CREATED + 10)
    assert (status.error_kind, status.error, status.failures) == (
        "storage",
        "cannot reach the endpoint",
        ("re-hash shard 1: boom",),
    )
    assert status.verified is False and status.eval_total is None and status.rehash_total == 2


def test_a_state_without_times_shows_none() -> None:
    summary = job_summary(decode_job("d" * 32, {"phase": "queued"}), CREATED)
    assert (summary.started_at, summary.age_s, summary.elapsed_s) == (None, None, None)
    assert summary.kind == "evaluate"


def test_the_jobs_table_lines_up_its_columns_in_the_order_given() -> None:
    newer = job_summary(
        decode_job(
            "e" * 32,
            {
                "phase": "evaluating",
                "created": str(CREATED + 60),
                "rehash_total": "1",
                "rehash_done": "1",
                "eval_total": "2",
            },
        ),
        CREATED + 125,
    )
    older = job_summary(
        decode_job(
            "f" * 32,
            {
                "phase": "done",
                "kind": "verify",
                "created": str(CREATED),
                "ended": str(CREATED + 5),
                "verification": VERIFICATION,
            },
        ),
        CREATED + 125,
    )
    lines = jobs_lines([newer, older])
    assert lines[0].split() == ["JOB", "KIND", "PHASE", "AGE", "SHARDS"]
    assert lines[1].split() == ["e" * 32, "evaluate", "evaluating", "1m", "05s", "1/3"]
    assert lines[2].split() == ["f" * 32, "verify", "done", "2m", "05s", "-"]
    assert len({line.index("KIND") if i == 0 else line.index(line.split()[1]) for i, line in enumerate(lines)}) == 1


SPEC = StorageSpec(source="s3://corpus/prefix", endpoint_url="http://submitter:9000", concurrency=4)
INPUTS = JobInputs(benchmark="s3://b/benchmark.json", run="s3://b/run.json", endpoint_url="http://submitter:9000")
REGISTRY = CheckedRegistry(location="s3://b/registry.jsonl", corpus_root="0" * 64, artifact_count=1, rehash_shards=1)


def _endpoints(message: object) -> set[str | None]:
    """Every endpoint a message carries."""
    found: set[str | None] = set()

    def walk(value: object) -> None:
        if isinstance(value, msgspec.Struct):
            for field in value.__struct_fields__:
                if field == "endpoint_url":
                    found.add(getattr(value, field))
                walk(getattr(value, field))

    walk(message)
    return found


@pytest.mark.parametrize(
    "message",
    [
        JobMessage(inputs=INPUTS, corpus=SPEC, shard_bytes=1),
        RehashTask(
            corpus=SPEC,
            registry=REGISTRY,
            endpoint_url="http://submitter:9000",
            shard=RehashShard(index=0, start=0, end=1, size_bytes=1),
        ),
        EvaluateTask(inputs=INPUTS, registry=REGISTRY, shard=EvaluationShard(index=0, start=0, end=1, observations=1)),
        HashTask(corpus=SPEC, index=0, paths=["a"]),
    ],
    ids=["job", "rehash", "evaluate", "hash"],
)
def test_a_worker_reaches_storage_through_its_own_endpoint(message: object) -> None:
    assert _endpoints(message) == {"http://submitter:9000"}
    own = with_endpoint(message, "http://worker:9000")  # type: ignore[type-var]
    assert _endpoints(own) == {"http://worker:9000"}
    assert type(own) is type(message)
    assert with_endpoint(message, None) is message  # type: ignore[type-var]  # none of its own: the submitter's


def _waiting() -> list[Any]:
    from eceb_worker.cluster.steps import Lease, Progress, Step

    steps = {
        name: Step(task="t", args=[], task_id=name)
        for name in ("rehash:10", "rehash:2", "reduce:rehash", "evaluate:0", "coordinate")
    }
    progress = Progress(
        finished={"coordinate"},
        started={"rehash:10"},
        published={"rehash:10": 1_000, "rehash:2": 50_000, "evaluate:0": 61_000, "coordinate": 0},
        republished={"rehash:10": 2},
        leases={"rehash:2": Lease(worker="eceb@pod-1", pid=42, since_ms=55_000, token="t")},
    )
    return waiting_steps(steps, progress, now_ms=100_000)


def test_waiting_steps_in_order_and_where_each_stands() -> None:
    shown = _waiting()
    assert [(s.step, s.state, s.since_s, s.worker, s.pid, s.republished) for s in shown] == [
        ("rehash:2", "running", 45, "eceb@pod-1", 42, 0),
        ("rehash:10", "lost", 99, None, None, 2),
        ("evaluate:0", "queued", 39, None, None, 0),
    ]  # the reduce, not published yet, and the finished first step are not waited for


def test_waiting_lines_name_each_step_and_say_when_no_worker_lives() -> None:
    shown = _waiting()
    assert waiting_lines(shown, 3, ["eceb@pod-1"], "verifying") == [
        "  waiting for re-hash shard 2: running on eceb@pod-1 (pid 42) for 45s",
        "  waiting for re-hash shard 10: lost (published 1m 39s ago, not running); it is published again at the "
        "next watch (published 3 times in all)",
        "  waiting for evaluation shard 0: queued for 39s",
    ]
    assert waiting_lines(shown[:1], 12, [], "verifying")[1:] == [
        "  ... and 11 more step(s)",
        "  no live worker: the job waits until a worker starts (eceb-dist worker)",
    ]
    assert waiting_lines(shown, 3, [], "done") == []
    assert [step_name(s) for s in ("coordinate", "reduce:evaluate", "evaluate:3")] == [
        "the first step",
        "the reduce of the evaluation",
        "evaluation shard 3",
    ]


def test_a_record_is_decoded_once_into_typed_fields() -> None:
    problems = '[{"file":"s3://b/run.json","record":"line 2","field":"model","message":"unknown model"}]'
    record = decode_job(
        "1" * 32,
        {
            "phase": "failed",
            "kind": "verify",
            "created": str(CREATED),
            "rehash_done": "3",
            "rehash_total": "4",
            "verified": "1",
            "error_kind": "input",
            "error": "bad input",
            "problems": problems,
            "verification": VERIFICATION,
            "coordinator": "task-1",
            "added_by_a_later_version": "ignored",
        },
    )
    assert (record.phase, record.kind, record.is_verification) == (Phase.FAILED, JobKind.VERIFY, True)
    assert (record.created, record.rehash_done, record.rehash_total, record.eval_total) == (CREATED, 3, 4, None)
    assert record.shards == (3, 4) and record.verified is True and record.coordinator == "task-1"
    assert record.problems is not None and [p.field for p in record.problems] == ["model"]
    assert record.verification is not None and record.verification.ok
    assert record.verification_json == VERIFICATION  # the bytes recorded, kept for `eceb-dist result`
    # Fields left out take their defaults; an empty JSON field counts as none.
    bare = decode_job("2" * 32, {"phase": "queued", "problems": "", "verification": ""})
    assert (bare.kind, bare.out, bare.rehash_done, bare.problems, bare.verification) == (
        JobKind.EVALUATE,
        "",
        0,
        None,
        None,
    )


def test_a_malformed_record_is_a_storage_error_naming_the_job_and_every_field() -> None:
    secret = "s3cr3t-value"
    fields = {
        "phase": f"sleeping-{secret}",
        "kind": f"dance-{secret}",
        "rehash_total": f"12{secret}",
        "verified": "yes",
        "problems": f"[{secret}",
        "verification": "{}",
    }
    with pytest.raises(StorageError) as caught:
        decode_job("3" * 32, fields)
    text = str(caught.value)
    assert text.startswith(f"the state of job {'3' * 32} in the result backend (eceb:job:{'3' * 32}) is malformed: ")
    for name in ("'phase'", "'kind'", "'rehash_total'", "'verified'", "'problems'", "'verification'"):
        assert f"field {name}" in text
    assert secret not in text  # the values are never repeated
    with pytest.raises(StorageError, match="field 'verification' is missing"):
        decode_job("4" * 32, {"phase": "done", "kind": "verify"})
