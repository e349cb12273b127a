"""The Kubernetes manifests (deploy/k8s): every overlay renders and validates
offline against the pinned Kubernetes and KEDA schemas
(``deploy/check-k8s.sh``), and its rendered objects keep the deployment's
invariants: probes that ask the worker itself, resources, a locked-down
security context, a grace period longer than a shard, a disruption budget
and network policies that select the pods, no credential anywhere, pinned
images, the nightly CronJob's policy, Redis's password from a Secret, and
the autoscaler aimed at the worker Deployment and the ``eceb`` list.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from eceb_worker.cluster.app import QUEUE
from eceb_worker.cluster.steps import Bounds
from eceb_worker.corpus.planning import DEFAULT_TASK_BYTES
from tests.support.k8s import OVERLAYS, command_line, container, find, pod_spec, render
from tests.support.paths import REPO

VERSION = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
WORKLOADS = ("Deployment", "StatefulSet", "CronJob")
SLOW_S3_BYTES_PER_S = 2 * 1024 * 1024
"""A slow read from S3 for one worker: a re-hash shard then takes
``DEFAULT_TASK_BYTES / SLOW_S3_BYTES_PER_S`` s (128 s)."""
SHARD_S = DEFAULT_TASK_BYTES // SLOW_S3_BYTES_PER_S
SECRET_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|CREDENTIAL|ACCESS_KEY|AUTH", re.IGNORECASE)
USERINFO = re.compile(r"^[a-z][a-z0-9+.-]*://([^/@]*)@", re.IGNORECASE)
REFERENCE_ONLY = re.compile(r"^:?(\$\([A-Za-z_][A-Za-z0-9_]*\))$")
ALLOWED_EGRESS = {("TCP", 6379), ("TCP", 443), ("UDP", 53), ("TCP", 53)}
WORKER_LABELS = {"app.kubernetes.io/name": "eceb", "app.kubernetes.io/component": "worker"}
NIGHTLY_LABELS = {"app.kubernetes.io/name": "eceb", "app.kubernetes.io/component": "nightly"}
REDIS_LABELS = {"app.kubernetes.io/name": "redis", "app.kubernetes.io/part-of": "eceb"}


def _workloads(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] in WORKLOADS]


def _pod_labels(workload: dict[str, Any]) -> dict[str, str]:
    template = workload["spec"]["jobTemplate"]["spec"] if workload["kind"] == "CronJob" else workload["spec"]
    labels: dict[str, str] = template["template"]["metadata"]["labels"]
    return labels


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) <= {"matchLabels"}, selector
    return all(labels.get(key) == value for key, value in selector.get("matchLabels", {}).items())


def _env(container_spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in container_spec.get("env", [])}


@pytest.fixture(scope="module", params=OVERLAYS)
def overlay(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def objects(overlay: str) -> list[dict[str, Any]]:
    return render(overlay)


def test_every_overlay_renders_and_validates_offline() -> None:
    result = subprocess.run(
        ["bash", str(REPO / "deploy" / "check-k8s.sh")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"check-k8s: {len(OVERLAYS)} overlays render and validate against Kubernetes 1.32.0" in result.stdout
    assert set(OVERLAYS) == {"autoscaling", "in-cluster-redis", "managed-redis"}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda o: o["spec"]["template"]["spec"]["containers"][0].update(bogus=1),
            "spec.template.spec.containers.0: Additional properties are not allowed ('bogus' was unexpected)",
        ),
        (lambda o: o["spec"].update(replicas="two"), "spec.replicas: 'two' is not of type 'integer'"),
    ],
    ids=["unknown-field", "wrong-type"],
)
def test_validation_is_strict(tmp_path: Path, change: Any, expected: str) -> None:
    import yaml

    objects = render("in-cluster-redis")
    change(find(objects, "Deployment", "eceb-worker"))
    path = tmp_path / "changed.yaml"
    path.write_text(yaml.safe_dump_all(objects), encoding="utf-8")
    result = _validate(path)
    assert result.returncode == 1
    assert f"Deployment/eceb-worker: {expected}" in result.stderr, result.stderr


def test_keda_objects_are_validated_and_unknown_kinds_refused(tmp_path: Path) -> None:
    import yaml

    objects = render("autoscaling")
    find(objects, "ScaledObject", "eceb-worker")["spec"]["triggers"][0]["metadata"]["listLength"] = 4
    find(objects, "TriggerAuthentication", "eceb-redis")["spec"]["secretTargetRef"][0].pop("key")
    objects.append({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}})
    path = tmp_path / "changed.yaml"
    path.write_text(yaml.safe_dump_all(objects), encoding="utf-8")
    result = _validate(path)
    assert result.returncode == 1
    assert "ScaledObject/eceb-worker: spec.triggers.0.metadata.listLength: 4 is not of type 'string'" in result.stderr
    assert "TriggerAuthentication/eceb-redis: spec.secretTargetRef.0: 'key' is a required property" in result.stderr
    assert "Gadget/g: no schema for Gadget (example.com/v1) in Kubernetes 1.32.0 or deploy/k8s/schemas" in (
        result.stderr
    )


def _validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(REPO / "deploy" / "validate_k8s.py"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_every_object_is_in_the_eceb_namespace(objects: list[dict[str, Any]]) -> None:
    for o in objects:
        if o["kind"] == "Namespace":
            assert o["metadata"]["name"] == "eceb"
            assert o["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
        else:
            assert o["metadata"]["namespace"] == "eceb", o["metadata"]


def test_workers_probes_ask_the_worker_itself(objects: list[dict[str, Any]]) -> None:
    worker = container(find(objects, "Deployment", "eceb-worker"), "worker")
    assert worker["command"] == ["eceb-dist", "worker"]
    args = worker["args"]
    assert args[args.index("-n") + 1] == "eceb@%h"  # the node name each probe asks
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        command = worker[probe]["exec"]["command"]
        assert command[:2] == ["eceb-dist", "probe"], probe
        assert command[command.index("--node") + 1] == "eceb@%h", probe  # this pod's worker, no other
        inner = float(command[command.index("--timeout") + 1])
        assert worker[probe]["timeoutSeconds"] > inner, probe
    # Restarted only after a Redis outage the workers ride out (ECEB_REDIS_OUTAGE_S, 60 s).
    liveness = worker["livenessProbe"]
    assert liveness["periodSeconds"] * liveness["failureThreshold"] > 60


def test_every_container_has_requests_and_limits(objects: list[dict[str, Any]]) -> None:
    for workload in _workloads(objects):
        for c in pod_spec(workload)["containers"]:
            for what in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(c["resources"][what]), (workload["metadata"]["name"], what)


def test_every_pod_is_locked_down(objects: list[dict[str, Any]]) -> None:
    for workload in _workloads(objects):
        pod = pod_spec(workload)
        name = workload["metadata"]["name"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert pod["automountServiceAccountToken"] is False, name
        mounts = {}
        for c in pod["containers"]:
            context = c["securityContext"]
            assert context["runAsNonRoot"] is True, name
            assert context["allowPrivilegeEscalation"] is False, name
            assert context["readOnlyRootFilesystem"] is True, name
            assert context["capabilities"] == {"drop": ["ALL"]}, name
            assert context["seccompProfile"] == {"type": "RuntimeDefault"}, name
            mounts.update({m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])})
            if c["image"].startswith("registry.example.com/eceb/eceb"):
                assert context["runAsUser"] == pod["securityContext"]["runAsUser"] == 10001  # deploy/Dockerfile's user
                assert "emptyDir" in {v["name"]: v for v in pod["volumes"]}[mounts["/tmp"]], name
    settings = find(objects, "ConfigMap", "eceb-settings")["data"]
    for variable in ("HOME", "TMPDIR", "MPLCONFIGDIR"):
        assert settings[variable].startswith("/tmp"), variable  # the only writable place


def test_workers_run_a_lost_shard_again_within_a_minute(objects: list[dict[str, Any]]) -> None:
    """The bounds of a lost step are set explicitly, to the defaults that
    run a shard lost with its pod again within a minute (docs/SETTINGS.md)."""
    settings = find(objects, "ConfigMap", "eceb-settings")["data"]
    bounds = Bounds()
    assert (settings["ECEB_LEASE_S"], settings["ECEB_HEARTBEAT_S"]) == (str(bounds.lease_s), str(bounds.heartbeat_s))
    assert (settings["ECEB_WATCH_S"], settings["ECEB_UNTAKEN_S"]) == (str(bounds.watch_s), str(bounds.untaken_s))
    assert settings["ECEB_VISIBILITY_TIMEOUT"] == "3600"
    assert bounds.lease_s + bounds.watch_s + bounds.heartbeat_s < 60
    assert bounds.untaken_s + bounds.watch_s < 60


def test_grace_period_outlasts_a_shard(objects: list[dict[str, Any]]) -> None:
    spec = pod_spec(find(objects, "Deployment", "eceb-worker"))
    assert SHARD_S == 128
    assert spec["terminationGracePeriodSeconds"] >= 2 * SHARD_S


def test_metrics_port_is_named_and_let_in(objects: list[dict[str, Any]]) -> None:
    worker = container(find(objects, "Deployment", "eceb-worker"), "worker")
    assert {"name": "metrics", "containerPort": 9100, "protocol": "TCP"} in worker["ports"]
    policy = find(objects, "NetworkPolicy", "eceb-worker")["spec"]
    assert policy["ingress"] == [{"ports": [{"protocol": "TCP", "port": 9100}]}]
    annotations = find(objects, "Deployment", "eceb-worker")["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9100",
        "prometheus.io/path": "/metrics",
    }


def test_workers_spread_over_nodes(objects: list[dict[str, Any]]) -> None:
    deployment = find(objects, "Deployment", "eceb-worker")
    (spread,) = pod_spec(deployment)["topologySpreadConstraints"]
    assert spread["topologyKey"] == "kubernetes.io/hostname" and spread["whenUnsatisfiable"] == "ScheduleAnyway"
    assert _selects(spread["labelSelector"], _pod_labels(deployment))


def test_disruption_budget_selects_the_workers(objects: list[dict[str, Any]]) -> None:
    budget = find(objects, "PodDisruptionBudget", "eceb-worker")["spec"]
    assert budget["maxUnavailable"] == 1
    assert _selects(budget["selector"], _pod_labels(find(objects, "Deployment", "eceb-worker")))
    assert not _selects(budget["selector"], _pod_labels(find(objects, "CronJob", "eceb-nightly")))


def test_network_policies_let_out_only_redis_s3_and_dns(objects: list[dict[str, Any]]) -> None:
    policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
    for workload in _workloads(objects):
        labels = _pod_labels(workload)
        selecting = [p for p in policies if _selects(p["spec"]["podSelector"], labels)]
        assert len(selecting) == 1, workload["metadata"]["name"]
        spec = selecting[0]["spec"]
        assert set(spec["policyTypes"]) == {"Ingress", "Egress"}
        for rule in spec.get("egress", []):
            assert rule.get("ports"), f"an egress rule without ports lets everything out: {rule}"
            assert {(p["protocol"], p["port"]) for p in rule["ports"]} <= ALLOWED_EGRESS, rule
            if any(p["port"] == 53 for p in rule["ports"]):
                assert rule["to"][0]["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
    assert "ingress" not in find(objects, "NetworkPolicy", "eceb-nightly")["spec"]


def test_no_secret_and_no_credential_in_any_manifest(objects: list[dict[str, Any]]) -> None:
    assert [o for o in objects if o["kind"] == "Secret"] == []
    for config in (o for o in objects if o["kind"] == "ConfigMap"):
        for key, value in config["data"].items():
            assert not SECRET_NAME.search(key), key
            assert not USERINFO.match(value), key
    referenced = set()
    for workload in _workloads(objects):
        for c in pod_spec(workload)["containers"]:
            for entry in c.get("env", []):
                if "valueFrom" in entry:
                    reference = entry["valueFrom"]["secretKeyRef"]
                    referenced.add((reference["name"], reference["key"]))
                    continue
                assert not SECRET_NAME.search(entry["name"]), f"{entry['name']} is given a literal value"
                if userinfo := USERINFO.match(entry["value"]):
                    assert REFERENCE_ONLY.match(userinfo.group(1)), f"{entry['name']} holds a credential"
            for source in c.get("envFrom", []):
                if "secretRef" in source:
                    assert source["secretRef"] == {"name": "eceb-s3", "optional": True}
                    referenced.add(("eceb-s3", "*"))
    assert referenced <= {
        ("eceb-redis", "password"),
        ("eceb-broker", "broker-url"),
        ("eceb-broker", "result-backend"),
        ("eceb-s3", "*"),
    }, referenced
    assert ("eceb-s3", "*") in referenced


def test_every_image_is_pinned(objects: list[dict[str, Any]]) -> None:
    images = {c["image"] for w in _workloads(objects) for c in pod_spec(w)["containers"]}
    assert f"registry.example.com/eceb/eceb:{VERSION}" in images
    for image in images:
        name, _, tag = image.rpartition(":")
        assert "@sha256:" in image or (name and "/" not in tag and tag != "latest"), image
        if name == "redis":
            assert re.fullmatch(r"7\.4\.\d+", tag), image


def test_nightly_cronjob_policy(objects: list[dict[str, Any]]) -> None:
    cronjob = find(objects, "CronJob", "eceb-nightly")
    spec = cronjob["spec"]
    assert spec["concurrencyPolicy"] == "Forbid"
    assert 0 < spec["startingDeadlineSeconds"] <= 24 * 3600
    assert spec["successfulJobsHistoryLimit"] >= 1
    assert spec["failedJobsHistoryLimit"] >= 1
    job = spec["jobTemplate"]["spec"]
    assert 0 <= job["backoffLimit"] <= 2
    assert job["activeDeadlineSeconds"] > 0
    assert pod_spec(cronjob)["restartPolicy"] == "Never"
    # A regression (10), or any failure but storage unavailable (5), fails the Job at once.
    rules = job["podFailurePolicy"]["rules"]
    fail = next(rule for rule in rules if rule["action"] == "FailJob")["onExitCodes"]
    assert (fail["containerName"], fail["operator"], fail["values"]) == ("nightly", "NotIn", [5])
    words = command_line(container(cronjob, "nightly"))
    assert words[:2] == ["eceb-dist", "nightly"]
    assert words[words.index("--reports") + 1] == "$(NIGHTLY_REPORTS)"
    assert float(words[words.index("--timeout") + 1]) < job["activeDeadlineSeconds"]


def test_brokers_password_comes_from_a_secret(overlay: str, objects: list[dict[str, Any]]) -> None:
    for workload in (find(objects, "Deployment", "eceb-worker"), find(objects, "CronJob", "eceb-nightly")):
        env = _env(pod_spec(workload)["containers"][0])
        if overlay == "managed-redis":
            for variable, key in (("ECEB_BROKER_URL", "broker-url"), ("ECEB_RESULT_BACKEND", "result-backend")):
                assert env[variable]["valueFrom"]["secretKeyRef"] == {"name": "eceb-broker", "key": key}
            continue
        names = list(env)
        assert env["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "eceb-redis", "key": "password"}
        for variable, db in (("ECEB_BROKER_URL", 0), ("ECEB_RESULT_BACKEND", 1)):
            assert env[variable]["value"] == f"redis://:$(REDIS_PASSWORD)@eceb-redis:6379/{db}"
            assert names.index("REDIS_PASSWORD") < names.index(variable)  # defined first, or not expanded
    if overlay == "managed-redis":
        assert not [o for o in objects if o["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "redis"]
        return
    redis = find(objects, "StatefulSet", "eceb-redis")
    server = container(redis, "redis")
    assert server["image"].startswith("redis:7.4.")
    args = server["args"]
    assert args[args.index("--appendonly") + 1] == "yes"
    # The password on redis-server's standard input, from the environment; on no command line.
    assert server["command"][:2] == ["sh", "-c"]
    assert "requirepass $REDIS_PASSWORD\n" in server["command"][2]
    assert server["command"][2].startswith('exec redis-server - "$@" <<EOF\n')
    assert not [word for word in server["command"] + args if "REDIS_PASSWORD)" in word or word == "--requirepass"]
    assert args[args.index("--maxmemory-policy") + 1] == "noeviction"  # a queue is never evicted
    assert args[args.index("--maxmemory") + 1] == "768mb"  # below the 1Gi limit
    assert _env(server)["REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "eceb-redis", "key": "password"}
    assert {m["mountPath"]: m["name"] for m in server["volumeMounts"]}["/data"] == "data"
    assert redis["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    service = find(objects, "Service", "eceb-redis")["spec"]
    assert service["selector"] == REDIS_LABELS and service["ports"][0]["port"] == 6379
    # Workers and the nightly job reach Redis's pods only; Redis connects nowhere.
    for name in ("eceb-worker", "eceb-nightly"):
        egress = find(objects, "NetworkPolicy", name)["spec"]["egress"][0]
        assert egress == {
            "ports": [{"protocol": "TCP", "port": 6379}],
            "to": [{"podSelector": {"matchLabels": REDIS_LABELS}}],
        }
    policy = find(objects, "NetworkPolicy", "eceb-redis")["spec"]
    assert _selects(policy["podSelector"], _pod_labels(redis))
    assert "egress" not in policy and "Egress" in policy["policyTypes"]
    sources = [source for rule in policy["ingress"] for source in rule["from"]]
    assert {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "eceb"}}} in sources
    keda = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "keda"}},
        "podSelector": {"matchLabels": {"app": "keda-operator"}},
    }
    assert (keda in sources) == (overlay == "autoscaling")


def test_autoscaling_targets_the_worker_deployment_and_the_eceb_list() -> None:
    objects = render("autoscaling")
    scaled = find(objects, "ScaledObject", "eceb-worker")["spec"]
    deployment = find(objects, "Deployment", "eceb-worker")
    assert scaled["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "eceb-worker"}
    assert "replicas" not in deployment["spec"]  # KEDA's autoscaler owns it
    assert scaled["minReplicaCount"] >= 1
    assert scaled["maxReplicaCount"] > scaled["minReplicaCount"]
    (trigger,) = scaled["triggers"]
    assert trigger["type"] == "redis"
    metadata = trigger["metadata"]
    assert metadata["listName"] == QUEUE == "eceb"
    assert metadata["databaseIndex"] == "0"  # the broker's database
    service = find(objects, "Service", "eceb-redis")
    assert (
        metadata["address"]
        == f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc.cluster.local:6379"
    )
    authentication = find(objects, "TriggerAuthentication", trigger["authenticationRef"]["name"])
    assert authentication["spec"] == {
        "secretTargetRef": [{"parameter": "password", "name": "eceb-redis", "key": "password"}]
    }
    for overlay in ("in-cluster-redis", "managed-redis"):
        assert not [o for o in render(overlay) if o["kind"] in {"ScaledObject", "TriggerAuthentication"}]
        assert find(render(overlay), "Deployment", "eceb-worker")["spec"]["replicas"] == 2
