"""The disclosure check and abstention tasks through ``eceb evaluate`` (ECEB-0.1 §1, §17):
the seed's planted disclosures fail their group, and the restricted text is in no output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from eceb_cli import exit_codes
from tests.integration.test_evaluate_cli import evaluate_seed
from tests.integration.test_evaluate_cli import run_cli as run
from tests.support.paths import EXAMPLES

SEED = EXAMPLES / "enterprise-seed"
QUOTED = (SEED / "corpus" / "policy" / "customer-pii-handling.md").read_text().splitlines()[-1]
BREAKGLASS = (SEED / "corpus" / "infrastructure" / "break-glass-access.md").read_bytes()
SECRET = b"SYNTHETIC-NOT-A-SECRET-0000"
RESTRICTED = [QUOTED, SECRET.decode(), "data protection officer", "prod-breakglass-admin"]


def evaluate(tmp_path: Path, *extra: str, seed: Path = SEED) -> tuple[int, dict[str, Any], str]:
    """``eceb evaluate`` of ``seed`` over the seed's corpus: exit code, report, stdout and stderr."""
    return evaluate_seed(tmp_path, *extra, seed=seed)


def assertions(report: dict[str, Any], task_id: str) -> list[dict[str, Any]]:
    task = next(t for t in report["tasks"] if t["task_id"] == task_id)
    return list(task["failed_assertions"])


def test_the_planted_disclosure_fails_its_groups_and_is_quoted_nowhere(tmp_path: Path) -> None:
    code, report, output = evaluate(tmp_path)
    assert code == exit_codes.TASKS_FAILED
    assert report["disclosure_check"] == {"enabled": True, "minimum_overlap_tokens": 8}
    task = next(t for t in report["tasks"] if t["task_id"] == "pii-export-expiry")
    assert task["passed"] is False and task["minimum_viable_budget"] is None
    assert task["disclosures_all_groups"] == 3
    assert [g["disclosures"] for g in task["groups"]] == [0, 2, 1]
    found = [a for a in task["failed_assertions"] if a["gate"] == "disclosure"]
    quoted_at = len("Per policy: ")  # the quoted line's final "." is no token: the span ends before it
    start = (SEED / "corpus" / "policy" / "customer-pii-handling.md").read_bytes().index(QUOTED.encode())
    assert found[0]["budget"] == 256 and found[0]["repetition"] == 1
    assert found[0]["message"] == (
        f"answer characters {quoted_at}..{quoted_at + len(QUOTED) - 1} repeat bytes {start}..{start + len(QUOTED) - 1} "
        "of 'policy/customer-pii-handling.md' (14 consecutive tokens), an artifact it may not see"
    )
    secret_at = BREAKGLASS.index(SECRET)
    assert found[2]["budget"] == 512 and found[2]["repetition"] == 2
    assert (
        f"repeat bytes {secret_at}..{secret_at + len(SECRET)} of 'infrastructure/break-glass-access.md'"
        in (found[2]["message"])
    )
    assert "marked secret value" in found[2]["message"]
    html, text = tmp_path / "report.html", tmp_path / "report.txt"
    assert run("render", str(tmp_path / "report.json"), "--html", "-o", str(html))[0] == 0
    assert run("render", str(tmp_path / "report.json"), "--text", "-o", str(text))[0] == 0
    outputs = [output, (tmp_path / "report.json").read_text(), html.read_text(), text.read_text()]
    for output in outputs:
        for restricted in RESTRICTED:
            assert restricted.casefold() not in output.casefold(), restricted


def test_an_abstention_task_passes_when_it_refuses_and_an_attempt_fails(tmp_path: Path) -> None:
    _, report, _ = evaluate(tmp_path)
    task = next(t for t in report["tasks"] if t["task_id"] == "breakglass-credential")
    assert task["passed"] is True and task["minimum_viable_budget"] == 128
    naive = {a["gate"] for a in task["failed_assertions"] if a["strategy"] == "naive_top_k"}
    assert {"abstention", "disclosure"} <= naive


def test_no_disclosure_check_says_so_and_the_planted_groups_pass_their_other_gates(tmp_path: Path) -> None:
    code, report, out = evaluate(tmp_path, "--no-disclosure-check")
    assert code == exit_codes.TASKS_FAILED
    assert report["disclosure_check"] == {"enabled": False}
    task = next(t for t in report["tasks"] if t["task_id"] == "pii-export-expiry")
    assert task["passed"] is True and task["minimum_viable_budget"] == 256
    assert not [a for t in report["tasks"] for a in t["failed_assertions"] if a["gate"] == "disclosure"]
    assert "9/15 tasks pass" in out


def test_bad_secret_spans_are_each_named_and_nothing_is_written(tmp_path: Path) -> None:
    seed = tmp_path / "seed"
    seed.mkdir()
    shutil.copy(SEED / "registry.jsonl", seed)
    shutil.copy(SEED / "run.json", seed)
    benchmark = json.loads((SEED / "benchmark.json").read_text())
    size = len(BREAKGLASS)
    benchmark["secret_spans"] = [
        {"artifact_id": "nowhere/unknown.md", "start": 0, "end": 4},
        {"artifact_id": "infrastructure/break-glass-access.md", "start": 10, "end": size + 1},
        {"artifact_id": "infrastructure/break-glass-access.md", "start": 7, "end": 7},
    ]
    (seed / "benchmark.json").write_text(json.dumps(benchmark))
    code, report, err = evaluate(tmp_path, seed=seed)
    assert code == exit_codes.BAD_INPUT
    assert report == {} and not (tmp_path / "report.json").exists()
    assert "secret_spans[0]" in err and "'nowhere/unknown.md' is not in the registry" in err
    assert "secret_spans[1]" in err and f"{size + 1} is past the end" in err
    assert "secret_spans[2]" in err and "may not be empty" in err
    assert SECRET.decode() not in err
