"""``eceb-dist probe``, the worker Deployment's exec probe, against a real
Redis and real Celery workers: the worker runs the Deployment's own command
line (``-n eceb@%h``) and the probe the manifest's own probe command.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.helpers import refusing_loopback_port
from tests.support.k8s import DeploymentWorker, container, deployment_worker, find, render, runnable
from tests.support.redis_server import RedisServer, running_redis, stop_groups


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A Redis of this module's own: its worker's node name is the host's."""
    with running_redis(tmp_path_factory.mktemp("probe-redis")) as server:
        yield server


@pytest.fixture(scope="module")
def worker(redis: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DeploymentWorker]:
    with deployment_worker(tmp_path_factory.mktemp("probe-worker"), {"ECEB_BROKER_URL": redis.url()}) as running:
        yield running


@pytest.fixture(scope="module")
def node(worker: DeploymentWorker) -> str:
    return worker.node


def _probe(redis_url: str, *words: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ECEB_BROKER_URL": redis_url}
    env.pop("ECEB_RESULT_BACKEND", None)
    return subprocess.run(runnable(list(words), {}), capture_output=True, text=True, env=env, check=False, timeout=60)


@pytest.mark.parametrize("probe", ["startupProbe", "readinessProbe", "livenessProbe"])
def test_the_manifests_probe_passes_for_the_deployments_worker(redis: RedisServer, node: str, probe: str) -> None:
    worker = container(find(render("in-cluster-redis"), "Deployment", "eceb-worker"), "worker")
    result = _probe(redis.url(), *worker[probe]["exec"]["command"])
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"ready: worker {node} consumes eceb\n"
    assert redis.password not in result.stdout + result.stderr


def test_quiet_probe_prints_nothing(redis: RedisServer, node: str) -> None:
    result = _probe(redis.url(), "eceb-dist", "probe", "-q", "--node", node)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_a_node_that_does_not_answer_is_not_ready(redis: RedisServer, node: str) -> None:
    started = time.monotonic()
    result = _probe(redis.url(), "eceb-dist", "probe", "--node", "eceb@no-such-pod", "--timeout", "1")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "not ready: worker eceb@no-such-pod did not answer within 1 s (through the broker redis://***@" in (
        result.stderr
    )
    assert redis.password not in result.stderr
    assert time.monotonic() - started < 30


@contextlib.contextmanager
def _celery_worker(broker_url: str, log_dir: Path, name: str, queue: str) -> Iterator[None]:
    """A solo Celery worker of eceb's application named ``name``, consuming
    ``queue``, until the block ends (ready when the block starts)."""
    log_path = log_dir / f"{name}.log"
    env = {**os.environ, "ECEB_BROKER_URL": broker_url}
    env.pop("ECEB_RESULT_BACKEND", None)
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "celery", "-A", "eceb_worker.cluster.app", "worker", "--pool", "solo"),
                *("--queues", queue, "--hostname", name, "--without-gossip", "--without-mingle"),
                *("--loglevel", "INFO"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=log_dir,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 45
        while f"{name} ready." not in log_path.read_text(encoding="utf-8", errors="replace"):
            assert process.poll() is None and time.monotonic() < deadline, log_path.read_text()[-3000:]
            time.sleep(0.05)
        yield
    finally:
        stop_groups([process], 20)


def test_a_worker_of_another_queue_is_not_ready(redis: RedisServer, tmp_path: Path) -> None:
    """On a database of its own (no eceb worker there): asked by name, or
    without a name, a worker of another queue is not ready."""
    name = "other@probe-test"
    url = redis.url(3)
    with _celery_worker(url, tmp_path, name, "not-eceb"):
        result = _probe(url, "eceb-dist", "probe", "--node", name)
        assert result.returncode == 1
        assert result.stderr == f"not ready: worker {name} answers but consumes not-eceb, not eceb\n"
        result = _probe(url, "eceb-dist", "probe", "--timeout", "2")
        assert result.returncode == 1
        assert result.stderr == f"not ready: no worker consumes eceb: {name} answered, consuming other queues\n"


def test_without_a_node_any_worker_of_the_queue_is_ready(redis: RedisServer, tmp_path: Path) -> None:
    """The walk-through's wait: workers started with names of their own
    (``-n w1@%h``), a bare ``probe`` passes and names each of them."""
    url = redis.url(4)
    with _celery_worker(url, tmp_path, "w1@probe-test", "eceb"), _celery_worker(url, tmp_path, "w2@probe-test", "eceb"):
        result = _probe(url, "eceb-dist", "probe", "--timeout", "2")
        assert (result.returncode, result.stderr) == (0, "")
        assert result.stdout == "ready: workers w1@probe-test, w2@probe-test consume eceb\n"
        quiet = _probe(url, "eceb-dist", "probe", "-q", "--timeout", "2")
        assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
        # With a node, only that node: the default name of this host is not one of them.
        named = _probe(url, "eceb-dist", "probe", "--node", "eceb@%h", "--timeout", "1")
        assert named.returncode == 1
        assert "did not answer within 1 s" in named.stderr


def test_without_a_node_and_no_worker_is_not_ready(redis: RedisServer) -> None:
    result = _probe(redis.url(5), "eceb-dist", "probe", "--timeout", "1")
    assert result.returncode == 1
    assert result.stderr.startswith("not ready: no worker answered within 1 s (through the broker redis://***@")
    assert redis.password not in result.stderr


def test_node_names_percent_h_as_this_host(redis: RedisServer, node: str) -> None:
    """``--node eceb@%h`` is the Deployment worker's own name (``-n eceb@%h``)."""
    result = _probe(redis.url(), "eceb-dist", "probe", "--node", "eceb@%h")
    assert (result.returncode, result.stdout) == (0, f"ready: worker {node} consumes eceb\n")


def test_an_unreachable_broker_is_not_ready() -> None:
    with refusing_loopback_port() as port:
        result = _probe(f"redis://:secret-pw@127.0.0.1:{port}/0", "eceb-dist", "probe", "--timeout", "1")
    assert result.returncode == 1
    assert result.stderr.startswith(f"not ready: cannot reach the broker redis://***@127.0.0.1:{port}/0")
    assert "secret-pw" not in result.stderr


def test_usage_errors_exit_2(redis: RedisServer) -> None:
    result = _probe(redis.url(), "eceb-dist", "probe", "--timeout", "0")
    assert result.returncode == 2
    assert "not a finite number of seconds greater than 0" in result.stderr


def test_the_deployments_worker_serves_metrics_and_logs_json(worker: DeploymentWorker) -> None:
    """The port named metrics serves Prometheus metrics; log lines are JSON."""
    with urllib.request.urlopen(f"http://127.0.0.1:{worker.metrics_port}/metrics", timeout=10) as response:
        assert response.status == 200
        body = response.read().decode()
    assert "# TYPE" in body
    lines = [line for line in worker.log_path.read_text(encoding="utf-8").splitlines() if line.startswith("{")]
    assert lines, worker.log_path.read_text()[-2000:]
    assert all(isinstance(json.loads(line), dict) for line in lines)
