"""What the tests of faults during a distributed job share: the seed job
with one artifact and one observation a shard, waiting for a condition,
the check that a job ends with the report ``eceb evaluate`` writes, and
finding the worker that runs a shard.

To catch a job in the middle of a shard, the workers read S3 through a
loopback relay that holds the first request for one corpus object
(:class:`~tests.support.relays.StallingRelay`, holding :data:`STALLED`).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import msgspec
import pytest

from eceb_cli import exit_codes
from eceb_worker.cluster.steps import Bounds
from tests.support.dist_support import WAIT_S, dist
from tests.support.redis_server import CeleryWorkers, RedisServer
from tests.support.s3_server import S3Server

__all__ = [
    "SHORT_BOUNDS",
    "STALLED",
    "STALL_TIMEOUT_S",
    "bounds_settings",
    "eceb_dist",
    "finishes_with_the_report",
    "holder_of",
    "has_read_a_job",
    "submit_seed",
    "unacked_of",
    "wait_for",
]

STALLED: Final = "policy/data-classification.md"
"""The corpus object whose first read is held."""
STALL_TIMEOUT_S: Final = 60.0
SHORT_BOUNDS: Final = Bounds(lease_s=10, heartbeat_s=2, watch_s=3, untaken_s=10)
"""Bounds of a lost step shorter than the defaults, for a test that waits
until every bound has run out (a lost shard runs again within 15 s, an
untaken one within 13 s); the lease still spans five renewals, as the
default one spans four, so a busy machine does not lapse it."""


def bounds_settings(bounds: Bounds) -> dict[str, str]:
    """The settings (``ECEB_LEASE_S``, ``ECEB_HEARTBEAT_S``, ``ECEB_WATCH_S``,
    ``ECEB_UNTAKEN_S``; docs/SETTINGS.md) that give ``bounds``."""
    return {
        "ECEB_LEASE_S": str(bounds.lease_s),
        "ECEB_HEARTBEAT_S": str(bounds.heartbeat_s),
        "ECEB_WATCH_S": str(bounds.watch_s),
        "ECEB_UNTAKEN_S": str(bounds.untaken_s),
    }


def wait_for(condition: Callable[[], object], what: str, timeout: float = STALL_TIMEOUT_S) -> None:
    """Poll ``condition`` until it holds; fail the test naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def submit_seed(redis_server: RedisServer, s3_server: S3Server, bucket: str, endpoint_url: str) -> tuple[str, str]:
    """Submit the seed, one artifact and one observation a shard (12 re-hash
    and 15 evaluation shards), reading S3 through ``endpoint_url``; the job
    id and its ``--out`` URL.

    Submitted in this process, as ``eceb-dist submit --shard-bytes 1
    --shard-observations 1 --endpoint-url URL`` does it (the same message,
    the same checks before queuing, the same fields of the job), without
    starting an interpreter for it: the command line itself is pinned by
    ``tests/cluster/test_dist.py``. ``s3_server``'s credentials are in this
    process's environment (:mod:`tests.support.s3_server`)."""
    from eceb_cli.submission import check_submission, evaluation_message
    from eceb_worker.cluster.client import Cluster
    from eceb_worker.families.eceb.options import EvaluationOptions

    prefix = f"s3://{bucket}/seed"
    benchmark, run = f"{prefix}/benchmark.json", f"{prefix}/run.json"
    out = f"s3://{bucket}/reports/{uuid.uuid4().hex}/report.json"
    message = evaluation_message(
        benchmark,
        run,
        corpus=f"{prefix}/corpus",
        out=out,
        endpoint_url=endpoint_url,
        shard_bytes=1,
        evaluation=EvaluationOptions(shard_observations=1),
    )
    check_submission(message)
    cluster = Cluster(redis_server.url(), redis_server.url())
    try:
        fields = {"corpus": message.corpus.source, "out": out, "benchmark": benchmark, "run": run}
        cluster.submit(message, created=int(time.time()), **fields)
    finally:
        cluster.app.close()
        cluster.store.client.connection_pool.disconnect()
    return message.job_id, out


def finishes_with_the_report(
    redis_server: RedisServer,
    s3_server: S3Server,
    job_id: str,
    expected_report: bytes,
    tmp_path: Path,
    workers: CeleryWorkers,
    timeout: str = WAIT_S,
) -> dict[str, str]:
    """Wait for the job (``timeout`` seconds at most); check it wrote exactly
    ``expected_report``, each shard counted once; its status line."""
    waited = dist(redis_server, s3_server, "wait", job_id, "--timeout", timeout)
    assert waited.returncode == exit_codes.TASKS_FAILED, waited.stderr + workers.logs()[-4000:]
    local = tmp_path / f"{job_id}.json"
    fetched = dist(redis_server, s3_server, "result", job_id, "-o", str(local))
    assert fetched.returncode == exit_codes.TASKS_FAILED, fetched.stderr
    assert local.read_bytes() == expected_report
    status = dist(redis_server, s3_server, "status", job_id)
    assert status.returncode == 0, status.stderr
    # Each shard counts once, however often it was delivered.
    assert "re-hash shards 12/12; evaluation shards 15/15" in status.stdout
    assert "failures 0" in status.stdout
    return {"status": status.stdout}


def eceb_dist(server: RedisServer, *args: str, **env: str) -> subprocess.Popen[str]:
    """``eceb-dist ARGS`` against ``server``, running (its output piped)."""
    return subprocess.Popen(
        [sys.executable, "-m", "eceb_cli.dist", *args],
        env={**os.environ, "ECEB_BROKER_URL": server.url(), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


_READS: Final = frozenset({"hgetall", "exec", "evalsha"})
"""What a connection last ran once it read a job (alone, in a pipeline, in a script)."""


def has_read_a_job(server: RedisServer, process: subprocess.Popen[str]) -> bool:
    """``process`` (an ``eceb-dist`` command) has read a job's state from
    ``server``: one of its connections last ran a read of a job (the
    workers' reads do not count; a command that cannot reach Redis when it starts fails at
    once, so a test restarting Redis under it waits for this first)."""
    ports = _local_ports(process.pid)
    client = server.client()
    try:
        return any(
            int(str(entry["addr"]).rsplit(":", 1)[1]) in ports and entry.get("cmd") in _READS
            for entry in client.client_list()
        )
    finally:
        client.close()


def _local_ports(pid: int) -> set[int]:
    """The local TCP ports of process ``pid``'s sockets."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            link = os.readlink(fd)
            if link.startswith("socket:["):
                inodes.add(link[len("socket:[") : -1])
    ports = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                if fields[9] in inodes:
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def holder_of(server: RedisServer, job_id: str, workers: CeleryWorkers, key: str = STALLED) -> tuple[int, str]:
    """Which of ``workers`` (its index) runs the shard of job ``job_id``
    reading corpus object ``key``, and that shard's step (``rehash:3``):
    read from the shard's lease, waited for."""
    client = server.client()
    found: list[tuple[int, str]] = []

    def leased() -> bool:
        steps = client.hgetall(f"eceb:job:{job_id}:steps")
        for name, record in steps.items():
            if key.encode() not in record:
                continue
            step = name.decode()
            lease = client.get(f"eceb:job:{job_id}:lease:{step}")
            if lease is not None:
                worker = msgspec.json.decode(lease)["worker"]
                found.append((workers.names.index(worker), step))
                return True
        return False

    try:
        wait_for(leased, f"the lease of the shard reading {key}")
    finally:
        client.close()
    return found[0]


def unacked_of(client: Any, job_id: str) -> list[dict[str, Any]]:
    """The messages of job ``job_id`` that a worker took and has not
    acknowledged (the broker's ``unacked`` hash, read through ``client``;
    a job whose worker was killed whole leaves its message there until the
    visibility timeout, so other jobs' are left out)."""
    messages = (json.loads(value)[0] for value in client.hvals("unacked"))
    return [message for message in messages if job_id in base64.b64decode(message["body"]).decode()]
