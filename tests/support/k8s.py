"""The Kubernetes manifests as the tests use them: each overlay of
``deploy/k8s/overlays`` rendered by ``kubectl kustomize`` (fails, never
skips, saying what to install when kubectl is missing), its objects found by
kind and name, a container's command line made runnable here (its
``$(VAR)`` references replaced, ``eceb-dist`` run by this interpreter), and
a worker started with the Deployment's own command line.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.paths import REPO
from tests.support.redis_server import stop_groups

__all__ = [
    "OVERLAYS",
    "DeploymentWorker",
    "command_line",
    "container",
    "deployment_worker",
    "find",
    "pod_spec",
    "render",
    "runnable",
]

K8S = REPO / "deploy" / "k8s"
OVERLAYS = tuple(sorted(path.name for path in (K8S / "overlays").iterdir() if path.is_dir()))
"""Every overlay: ``autoscaling``, ``in-cluster-redis``, ``managed-redis``."""
INSTALL_HINT = (
    "install kubectl 1.32 (kustomize is built in): the Debian package kubectl from "
    "https://pkgs.k8s.io/core:/stable:/v1.32/deb/ or the binary from https://dl.k8s.io/"
)
_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


@functools.cache
def _rendered(overlay: str) -> str:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail(f"the Kubernetes manifest tests need kubectl: {INSTALL_HINT}", pytrace=False)
    result = subprocess.run(
        [kubectl, "kustomize", str(K8S / "overlays" / overlay)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, f"kubectl kustomize {overlay} failed:\n{result.stderr}"
    return result.stdout


def render(overlay: str) -> list[dict[str, Any]]:
    """The objects ``kubectl kustomize deploy/k8s/overlays/OVERLAY`` renders (a fresh copy each call)."""
    return [document for document in yaml.safe_load_all(_rendered(overlay)) if document]


def find(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    """The one object of ``kind`` (and ``name``); fails when there is not exactly one."""
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"{len(found)} objects of kind {kind} named {name}: {[o['metadata'] for o in found]}"
    return found[0]


def pod_spec(workload: dict[str, Any]) -> dict[str, Any]:
    """The pod spec of a Deployment, StatefulSet or CronJob."""
    if workload["kind"] == "CronJob":
        spec: dict[str, Any] = workload["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        return spec
    template: dict[str, Any] = workload["spec"]["template"]["spec"]
    return template


def container(workload: dict[str, Any], name: str) -> dict[str, Any]:
    """The container ``name`` of a workload's pod."""
    matches = [c for c in pod_spec(workload)["containers"] if c["name"] == name]
    assert len(matches) == 1, f"no container {name} in {workload['metadata']['name']}"
    return matches[0]


def command_line(container_spec: dict[str, Any]) -> list[str]:
    """The container's command followed by its args, as written."""
    return [*container_spec.get("command", []), *container_spec.get("args", [])]


def runnable(words: list[str], values: Mapping[str, str]) -> list[str]:
    """``words`` with every ``$(VAR)`` replaced by ``values[VAR]`` (as the
    kubelet expands them; a reference without a value fails the test), and
    ``eceb-dist`` run as ``python -m eceb_cli.dist`` by this interpreter."""

    def value(match: re.Match[str]) -> str:
        assert match.group(1) in values, f"no value given for $({match.group(1)}) of {words}"
        return values[match.group(1)]

    expanded = [_REFERENCE.sub(value, word) for word in words]
    if expanded and expanded[0] == "eceb-dist":
        return [sys.executable, "-m", "eceb_cli.dist", *expanded[1:]]
    return expanded


WORKER_START_TIMEOUT_S = 45.0


@dataclass(frozen=True)
class DeploymentWorker:
    """A worker run with the Deployment's command line.

    Attributes:
        node: its Celery node name (``eceb@HOSTNAME``).
        metrics_port: the loopback port its metrics are served on here (the
            manifest's port named ``metrics`` is replaced by a free one).
        log_path: its combined stdout/stderr.
    """

    node: str
    metrics_port: int
    log_path: Path


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def deployment_worker(
    log_dir: Path, env: Mapping[str, str], overlay: str = "in-cluster-redis"
) -> Iterator[DeploymentWorker]:
    """Run one worker with the command line of the ``eceb-worker``
    Deployment of ``overlay`` (``eceb-dist worker ... -n eceb@%h``), with
    this process's environment and ``env`` (``ECEB_BROKER_URL`` at least; no
    ``ECEB_RESULT_BACKEND`` unless given), until the block ends; yields it
    once it is ready. Its metrics listen on 127.0.0.1, on a free port instead
    of the manifest's (which must be the container's port named metrics).
    Stops it (SIGTERM, warm shutdown, then SIGKILL of its process group) at
    the end."""
    worker = container(find(render(overlay), "Deployment", "eceb-worker"), "worker")
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / "deployment-worker.log"
    assert "ECEB_BROKER_URL" in env
    environment = {key: value for key, value in os.environ.items() if key != "ECEB_RESULT_BACKEND"}
    environment.update(env)
    environment["ECEB_METRICS_ADDRESS"] = "127.0.0.1"  # tests listen on loopback only
    words = command_line(worker)
    metrics = {p["name"]: p["containerPort"] for p in worker["ports"]}["metrics"]
    assert words[words.index("--metrics-port") + 1] == str(metrics)
    port = _free_loopback_port()
    words[words.index("--metrics-port") + 1] = str(port)
    node = f"eceb@{socket.gethostname()}"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            runnable(words, {}),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=environment,
            cwd=log_dir,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + WORKER_START_TIMEOUT_S
        while f"{node} ready." not in log_path.read_text(encoding="utf-8", errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the Deployment's worker did not start; its log:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.05)
        yield DeploymentWorker(node=node, metrics_port=port, log_path=log_path)
    finally:
        stop_groups([process], 20)
