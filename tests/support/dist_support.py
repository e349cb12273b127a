"""What the ``eceb-dist`` tests share: the seed example in a bucket, the
report ``eceb evaluate`` writes for it, and running ``eceb-dist`` as a
subprocess (checking that no credential shows in its output)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

from eceb_cli import exit_codes
from tests.support.paths import REPO
from tests.support.redis_server import RedisServer
from tests.support.s3_server import S3Server, empty_bucket

__all__ = ["SEED", "WAIT_S", "dist", "embedded_report", "submit", "upload_seed"]

SEED = REPO / "examples" / "enterprise-seed"
WAIT_S = "60"


def upload_seed(s3_server: S3Server, bucket: str, prefix: str) -> None:
    """Put the seed's benchmark, run, registry and corpus under ``prefix``."""
    client = s3_server.client()
    for name in ("benchmark.json", "run.json", "registry.jsonl"):
        client.put_object(Bucket=bucket, Key=f"{prefix}/{name}", Body=(SEED / name).read_bytes())
    s3_server.upload_tree(SEED / "corpus", bucket, f"{prefix}/corpus", threads=4)


@contextlib.contextmanager
def seeded_bucket(s3_server: S3Server, kind: str) -> Iterator[str]:
    """A new bucket ``eceb-KIND-<random>`` holding the seed example under
    ``seed/`` while the context lasts; emptied and deleted after."""
    client = s3_server.client()
    name = f"eceb-{kind}-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    upload_seed(s3_server, name, "seed")
    try:
        yield name
    finally:
        empty_bucket(client, name)
        client.delete_bucket(Bucket=name)


def embedded_report(directory: Path, example: Path = SEED, corpus: Path | None = None, *extra: str) -> bytes:
    """The report ``eceb evaluate`` writes for ``example`` (in-process, from
    disk: its ``corpus/`` unless ``corpus`` is given), written in
    ``directory``, with the ``extra`` options. Evaluated once per test
    process for the same arguments (the examples do not change while the
    tests run, and the report's bytes are the same every time): a later
    call writes the same bytes in its ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)  # eceb evaluate -o creates no directory
    out = directory / f"{example.name}-report.json"
    key = (example, corpus or example / "corpus", extra)
    if key in _EMBEDDED_REPORTS:
        out.write_bytes(_EMBEDDED_REPORTS[key])
        return _EMBEDDED_REPORTS[key]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "eceb_cli",
            "evaluate",
            str(example / "benchmark.json"),
            str(example / "run.json"),
            "--corpus",
            str(corpus or example / "corpus"),
            "--workers",
            "1",
            "-o",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == exit_codes.TASKS_FAILED, result.stderr
    _EMBEDDED_REPORTS[key] = out.read_bytes()
    return _EMBEDDED_REPORTS[key]


_EMBEDDED_REPORTS: dict[tuple[Path, Path, tuple[str, ...]], bytes] = {}
"""The reports :func:`embedded_report` wrote in this process, by its arguments."""


def dist(
    redis_server: RedisServer,
    s3_server: S3Server,
    *args: str,
    broker_url: str | None = None,
    endpoint_url: str | None = None,
    result_backend: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``eceb-dist ARGS`` against the test Redis (or ``broker_url``, the
    backend the same unless ``result_backend``) and S3 server (or
    ``endpoint_url``), each URL in the environment, checking that no
    credential shows."""
    env = {
        **os.environ,
        "ECEB_BROKER_URL": broker_url or redis_server.url(),
        "ECEB_S3_ENDPOINT_URL": endpoint_url or s3_server.endpoint_url,
    }
    env.pop("ECEB_RESULT_BACKEND", None)
    if result_backend is not None:
        env["ECEB_RESULT_BACKEND"] = result_backend
    result = subprocess.run(
        [sys.executable, "-m", "eceb_cli.dist", *args], capture_output=True, text=True, env=env, check=False
    )
    for secret in (redis_server.password, *s3_server.secrets):
        assert secret not in result.stdout + result.stderr
    return result


def submit(redis_server: RedisServer, s3_server: S3Server, prefix: str, out: str, *options: str) -> str:
    """Submit the example under ``prefix`` (``s3://bucket/prefix``); the job id."""
    result = dist(
        redis_server,
        s3_server,
        "submit",
        f"{prefix}/benchmark.json",
        f"{prefix}/run.json",
        "--corpus",
        f"{prefix}/corpus",
        "--out",
        out,
        *options,
    )
    assert result.returncode == 0, result.stderr
    job_id = result.stdout.strip()
    assert len(job_id) == 32
    return job_id
