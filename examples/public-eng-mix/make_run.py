"""Write run.json for the public-eng-mix example: a synthetic run over a real corpus.

The corpus (``../shared/corpora/public-eng-mix``), its registry and the tasks
in ``benchmark.json`` are real: every required artifact, denied artifact and
answer term was taken from the files. The observations are **synthetic**: no
model, retriever or judge was run. Token counts, costs, latencies, judge
scores and answers are derived here, deterministically, from the real file
sizes and from a hand-written scenario per task. The run is therefore claim
class ``conformance_seed`` and declares ``non_empirical``; it shows how the
evaluator treats realistic inputs and must not be read as a measurement of
any system.

How the figures are derived:

- prompt tokens: a fixed prompt overhead (instructions and the task text,
  about 4 bytes a token) plus, for each artifact placed in the context, a
  14-token header and ``size_bytes // 4``. The full permitted-context
  baseline places every artifact of a plausible candidate set that the task's
  allow-list permits and that is not denied for it. A compiled packet that
  does not fit its budget is cut to 88-97 % of the budget (excerpts);
- costs follow the run's pricing snapshot exactly (input cost rounded up,
  output cost rounded down), cached input tokens at the cached rate;
- output tokens are the answer's UTF-8 bytes / 4, rounded up;
- selected artifacts carry their registry digests, except where a scenario
  has a context built from an older revision of a file (a stale digest);
- context digests are BLAKE3 of a rendering string that names the task,
  strategy, budget, prompt tokens and every selected artifact with its
  digest, in order, so equal contexts have equal digests.

Expected verdicts are listed in README.md beside this file and asserted by
``tests/test_public_eng_mix_eval.py``.

    python examples/public-eng-mix/make_run.py [--out-dir DIR]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

import blake3
import msgspec

from eceb_worker.corpus.registry import Registry, read_registry
from eceb_worker.families.eceb.benchmark import Benchmark, Task, query_digest, task_root

HERE: Final = Path(__file__).resolve().parent
BENCHMARK: Final = msgspec.json.decode((HERE / "benchmark.json").read_bytes(), type=Benchmark)


def _load_registry() -> Registry:
    return read_registry((HERE / BENCHMARK.registry.path).read_bytes(), BENCHMARK.registry.path)


REGISTRY: Final = _load_registry()
ARTIFACTS: Final = {a.artifact_id: a for a in REGISTRY.artifacts}
TASKS: Final = {t.task_id: t for t in BENCHMARK.tasks}

# Synthetic price list, micro-USD per million tokens.
INPUT_RATE: Final = 3_000_000
CACHED_RATE: Final = 300_000
OUTPUT_RATE: Final = 15_000_000
EMBEDDING_RATE: Final = 20_000

SYSTEM_TOKENS: Final = 160  # instructions and answer format
HEADER_TOKENS: Final = 14  # per artifact: its id and a separator line
JITTER: Final = (0, -6, 4)  # quality offset of repetitions 1, 2, 3
RENDERING: Final = "symgliph:eceb:public-eng-mix:rendered-context:v1"
JUDGE_RUBRIC: Final = (
    "Score 0-1000. 1000: answers every part of the question, every fact is supported by the supplied context, "
    "nothing is invented. Subtract for each missing part, unsupported claim or wrong value."
)

# ----------------------------------------------------------------------------
# Plausible candidate sets: what a retriever would consider for the task. The
# baseline keeps those the task's allow-list permits and does not deny.
# Entries are artifact-id prefixes.
# ----------------------------------------------------------------------------
ALERTMANAGER_PRS: Final = "pull_request/prometheus-alertmanager/"
KSR: Final = ("policy/kubernetes-security-response/", "runbook/kubernetes-security-response/")
CANDIDATES: Final[dict[str, tuple[str, ...]]] = {
    "etcd-db-quota-low-space": (
        "runbook/openshift-runbooks/alerts/cluster-etcd-operator/",
        "runbook/prometheus-operator-runbooks/content/runbooks/etcd/",
    ),
    "kube-api-error-budget-burn": (
        "runbook/openshift-runbooks/alerts/cluster-kube-apiserver-operator/",
        "runbook/openshift-runbooks/alerts/cluster-monitoring-operator/KubeAPI",
        "runbook/prometheus-operator-runbooks/content/runbooks/kubernetes/KubeAPI",
    ),
    "github-token-leak-response": KSR,
    "pin-guarantee-and-unsoundness": (
        "rfc/rust-lang-rfcs/text/2349-pin.md",
        "rfc/rust-lang-rfcs/text/3336-maybe-dangling.md",
        "chat/rust-lang-lang-team/design-meeting-minutes/2020-01-06-Pin-unsoundness.md",
        "chat/rust-lang-lang-team/design-meeting-minutes/2020-02-10-References-and-dereferenceable.md",
        "issue/rustsec-advisory-db/crates/tokio/",
    ),
    "c-unwind-abi": (
        "rfc/rust-lang-rfcs/text/2945-c-unwind-abi.md",
        "rfc/rust-lang-rfcs/text/2797-project-ffi-unwind.md",
        "rfc/rust-lang-rfcs/text/1513-less-unwinding.md",
        "chat/rust-lang-lang-team/design-meeting-minutes/2020-03-16-ffi-unwind.md",
    ),
    "rwop-access-mode": ("rfc/kubernetes-enhancements/keps/sig-storage/",),
    "k8s-security-fix-timeline": KSR,
    "distributor-embargo-hosted-deploy": KSR,
    "github-poc-exploit-policy": (
        "policy/github-site-policy/Policies/acceptable-use-policies/",
        "policy/github-site-policy/Policies/security-policies/",
    ),
    "cncf-dependency-licenses": (
        "policy/cncf-foundation/charter.md",
        "policy/cncf-foundation/license-exceptions/",
        "policy/cncf-foundation/license-notices.md",
        "policy/cncf-foundation/policies-guidance/agpl-recommendations.md",
        "policy/cncf-foundation/policies-guidance/allowed-third-party-license-policy.md",
        "policy/cncf-foundation/policies-guidance/cncf-dependency-licensing-glossary.md",
        "policy/cncf-foundation/policies-guidance/source-available-recommendations.md",
    ),
    "alertmanager-silence-api": (
        "api_spec/prometheus-alertmanager/",
        "code/prometheus-alertmanager/api/v2/models/postable_silence.go",
        f"{ALERTMANAGER_PRS}pr-4965.md",
        f"{ALERTMANAGER_PRS}pr-5406.md",
    ),
    "twilio-lookup-carrier": ("api_spec/twilio-oai/spec/yaml/twilio_lookups_",),
    "streetlights-dim-command": ("api_spec/asyncapi-spec/examples/streetlights-",),
    "droplet-graceful-shutdown": ("api_spec/digitalocean-openapi/",),
    "vpc-nat-gateway-count": (
        "infrastructure/terraform-aws-vpc/main.tf",
        "infrastructure/terraform-aws-vpc/outputs.tf",
        "infrastructure/terraform-aws-vpc/variables.tf",
        "pull_request/terraform-aws-vpc/pr-129.md",
        "pull_request/terraform-aws-vpc/pr-968.md",
    ),
    "eks-endpoint-defaults": (
        "infrastructure/terraform-aws-eks/main.tf",
        "infrastructure/terraform-aws-eks/outputs.tf",
        "infrastructure/terraform-aws-eks/variables.tf",
        "pull_request/terraform-aws-eks/pr-2858.md",
    ),
    "alertmanager-chart-persistence": ("infrastructure/prometheus-community-helm-charts/charts/alertmanager/",),
    "alertmanager-route-defaults": (
        "code/prometheus-alertmanager/dispatch/",
        "code/prometheus-alertmanager/config/config.go",
    ),
    "silence-state-filter-change": (
        "api_spec/prometheus-alertmanager/api/v2/openapi.yaml",
        *(f"{ALERTMANAGER_PRS}pr-{n}.md" for n in (4163, 4942, 4965, 4980, 5045, 5406, 5460)),
    ),
    "openssl-alpn-use-after-free": (
        "issue/rustsec-advisory-db/crates/openssl/",
        "issue/rustsec-advisory-db/crates/ring/",
        "issue/rustsec-advisory-db/crates/rustls-webpki/",
    ),
}

# ----------------------------------------------------------------------------
# Answers: the reference answer of each task (every required term present),
# and the weaker answers some scenarios record instead.
# ----------------------------------------------------------------------------
ANSWERS: Final[dict[str, str]] = {
    "etcd-db-quota-low-space": (
        "etcdDatabaseQuotaLowSpace fires at critical severity once the etcd database "
        "(etcd_mvcc_db_total_size_in_bytes) exceeds 85% of the quota (etcd_server_quota_backend_bytes). If the "
        "quota fills, no writes can be performed on the etcd cluster, so nothing in the cluster can be updated and "
        "no pods can be created. To reclaim space, rsh into the etcdctl container of an etcd pod in openshift-etcd "
        "and run etcdctl defrag in every etcd pod, then confirm the smaller size with etcdctl endpoint status -w "
        "table. If the database keeps growing towards the quota, plan capacity for a new cluster."
    ),
    "kube-api-error-budget-burn": (
        "Critical with long=1h and short=5m means the error budget runs out in less than ~2 days at this rate: fix "
        "it as soon as possible. Run the recording-rule queries to see whether error, slow-resource, slow-namespace "
        "or slow-cluster requests contribute most, then break the main contributor down by resource. Gather the "
        "audit logs with oc adm must-gather -- /usr/bin/gather_audit_logs and use the cluster-debug-tools audit "
        "subcommand to see which users, resources and verbs send the failing or slow requests. If it started after "
        "an upgrade, restart the kubelets."
    ),
    "github-token-leak-response": (
        "Thank the reporter and, if possible, get the first characters of the token. Check whether the user is an "
        "OWNER: an OWNER token leak is more severe. Email the user asking them to revoke the token, and if they are "
        "an OWNER or hold other privileged roles, involve a ContribEx chair or Steering. Ask a Kubernetes GitHub org "
        "administrator to open a GitHub support ticket to revoke the token, cc'ing Kubernetes's contacts at GitHub, "
        'who escalate it as a "3rd party revocation". Then do any follow-up incident response with the SRC, '
        "ContribEx and Steering."
    ),
    "pin-guarantee-and-unsoundness": (
        "RFC 2349: Pin provides a reference whose referent is guaranteed never to move before being dropped. For a "
        "type that is not Unpin, safe code only gets shared access through the Pin; getting &mut T is unsafe "
        "because a mutable reference is enough to move the value out (mem::replace). In the January 2020 meeting "
        'the lang team discussed how Pin<P> becomes unsound through an "evil" DerefMut (or Clone) impl on a '
        "pointer type such as &LocalType, which yields a Pin<&mut T> to memory that was never pinned; the "
        "PartialEq hole had already been closed by PR #67039. The two fixes weighed were a negative impl "
        "(impl<T> !DerefMut for &T) and a new unsafe trait required by as_mut that &T would not implement."
    ),
    "c-unwind-abi": (
        'The meeting weighed a separate "C unwind" ABI against one unified "C" ABI: with a dedicated ABI, correct '
        "annotations make code abort cleanly under -Cpanic=abort and keep most C functions known not to unwind; "
        "a unified ABI is less error prone, but libraries relying on C++ exceptions would hit UB under "
        'panic=abort. RFC 2945 adopted a new ABI string, "C-unwind": declare the import extern "C-unwind". '
        'If a foreign exception crosses a "C-unwind" boundary into code built with panic=abort, the unwind is '
        'caught and the process aborts; unwinding through a plain extern "C" function remains undefined behavior.'
    ),
    "rwop-access-mode": (
        "Use the ReadWriteOncePod access mode (KEP-2485). ReadWriteOnce only restricts a volume to a single node, "
        "so several pods on that node can mount it; ReadWriteOncePod restricts it to a single pod on a single "
        "node, and a second pod using the same PVC fails to schedule. For CSI drivers it maps to "
        "SINGLE_NODE_SINGLE_WRITER when the driver supports the SINGLE_NODE_MULTI_WRITER capability, and to "
        "SINGLE_NODE_WRITER otherwise."
    ),
    "k8s-security-fix-timeline": (
        "The Fix Lead forms the Fix Team within the first 24 hours of disclosure. Fix development (CVSS scoring, "
        "CVE assignment, the fix in the private repository with LGTMs from the owners) takes place within 1-7 days "
        "of disclosure. Distributors on the private distributors list get advance notification of any "
        "vulnerability that has a CVE at least 7 days before the planned public disclosure date, as part of the "
        "advance disclosure 1-4 weeks ahead. If the issue is already public, every timeline becomes ASAP."
    ),
    "distributor-embargo-hosted-deploy": (
        "Yes, within limits. Patches and patched binaries are under embargo, but a fully-hosted patched "
        "kube-apiserver may be deployed before the embargo lift date if users have no direct access to the binary "
        "and the patch only applies to the kube-apiserver; other fully-hosted components only if everyone with "
        "access is internal to your distribution. If list information leaks beyond what the policy allows, you "
        "must urgently inform the list of exactly what leaked and to whom, and of the steps you will take to "
        "prevent future leaks; repeated offenses can lead to removal from the list."
    ),
    "github-poc-exploit-policy": (
        "Yes. GitHub allows dual-use security research content, proof-of-concept exploits included, because its "
        "publication benefits the security community; it restricts such content only in rare cases where it is "
        "used as an exploit or malware CDN in an ongoing unlawful attack. GitHub recommends, without requiring it, "
        "a disclaimer describing any potentially harmful content in the README.md or source comments, and a "
        "SECURITY.md file giving a preferred contact method for third-party abuse inquiries."
    ),
    "cncf-dependency-licenses": (
        "The BSD-3-Clause library needs no exception if it meets the CNCF Allowlist License Policy: BSD-3-Clause "
        "is an approved license, the component must be stored unmodified in a third-party folder (or fetched at "
        "build time), and it must show substantial outside use, for example created on GitHub at least 12 months "
        "ago with at least 10 stars or forks. The GPL-2.0-only program is covered by the Governing Board's blanket "
        "exception of August 2023 for in-kernel eBPF programs under GPL-2.0-only or GPL-2.0-or-later, so it needs "
        "no separate vote either."
    ),
    "alertmanager-silence-api": (
        "POST /api/v2/silences (operation postSilences) with a postableSilence body. Required fields: matchers "
        "(at least one, each with name, value and isRegex), startsAt, endsAt, createdBy and comment; an optional id "
        "updates an existing silence instead. A 200 response returns an object holding the silenceID; 400 is a bad "
        "request and 404 means the silence to update was not found."
    ),
    "twilio-lookup-carrier": (
        "Send GET https://lookups.twilio.com/v1/PhoneNumbers/{PhoneNumber} (FetchPhoneNumber) and give the Type "
        "query parameter twice: Type=carrier and Type=caller-name. The number goes in the path in E.164 format "
        "(a + followed by the country code and subscriber number); for a number in national format, add "
        "CountryCode. Authenticate with the account SID and auth token."
    ),
    "streetlights-dim-command": (
        "Publish a dimLight message on smartylighting.streetlights.1.0.action.{streetlightId}.dim with "
        "streetlightId 42, i.e. smartylighting.streetlights.1.0.action.42.dim. The payload holds percentage (an "
        "integer 0-100, the level to dim to) and sentAt (date-time), plus the my-app-header header. The broker on "
        "test.mykafkacluster.org:18092 is kafka-secure with SASL/SCRAM (scramSha256): authenticate with a username "
        "and password."
    ),
    "droplet-graceful-shutdown": (
        'POST /v2/droplets/$DROPLET_ID/actions with {"type": "shutdown"} for a graceful shutdown. A shutdown can '
        'fail, so wait a reasonable timeout and, only if it did not succeed, send {"type": "power_off"}, the hard '
        "shutdown. Both actions need the droplet:update scope."
    ),
    "vpc-nat-gateway-count": (
        "The module creates nat_gateway_count NAT gateways: 1 if single_nat_gateway is true, one per availability "
        "zone (length(var.azs)) if one_nat_gateway_per_az is true, and otherwise local.max_subnet_length, the "
        "largest of the private, public, elasticache, database and redshift subnet counts. Intra subnets no longer "
        "count: PR #968 removed len_intra_subnets from max_subnet_length because intra subnets have no Internet "
        "access through a NAT gateway, which is why the count dropped."
    ),
    "eks-endpoint-defaults": (
        "No public endpoint: endpoint_public_access defaults to false and endpoint_private_access to true (if "
        "enabled, endpoint_public_access_cidrs would default to 0.0.0.0/0). authentication_mode defaults to "
        "API_AND_CONFIG_MAP. The Terraform identity is not made an administrator: "
        "enable_cluster_creator_admin_permissions defaults to false, so add an access entry for it if needed."
    ),
    "alertmanager-chart-persistence": (
        "Yes: persistence.enabled defaults to true, so the StatefulSet has a volumeClaimTemplates entry named "
        "storage requesting a 50Mi ReadWriteOnce volume (the default storage class unless storageClass is set). "
        "With persistence.enabled=false the storage volume is an emptyDir instead (settable through "
        "persistence.emptyDir), so the data is lost whenever the pod is deleted."
    ),
    "alertmanager-route-defaults": (
        "The root route starts from DefaultRouteOpts: GroupWait 30 * time.Second, GroupInterval 5 * time.Minute "
        "and RepeatInterval 4 * time.Hour, with no group_by labels. newRoute starts each child route from "
        "parent.RouteOpts and overrides only the fields the child sets, so children inherit the parent's timings, "
        "receiver and grouping."
    ),
    "silence-state-filter-change": (
        "PR #5406 (api: add active/expired/pending filter params to GET /silences) added three optional boolean "
        "query parameters to GET /api/v2/silences: active, expired and pending. Each defaults to true, so omitting "
        "one includes that state and the previous behaviour is unchanged; passing false excludes it. The filter "
        "runs server-side after the label-matcher filter and before sorting."
    ),
    "openssl-alpn-use-after-free": (
        "Yes. RUSTSEC-2025-0004 (CVE-2025-24898): before openssl 0.10.70, ssl::select_next_proto could return a "
        "slice into the server buffer with a lifetime bound to the client buffer. A server list built inside the "
        "set_alpn_select_callback closure is freed when the callback returns, which is the vulnerable pattern "
        "(use after free: a crash or leaked memory). Upgrade to openssl 0.10.70 or later, or keep the server list "
        "in a 'static or longer-lived buffer."
    ),
}

WEAK_ANSWERS: Final[dict[str, str]] = {
    # The upstream (kube-prometheus) runbook answers a different alert: 95 %, another namespace.
    "etcd-upstream-runbook": (
        "The alert fires when the etcd database exceeds 95% of etcd_server_quota_backend_bytes. Once the quota is "
        "full no writes can be performed. Reclaim space by running etcdctl defrag in all etcd pods of the kube-etcd "
        "namespace."
    ),
    "kube-api-no-recording-rules": (
        "Critical with long=1h and short=5m means the error budget runs out in less than ~2 days, so fix it now. "
        "Gather the audit logs with oc adm must-gather -- /usr/bin/gather_audit_logs and look for the users and "
        "resources behind the failed requests."
    ),
    "pin-with-advisory": ANSWERS["pin-guarantee-and-unsoundness"]
    + " The same contract is what tokio::io::ReadHalf<T>::unsplit violated (RUSTSEC-2023-0005).",
    "c-unwind-partial": (
        'RFC 2945 adds the "C-unwind" ABI for functions that may unwind across the boundary. With panic=abort an '
        'unwind that reaches a "C-unwind" boundary aborts; unwinding through extern "C" is undefined behavior. '
        "The meeting notes were not in the context."
    ),
    "rwop-no-csi-table": (
        "Use the ReadWriteOncePod access mode from KEP-2485: it restricts a PersistentVolume to a single pod on a "
        "single node, whereas ReadWriteOnce only restricts it to one node."
    ),
    "distributor-embargo-only": (
        "Patches and patched binaries are embargoed until public disclosure, but a fully-hosted patched "
        "kube-apiserver may be deployed early if users cannot access the binary."
    ),
    "cncf-allowlist-only": (
        "BSD-3-Clause is on the CNCF allowlist, so if the library is stored unmodified in a third-party folder and "
        "was created on GitHub at least 12 months ago with 10 stars or forks, it needs no exception. GPL-2.0 is not "
        "an allowlisted license, so the program needs an exception approved by the Governing Board."
    ),
    "streetlights-no-security": (
        "Publish a dimLight message on smartylighting.streetlights.1.0.action.{streetlightId}.dim with "
        "streetlightId 42; the payload has percentage (0-100) and sentAt. The context does not say how the broker "
        "authenticates clients."
    ),
    "silence-api-with-pr": ANSWERS["alertmanager-silence-api"]
    + " Silences may also carry annotations, added in PR #4965.",
}


# ----------------------------------------------------------------------------
# Token, cost and rendering model.
# ----------------------------------------------------------------------------
def _overhead(task: Task) -> int:
    return SYSTEM_TOKENS + -(-len(task.query.encode()) // 4)


def full_tokens(task: Task, selected: Iterable[str]) -> int:
    """Prompt tokens of a context holding every selected artifact whole."""
    return _overhead(task) + sum(ARTIFACTS[i].size_bytes // 4 + HEADER_TOKENS for i in selected)


def packed_tokens(task: Task, selected: Iterable[str], budget: int) -> int:
    """Prompt tokens of a compiled packet.

    Whole artifacts when they fit, else excerpts filling 88-97 % of the budget
    (a fixed share per task and budget).
    """
    share = 880 + blake3.blake3(f"{task.task_id}:{budget}".encode()).digest()[0] % 90
    return min(full_tokens(task, selected), budget * share // 1000)


def permitted(task: Task) -> list[str]:
    """The baseline's context: candidates the allow-list permits, minus denied artifacts."""
    prefixes = CANDIDATES[task.task_id]
    allowed, denied = set(task.allowed_classifications), set(task.denied_artifacts)
    chosen = sorted(
        a.artifact_id
        for a in REGISTRY.artifacts
        if a.artifact_id.startswith(prefixes) and a.classification in allowed and a.artifact_id not in denied
    )
    missing = set(task.required_artifacts) - set(chosen)
    assert not missing, f"{task.task_id}: candidates miss required {sorted(missing)}"
    return chosen


def stale_digest(artifact_id: str) -> str:
    """The digest of an older revision of a file: what an out-of-date index returns."""
    return blake3.blake3(f"{artifact_id} at an older revision".encode()).hexdigest()


def _at(value: Any, repetition: int) -> Any:
    """A per-repetition value (a tuple: one entry per repetition) or a constant."""
    return value[repetition - 1] if isinstance(value, tuple) else value


def observation(
    task: Task,
    strategy: str,
    budget: int | None,
    repetition: int,
    *,
    selected: Sequence[str],
    tokens: int,
    quality: int,
    answer: str,
    stale: Iterable[str] = (),
    order: str = "",
    cached: int | None = None,
    local_tokens: int | None = None,
) -> dict[str, Any]:
    """One observation record, costs and digests derived from the arguments."""
    stale_ids = set(stale)
    digests = [(i, stale_digest(i) if i in stale_ids else ARTIFACTS[i].source_digest) for i in selected]
    rendering = "\n".join(
        [
            RENDERING,
            f"task {task.task_id}",
            f"strategy {strategy}",
            f"budget {budget}",
            f"prompt_tokens {tokens}",
            *(f"artifact {i} {d}" for i, d in digests),
            f"order {order}",
        ]
    )
    output_tokens = -(-len(answer.encode()) // 4)
    cached_tokens = cached or 0
    input_cost = -(-((tokens - cached_tokens) * INPUT_RATE + cached_tokens * CACHED_RATE) // 1_000_000)
    retrieval_ms = 0 if strategy == "full_permitted_context" else 180
    record: dict[str, Any] = {
        "task_id": task.task_id,
        "strategy": strategy,
        "budget": budget,
        "repetition": repetition,
        "configuration_id": "primary",
        "query_digest": query_digest(task.query),
        "input_tokens": tokens,
        "cached_input_tokens": cached,
        "output_tokens": output_tokens,
    }
    if local_tokens is not None:
        record["local_prompt_tokens"] = local_tokens
    record |= {
        "input_cost_micro_usd": input_cost,
        "output_cost_micro_usd": output_tokens * OUTPUT_RATE // 1_000_000,
        "latency_ms": 450 + retrieval_ms + tokens // 10 + 16 * output_tokens + 9 * repetition,
        "quality_milli": quality + JITTER[(repetition - 1) % len(JITTER)],
        "answer": answer,
        "selected_artifacts": [{"artifact_id": i, "observed_digest": d} for i, d in digests],
        "context_digest": blake3.blake3(rendering.encode()).hexdigest(),
    }
    return record


def baseline(task: Task, quality: int, *, cached: Any = None) -> list[dict[str, Any]]:
    """The full permitted-context group: every permitted candidate, whole."""
    selected = permitted(task)
    tokens = full_tokens(task, selected)
    return [
        observation(
            task,
            "full_permitted_context",
            None,
            r,
            selected=selected,
            tokens=tokens,
            quality=quality,
            answer=ANSWERS[task.task_id],
            cached=_at(cached, r),
        )
        for r in range(1, task.required_repetitions + 1)
    ]


def group(
    task: Task,
    budget: int | None,
    quality: int,
    *,
    strategy: str = "compiled",
    selected: Any = None,
    answer: str | None = None,
    tokens: Any = None,
    stale: Iterable[str] = (),
    order: Any = "",
    cached: Any = None,
    local_tokens: Any = None,
    repetitions: int | None = None,
) -> list[dict[str, Any]]:
    """A compiled (or naive_top_k) group. Per-repetition values are tuples."""
    records = []
    for r in range(1, (repetitions or task.required_repetitions) + 1):
        chosen = list(_at(selected, r) or task.required_artifacts)
        count = _at(tokens, r)
        if count is None:
            count = full_tokens(task, chosen) if budget is None else packed_tokens(task, chosen, budget)
        records.append(
            observation(
                task,
                strategy,
                budget,
                r,
                selected=chosen,
                tokens=count,
                quality=quality,
                answer=answer or ANSWERS[task.task_id],
                stale=stale,
                order=_at(order, r),
                cached=_at(cached, r),
                local_tokens=_at(local_tokens, r),
            )
        )
    return records


def auxiliary(task: Task, budget: int, kind: str, description: str, cost: int) -> dict[str, Any]:
    """An auxiliary cost charged to one compiled group."""
    return {
        "task_id": task.task_id,
        "strategy": "compiled",
        "budget": budget,
        "kind": kind,
        "description": description,
        "cost_micro_usd": cost,
    }


# ----------------------------------------------------------------------------
# Scenarios.
# ----------------------------------------------------------------------------
ETCD_UPSTREAM: Final = "runbook/prometheus-operator-runbooks/content/runbooks/etcd/etcdBackendQuotaLowSpace.md"
TOKIO_ADVISORY: Final = "issue/rustsec-advisory-db/crates/tokio/RUSTSEC-2023-0005.md"
ROUTE_GO: Final = "code/prometheus-alertmanager/dispatch/route.go"
CONFIG_GO: Final = "code/prometheus-alertmanager/config/config.go"
DISPATCH_GO: Final = "code/prometheus-alertmanager/dispatch/dispatch.go"


def build_observations() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every observation and auxiliary cost of the run, task by task."""
    t = TASKS
    obs: list[dict[str, Any]] = []
    aux: list[dict[str, Any]] = []

    # A required runbook missed at the lowest budget: the retriever ranks the
    # upstream near-duplicate (95 %, kube-etcd) above the OpenShift runbook.
    task = t["etcd-db-quota-low-space"]
    obs += baseline(task, 880)
    obs += group(task, 512, 650, selected=[ETCD_UPSTREAM], answer=WEAK_ANSWERS["etcd-upstream-runbook"])
    obs += group(task, 1024, 860)
    obs += group(task, 2048, 870, selected=[task.required_artifacts[0], ETCD_UPSTREAM])

    # The 1,024-token excerpt keeps the meaning and mitigation but drops the
    # recording rules: the judge marks it down and a required term is missing.
    task = t["kube-api-error-budget-burn"]
    obs += baseline(task, 870)
    obs += group(task, 1024, 720, answer=WEAK_ANSWERS["kube-api-no-recording-rules"])
    obs += group(task, 2048, 850)
    obs += group(task, 4096, 860)

    # A small playbook: an excerpt without the e-mail template is enough.
    task = t["github-token-leak-response"]
    obs += baseline(task, 860)
    obs += group(task, 512, 820)
    obs += group(task, 1024, 840)

    # A denied (restricted) advisory is retrieved at every budget, because it
    # quotes "the Pin contract"; the answer even repeats it.
    task = t["pin-guarantee-and-unsoundness"]
    rfc, chat = task.required_artifacts
    leaky = [rfc, chat, TOKIO_ADVISORY]
    obs += baseline(task, 850)
    obs += group(task, 2048, 700, selected=leaky, answer=WEAK_ANSWERS["pin-with-advisory"])
    obs += group(task, 4096, 820, selected=leaky, answer=WEAK_ANSWERS["pin-with-advisory"])
    obs += group(task, 8192, 840, selected=leaky, answer=WEAK_ANSWERS["pin-with-advisory"])

    # Two long documents: 4,096 tokens of excerpts lose the meeting's trade-offs.
    task = t["c-unwind-abi"]
    obs += baseline(task, 860)
    obs += group(task, 4096, 730, answer=WEAK_ANSWERS["c-unwind-partial"])
    obs += group(task, 8192, 830)
    obs += group(task, 16384, 850)

    # The baseline carries all sig-storage KEPs (about 87,000 tokens); the
    # compiled strategy pays for embeddings and a reranker call.
    task = t["rwop-access-mode"]
    obs += baseline(task, 840)
    obs += group(task, 1024, 760, answer=WEAK_ANSWERS["rwop-no-csi-table"])
    obs += group(task, 2048, 850)
    obs += group(task, 4096, 860)
    for budget in task.budget_ladder:
        aux.append(auxiliary(task, budget, "embedding", "query embeddings, 3 requests of 45 tokens", 3))
        aux.append(auxiliary(task, budget, "tool_call", "cross-encoder rerank of 40 KEP chunks, 3 calls", 240))
    kep_tokens = ARTIFACTS[task.required_artifacts[0]].size_bytes // 4
    aux.append(
        auxiliary(
            task,
            2048,
            "embedding",
            f"re-embedding of the changed KEP ({kep_tokens} tokens) before the run",
            -(-kep_tokens * EMBEDDING_RATE // 1_000_000),
        )
    )

    # Confidential process document; the restricted distributors list is denied
    # and never selected.
    task = t["k8s-security-fix-timeline"]
    obs += baseline(task, 880)
    obs += group(task, 2048, 850)
    obs += group(task, 4096, 860)
    obs += group(task, 8192, 870)

    # The same restricted list is required for a distributor.
    task = t["distributor-embargo-hosted-deploy"]
    obs += baseline(task, 860)
    obs += group(task, 512, 700, answer=WEAK_ANSWERS["distributor-embargo-only"])
    obs += group(task, 1024, 840)
    obs += group(task, 2048, 850)

    task = t["github-poc-exploit-policy"]
    obs += baseline(task, 880)
    obs += group(task, 512, 830)
    obs += group(task, 1024, 860)

    # Cached input: the first repetition writes the provider's prompt cache,
    # the next ones read the instruction and policy prefix from it.
    task = t["cncf-dependency-licenses"]
    obs += baseline(task, 870, cached=(0, 16384, 16384))
    obs += group(
        task,
        1024,
        730,
        selected=["policy/cncf-foundation/policies-guidance/allowed-third-party-license-policy.md"],
        answer=WEAK_ANSWERS["cncf-allowlist-only"],
    )
    obs += group(task, 2048, 850, cached=(0, 1536, 1536))
    obs += group(task, 4096, 860, cached=(0, 1536, 1536))

    # naive_top_k (reported, not deciding) pulls the confidential pull requests
    # that changed the silence API: policy violations in a non-deciding group.
    task = t["alertmanager-silence-api"]
    obs += baseline(task, 890)
    obs += group(task, 1024, 860)
    obs += group(task, 2048, 870)
    obs += group(task, 4096, 880)
    obs += group(
        task,
        None,
        880,
        strategy="naive_top_k",
        selected=[task.required_artifacts[0], *task.denied_artifacts],
        answer=WEAK_ANSWERS["silence-api-with-pr"],
    )

    task = t["twilio-lookup-carrier"]
    obs += baseline(task, 860)
    obs += group(task, 1024, 840)
    obs += group(task, 2048, 850)
    obs += group(task, 4096, 855)

    task = t["streetlights-dim-command"]
    obs += baseline(task, 900)
    obs += group(task, 1024, 760, answer=WEAK_ANSWERS["streetlights-no-security"])
    obs += group(task, 2048, 890)

    # A fixed top-5 retrieval beside the compiled packet: it passes, but costs more.
    task = t["droplet-graceful-shutdown"]
    droplets = "api_spec/digitalocean-openapi/specification/resources/droplets/"
    obs += baseline(task, 850)
    obs += group(task, 1024, 830)
    obs += group(task, 2048, 860)
    obs += group(task, 4096, 860)
    obs += group(
        task,
        None,
        840,
        strategy="naive_top_k",
        selected=[
            f"{droplets}dropletActions_post.yml",
            f"{droplets}dropletActions_get.yml",
            f"{droplets}droplets_destroy_retryWithAssociatedResources.yml",
            f"{droplets}droplets_create.yml",
            f"{droplets}parameters.yml",
        ],
    )

    # At 2,048 the packer trusted its local token count (2,007) but the
    # provider counted more: the budget gate fails on every repetition.
    task = t["vpc-nat-gateway-count"]
    obs += baseline(task, 840)
    obs += group(task, 2048, 820, tokens=2131, local_tokens=2007)
    obs += group(task, 4096, 840)
    obs += group(task, 8192, 850)

    # The compiled system's index was built from an older revision of
    # variables.tf: a stale digest at every budget.
    task = t["eks-endpoint-defaults"]
    variables_tf = task.required_artifacts[0]
    obs += baseline(task, 860)
    obs += group(task, 1024, 830, stale=[variables_tf])
    obs += group(task, 2048, 840, stale=[variables_tf])
    obs += group(task, 4096, 850, stale=[variables_tf])

    task = t["alertmanager-chart-persistence"]
    obs += baseline(task, 850)
    obs += group(task, 1024, 830)
    obs += group(task, 2048, 840)
    obs += group(task, 4096, 850)

    # Nondeterministic reranking: tied chunk scores are broken differently per
    # repetition, so the rendered contexts differ at every budget.
    task = t["alertmanager-route-defaults"]
    obs += baseline(task, 850)
    obs += group(task, 1024, 830, selected=[ROUTE_GO, CONFIG_GO], order=("a", "b", "a"))
    obs += group(
        task,
        2048,
        840,
        selected=([ROUTE_GO, DISPATCH_GO], [ROUTE_GO, CONFIG_GO], [ROUTE_GO, DISPATCH_GO]),
    )
    obs += group(task, 4096, 850, selected=[ROUTE_GO, DISPATCH_GO, CONFIG_GO], order=("a", "a", "b"))

    task = t["silence-state-filter-change"]
    obs += baseline(task, 870)
    obs += group(task, 1024, 850)
    obs += group(task, 2048, 860)
    obs += group(task, 4096, 865)

    task = t["openssl-alpn-use-after-free"]
    obs += baseline(task, 880)
    obs += group(task, 512, 840)
    obs += group(task, 1024, 870)
    return obs, aux


# ----------------------------------------------------------------------------
# The run document.
# ----------------------------------------------------------------------------
def configuration() -> dict[str, Any]:
    """The one configuration every observation refers to (all synthetic)."""
    return {
        "configuration_id": "primary",
        "model": {"provider": "none (synthetic observations)", "name": "synthetic-model", "revision": "v1"},
        "judge": {
            "profile": "synthetic-rubric-v1 (scores hand-assigned, no judge model was run)",
            "model": {"provider": "none (synthetic observations)", "name": "synthetic-judge", "revision": "v1"},
            "rubric_digest": blake3.blake3(JUDGE_RUBRIC.encode()).hexdigest(),
            "human_review": "none",
        },
        "tokenizer": {"name": "bytes/4 approximation (synthetic)", "revision": "1"},
        "decoding": {"temperature_milli": 0, "top_p_milli": 1000, "max_output_tokens": 1024, "seed": 11},
        "pricing": {
            "source": "synthetic price list for the public-eng-mix conformance seed (no provider's published prices)",
            "date": "2026-08-01",
            "input_micro_usd_per_mtok": INPUT_RATE,
            "cached_input_micro_usd_per_mtok": CACHED_RATE,
            "output_micro_usd_per_mtok": OUTPUT_RATE,
        },
    }


def build_run() -> dict[str, Any]:
    """The complete run document."""
    observations, auxiliary_costs = build_observations()
    return {
        "schema": "symgliph.eceb/run-v0.1",
        "run_id": "public-eng-mix-synthetic-1",
        "claim_class": "conformance_seed",
        "non_empirical": True,
        "benchmark": {"benchmark_id": BENCHMARK.benchmark_id, "task_root": task_root(BENCHMARK.tasks)},
        "corpus_root": REGISTRY.corpus_root,
        "configurations": [configuration()],
        "observations": observations,
        "auxiliary_costs": auxiliary_costs,
    }


def render(run: dict[str, Any]) -> str:
    """JSON text with one observation or auxiliary cost a line."""
    records = ("observations", "auxiliary_costs")
    lines = ["{"]
    for key, value in run.items():
        if key not in records:
            lines.append(f" {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},")
    for position, key in enumerate(records):
        items = ",\n".join(f"  {json.dumps(item, ensure_ascii=False)}" for item in run[key])
        closing = "," if position < len(records) - 1 else ""
        lines.append(f" {json.dumps(key)}: [\n{items}\n ]{closing}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    """Write run.json (beside this file unless ``--out-dir`` says otherwise)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out-dir", type=Path, default=HERE, help="directory to write run.json into")
    args = parser.parse_args(argv)
    out_dir: Path = args.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "run.json").write_text(render(build_run()), encoding="utf-8")


if __name__ == "__main__":
    main()
