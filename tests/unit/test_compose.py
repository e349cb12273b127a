"""docker-compose.yml and deploy/Dockerfile: what the cluster deployment relies on.

The file is validated against the Compose schema by ``deploy/check-compose.sh``
(run in CI); these tests check its contents.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from eceb_worker.cluster.app import QUEUE
from eceb_worker.cluster.steps import Bounds
from tests.support.paths import REPO

ROOT = REPO
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
EXACT_TAG = re.compile(r"\d+(\.\d+){2}|RELEASE\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ")
"""An exact version: three numbers (``7.4.2``), or one of MinIO's dated releases."""
PYTHON_IMAGE = re.compile(r"python:3\.11\.\d+-slim-bookworm")
HOST_ENV = {
    "ECEB_BROKER_URL": "redis://:eceb-local@127.0.0.1:6379/0",
    "ECEB_RESULT_BACKEND": "redis://:eceb-local@127.0.0.1:6379/1",
    "ECEB_S3_ENDPOINT_URL": "http://127.0.0.1:9000",
    "AWS_ACCESS_KEY_ID": "eceb-local",
    "AWS_SECRET_ACCESS_KEY": "eceb-local-secret",
}
"""What ``eceb-dist`` on the host is given to reach the compose cluster (README, "From the host")."""

ECEB_SERVICES = ("worker", "submit-example", "verify-example")
BOUND_SETTINGS = ("ECEB_LEASE_S", "ECEB_HEARTBEAT_S", "ECEB_WATCH_S", "ECEB_UNTAKEN_S", "ECEB_VISIBILITY_TIMEOUT")
"""How soon a lost step runs again (docs/SETTINGS.md), set explicitly in every deployment."""
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
    assert flower["command"] == ["celery", "flower", "--port=5555"]  # the broker from the environment, never argv
    bounds = Bounds()
    assert {key: env[key] for key in BOUND_SETTINGS} == {
        "ECEB_LEASE_S": str(bounds.lease_s),
        "ECEB_HEARTBEAT_S": str(bounds.heartbeat_s),
        "ECEB_WATCH_S": str(bounds.watch_s),
        "ECEB_UNTAKEN_S": str(bounds.untaken_s),
        "ECEB_VISIBILITY_TIMEOUT": "3600",
    }
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


def test_every_image_is_pinned_by_an_exact_tag(compose: dict[str, Any], services: dict[str, Any]) -> None:
    for name, service in services.items():
        repository, _, tag = service["image"].rpartition(":")
        assert repository, f"{name}: {service['image']} has no tag"
        assert "/" not in tag, f"{name}: {service['image']} has no tag"
        assert EXACT_TAG.fullmatch(tag), f"{name}: {service['image']} is not pinned to an exact version"
    # The eceb image is tagged with the version of the package it holds.
    assert compose["x-eceb-image"]["image"] == f"eceb:{VERSION}"
    assert services["redis"]["image"] == "redis:7.4.2"


def test_redis_is_published_on_loopback_only_and_requires_its_password(
    compose: dict[str, Any], services: dict[str, Any]
) -> None:
    redis = services["redis"]
    assert redis["ports"] == ["127.0.0.1:6379:6379"]
    # The password is configuration on redis-server's standard input, never in its argv.
    assert redis["command"][:2] == ["sh", "-c"]
    script = redis["command"][2]
    assert script.startswith("exec redis-server - --appendonly yes <<EOF\nrequirepass $$REDIS_PASSWORD\nEOF")
    assert "--requirepass" not in script
    # ``:-`` also replaces an empty ECEB_REDIS_PASSWORD: Redis never runs without one.
    assert redis["environment"]["REDIS_PASSWORD"] == REDIS_PASSWORD
    assert redis["environment"]["REDISCLI_AUTH"] == REDIS_PASSWORD  # the health check's redis-cli reads it
    assert " -a " not in " ".join(redis["healthcheck"]["test"])
    for key in ("ECEB_BROKER_URL", "ECEB_RESULT_BACKEND"):
        assert urlsplit(compose["x-eceb-env"][key]).password == REDIS_PASSWORD, key


def test_workers_reach_minio_inside_the_network(services: dict[str, Any]) -> None:
    """The workers' endpoint is MinIO's service name, never the host's published port."""
    endpoint = urlsplit(services["worker"]["environment"]["ECEB_S3_ENDPOINT_URL"])
    assert (endpoint.scheme, endpoint.hostname, endpoint.port) == ("http", "minio", 9000)
    assert "127.0.0.1:9000:9000" in services["minio"]["ports"]
    for name in ECEB_SERVICES:
        env = services[name].get("environment") or {}
        for key in ("ECEB_S3_ENDPOINT_URL", "ECEB_BROKER_URL", "ECEB_RESULT_BACKEND"):
            if key in env:
                assert urlsplit(env[key]).hostname in services, f"{name}: {key} leaves the compose network"


def test_buckets_and_health(services: dict[str, Any]) -> None:
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
    assert lines == [
        "set -e",
        "python deploy/upload-example.py",
        f"job=$$({SUBMIT})",
        'echo "job $$job"',
        'eceb-dist wait "$$job"',
    ]
    # The uploader is in the image, beside the examples it uploads.
    assert "COPY deploy/upload-example.py ./deploy/upload-example.py" in DOCKERFILE.read_text(encoding="utf-8")
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
    bases = {line.split()[1] for line in instructions if line.startswith("FROM ")}
    assert len(bases) == 1
    assert PYTHON_IMAGE.fullmatch(bases.pop())
    users = [line for line in instructions if line.startswith("USER ")]
    assert users
    assert users[-1] != "USER root"
    # The locked dependencies (exact versions, hashes checked), then the package alone.
    assert "COPY deploy/requirements.lock ./deploy/requirements.lock" in instructions
    assert any("pip install --no-cache-dir --require-hashes -r deploy/requirements.lock" in line for line in lines)
    assert any("pip install --no-cache-dir --no-deps --no-build-isolation ." in line for line in lines)
    assert not any(re.search(r"pip install(?!.*(-r deploy/requirements\.lock|--no-deps))", line) for line in lines)
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


def test_readme_reaches_the_compose_cluster_from_the_host(services: dict[str, Any]) -> None:
    """The host's broker URL and endpoint are the published ports, with the default password."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### From the host", 1)[1].split("\n### ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    exports = dict(
        re.findall(r"(\w+)=(\S+)", " ".join(line for line in block.splitlines() if line.startswith("export ")))
    )
    assert {key: exports.get(key) for key in HOST_ENV} == HOST_ENV
    published = {port.rsplit(":", 1)[0] for service in services.values() for port in service.get("ports", [])}
    for key in ("ECEB_BROKER_URL", "ECEB_RESULT_BACKEND", "ECEB_S3_ENDPOINT_URL"):
        url = urlsplit(exports[key])
        assert f"{url.hostname}:{url.port}" in published, key
    assert urlsplit(exports["ECEB_BROKER_URL"]).password == LOCAL_DEFAULTS["ECEB_REDIS_PASSWORD"]
    for command in ("python deploy/upload-example.py", "eceb-dist submit", "eceb-dist status", "eceb-dist wait"):
        assert command in block, command
    assert "eceb-dist result" in block
    # The alternative: the same commands inside a worker container, which has the cluster's settings.
    assert "docker compose exec worker eceb-dist status" in section
    assert "docker compose exec -T worker eceb-dist result" in section
