"""A small benchmark to make runs of (``eceb run``): a corpus of a few
files, its registry, two tasks, a rubric and a profile pointing at the
loopback provider and the example context system (a real process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import blake3

from eceb_worker.corpus.registry import build_registry, registry_lines
from tests.support.helpers import artifact
from tests.support.paths import REPO

EXAMPLE_SYSTEM = REPO / "examples" / "run" / "context_system.py"

FILES: dict[str, tuple[str, bytes]] = {
    "runbook/failover.md": (
        "internal",
        b"# Failover\nPromote the replica with pg_ctl promote, then repoint the VIP.\n" * 4,
    ),
    "runbook/backup.md": ("internal", b"# Backups\nNightly base backups with pg_basebackup; WAL archived to S3.\n" * 4),
    "rfc/raft.md": ("public", b"# Raft\nLeader election uses randomized timeouts; a term increases.\n" * 4),
    "policy/secrets.md": ("restricted", b"# Secrets\nRotate the root token every 30 days. vault operator rekey.\n" * 4),
    "chat/ops.md": ("internal", b"ops chat: the replica lagged 20 s during failover drills last week\n" * 4),
}

ANSWER = "Promote the replica with pg_ctl promote, then repoint the VIP."
PLANTED_KEY = "sk-planted-SECRET-1234"


def write_corpus(root: Path) -> Path:
    """The corpus directory (``root/corpus``) and ``root/registry.jsonl``; returns the corpus directory."""
    corpus = root / "corpus"
    artifacts = []
    for path, (classification, content) in FILES.items():
        (corpus / path).parent.mkdir(parents=True, exist_ok=True)
        (corpus / path).write_bytes(content)
        kind = path.split("/", 1)[0]
        kind = {"chat": "chat", "rfc": "rfc", "policy": "policy"}.get(kind, "runbook")
        artifacts.append(artifact(path, kind=kind, classification=classification, content=content))
    registry = build_registry(artifacts)
    (root / "registry.jsonl").write_bytes(b"".join(registry_lines(registry)))
    return corpus


def write_benchmark(root: Path, *, repetitions: int = 2) -> Path:
    """``root/benchmark.json``: two tasks over :data:`FILES` (ladder 120/400 tokens)."""
    registry = json.loads((root / "registry.jsonl").read_text().splitlines()[0])
    tasks = [
        {
            "task_id": "failover",
            "query": "How do we fail over the database to the replica?",
            "required_artifacts": ["runbook/failover.md"],
            "allowed_classifications": ["public", "internal"],
            "denied_artifacts": ["chat/ops.md"],
            "budget_ladder": [120, 400],
            "minimum_quality_milli": 600,
            "maximum_quality_regression_milli": 100,
            "required_answer_terms": ["pg_ctl promote"],
            "required_repetitions": repetitions,
        },
        {
            "task_id": "raft-election",
            "query": "How does Raft elect a leader?",
            "required_artifacts": ["rfc/raft.md"],
            "allowed_classifications": ["public"],
            "budget_ladder": [400],
            "minimum_quality_milli": 600,
            "maximum_quality_regression_milli": 100,
            "required_repetitions": repetitions,
        },
    ]
    benchmark = {
        "schema": "symgliph.eceb/benchmark-v0.1",
        "benchmark_id": "tiny-making",
        "registry": {"path": "registry.jsonl", "corpus_root": registry["corpus_root"]},
        "tasks": tasks,
    }
    path = root / "benchmark.json"
    path.write_text(json.dumps(benchmark, indent=2))
    return path


def model_block(base_url: str, *, name: str = "gpt-test", api: str = "openai-chat", **extra: Any) -> dict[str, Any]:
    return {
        "api": api,
        "provider": "loopback",
        "name": name,
        "base_url": base_url,
        "api_key_env": "ECEB_TEST_KEY",
        "input_window_tokens": 4000,
        "timeout_s": 5,
        **extra,
    }


PRICING = {
    "source": "loopback price list",
    "date": "2026-12-01",
    "input_micro_usd_per_mtok": 2_500_000,
    "cached_input_micro_usd_per_mtok": 1_250_000,
    "output_micro_usd_per_mtok": 10_000_000,
}


def _decoding(api: str, max_output_tokens: int) -> dict[str, Any]:
    """Greedy decoding, or the Messages API's defaults (it takes no sampling parameters)."""
    temperature = 1000 if api == "anthropic-messages" else 0
    return {"temperature_milli": temperature, "max_output_tokens": max_output_tokens}


def write_profile(root: Path, base_url: str, *, api: str = "openai-chat", **overrides: Any) -> Path:
    """``root/profile.json`` (with ``root/rubric.md``) for the loopback provider at ``base_url``."""
    rubric = b"Score 1000 when the answer gives the exact procedure, 0 when it is wrong.\n"
    (root / "rubric.md").write_bytes(rubric)
    profile: dict[str, Any] = {
        "schema": "symgliph.eceb/run-profile-v0.1",
        "run_id": "tiny-run",
        "claim_class": "conformance_seed",
        "non_empirical": True,
        "model": model_block(base_url, api=api),
        "decoding": _decoding(api, 200),
        "pricing": PRICING,
        "context_system": {
            "command": [
                sys.executable,
                str(EXAMPLE_SYSTEM),
                "--registry",
                str(root / "registry.jsonl"),
                "--corpus",
                str(root / "corpus"),
            ]
        },
        "judge": {
            "kind": "llm",
            "profile": "rubric-v1",
            "rubric": "rubric.md",
            "rubric_digest": blake3.blake3(rubric).hexdigest(),
            "model": model_block(base_url, name="judge-test", api=api),
            "decoding": _decoding(api, 100),
            "pricing": PRICING,
        },
        "in_flight": 4,
    }
    profile.update(overrides)
    path = root / "profile.json"
    path.write_text(json.dumps(profile, indent=2))
    return path


def answer_script(**default: Any) -> dict[str, Any]:
    """A loopback script answering :data:`ANSWER` and judging 900, with ``default`` overrides."""
    rule = {"answer": ANSWER, "score": 900, "rationale": "exact", "usage": {"cached_tokens": 0, "reasoning_tokens": 2}}
    rule.update(default)
    return {"model_revision": "gpt-test-2026-01-01", "rules": [], "default": rule}


def eceb_run(
    root: Path, *args: str, key: str = "sk-loopback-test-key", timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``eceb run root/benchmark.json root/profile.json --corpus root/corpus ARGS`` as a process."""
    command = [sys.executable, "-m", "eceb_cli", "run", str(root / "benchmark.json"), str(root / "profile.json")]
    command += ["--corpus", str(root / "corpus"), *args]
    env = {name: value for name, value in os.environ.items() if name != "ECEB_TEST_KEY"}
    if key:
        env["ECEB_TEST_KEY"] = key
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, check=False)
