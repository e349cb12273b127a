"""The nightly CronJob end to end, here: its own command line (taken from the
rendered manifest, its ``$(VAR)`` references given loopback values) run
night after night against a real Redis, real workers, the loopback S3
server and, for the nights that make their run, the loopback model provider.

The CronJob makes tonight's run (``--profile``): night one has no baseline
(exit 0, tonight's run under ``runs/``, its report the baseline, the night's
spend printed and shown by ``eceb-dist status``); on night two the provider
judges every answer lower, and the night exits 10 naming the regression,
the baseline kept. A night whose spending stop is below its first call's
cost makes nothing: exit 9, no call sent, nothing evaluated.

The same command given a fixed RUN (the CronJob's command line with
``--profile`` and the stop replaced by ``$(NIGHTLY_RUN)``), with a worker
started with the worker Deployment's own command line, over the bundled
example ``examples/enterprise-seed``: night one has no baseline (exit 0,
``baseline.json`` and ``latest.json`` written); a night like the last is no
regression (exit 0, both replaced); a night whose run was planted with a
regression (a passing task's quality lowered below its floor) exits 10
naming it, ``latest.json`` replaced and the baseline kept; the night after
still compares with the baseline and fails again; once that night is
accepted (``eceb-dist nightly-accept``), the next compares with it (exit
0); a night whose job fails exits with the job's code and changes nothing.

The CronJob registering tonight's corpus first (``NIGHTLY_RULES`` set; the
other nights leave it empty, the default): night one registers the corpus
its benchmark pins and uses the benchmark as it is; between the nights one
file is edited and one added, and night two prints what changed (both
artifacts, and the task whose evidence moved), makes and evaluates its run
with the benchmark pinned to tonight's registry, compares across the
corpus change and keeps tonight's registry; a night whose corpus lost a
required artifact ends with exit 3 before any call. The registration is
full every night (``eceb-dist register`` takes no previous registry).

The command line's own checks (what to evaluate, the stop's amount, what
registers the corpus) and the re-pinned benchmark are tested in this
process.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from eceb_cli import exit_codes
from eceb_cli.dist import main as dist_main
from eceb_cli.nightly import usd_to_micro
from eceb_cli.nightly_corpus import repinned_benchmark
from eceb_worker.core.arithmetic import SAFE_INTEGER_MAX
from eceb_worker.core.digests import digest_bytes
from eceb_worker.families.eceb.benchmark import Benchmark, RegistryReference, task_root
from tests.support.dist_support import SEED, dist, embedded_report, upload_seed
from tests.support.k8s import command_line, container, deployment_worker, find, pod_spec, render, runnable
from tests.support.loopback_provider import LoopbackProvider, running_loopback_provider
from tests.support.making import answer_script, write_benchmark, write_corpus, write_profile
from tests.support.redis_server import RedisServer, stop_groups
from tests.support.s3_server import S3Server, empty_bucket

REGRESSED_TASK = "db-failover-steps"
"""A task of the seed that passes (at 512 tokens)."""

KEY = "sk-loopback-nightly-key"
"""The loopback provider's credential, in the file the profile names (as the Secret eceb-provider is mounted)."""
JOB_ID = re.compile(r"[0-9a-f]{32}")
MADE = re.compile(
    r"tonight's run: (\d+) observations of (\d+) executions; spend (\$[0-9,]+\.\d{6}) known, "
    r"(\$[0-9,]+\.\d{6}) possible; run (\S+)"
)


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> Iterator[str]:
    """The seed under ``seed/``, its run with a regression planted under
    ``regressed/run.json``, and its corpus less its last artifact under
    ``partial/corpus``."""
    client = s3_server.client()
    name = f"eceb-nightly-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    upload_seed(s3_server, name, "seed")
    s3_server.upload_tree(SEED / "corpus", name, "partial/corpus", threads=4)
    last = json.loads((SEED / "registry.jsonl").read_text(encoding="utf-8").splitlines()[-1])["path"]
    client.delete_object(Bucket=name, Key=f"partial/corpus/{last}")
    run = json.loads((SEED / "run.json").read_bytes())
    for observation in run["observations"]:
        if observation["task_id"] == REGRESSED_TASK and observation["strategy"] == "compiled":
            observation["quality_milli"] = 0  # below the task's floor at every budget
    client.put_object(Bucket=name, Key="regressed/run.json", Body=json.dumps(run, indent=1).encode())
    yield name
    empty_bucket(client, name)
    client.delete_bucket(Bucket=name)


def _loopback_env(container_spec: dict[str, Any], redis: RedisServer) -> dict[str, str]:
    """The literal env values of a container of the in-cluster-redis overlay
    (the broker URLs), with the Redis service replaced by ``redis``."""
    env = {}
    for entry in container_spec["env"]:
        if "value" in entry:
            (value,) = runnable([entry["value"]], {"REDIS_PASSWORD": redis.password})
            env[entry["name"]] = value.replace("@eceb-redis:6379/", f"@127.0.0.1:{redis.port}/")
    assert env == {"ECEB_BROKER_URL": redis.url(0), "ECEB_RESULT_BACKEND": redis.url(1)}
    return env


@pytest.fixture(scope="module")
def worker(redis_server: RedisServer, s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One worker, run as the Deployment runs it (its command line and broker URLs)."""
    spec = container(find(render("in-cluster-redis"), "Deployment", "eceb-worker"), "worker")
    env = {
        **_loopback_env(spec, redis_server),
        "ECEB_S3_ENDPOINT_URL": s3_server.endpoint_url,
        "ECEB_TASK_MAX_RETRIES": "1",
    }
    with deployment_worker(tmp_path_factory.mktemp("nightly-worker"), env) as running:
        yield running.node


@pytest.fixture(scope="module")
def cronjob() -> dict[str, Any]:
    return find(render("in-cluster-redis"), "CronJob", "eceb-nightly")


def _fixed_run(words: list[str]) -> list[str]:
    """The CronJob's command line evaluating a fixed run (docs/KUBERNETES.md,
    "The nightly job"): ``--profile $(NIGHTLY_PROFILE)`` replaced by
    ``$(NIGHTLY_RUN)``, the spending stop left out."""
    fixed = list(words)
    at = fixed.index("--profile")
    fixed[at : at + 2] = ["$(NIGHTLY_RUN)"]
    at = fixed.index("--spend-stop-usd")
    del fixed[at : at + 2]
    return fixed


def _run_night(
    cronjob: dict[str, Any], redis: RedisServer, s3: S3Server, words: list[str], values: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """One night: ``words`` (the CronJob's command line, or one made of it)
    with ``values``, in the CronJob's environment given loopback values."""
    spec = pod_spec(cronjob)
    nightly = container(cronjob, "nightly")
    env = {**os.environ, "ECEB_S3_ENDPOINT_URL": s3.endpoint_url, **_loopback_env(nightly, redis)}
    assert spec["restartPolicy"] == "Never"
    result = subprocess.run(runnable(words, values), capture_output=True, text=True, env=env, check=False, timeout=600)
    for secret in (redis.password, *s3.secrets, KEY):
        assert secret not in result.stdout + result.stderr
    return result


def _night(
    cronjob: dict[str, Any], redis: RedisServer, s3: S3Server, bucket: str, *, run: str = "seed", corpus: str = "seed"
) -> subprocess.CompletedProcess[str]:
    """One night evaluating a fixed run: the CronJob's command line so changed (:func:`_fixed_run`)."""
    values = {
        "NIGHTLY_BENCHMARK": f"s3://{bucket}/seed/benchmark.json",
        "NIGHTLY_RUN": f"s3://{bucket}/{run}/run.json",
        "NIGHTLY_CORPUS": f"s3://{bucket}/{corpus}/corpus",
        "NIGHTLY_RULES": "",
        "NIGHTLY_REPORTS": f"s3://{bucket}/nightly/",
    }
    return _run_night(cronjob, redis, s3, _fixed_run(command_line(container(cronjob, "nightly"))), values)


def _accept(s3: S3Server, *words: str) -> subprocess.CompletedProcess[str]:
    """``eceb-dist nightly-accept WORDS`` with the nightly container's environment (no broker needed)."""
    env = {**os.environ, "ECEB_S3_ENDPOINT_URL": s3.endpoint_url}
    for variable in ("ECEB_BROKER_URL", "ECEB_RESULT_BACKEND"):
        env.pop(variable, None)
    result = subprocess.run(
        runnable(["eceb-dist", "nightly-accept", *words], {}),
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    for secret in s3.secrets:
        assert secret not in result.stdout + result.stderr
    return result


def _object(s3: S3Server, bucket: str, key: str) -> bytes:
    body: bytes = s3.client().get_object(Bucket=bucket, Key=key)["Body"].read()
    return body


def _reports(s3: S3Server, bucket: str) -> list[str]:
    listed = s3.client().list_objects_v2(Bucket=bucket, Prefix="nightly/")
    return sorted(item["Key"] for item in listed.get("Contents", []))


def test_nights(
    redis_server: RedisServer,
    s3_server: S3Server,
    worker: str,
    bucket: str,
    cronjob: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    expected = embedded_report(tmp_path_factory.mktemp("embedded"))
    latest = f"s3://{bucket}/nightly/latest.json"
    baseline = f"s3://{bucket}/nightly/baseline.json"

    # Night one: nothing to compare; tonight's report is the baseline.
    first = _night(cronjob, redis_server, s3_server, bucket)
    assert first.returncode == 0, first.stdout + first.stderr
    job_one = first.stdout.splitlines()[0]
    assert len(job_one) == 32
    assert f"tonight: 8/15 tasks pass; report s3://{bucket}/nightly/reports/{job_one}.json" in first.stdout
    assert f"no baseline at {baseline}: the first night, nothing to compare" in first.stdout
    assert f"{latest} now holds tonight's report (job {job_one})" in first.stdout
    assert f"{baseline} now holds tonight's report (job {job_one})" in first.stdout
    assert _object(s3_server, bucket, f"nightly/reports/{job_one}.json") == expected
    assert _object(s3_server, bucket, "nightly/latest.json") == expected
    assert _object(s3_server, bucket, "nightly/baseline.json") == expected

    # A night like the last: no regression.
    second = _night(cronjob, redis_server, s3_server, bucket)
    assert second.returncode == 0, second.stdout + second.stderr
    job_two = second.stdout.splitlines()[0]
    assert "0 of 15 task(s) changed" in second.stdout
    assert f"compared with the last accepted report, {baseline}:" in second.stdout
    assert "no regression (8/15 -> 8/15 tasks pass)" in second.stdout
    assert f"{latest} now holds tonight's report (job {job_two})" in second.stdout
    assert f"{baseline} now holds tonight's report (job {job_two})" in second.stdout
    assert _reports(s3_server, bucket) == sorted(
        [
            "nightly/baseline.json",
            "nightly/latest.json",
            f"nightly/reports/{job_one}.json",
            f"nightly/reports/{job_two}.json",
        ]
    )

    # The planted regression: the task that passed fails now, named; the night fails.
    third = _night(cronjob, redis_server, s3_server, bucket, run="regressed")
    assert third.returncode == exit_codes.REGRESSION, third.stdout + third.stderr
    job_three = third.stdout.splitlines()[0]
    assert f"REGRESSION  pass_to_fail: task {REGRESSED_TASK} passed before and fails now" in third.stdout
    assert f"  {REGRESSED_TASK}: PASS -> FAIL" in third.stdout
    assert "REGRESSED: " in third.stdout
    assert "(8/15 -> 7/15 tasks pass)" in third.stdout
    regressed = _object(s3_server, bucket, f"nightly/reports/{job_three}.json")
    assert _object(s3_server, bucket, "nightly/latest.json") == regressed != expected
    # The baseline stays the last accepted report, and the log says how to accept tonight's.
    assert _object(s3_server, bucket, "nightly/baseline.json") == expected
    assert f"{baseline} now holds" not in third.stdout
    assert f"{baseline} unchanged: tonight regressed" in third.stdout
    assert f"eceb-dist nightly-accept {job_three} --reports s3://{bucket}/nightly/" in third.stdout

    # The next night still compares with the baseline: the regression fails it again.
    fourth = _night(cronjob, redis_server, s3_server, bucket, run="regressed")
    assert fourth.returncode == exit_codes.REGRESSION, fourth.stdout + fourth.stderr
    job_four = fourth.stdout.splitlines()[0]
    assert "(8/15 -> 7/15 tasks pass)" in fourth.stdout
    assert _object(s3_server, bucket, "nightly/baseline.json") == expected

    # Refused acceptances leave the baseline: a night with no report, a report that is not one.
    missing = _accept(s3_server, "0" * 32, "--reports", f"s3://{bucket}/nightly/")
    assert missing.returncode == exit_codes.BAD_INPUT, missing.stdout + missing.stderr
    assert f"s3://{bucket}/nightly/reports/{'0' * 32}.json: cannot read: no such object" in missing.stderr
    not_a_report = _accept(s3_server, f"s3://{bucket}/seed/run.json", "--reports", f"s3://{bucket}/nightly")
    assert not_a_report.returncode == exit_codes.BAD_INPUT, not_a_report.stdout + not_a_report.stderr
    assert f"s3://{bucket}/seed/run.json" in not_a_report.stderr
    assert _object(s3_server, bucket, "nightly/baseline.json") == expected

    # The regression accepted (by its night's job id): the nights after compare with it.
    accepted = _accept(s3_server, job_four, "--reports", f"s3://{bucket}/nightly/")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert accepted.stdout == (
        f"{baseline} now holds the report s3://{bucket}/nightly/reports/{job_four}.json (7/15 tasks pass)\n"
    )
    assert _object(s3_server, bucket, "nightly/baseline.json") == regressed
    fifth = _night(cronjob, redis_server, s3_server, bucket, run="regressed")
    assert fifth.returncode == 0, fifth.stdout + fifth.stderr
    assert "no regression (7/15 -> 7/15 tasks pass)" in fifth.stdout

    # A night whose job fails (an artifact missing from its corpus): the job's own exit code, nothing changed.
    before = {key: digest_bytes(_object(s3_server, bucket, key)) for key in _reports(s3_server, bucket)}
    failed = _night(cronjob, redis_server, s3_server, bucket, corpus="partial")
    assert failed.returncode == exit_codes.VERIFICATION_FAILED, failed.stdout + failed.stderr
    assert "no report was written" in failed.stderr
    assert "now holds" not in failed.stdout
    assert {key: digest_bytes(_object(s3_server, bucket, key)) for key in _reports(s3_server, bucket)} == before

    # A misspelled corpus prefix: refused before a job exists (bad input), nothing changed.
    misspelled = _night(cronjob, redis_server, s3_server, bucket, corpus="no-such")
    assert misspelled.returncode == exit_codes.BAD_INPUT, misspelled.stdout + misspelled.stderr
    assert (misspelled.stdout, "is the corpus prefix right?" in misspelled.stderr) == ("", True)
    assert {key: digest_bytes(_object(s3_server, bucket, key)) for key in _reports(s3_server, bucket)} == before


def test_markdown_and_different_roots(
    redis_server: RedisServer, s3_server: S3Server, worker: str, bucket: str, cronjob: dict[str, Any], tmp_path: Any
) -> None:
    """--markdown writes the CI comment; a previous report of another task
    root is refused (exit 3) and left as it was. The previous report is a
    ``latest.json`` alone (a prefix kept before ``baseline.json`` existed):
    it stands in for the baseline."""
    del worker
    prefix = f"s3://{bucket}/other-roots"
    report = json.loads(embedded_report(tmp_path / "embedded"))
    report["inputs"]["task_root"] = "0" * 64
    s3_server.client().put_object(Bucket=bucket, Key="other-roots/latest.json", Body=json.dumps(report).encode())
    env = {
        **os.environ,
        **_loopback_env(container(cronjob, "nightly"), redis_server),
        "ECEB_S3_ENDPOINT_URL": s3_server.endpoint_url,
    }
    words = [
        "eceb-dist",
        "nightly",
        f"s3://{bucket}/seed/benchmark.json",
        f"s3://{bucket}/seed/run.json",
        "--corpus",
        f"s3://{bucket}/seed/corpus",
        "--reports",
        prefix,
        "--markdown",
        str(tmp_path / "comment.md"),
    ]
    refused = subprocess.run(runnable(words, {}), capture_output=True, text=True, env=env, check=False, timeout=300)
    assert refused.returncode == exit_codes.BAD_INPUT, refused.stdout + refused.stderr
    assert "differs from" in refused.stderr and "--allow-different-roots" in refused.stderr
    assert json.loads(_object(s3_server, bucket, "other-roots/latest.json"))["inputs"]["task_root"] == "0" * 64
    allowed = subprocess.run(
        runnable([*words, "--allow-different-roots"], {}), capture_output=True, text=True, env=env, check=False
    )
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    comment = (tmp_path / "comment.md").read_text(encoding="utf-8")
    assert comment.startswith("## eceb compare: no regression")
    assert "| task root |" in comment


# -- Nights that make their run (--profile) ------------------------------------


@pytest.fixture(scope="module")
def tiny(s3_server: S3Server, bucket: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small benchmark of ``tests/support/making.py`` (two tasks, one
    repetition): its corpus and registry on disk, where the example context
    system reads them, and with the benchmark under ``tiny/`` in the bucket;
    the provider's key in ``provider/api-key``, the file a worker reads (as
    it reads the mounted Secret eceb-provider)."""
    root = tmp_path_factory.mktemp("tiny")
    write_corpus(root)
    write_benchmark(root, repetitions=1)
    client = s3_server.client()
    for name in ("benchmark.json", "registry.jsonl"):
        client.put_object(Bucket=bucket, Key=f"tiny/{name}", Body=(root / name).read_bytes())
    s3_server.upload_tree(root / "corpus", bucket, "tiny/corpus", threads=4)
    (root / "provider").mkdir()
    (root / "provider" / "api-key").write_text(f"{KEY}\n", encoding="utf-8")
    return root


def _profile(root: Path, provider: LoopbackProvider) -> Path:
    """``root/profile.json`` (and its rubric) for ``provider``: both models'
    key read from ``root/provider/api-key``, no spending stop of its own."""
    path = write_profile(root, provider.openai_base_url)
    profile = json.loads(path.read_text(encoding="utf-8"))
    for model in (profile["model"], profile["judge"]["model"]):
        model["api_key_env"] = ""
        model["api_key_file"] = str(root / "provider" / "api-key")
    assert "spending" not in profile
    path.write_text(json.dumps(profile, indent=2), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackProvider]:
    """The loopback provider answering every question right, judged 900 (above every task's floor)."""
    directory = tmp_path_factory.mktemp("provider")
    with running_loopback_provider(directory, answer_script(), api_key=KEY, deterministic=True) as running:
        yield running


@pytest.fixture(scope="module")
def making_workers(
    redis_server: RedisServer, s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[str]]:
    """Two workers run with the worker Deployment's command line and broker
    URLs (each its own node name, ``eceb-N@%h``, and metrics port); no key in
    their environment (the profile names the key's file). Yields their node names."""
    spec = container(find(render("in-cluster-redis"), "Deployment", "eceb-worker"), "worker")
    env = {
        **{key: value for key, value in os.environ.items() if key != "ECEB_TEST_KEY"},
        **_loopback_env(spec, redis_server),
        "ECEB_S3_ENDPOINT_URL": s3_server.endpoint_url,
        "ECEB_TASK_MAX_RETRIES": "1",
        "ECEB_METRICS_ADDRESS": "127.0.0.1",
    }
    log_dir = tmp_path_factory.mktemp("making-workers")
    host = socket.gethostname()
    processes: list[subprocess.Popen[bytes]] = []
    logs: dict[str, Path] = {}
    try:
        for number in range(2):
            words = command_line(spec)
            words[words.index("-n") + 1] = f"eceb-{number}@%h"
            words[words.index("--metrics-port") + 1] = str(_free_port())
            logs[f"eceb-{number}@{host}"] = log = log_dir / f"worker-{number}.log"
            with log.open("wb") as out:
                processes.append(
                    subprocess.Popen(
                        runnable(words, {}),
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        env=env,
                        cwd=log_dir,
                        start_new_session=True,
                    )
                )
        deadline = time.monotonic() + 60
        for node, log in logs.items():
            while f"{node} ready." not in log.read_text(encoding="utf-8", errors="replace"):
                assert time.monotonic() < deadline, f"worker {node} did not start:\n{log.read_text()[-3000:]}"
                time.sleep(0.05)
        yield list(logs)
    finally:
        stop_groups(processes, 20)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _made_night(
    cronjob: dict[str, Any],
    redis: RedisServer,
    s3: S3Server,
    bucket: str,
    root: Path,
    *,
    reports: str,
    stop: str = "5",
    inputs: str = "tiny",
    rules: str = "",
) -> subprocess.CompletedProcess[str]:
    """One night as the CronJob runs it: make tonight's run with
    ``root/profile.json`` of the benchmark and corpus under ``inputs/``,
    evaluate it, compare; with ``rules``, register tonight's corpus first."""
    values = {
        "NIGHTLY_BENCHMARK": f"s3://{bucket}/{inputs}/benchmark.json",
        "NIGHTLY_PROFILE": str(root / "profile.json"),
        "NIGHTLY_SPEND_STOP_USD": stop,
        "NIGHTLY_CORPUS": f"s3://{bucket}/{inputs}/corpus",
        "NIGHTLY_RULES": rules,
        "NIGHTLY_REPORTS": f"s3://{bucket}/{reports}/",
    }
    return _run_night(cronjob, redis, s3, command_line(container(cronjob, "nightly")), values)


def _keys(s3: S3Server, bucket: str, prefix: str) -> list[str]:
    listed = s3.client().list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/")
    return sorted(item["Key"] for item in listed.get("Contents", []))


def _made(result: subprocess.CompletedProcess[str]) -> tuple[str, re.Match[str], str]:
    """A made night's making job id, its spend line, and its evaluation job id (stdout's first three lines)."""
    lines = result.stdout.splitlines()
    assert JOB_ID.fullmatch(lines[0]) and JOB_ID.fullmatch(lines[2]), result.stdout
    made = MADE.fullmatch(lines[1])
    assert made is not None, result.stdout
    return lines[0], made, lines[2]


def test_two_nights_making_tonights_run(
    redis_server: RedisServer,
    s3_server: S3Server,
    making_workers: list[str],
    bucket: str,
    tiny: Path,
    provider: LoopbackProvider,
    cronjob: dict[str, Any],
    tmp_path: Path,
) -> None:
    del making_workers
    prefix = f"s3://{bucket}/made"
    _profile(tiny, provider)
    provider.reset()

    # Night one: tonight's run made, its spend printed, evaluated; no baseline yet: its report is the baseline.
    first = _made_night(cronjob, redis_server, s3_server, bucket, tiny, reports="made")
    assert first.returncode == 0, first.stdout + first.stderr
    making, made, evaluation = _made(first)
    observations, executions, known, possible, run = made.groups()
    assert run == f"{prefix}/runs/{making}.json"
    assert int(observations) > 0 and int(executions) >= int(observations)
    assert known != "$0.000000" and possible == "$0.000000"
    passing = re.search(
        rf"^tonight: (\d+)/2 tasks pass; report {prefix}/reports/{evaluation}\.json$", first.stdout, re.M
    )
    assert passing is not None and int(passing.group(1)) >= 1, first.stdout
    assert f"no baseline at {prefix}/baseline.json: the first night, nothing to compare" in first.stdout
    assert f"{prefix}/baseline.json now holds tonight's report (job {evaluation})" in first.stdout
    assert f"waiting for job {making} (making tonight's run)" in first.stderr
    assert "tonight's spending stop: $5.000000" in first.stderr  # --spend-stop-usd, the profile setting none
    night_one = _object(s3_server, bucket, f"made/reports/{evaluation}.json")
    assert (
        _object(s3_server, bucket, "made/baseline.json") == night_one == _object(s3_server, bucket, "made/latest.json")
    )
    # (The making job's partial results, under a dot folder beside the run, are not looked at.)
    assert [key for key in _keys(s3_server, bucket, "made") if not key.startswith("made/runs/.")] == sorted(
        [
            "made/baseline.json",
            "made/latest.json",
            f"made/reports/{evaluation}.json",
            f"made/runs/{making}.json",
            f"made/runs/{making}.judgments.jsonl",
            f"made/runs/{making}.transcripts.jsonl",
        ]
    )
    # Every call of the run reached the provider once; the night's spend is the job's, as `status` shows it.
    assert provider.stats()["answered"] == _object(s3_server, bucket, f"made/runs/{making}.transcripts.jsonl").count(
        b"\n"
    )
    status = dist(redis_server, s3_server, "status", making, result_backend=redis_server.url(1))
    assert status.returncode == 0, status.stderr
    assert f"; spent {known}; run {run}" in status.stdout

    # Night two: the provider's judge scores every answer 300, below every task's floor: a regression, named.
    with running_loopback_provider(
        tmp_path / "harsh", answer_script(score=300, rationale="misses steps"), api_key=KEY, deterministic=True
    ) as harsh:
        _profile(tiny, harsh)
        second = _made_night(cronjob, redis_server, s3_server, bucket, tiny, reports="made")
        assert harsh.stats()["answered"] > 0
    assert second.returncode == exit_codes.REGRESSION, second.stdout + second.stderr
    making_two, made_two, evaluation_two = _made(second)
    assert made_two.group(5) == f"{prefix}/runs/{making_two}.json"
    assert f"compared with the last accepted report, {prefix}/baseline.json:" in second.stdout
    assert "REGRESSION  pass_to_fail: task failover passed before and fails now" in second.stdout
    assert "  failover: PASS -> FAIL" in second.stdout
    assert f"({passing.group(1)}/2 -> 0/2 tasks pass)" in second.stdout
    assert f"{prefix}/baseline.json unchanged: tonight regressed" in second.stdout
    assert f"eceb-dist nightly-accept {evaluation_two} --reports {prefix}/" in second.stdout
    # The baseline is night one's report still; latest.json is tonight's.
    assert _object(s3_server, bucket, "made/baseline.json") == night_one
    assert _object(s3_server, bucket, "made/latest.json") == _object(
        s3_server, bucket, f"made/reports/{evaluation_two}.json"
    )
    # Restore the profile of the module's provider for the tests after this one.
    _profile(tiny, provider)


def test_a_spending_stop_below_the_first_call_makes_nothing_and_evaluates_nothing(
    redis_server: RedisServer,
    s3_server: S3Server,
    making_workers: list[str],
    bucket: str,
    tiny: Path,
    provider: LoopbackProvider,
    cronjob: dict[str, Any],
    tmp_path: Path,
) -> None:
    """A stop of one micro-USD: no call starts, the making job is refused
    (exit 9, its reason printed), nothing is evaluated, the baseline is left."""
    del making_workers
    _profile(tiny, provider)
    baseline = embedded_report(tmp_path / "embedded")
    s3_server.client().put_object(Bucket=bucket, Key="stopped/baseline.json", Body=baseline)
    provider.reset()
    stopped = _made_night(cronjob, redis_server, s3_server, bucket, tiny, reports="stopped", stop="0.000001")
    assert stopped.returncode == exit_codes.EXECUTION_REFUSED, stopped.stdout + stopped.stderr
    making = stopped.stdout.splitlines()[0]
    assert JOB_ID.fullmatch(making), stopped.stdout
    assert "spending stopped: " in stopped.stderr and "would pass the stop of 1 micro-USD" in stopped.stderr
    assert f"job {making} failed" in stopped.stderr
    assert f"nothing evaluated tonight: s3://{bucket}/stopped/baseline.json and " in stopped.stderr
    assert "tonight: " not in stopped.stdout and "now holds" not in stopped.stdout
    assert "tonight's run was not made; spend $0.000000 known, $0.000000 possible before it ended" in stopped.stdout
    assert provider.stats()["total"] == 0  # no call was sent
    assert [key for key in _keys(s3_server, bucket, "stopped") if not key.startswith("stopped/runs/")] == [
        "stopped/baseline.json"
    ]
    assert _object(s3_server, bucket, "stopped/baseline.json") == baseline


# -- Nights that register tonight's corpus first (--register-rules) -------------------

RULES = """schema = "symgliph.eceb/rules-v0.1"

[[rule]]
glob = "runbook/**"
kind = "runbook"
classification = "internal"

[[rule]]
glob = "rfc/**"
kind = "rfc"
classification = "public"

[[rule]]
glob = "policy/**"
kind = "policy"
classification = "restricted"

[[rule]]
glob = "chat/**"
kind = "chat"
classification = "internal"
"""
"""The rules that register the small benchmark's corpus as its own registry holds it."""

EDITED = "rfc/raft.md"
"""The artifact edited between the nights (its length kept: the same tokens, another digest)."""
ADDED = "policy/keys.md"
"""The artifact added between the nights (restricted: no task may see it)."""
REGISTRATION = re.compile(
    r"tonight's corpus: registered (\d+) artifacts \((\d+) bytes\) from (\S+)(?: \(hashed (\d+), took the digests "
    r"of (\d+) from the previous registry\))?; corpus root ([0-9a-f]{64}); "
    r"registry (\S+)"
)


@pytest.fixture
def registered_inputs(s3_server: S3Server, bucket: str, tmp_path: Path) -> Path:
    """The small benchmark of ``tests/support/making.py`` under ``registered/``
    (its benchmark and registry, and its corpus, which the test changes), the
    same on disk where the example context system reads it, and the rules
    file that registers it (``rules.toml``)."""
    root = tmp_path / "registered"
    write_corpus(root)
    write_benchmark(root, repetitions=1)
    client = s3_server.client()
    for name in ("benchmark.json", "registry.jsonl"):
        client.put_object(Bucket=bucket, Key=f"registered/{name}", Body=(root / name).read_bytes())
    s3_server.upload_tree(root / "corpus", bucket, "registered/corpus", threads=4)
    (root / "provider").mkdir()
    (root / "provider" / "api-key").write_text(f"{KEY}\n", encoding="utf-8")
    (root / "rules.toml").write_text(RULES, encoding="utf-8")
    return root


def _registered(result: subprocess.CompletedProcess[str]) -> tuple[str, re.Match[str]]:
    """A night's registration job id (stdout's first line) and what it registered."""
    lines = result.stdout.splitlines()
    assert JOB_ID.fullmatch(lines[0]), result.stdout
    found = REGISTRATION.fullmatch(lines[1])
    assert found is not None, result.stdout
    return lines[0], found


def _registered_night(
    cronjob: dict[str, Any], redis: RedisServer, s3: S3Server, bucket: str, root: Path
) -> subprocess.CompletedProcess[str]:
    """One night under ``registered-nightly/``, registering the corpus under ``registered/`` first."""
    rules = str(root / "rules.toml")
    return _made_night(cronjob, redis, s3, bucket, root, reports="registered-nightly", inputs="registered", rules=rules)


def test_two_nights_registering_tonights_corpus_first(
    redis_server: RedisServer,
    s3_server: S3Server,
    making_workers: list[str],
    bucket: str,
    registered_inputs: Path,
    provider: LoopbackProvider,
    cronjob: dict[str, Any],
) -> None:
    """Night one registers the corpus (in full: no registry of a previous
    night), finds it is the one the benchmark pins and evaluates the
    benchmark as it is. Between the nights one file is edited and one added;
    night two registers again, prints what changed (the artifacts and the
    task whose evidence moved), makes and evaluates its run with the
    benchmark pinned to tonight's registry, compares across the corpus
    change and keeps tonight's registry for the next night. A night whose
    corpus lost a task's required artifact fails the re-pinned benchmark's
    checks (exit 3) before any call, and keeps the last registry."""
    del making_workers
    root = registered_inputs
    prefix = f"s3://{bucket}/registered-nightly"
    benchmark = f"s3://{bucket}/registered/benchmark.json"
    kept = f"{prefix}/registry.jsonl"
    _profile(root, provider)
    pinned = json.loads((root / "benchmark.json").read_text(encoding="utf-8"))["registry"]["corpus_root"]

    # Night one: the corpus as the benchmark's registry holds it; the benchmark is used as it is.
    first = _registered_night(cronjob, redis_server, s3_server, bucket, root)
    assert first.returncode == 0, first.stdout + first.stderr
    registration, registered = _registered(first)
    count, _, source, _, _, root_one, registry_one = registered.groups()
    assert (int(count), source, root_one) == (5, f"s3://{bucket}/registered/corpus", pinned)
    assert registry_one == f"{prefix}/registries/{registration}.jsonl"
    assert f"waiting for job {registration} (registering tonight's corpus)" in first.stderr
    own = f"s3://{bucket}/registered/registry.jsonl"
    assert f"no registry of a previous night: tonight's compared with the benchmark's, {own}" in first.stdout
    assert (
        f"changes since {own}: no difference: 5 artifacts unchanged; corpus root unchanged; "
        "benchmark corpus root still holds, 0 of 2 tasks affected"
    ) in first.stdout
    assert f"tonight's corpus root is the one {benchmark} pins: the benchmark is used as it is" in first.stdout
    assert f"{kept} now holds tonight's registry (job {registration})" in first.stdout
    assert _object(s3_server, bucket, "registered-nightly/registry.jsonl") == (root / "registry.jsonl").read_bytes()
    assert (
        _object(s3_server, bucket, f"registered-nightly/registries/{registration}.jsonl")
        == (root / "registry.jsonl").read_bytes()
    )
    night_one = json.loads(_object(s3_server, bucket, "registered-nightly/baseline.json"))
    assert night_one["inputs"]["corpus_root"] == pinned

    # Between the nights: one file edited (in the bucket and where the context system reads it), one added.
    edited = (root / "corpus" / EDITED).read_bytes().replace(b"randomized", b"randomised")
    (root / "corpus" / EDITED).write_bytes(edited)
    client = s3_server.client()
    client.put_object(Bucket=bucket, Key=f"registered/corpus/{EDITED}", Body=edited)
    client.put_object(Bucket=bucket, Key=f"registered/corpus/{ADDED}", Body=b"# Keys\nRotate every key yearly.\n")

    # Night two: registered again, the changes named, the benchmark pinned to tonight's corpus root.
    provider.reset()
    second = _registered_night(cronjob, redis_server, s3_server, bucket, root)
    assert second.returncode == 0, second.stdout + second.stderr
    registration_two, registered_two = _registered(second)
    count, _, _, hashed, reused, root_two, registry_two = registered_two.groups()
    assert (hashed, reused) == ("2", "4"), second.stdout  # incremental: the edited and the added file read
    assert int(count) == 6 and root_two != pinned
    assert registry_two == f"{prefix}/registries/{registration_two}.jsonl"
    assert f"waiting for job {registration_two} (registering tonight's corpus)" in second.stderr
    assert (
        f"changes since {kept}: 1 added, 0 removed, 1 changed, 4 unchanged; corpus root changed; "
        "benchmark corpus root no longer holds, 1 of 2 tasks affected"
    ) in second.stdout
    assert f"  + {ADDED} (policy, restricted, 32 bytes)" in second.stdout
    assert re.search(
        rf"^  ~ {EDITED}: source_digest [0-9a-f]{{16}}\.\.\. -> [0-9a-f]{{16}}\.\.\.$", second.stdout, re.M
    )
    assert re.search(rf"^  task raft-election: required {EDITED} changed \(source_digest ", second.stdout, re.M)
    repinned_url = f"{prefix}/registries/{registration_two}.benchmark.json"
    assert f"tonight's benchmark: {repinned_url} ({benchmark} pinned to corpus root {root_two})" in second.stdout
    repinned = msgspec.json.decode(
        _object(s3_server, bucket, repinned_url.removeprefix(f"s3://{bucket}/")), type=Benchmark
    )
    original = msgspec.json.decode((root / "benchmark.json").read_bytes(), type=Benchmark)
    assert repinned.registry == RegistryReference(path=f"{registration_two}.jsonl", corpus_root=root_two)
    assert msgspec.structs.replace(repinned, registry=original.registry) == original
    # The run was made and evaluated against tonight's corpus, and compared across the change.
    lines = second.stdout.splitlines()
    making = next(line for line in lines if JOB_ID.fullmatch(line) and line != registration_two)
    run = json.loads(_object(s3_server, bucket, f"registered-nightly/runs/{making}.json"))
    assert run["corpus_root"] == root_two
    assert provider.stats()["answered"] > 0
    assert f"the corpus changed since that report (corpus root {pinned} -> {root_two})" in second.stdout
    assert "no regression" in second.stdout
    latest = json.loads(_object(s3_server, bucket, "registered-nightly/latest.json"))
    assert latest["inputs"]["corpus_root"] == root_two
    assert latest["inputs"]["task_root"] == night_one["inputs"]["task_root"]
    assert f"{kept} now holds tonight's registry (job {registration_two})" in second.stdout
    assert _object(s3_server, bucket, "registered-nightly/registry.jsonl") == _object(
        s3_server, bucket, f"registered-nightly/registries/{registration_two}.jsonl"
    )

    # Night three: a task's required artifact is gone: the re-pinned benchmark fails its checks, nothing is sent.
    client.delete_object(Bucket=bucket, Key=f"registered/corpus/{EDITED}")
    provider.reset()
    kept_before = _object(s3_server, bucket, "registered-nightly/registry.jsonl")
    third = _registered_night(cronjob, redis_server, s3_server, bucket, root)
    assert third.returncode == exit_codes.BAD_INPUT, third.stdout + third.stderr
    assert f"  - {EDITED} (rfc, public, " in third.stdout
    assert f"  task raft-election: required {EDITED} removed" in third.stdout
    assert "tasks[1] (raft-election): field 'required_artifacts': 'rfc/raft.md' is not in the registry" in third.stderr
    assert provider.stats()["total"] == 0
    assert "now holds" not in third.stdout
    assert _object(s3_server, bucket, "registered-nightly/registry.jsonl") == kept_before


# -- The command line's own checks ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "micro"),
    [
        ("25", 25_000_000),
        ("0.5", 500_000),
        ("12.345678", 12_345_678),
        ("0.000001", 1),
        ("007.10", 7_100_000),
        ("0", 0),
        ("9007199254.740991", SAFE_INTEGER_MAX),
    ],
)
def test_amounts_in_usd_are_read_exactly(text: str, micro: int) -> None:
    assert usd_to_micro(text) == micro


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("-1", "is negative"),
        ("-0.5", "is negative"),
        ("1.1234567", "more than 6 decimals"),
        ("0.0000001", "more than 6 decimals"),
        ("1e3", "is not an amount of USD"),
        ("", "is not an amount of USD"),
        (".5", "is not an amount of USD"),
        ("5.", "is not an amount of USD"),
        ("1,000", "is not an amount of USD"),
        ("$5", "is not an amount of USD"),
        (" 5", "is not an amount of USD"),
        ("+5", "is not an amount of USD"),
        ("nan", "is not an amount of USD"),
        ("9007199254.740992", "the largest amount counted exactly"),
        ("9" * 5000, "the largest amount counted exactly"),
    ],
)
def test_amounts_in_usd_that_are_refused(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)):
        usd_to_micro(text)


@pytest.mark.parametrize(
    ("words", "message"),
    [
        ([], "give RUN (a run to evaluate) or --profile PROFILE (make tonight's run, then evaluate it)"),
        (["s3://b/run.json", "--profile", "PROFILE"], "give RUN (a run to evaluate) or --profile PROFILE"),
        (["s3://b/run.json", "--spend-stop-usd", "5"], "--spend-stop-usd stops the spending of a run made tonight"),
        (["--profile", "PROFILE", "--spend-stop-usd", "-5"], "'-5' is negative"),
        (["--profile", "PROFILE", "--spend-stop-usd", "0.00"], "'0.00' would stop nothing"),
        (["--profile", "PROFILE", "--spend-stop-usd", "0.1234567"], "more than 6 decimals"),
    ],
    ids=["neither", "both", "stop-without-profile", "negative", "zero", "below-a-micro-usd"],
)
def test_what_to_evaluate_and_the_stop_are_checked_first(tmp_path: Path, words: list[str], message: str) -> None:
    """Usage errors (exit 2), before any file is read or anything is reached."""
    words = [str(tmp_path / "profile.json") if word == "PROFILE" else word for word in words]
    result = CliRunner().invoke(
        dist_main,
        ["nightly", "s3://b/benchmark.json", *words, "--corpus", "s3://b/corpus", "--reports", "s3://b/nightly/"],
        env={"ECEB_BROKER_URL": "redis://127.0.0.1:1/0", "ECEB_S3_ENDPOINT_URL": "http://127.0.0.1:1"},
    )
    assert result.exit_code == exit_codes.USAGE, result.output
    assert message in " ".join(result.output.split())


def test_what_registers_tonights_corpus_is_checked_before_anything_is_reached(tmp_path: Path) -> None:
    """A corpus that is not in object storage is a usage error (exit 2), a
    rules file that cannot be read bad input (exit 3, naming it), before
    the broker or the storage is reached; an empty --register-rules
    registers nothing (the CronJob's default)."""
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")

    def night(corpus: str, rules_path: str) -> Any:
        words = ["nightly", "s3://b/benchmark.json", "s3://b/run.json", "--corpus", corpus]
        words += ["--register-rules", rules_path, "--reports", "s3://b/nightly/"]
        env = {"ECEB_BROKER_URL": "redis://127.0.0.1:1/0", "ECEB_S3_ENDPOINT_URL": "http://127.0.0.1:1"}
        return CliRunner().invoke(dist_main, words, env=env)

    local = night(str(tmp_path), str(rules))
    assert local.exit_code == exit_codes.USAGE, local.output
    assert "--corpus must then be an s3://bucket/prefix URL" in " ".join(local.output.split())
    missing = night("s3://b/corpus", str(tmp_path / "no-such-rules.toml"))
    assert missing.exit_code == exit_codes.BAD_INPUT, missing.output
    assert "no-such-rules.toml" in missing.output
    # Empty: no registration; the night goes on to reach the storage (unreachable here: exit 5).
    unregistered = night("s3://b/corpus", "")
    assert unregistered.exit_code == exit_codes.STORAGE, unregistered.output


def test_a_benchmark_pinned_to_tonights_registry_keeps_its_tasks() -> None:
    data = (SEED / "benchmark.json").read_bytes()
    pinned = repinned_benchmark(data, "benchmark.json", registry_path="night.jsonl", corpus_root="a" * 64)
    original = msgspec.json.decode(data, type=Benchmark)
    repinned = msgspec.json.decode(pinned, type=Benchmark)
    assert repinned.registry == RegistryReference(path="night.jsonl", corpus_root="a" * 64)
    assert msgspec.structs.replace(repinned, registry=original.registry) == original
    assert task_root(repinned.tasks) == task_root(original.tasks)
    assert pinned.endswith(b"}\n") and pinned.count(b"\n") == 1
