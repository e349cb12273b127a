"""``eceb-dist probe --timeout 5`` is the worker Deployment's exec probe,
whose ``timeoutSeconds`` is 15 (deploy/k8s/base/worker.yaml): the probe
must give its verdict (exit 1, not ready) within that time even when the
broker takes the connection and never answers (a stuck proxy, a hung
Redis), else the kubelet abandons it while the process lives on."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from eceb_cli import exit_codes
from tests.support.helpers import silent_loopback_port
from tests.support.k8s import container, find, render

PROBE_TIMEOUT_S = 5


def _kubelet_timeout_s() -> int:
    spec = container(find(render("in-cluster-redis"), "Deployment", "eceb-worker"), "worker")
    probe = spec["livenessProbe"]
    assert probe["exec"]["command"] == ["eceb-dist", "probe", "--timeout", str(PROBE_TIMEOUT_S), "--node", "eceb@%h"]
    timeout: int = probe["timeoutSeconds"]
    return timeout


def test_probe_ends_within_the_kubelets_timeout_on_a_silent_broker() -> None:
    limit = _kubelet_timeout_s()
    with silent_loopback_port() as port:
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "eceb_cli.dist", "probe", "--timeout", str(PROBE_TIMEOUT_S)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "ECEB_BROKER_URL": f"redis://:pw@127.0.0.1:{port}/0"},
            check=False,
        )
        elapsed = time.monotonic() - started
    assert done.returncode == 1 != exit_codes.INTERNAL, done.stderr
    assert "not ready" in done.stderr
    assert elapsed < limit, f"the probe took {elapsed:.0f} s, the kubelet gives it {limit} s: {done.stderr}"
