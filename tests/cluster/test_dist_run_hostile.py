"""``eceb-dist run`` against hostile and careless users and a failing
cluster: two real Celery workers over a real Redis (a database of their
own), a loopback S3 server and the loopback provider holding a planted key.

Every command line here ends with the exit code of its outcome, never 70
(internal error) nor a traceback; a refusal at submission queues nothing;
the planted key shows in no output, worker log, object or Redis value.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from eceb_cli import exit_codes
from eceb_worker.cluster.state import JOBS_KEY
from tests.support.dist_support import dist
from tests.support.helpers import run_with_closed_reader
from tests.support.loopback_provider import LoopbackProvider, running_loopback_provider
from tests.support.making import PLANTED_KEY, answer_script, write_benchmark, write_corpus, write_profile
from tests.support.paths import REPO
from tests.support.redis_server import CeleryWorkers, RedisServer, celery_workers
from tests.support.s3_server import S3Server, fresh_bucket

pytestmark = [pytest.mark.cluster]

DB = 12
"""This module's broker and result backend: a database no other module's workers consume."""
IDLE_DB = 14
"""A database no worker consumes: a job queued there waits (it never ends by itself)."""
WAIT_S = "120"
SEED_RUN = REPO / "examples" / "enterprise-seed" / "run.json"


@pytest.fixture(scope="module")
def broker(redis_server: RedisServer) -> str:
    for db in (DB, IDLE_DB):
        redis_server.client(db).flushdb()
    return redis_server.url(DB)


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> Iterator[str]:
    with fresh_bucket(s3_server, "eceb-hostile") as name:
        yield name


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackProvider]:
    directory = tmp_path_factory.mktemp("provider")
    with running_loopback_provider(directory, answer_script(), api_key=PLANTED_KEY, deterministic=True) as running:
        yield running


@pytest.fixture(scope="module")
def root(
    tmp_path_factory: pytest.TempPathFactory, provider: LoopbackProvider, s3_server: S3Server, bucket: str
) -> Path:
    """A benchmark of 8 executions (two tasks, one repetition), its corpus
    and a profile; the benchmark, registry and corpus also under
    ``s3://BUCKET/seed/``, with a run (the seed's) at ``seed/run.json`` and
    the same benchmark naming its registry ``other-registry.json``."""
    directory = tmp_path_factory.mktemp("hostile")
    write_corpus(directory)
    write_benchmark(directory, repetitions=1)
    write_profile(directory, provider.openai_base_url, in_flight=2)
    client = s3_server.client()
    for name in ("benchmark.json", "registry.jsonl"):
        client.put_object(Bucket=bucket, Key=f"seed/{name}", Body=(directory / name).read_bytes())
    client.put_object(Bucket=bucket, Key="seed/run.json", Body=SEED_RUN.read_bytes())
    other = json.loads((directory / "benchmark.json").read_text())
    other["registry"]["path"] = "other-registry.json"  # a registry whose name a run's could take
    client.put_object(Bucket=bucket, Key="seed/other-benchmark.json", Body=json.dumps(other).encode())
    client.put_object(Bucket=bucket, Key="seed/other-registry.json", Body=(directory / "registry.jsonl").read_bytes())
    s3_server.upload_tree(directory / "corpus", bucket, "seed/corpus", threads=4)
    return directory


@pytest.fixture(scope="module")
def run_workers(broker: str, s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CeleryWorkers]:
    env = {"ECEB_TEST_KEY": PLANTED_KEY, "ECEB_TASK_MAX_RETRIES": "1"}
    with celery_workers(broker, 2, tmp_path_factory.mktemp("hostile-workers"), env=env) as running:
        yield running


def _dist(redis_server: RedisServer, s3_server: S3Server, *args: str, db: int = DB) -> subprocess.CompletedProcess[str]:
    """``eceb-dist ARGS`` on this module's database: never an internal
    error, a traceback, or the planted key in its output."""
    result = dist(redis_server, s3_server, *args, broker_url=redis_server.url(db))
    assert result.returncode != exit_codes.INTERNAL, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert PLANTED_KEY not in result.stdout + result.stderr
    return result


def _run(
    redis_server: RedisServer,
    s3_server: S3Server,
    benchmark: str,
    profile: Path,
    corpus: str,
    out: str,
    *options: str,
    db: int = DB,
) -> subprocess.CompletedProcess[str]:
    return _dist(
        redis_server, s3_server, "run", benchmark, str(profile), "--corpus", corpus, "--out", out, *options, db=db
    )


def _queued(redis_server: RedisServer, db: int = DB) -> set[bytes]:
    """Every job ever queued on ``db``."""
    return set(redis_server.client(db).zrange(JOBS_KEY, 0, -1))


def _profile(root: Path, name: str, **changes: Any) -> Path:
    """A copy of ``root/profile.json`` as ``root/NAME``, each change a
    dotted path (``model.base_url``) set to its value (``None`` removes it)."""
    document = json.loads((root / "profile.json").read_text())
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        place = document
        for parent in parents:
            place = place[parent]
        if value is None:
            place.pop(last, None)
        else:
            place[last] = value
    path = root / name
    path.write_text(json.dumps(document, indent=2))
    return path


def _out(bucket: str) -> str:
    return f"s3://{bucket}/runs/{uuid.uuid4().hex}/run.json"


def _listed(s3_server: S3Server, bucket: str, prefix: str) -> list[str]:
    listing = s3_server.client().list_objects_v2(Bucket=bucket, Prefix=prefix)
    return [item["Key"] for item in listing.get("Contents", [])]


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


# -- bad inputs, refused before anything is queued --------------------------


def test_a_profile_that_does_not_parse_is_refused_and_nothing_is_queued(
    redis_server: RedisServer, s3_server: S3Server, broker: str, root: Path, bucket: str
) -> None:
    before = _queued(redis_server)
    for name, text in (("garbled.json", "{not json"), ("list.json", "[]"), ("bom.json", "\ufeff{}")):
        (root / name).write_text(text, encoding="utf-8")
        refused = _run(
            redis_server, s3_server, str(root / "benchmark.json"), root / name, str(root / "corpus"), _out(bucket)
        )
        assert refused.returncode == exit_codes.BAD_INPUT, refused.stderr
        assert refused.stdout == ""
        assert name in refused.stderr
    assert _queued(redis_server) == before


def test_every_problem_of_a_profile_and_its_benchmark_is_listed_together(
    redis_server: RedisServer, s3_server: S3Server, broker: str, root: Path, bucket: str
) -> None:
    """Schema problems of the profile, all at once; then, once the profile
    decodes, its base URL, its context system's program, its missing rubric
    and a local benchmark that does not exist, all at once; nothing queued."""
    before = _queued(redis_server)
    schema = _profile(
        root,
        "schema.json",
        run_id="",
        in_flight=0,
        **{"decoding.temperature_milli": -5, "pricing.input_micro_usd_per_mtok": -1, "surplus": 1},
    )
    refused = _run(redis_server, s3_server, str(root / "benchmark.json"), schema, str(root / "corpus"), _out(bucket))
    assert refused.returncode == exit_codes.BAD_INPUT, refused.stderr
    for field in ("run_id", "in_flight", "decoding.temperature_milli", "pricing.input_micro_usd_per_mtok", "surplus"):
        assert f"'{field}'" in refused.stderr, (field, refused.stderr)
    semantic = _profile(
        root,
        "semantic.json",
        **{
            "model.base_url": "ftp://provider.invalid/v1",
            "context_system.command": ["/nonexistent/context-system"],
            "judge.rubric": "no-such-rubric.md",
        },
    )
    missing = str(root / "no-such-benchmark.json")
    refused = _run(redis_server, s3_server, missing, semantic, str(root / "corpus"), _out(bucket))
    assert refused.returncode == exit_codes.BAD_INPUT, refused.stderr
    errors = _error_lines(refused.stderr)
    assert len(errors) == 4, refused.stderr
    assert any(missing in line and "no such file" in line for line in errors)
    assert any("base_url" in line for line in errors)
    assert any("/nonexistent/context-system" in line for line in errors)
    assert any("no-such-rubric.md" in line for line in errors)
    assert "4 problems found." in refused.stderr
    assert _queued(redis_server) == before


@pytest.mark.parametrize(
    ("benchmark", "expected"),
    [
        ("s3://{bucket}/seed/no-such-benchmark.json", "no such object"),
        ("s3://eceb-no-such-bucket-{bucket}/benchmark.json", "no such bucket"),
        ("s3://{bucket}/seed/run.json", "is a run"),
        ("s3://{bucket}/seed/registry.jsonl", "is a registry"),
        ("{seed_run}", "is a run"),
        ("{root}/no-such-benchmark.json", "no such file"),
        ("{root}", "is a directory"),
    ],
    ids=["s3-missing", "s3-no-bucket", "s3-run", "s3-registry", "local-run", "local-missing", "local-directory"],
)
def test_a_benchmark_that_is_missing_or_of_another_kind_is_refused_and_nothing_is_queued(
    redis_server: RedisServer,
    s3_server: S3Server,
    broker: str,
    root: Path,
    bucket: str,
    benchmark: str,
    expected: str,
) -> None:
    before = _queued(redis_server)
    given = benchmark.format(bucket=bucket, root=root, seed_run=SEED_RUN)
    refused = _run(redis_server, s3_server, given, root / "profile.json", f"s3://{bucket}/seed/corpus", _out(bucket))
    assert refused.returncode == exit_codes.BAD_INPUT, refused.stderr
    assert expected in refused.stderr
    assert refused.stdout == ""
    assert _queued(redis_server) == before


@pytest.mark.parametrize(
    ("benchmark", "out", "code"),
    [
        ("benchmark.json", "seed/benchmark.json", exit_codes.OUTPUT),
        ("other-benchmark.json", "seed/other-registry.json", exit_codes.OUTPUT),
        ("benchmark.json", "seed/corpus/run.json", exit_codes.OUTPUT),
        ("benchmark.json", "seed/corpus/rfc/raft.json", exit_codes.OUTPUT),
        ("benchmark.json", "seed/registry.jsonl", exit_codes.USAGE),
        ("benchmark.json", "seed/corpus/rfc/raft.md", exit_codes.USAGE),
    ],
    ids=["benchmark", "registry", "under-the-corpus", "deep-in-the-corpus", "registry-jsonl", "corpus-artifact"],
)
def test_an_out_naming_an_input_or_inside_the_corpus_is_refused_and_overwrites_nothing(
    redis_server: RedisServer,
    s3_server: S3Server,
    broker: str,
    root: Path,
    bucket: str,
    benchmark: str,
    out: str,
    code: int,
) -> None:
    """The run (or its transcripts, judgments, partials) would replace an
    input or add objects to a corpus that holds exactly its registered
    artifacts: refused before anything is queued (an output that is not a
    ``.json`` name, as the registry's or an artifact's, a usage error)."""
    client = s3_server.client()
    before = {
        key: client.get_object(Bucket=bucket, Key=key)["Body"].read() for key in _listed(s3_server, bucket, "seed/")
    }
    queued = _queued(redis_server)
    refused = _run(
        redis_server,
        s3_server,
        f"s3://{bucket}/seed/{benchmark}",
        root / "profile.json",
        f"s3://{bucket}/seed/corpus",
        f"s3://{bucket}/{out}",
    )
    assert refused.returncode == code, refused.stderr
    if code == exit_codes.OUTPUT:
        assert f"s3://{bucket}/{out}" in refused.stderr
    assert _queued(redis_server) == queued
    after = {
        key: client.get_object(Bucket=bucket, Key=key)["Body"].read() for key in _listed(s3_server, bucket, "seed/")
    }
    assert after == before


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("run", "--out must name the run's object, ending in .json"),
        ("run.JSON", "--out must name the run's object, ending in .json"),
        ("", "--out must name the run's object, ending in .json"),
        (".json", "--out must name the run's object, ending in .json"),
        ("run.json.gz", "--out must name the run's object, ending in .json"),
        ("/run.json", "--out has an empty path segment"),
    ],
)
def test_an_out_that_is_not_a_json_object_name_is_a_usage_error(
    redis_server: RedisServer, s3_server: S3Server, broker: str, root: Path, bucket: str, name: str, expected: str
) -> None:
    """Its transcripts and judgments are named from its stem and lie beside it."""
    before = _queued(redis_server)
    out = f"s3://{bucket}/runs/{uuid.uuid4().hex}/{name}"
    refused = _run(
        redis_server, s3_server, str(root / "benchmark.json"), root / "profile.json", str(root / "corpus"), out
    )
    assert refused.returncode == exit_codes.USAGE, refused.stderr
    assert expected in refused.stderr
    assert _queued(redis_server) == before


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_a_shard_size_below_one_is_a_usage_error(
    redis_server: RedisServer, s3_server: S3Server, broker: str, root: Path, bucket: str, value: str
) -> None:
    before = _queued(redis_server)
    refused = _run(
        redis_server,
        s3_server,
        str(root / "benchmark.json"),
        root / "profile.json",
        str(root / "corpus"),
        _out(bucket),
        "--shard-executions",
        value,
    )
    assert refused.returncode == exit_codes.USAGE, refused.stderr
    assert "--shard-executions" in refused.stderr
    assert _queued(redis_server) == before


def test_a_key_pasted_into_the_profile_is_refused_without_being_repeated(
    redis_server: RedisServer, s3_server: S3Server, broker: str, root: Path, bucket: str, provider: LoopbackProvider
) -> None:
    """The key where the variable's name goes, in a base URL's user
    information or query, in the context system's URL: refused at
    submission (the job's message is kept by the cluster), every place
    named, the key never repeated; nothing queued."""
    before = _queued(redis_server)
    base = provider.openai_base_url
    pasted = _profile(
        root,
        "pasted.json",
        **{
            "model.api_key_env": PLANTED_KEY,
            "judge.model.base_url": base.replace("http://", f"http://user:{PLANTED_KEY}@"),
        },
    )
    refused = _run(redis_server, s3_server, str(root / "benchmark.json"), pasted, str(root / "corpus"), _out(bucket))
    assert refused.returncode == exit_codes.BAD_INPUT, refused.stderr
    errors = _error_lines(refused.stderr)
    assert len(errors) == 2, refused.stderr
    assert any("model: field 'api_key_env'" in line for line in errors)
    assert any("judge.model: field 'base_url'" in line for line in errors)
    queried = _profile(root, "queried.json", **{"model.base_url": f"{base}?api_key={PLANTED_KEY}"})
    refused = _run(redis_server, s3_server, str(root / "benchmark.json"), queried, str(root / "corpus"), _out(bucket))
    assert refused.returncode == exit_codes.BAD_INPUT, refused.stderr
    assert "field 'base_url'" in refused.stderr
    assert _queued(redis_server) == before


# -- resuming ----------------------------------------------------------------


def test_resuming_a_job_that_does_not_exist_or_made_no_run_is_refused(
    redis_server: RedisServer,
    s3_server: S3Server,
    run_workers: CeleryWorkers,
    root: Path,
    bucket: str,
    tmp_path: Path,
) -> None:
    args = (str(root / "benchmark.json"), root / "profile.json", str(root / "corpus"), _out(bucket))
    before = _queued(redis_server)
    unknown = _run(redis_server, s3_server, *args, "--resume", "0" * 32)
    assert unknown.returncode == exit_codes.NO_SUCH_JOB, unknown.stderr
    empty = _run(redis_server, s3_server, *args, "--resume", " ")
    assert empty.returncode == exit_codes.USAGE, empty.stderr
    assert _queued(redis_server) == before
    verified = _dist(redis_server, s3_server, "verify", str(root / "registry.jsonl"), "--corpus", str(root / "corpus"))
    assert verified.returncode == 0, verified.stderr
    verify_job = verified.stdout.strip()
    before = _queued(redis_server)
    other = _run(redis_server, s3_server, *args, "--resume", verify_job)
    assert other.returncode == exit_codes.BAD_INPUT, other.stderr
    assert f"job {verify_job} made no run (it is a verify job)" in other.stderr
    assert _queued(redis_server) == before


def test_resuming_a_job_still_running_is_refused(
    redis_server: RedisServer, s3_server: S3Server, broker: str, root: Path, bucket: str
) -> None:
    """A job queued where no worker consumes stays queued: resuming its
    journal meanwhile is refused (two jobs on one journal would take each
    other's calls in flight for calls of unknown outcome)."""
    args = (str(root / "benchmark.json"), root / "profile.json", str(root / "corpus"), _out(bucket))
    queued = _run(redis_server, s3_server, *args, db=IDLE_DB)
    assert queued.returncode == 0, queued.stderr
    job_id = queued.stdout.strip()
    try:
        before = _queued(redis_server, IDLE_DB)
        refused = _run(redis_server, s3_server, *args, "--resume", job_id, db=IDLE_DB)
        assert refused.returncode == exit_codes.BAD_INPUT, refused.stderr
        assert f"job {job_id} is still making a run with the journal {job_id} (queued)" in refused.stderr
        assert _queued(redis_server, IDLE_DB) == before
    finally:
        cancelled = _dist(redis_server, s3_server, "cancel", job_id, db=IDLE_DB)
        assert cancelled.returncode == 0, cancelled.stderr


def _refused_part_way(
    redis_server: RedisServer, s3_server: S3Server, root: Path, bucket: str, *options: str
) -> tuple[str, str]:
    """A run refused after 7 paid calls (of 16) in shards of 3: exit 9, its
    journal holding what was made. Its job id and ``--out``."""
    limited = _profile(root, "seven.json", spending={"authorized_executions": 7})
    out = _out(bucket)
    made = _run(redis_server, s3_server, str(root / "benchmark.json"), limited, str(root / "corpus"), out, *options)
    assert made.returncode == 0, made.stderr
    job_id = made.stdout.strip()
    waited = _dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
    assert waited.returncode == exit_codes.EXECUTION_REFUSED, waited.stderr
    assert "all 7 authorized paid calls have started" in waited.stderr
    return job_id, out


def test_a_resumed_job_keeps_the_shard_size_and_refuses_another_profile(
    redis_server: RedisServer,
    s3_server: S3Server,
    run_workers: CeleryWorkers,
    root: Path,
    bucket: str,
    provider: LoopbackProvider,
) -> None:
    """A run made in shards of 3, refused part way; resumed with shards of
    2, or with a profile making another plan, it is refused before anything
    is queued (a shard finds what was made by its place in the plan);
    resumed with the spending limit raised (the shard size kept without
    being given), it completes and no call is paid twice. Once done, its
    partials are deleted and it cannot be resumed."""
    sent = provider.stats()["total"]
    job_id, _ = _refused_part_way(redis_server, s3_server, root, bucket, "--shard-executions", "3")
    assert provider.stats()["total"] == sent + 7
    shards = json.loads(_dist(redis_server, s3_server, "status", job_id, "--json").stdout)["make_total"]
    assert shards == 3  # 8 executions
    args = (str(root / "benchmark.json"), root / "profile.json", str(root / "corpus"))
    before = _queued(redis_server)

    resharded = _run(redis_server, s3_server, *args, _out(bucket), "--resume", job_id, "--shard-executions", "2")
    assert resharded.returncode == exit_codes.USAGE, resharded.stderr
    assert f"job {job_id} cut its plan into shards of 3 executions" in resharded.stderr
    other = _profile(root, "other-plan.json", run_id="another-run")
    replanned = _run(redis_server, s3_server, args[0], other, args[2], _out(bucket), "--resume", job_id)
    assert replanned.returncode == exit_codes.BAD_INPUT, replanned.stderr
    assert f"whose journal {job_id} is bound to its plan" in replanned.stderr
    assert _queued(redis_server) == before

    out = _out(bucket)
    resumed = _run(redis_server, s3_server, *args, out, "--resume", job_id)
    assert resumed.returncode == 0, resumed.stderr
    again = resumed.stdout.strip()
    waited = _dist(redis_server, s3_server, "wait", again, "--timeout", WAIT_S)
    assert waited.returncode == 0, waited.stderr
    assert "8 observations of 8 executions" in waited.stdout
    shown = json.loads(_dist(redis_server, s3_server, "status", again, "--json").stdout)
    assert (shown["make_done"], shown["make_total"]) == (shards, shards)
    assert provider.stats()["total"] == sent + 16, "a call was paid twice, or one is missing"
    stem = out.removeprefix(f"s3://{bucket}/").removesuffix(".json")
    transcripts = s3_server.client().get_object(Bucket=bucket, Key=f"{stem}.transcripts.jsonl")["Body"].read()
    assert transcripts.count(b"\n") == 16
    assert not _listed(s3_server, bucket, f"{stem.rsplit('/', 1)[0]}/.run.json.parts/"), "partials left behind"

    done = _run(redis_server, s3_server, *args, _out(bucket), "--resume", again)
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert f"job {again} made its run already ({out})" in done.stderr


def test_a_damaged_partial_fails_the_resumed_job_naming_it(
    redis_server: RedisServer, s3_server: S3Server, run_workers: CeleryWorkers, root: Path, bucket: str
) -> None:
    """The partial a resumed shard goes on with was replaced by bytes no
    shard wrote: the job fails (exit 5), naming the object and the line,
    never quoting them; no run is written."""
    from eceb_worker.cluster.run_journal import RedisRunJournal

    job_id, out = _refused_part_way(redis_server, s3_server, root, bucket)
    damaged = f"{out.rsplit('/', 1)[0]}/.run.json.parts/{job_id}/000000-damaged.jsonl"
    key = damaged.removeprefix(f"s3://{bucket}/")
    s3_server.client().put_object(Bucket=bucket, Key=key, Body=b'{"execution_id": "x", "answer": {\n')
    journal = RedisRunJournal(redis_server.client(DB), job_id, reaching=lambda what: contextlib.nullcontext())
    journal.keep_partial(0, damaged)
    resumed_out = _out(bucket)
    resumed = _run(
        redis_server,
        s3_server,
        str(root / "benchmark.json"),
        root / "profile.json",
        str(root / "corpus"),
        resumed_out,
        "--resume",
        job_id,
    )
    assert resumed.returncode == 0, resumed.stderr
    waited = _dist(redis_server, s3_server, "wait", resumed.stdout.strip(), "--timeout", WAIT_S)
    assert waited.returncode == exit_codes.STORAGE, waited.stderr
    assert f"execution shard 0: {damaged}, line 1: is not a line of an execution shard's partial" in waited.stderr
    assert "no run was written" in waited.stderr
    assert not _listed(s3_server, bucket, resumed_out.removeprefix(f"s3://{bucket}/"))


# -- a failing cluster -------------------------------------------------------


def test_a_credential_missing_from_the_workers_fails_the_job_as_bad_input(
    redis_server: RedisServer,
    s3_server: S3Server,
    run_workers: CeleryWorkers,
    root: Path,
    bucket: str,
    provider: LoopbackProvider,
) -> None:
    """The profile names a variable the workers' environment lacks: the
    job's first step refuses it (exit 3, as ``eceb run`` does), naming the
    variable; no call is sent, no journal bound, no run written."""
    sent = provider.stats()["total"]
    unset = _profile(root, "unset.json", **{"model.api_key_env": "ECEB_HOSTILE_UNSET_KEY"})
    out = _out(bucket)
    queued = _run(redis_server, s3_server, str(root / "benchmark.json"), unset, str(root / "corpus"), out)
    assert queued.returncode == 0, queued.stderr
    job_id = queued.stdout.strip()
    waited = _dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S)
    assert waited.returncode == exit_codes.BAD_INPUT, waited.stderr
    assert "the environment variable ECEB_HOSTILE_UNSET_KEY holding the model's API key is not set" in waited.stderr
    assert f"job {job_id} failed; no run was written" in waited.stderr
    status = _dist(redis_server, s3_server, "status", job_id)
    assert "; input error: environment: field 'ECEB_HOSTILE_UNSET_KEY'" in status.stdout
    assert "calls:" not in status.stdout  # no journal was bound
    assert provider.stats()["total"] == sent
    assert not _listed(s3_server, bucket, out.removeprefix(f"s3://{bucket}/"))


def test_a_corpus_one_level_off_fails_the_job_before_any_call(
    redis_server: RedisServer,
    s3_server: S3Server,
    run_workers: CeleryWorkers,
    root: Path,
    bucket: str,
    provider: LoopbackProvider,
) -> None:
    sent = provider.stats()["total"]
    for corpus in (str(root), f"s3://{bucket}/seed"):
        queued = _run(
            redis_server, s3_server, str(root / "benchmark.json"), root / "profile.json", corpus, _out(bucket)
        )
        assert queued.returncode == 0, queued.stderr
        waited = _dist(redis_server, s3_server, "wait", queued.stdout.strip(), "--timeout", WAIT_S)
        assert waited.returncode == exit_codes.STORAGE, waited.stderr
        assert f"{corpus}: holds no " in waited.stderr and "the registry's first artifact" in waited.stderr
    assert provider.stats()["total"] == sent


def test_quiet_and_closed_pipes_keep_the_exit_codes(
    redis_server: RedisServer, s3_server: S3Server, run_workers: CeleryWorkers, root: Path, bucket: str
) -> None:
    quiet = _run(
        redis_server,
        s3_server,
        str(root / "benchmark.json"),
        root / "profile.json",
        str(root / "corpus"),
        _out(bucket),
        "-q",
    )
    assert quiet.returncode == 0, quiet.stderr
    assert len(quiet.stdout.strip()) == 32 and quiet.stderr == ""
    assert _dist(redis_server, s3_server, "wait", quiet.stdout.strip(), "--timeout", WAIT_S).returncode == 0
    env = {**os.environ, "ECEB_BROKER_URL": redis_server.url(DB), "ECEB_S3_ENDPOINT_URL": s3_server.endpoint_url}
    command = [sys.executable, "-m", "eceb_cli.dist"]
    before = _queued(redis_server)
    run_args = ["run", str(root / "benchmark.json"), str(root / "profile.json"), "--corpus", str(root / "corpus")]
    done = run_with_closed_reader("stdout", *command, *run_args, "--out", _out(bucket), env=env)
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr and b"Exception ignored" not in done.stderr
    (job,) = _queued(redis_server) - before  # queued, its id printed into the closed pipe
    job_id = job.decode()
    assert _dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S).returncode == 0
    for words in (["result", job_id], ["status", job_id], ["status", job_id, "--json"]):
        done = run_with_closed_reader("stdout", *command, *words, env=env)
        assert done.returncode == 0, (words, done.stderr)
        assert b"Traceback" not in done.stderr
    resume = ("--out", _out(bucket), "--resume", "0" * 32)
    refused = run_with_closed_reader("stderr", *command, *run_args, *resume, env=env)
    assert refused.returncode == exit_codes.NO_SUCH_JOB


# -- secrets -------------------------------------------------------------------


def _redis_values(client: Any) -> Iterator[tuple[bytes, bytes]]:
    """Every key of a database and each of its values, as bytes."""
    for key in client.scan_iter(count=1000):
        kind = client.type(key)
        if kind == b"string":
            values = [client.get(key)]
        elif kind == b"hash":
            values = [item for pair in client.hgetall(key).items() for item in pair]
        elif kind == b"list":
            values = client.lrange(key, 0, -1)
        elif kind == b"set":
            values = list(client.smembers(key))
        elif kind == b"zset":
            values = client.zrange(key, 0, -1)
        else:
            values = [msgspec.json.encode(kind.decode())]
        for value in values:
            yield key, value if isinstance(value, bytes) else str(value).encode()


def test_the_key_shows_nowhere(
    redis_server: RedisServer,
    s3_server: S3Server,
    run_workers: CeleryWorkers,
    root: Path,
    bucket: str,
    provider: LoopbackProvider,
) -> None:
    """After a run made with the planted key (and every test of the module
    before): no worker log line, status or result output, object or Redis
    key or value holds it, nor the S3 secret."""
    out = _out(bucket)
    queued = _run(
        redis_server, s3_server, str(root / "benchmark.json"), root / "profile.json", str(root / "corpus"), out
    )
    job_id = queued.stdout.strip()
    assert _dist(redis_server, s3_server, "wait", job_id, "--timeout", WAIT_S).returncode == 0
    for words in (["status", job_id], ["status", job_id, "--json"], ["result", job_id], ["jobs", "--json"]):
        assert _dist(redis_server, s3_server, *words).returncode == 0
    secrets = [PLANTED_KEY.encode(), *(secret.encode() for secret in s3_server.secrets)]
    logs = run_workers.logs().encode()
    assert job_id.encode() in logs
    assert not [secret for secret in secrets if secret in logs]
    client = s3_server.client()
    objects = _listed(s3_server, bucket, "")
    assert objects
    for key in objects:
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        assert not [secret for secret in secrets if secret in body], key
    found = [
        key
        for db in (DB, IDLE_DB)
        for key, value in _redis_values(redis_server.client(db))
        if any(secret in key or secret in value for secret in secrets)
    ]
    assert not found
