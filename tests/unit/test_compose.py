"""docker-compose.yml and deploy/Dockerfile: what the cluster deployment relies on.

The file is validated against the Compose schema by ``deploy/check-compose.sh``
(run in CI); these tests check its contents.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest
import yaml

from eceb_worker.cluster.app import QUEUE
from tests.support.paths import REPO

ROOT = REPO
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"

ECEB_SERVICES = ("worker", "submit-example", "verify-example")
LOCAL_DEFAULTS = {
    "ECEB_REDIS_PASSWORD": "eceb-local",
    "ECEB_S3_ACCESS_KEY": "eceb-local",
    "ECEB_S3_SECRET_KEY": "eceb-local-secret",
}
"""Every variable the file interpolates, with its documented local default."""
REDIS_PASSWORD = "${ECEB_REDIS_PASSWORD:-eceb-local}"
SUBMIT = (
    "eceb-dist submit s3://eceb-inputs/enterprise-seed/benchmark.json s3://eceb-inputs/enterprise-seed/run.json"
    " --corpus s3://eceb-inputs/enterprise-seed/corpus --out s3://eceb-reports/enterprise-seed/report.json"
)
SECRET_KEY = re.compile(r"PASSWORD|SECRET|ACCESS_KEY|_USER$")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, Any]:
    return compose["services"]


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for key, value in node.items() for s in _strings(key) + _strings(value)]
    if isinstance(node, list):
        return [s for item in node for s in _strings(item)]
    return []


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_services(services: dict[str, Any]) -> None:
    assert set(services) == {"redis", "minio", "createbuckets", "worker", "flower", "submit-example", "verify-example"}
    assert "version" not in yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


def test_every_eceb_service_uses_the_same_image_and_build(compose: dict[str, Any], services: dict[str, Any]) -> None:
    shared = compose["x-eceb-image"]
    assert shared["build"] == {"context": ".", "dockerfile": "deploy/Dockerfile"}
    for name in ECEB_SERVICES:
        assert services[name]["image"] == shared["image"], name
        assert services[name]["build"] == shared["build"], name
    others = set(services) - set(ECEB_SERVICES)
    assert not any("build" in services[name] or services[name]["image"] == shared["image"] for name in others)


def test_eceb_services_share_one_environment(compose: dict[str, Any], services: dict[str, Any]) -> None:
    env = compose["x-eceb-env"]
    assert env["ECEB_BROKER_URL"] == f"redis://:{REDIS_PASSWORD}@redis:6379/0"
    assert env["ECEB_RESULT_BACKEND"] == f"redis://:{REDIS_PASSWORD}@redis:6379/1"
    assert env["ECEB_S3_ENDPOINT_URL"] == "http://minio:9000"
    for name in ("worker", "submit-example"):
        assert services[name]["environment"] == env, name
    flower = services["flower"]
    assert flower["environment"]["CELERY_BROKER_URL"] == env["ECEB_BROKER_URL"]
    assert "$$CELERY_BROKER_URL" in " ".join(flower["command"])
    minio = services["minio"]["environment"]
    assert minio["MINIO_ROOT_USER"] == env["AWS_ACCESS_KEY_ID"]
    assert minio["MINIO_ROOT_PASSWORD"] == env["AWS_SECRET_ACCESS_KEY"]


def test_worker_consumes_the_eceb_queue(services: dict[str, Any]) -> None:
    worker = services["worker"]
    command = worker["command"]
    assert command[:4] == ["celery", "-A", "eceb_worker.cluster.app", "worker"]
    assert _option(command, "-Q") == QUEUE
    assert _option(command, "--pool") == "prefork"
    assert _option(command, "--concurrency") == "1"
    assert worker["deploy"]["replicas"] == 2
    # A fixed name or published port would make `--scale worker=N` fail.
    assert "container_name" not in worker
    assert "ports" not in worker


def test_buckets_and_health(services: dict[str, Any]) -> None:
    assert services["redis"]["image"] == "redis:7"
    assert "--requirepass" in " ".join(services["redis"]["command"])
    for name in ("redis", "minio"):
        assert services[name]["healthcheck"]["test"], name
    script = " ".join(services["createbuckets"]["command"])
    assert "mc mb --ignore-existing eceb/eceb-inputs eceb/eceb-reports" in script
    assert services["createbuckets"]["depends_on"]["minio"]["condition"] == "service_healthy"


def test_submit_example_uses_eceb_dist(services: dict[str, Any]) -> None:
    submit = services["submit-example"]
    assert submit["profiles"] == ["example"]
    assert submit["depends_on"]["createbuckets"]["condition"] == "service_completed_successfully"
    assert submit["command"][:2] == ["sh", "-c"]
    lines = submit["command"][2].splitlines()
    assert lines[0] == "set -e"
    assert lines[-3:] == [f"job=$$({SUBMIT})", 'echo "job $$job"', 'eceb-dist wait "$$job"']
    assert shlex.split(SUBMIT)[:2] == ["eceb-dist", "submit"]


def test_no_credentials_but_the_local_defaults(compose: dict[str, Any], services: dict[str, Any]) -> None:
    text = COMPOSE.read_text(encoding="utf-8")
    interpolated = dict(re.findall(r"\$\{(\w+):-([^}]*)\}", text))
    assert interpolated == LOCAL_DEFAULTS
    # No bare ${VAR} or $VAR: every variable has its default.
    assert not re.search(r"(?<!\$)\$(?!\$|\{\w+:-)", text)
    for name, service in services.items():
        for key, value in (service.get("environment") or {}).items():
            if SECRET_KEY.search(key):
                assert re.fullmatch(r"\$\{\w+:-[^}]*\}", value), f"{name}: {key} is not taken from the environment"
    for value in _strings(compose):
        for userinfo in re.findall(r"://([^/@\s]*)@", value):
            assert userinfo == f":{REDIS_PASSWORD}", value


def test_loopback_only(services: dict[str, Any]) -> None:
    for name, service in services.items():
        assert service.get("network_mode") != "host", name
        assert not service.get("privileged"), name
        for port in service.get("ports", []):
            assert isinstance(port, str), name
            assert port.startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"


def test_dockerfile() -> None:
    lines = [line.strip() for line in DOCKERFILE.read_text(encoding="utf-8").splitlines()]
    instructions = [line for line in lines if line and not line.startswith("#")]
    assert all(
        line == "FROM python:3.11-slim" or line.startswith("FROM python:3.11-slim AS ")
        for line in instructions
        if line.startswith("FROM ")
    )
    users = [line for line in instructions if line.startswith("USER ")]
    assert users
    assert users[-1] != "USER root"
    assert any("pip install --no-cache-dir ." in line for line in instructions)
    # The compose commands are whole command lines (eceb, eceb-dist, celery).
    assert not any(line.startswith("ENTRYPOINT") for line in instructions)
    assert not any(re.search(r"\b(apt-get|gcc|build-essential)\b", line) for line in instructions)


def test_readme_documents_the_cluster() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Run on a cluster", 1)[1].split("\n## ", 1)[0]
    for needle in (
        "docker compose up -d redis minio createbuckets worker flower",
        "docker compose run --rm submit-example",
        "--scale worker=",
        "eceb-dist",
        "s3://eceb-reports/enterprise-seed/report.json",
        *LOCAL_DEFAULTS,
        *LOCAL_DEFAULTS.values(),
    ):
        assert needle in section, needle
