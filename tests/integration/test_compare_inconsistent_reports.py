"""``eceb compare`` given valid JSON that no evaluation could have written:
a summary that contradicts the report's own tasks, or a passing task whose
token savings vanished. Such a report is bad input (exit 3, every problem
named) or, at the least, never "no regression" (exit 0)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from eceb_cli import exit_codes
from eceb_cli.main import main
from tests.support.paths import EXAMPLES

SEED = EXAMPLES / "enterprise-seed"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("report") / "report.json"
    result = CliRunner().invoke(
        main,
        [
            "evaluate",
            str(SEED / "benchmark.json"),
            str(SEED / "run.json"),
            "--corpus",
            str(SEED / "corpus"),
            "-o",
            str(out),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == exit_codes.TASKS_FAILED, result.output
    data: dict[str, Any] = json.loads(out.read_bytes())
    return data


def _passing(data: dict[str, Any]) -> dict[str, Any]:
    task: dict[str, Any] = next(t for t in data["tasks"] if t["passed"] and t["token_savings_bps"])
    return task


def _more_passing_than_tasks(data: dict[str, Any]) -> None:
    data["summary"]["passing_tasks"] = data["summary"]["total_tasks"] + 986


def _summary_counts_a_task_that_is_not_there(data: dict[str, Any]) -> None:
    data["summary"]["total_tasks"] += 1


def _passing_task_without_token_savings(data: dict[str, Any]) -> None:
    _passing(data)["token_savings_bps"] = None


CASES: dict[str, Callable[[dict[str, Any]], None]] = {
    "more-passing-than-tasks": _more_passing_than_tasks,
    "total-tasks-not-the-tasks": _summary_counts_a_task_that_is_not_there,
    "passing-task-without-token-savings": _passing_task_without_token_savings,
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_inconsistent_new_report_is_never_no_regression(report: dict[str, Any], tmp_path: Path, case: str) -> None:
    old = tmp_path / "old.json"
    old.write_text(json.dumps(report))
    changed = json.loads(json.dumps(report))
    CASES[case](changed)
    new = tmp_path / "new.json"
    new.write_text(json.dumps(changed))
    result = CliRunner().invoke(main, ["compare", str(old), str(new)], catch_exceptions=False)
    assert result.exit_code in (exit_codes.BAD_INPUT, exit_codes.REGRESSION), result.output


@pytest.mark.parametrize("case", ["more-passing-than-tasks", "total-tasks-not-the-tasks"])
def test_a_report_whose_summary_contradicts_its_tasks_is_bad_input(
    report: dict[str, Any], tmp_path: Path, case: str
) -> None:
    changed = json.loads(json.dumps(report))
    CASES[case](changed)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(changed))
    result = CliRunner().invoke(main, ["render", str(path), "--html", "-o", str(tmp_path / "page.html")])
    assert result.exit_code == exit_codes.BAD_INPUT, result.output
    assert "summary" in result.output
