"""``eceb render`` end to end: the HTML page and the text of a report (from
a file or from loopback S3), the run checked against the report's digest,
the comparison of two reports, and every refusal with its exit code
(usage 2, bad input 3, output 6), nothing written on a refusal."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from eceb_cli import exit_codes
from eceb_cli.main import main
from eceb_worker.families.eceb.report import Report
from eceb_worker.render.html import report_html
from tests.support.report_pages import PUBLIC, SEED, evaluate_example, planted_regression
from tests.support.s3_server import S3Server

pytestmark = pytest.mark.integration


def run_cli(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    here = tmp_path_factory.mktemp("reports")
    regressed_run = planted_regression(here)
    return {
        "seed": evaluate_example(SEED, here / "seed.json"),
        "regressed": evaluate_example(SEED, here / "regressed.json", regressed_run),
        "regressed_run": regressed_run,
        "public": evaluate_example(PUBLIC, here / "public.json"),  # another benchmark and corpus
    }


def test_html_page_of_a_report_with_its_run(tmp_path: Path, reports: dict[str, Path]) -> None:
    page = tmp_path / "report.html"
    code, out, err = run_cli("render", reports["seed"], "--run", SEED / "run.json", "--html", "-o", page)
    assert code == exit_codes.OK, err
    assert out == "" and f"page written to {page}" in err
    data = page.read_bytes()
    assert data.startswith(b"<!DOCTYPE html>") and b"Every repetition of the run is drawn" in data
    again = tmp_path / "again.html"
    assert run_cli("render", reports["seed"], "--run", SEED / "run.json", "--html", "-o", again)[0] == 0
    assert again.read_bytes() == data


def test_html_page_without_the_run_and_on_standard_output(reports: dict[str, Path]) -> None:
    code, out, err = run_cli("render", reports["seed"], "--html", "-o", "-")
    assert code == exit_codes.OK, err
    report = msgspec.json.decode(reports["seed"].read_bytes(), type=Report)
    assert out.encode() == report_html(report)
    assert "render with the run" in out


def test_text_is_the_evaluate_summary(reports: dict[str, Path]) -> None:
    code, out, err = run_cli("render", reports["seed"], "--text")
    assert code == exit_codes.OK, err
    lines = out.splitlines()
    assert lines[0].startswith("benchmark enterprise-seed")
    assert lines[-1] == "8/15 tasks pass"
    assert any(line.startswith("PASS  db-failover-steps") for line in lines)
    assert f"eceb render {reports['seed']} --html -o report.html" in out


def test_a_run_that_is_not_the_reports_is_bad_input(tmp_path: Path, reports: dict[str, Path]) -> None:
    page = tmp_path / "report.html"
    code, _, err = run_cli("render", reports["seed"], "--run", reports["regressed_run"], "--html", "-o", page)
    assert code == exit_codes.BAD_INPUT
    digest = json.loads(reports["seed"].read_text())["inputs"]["run_digest"]
    assert f"is not the run {reports['seed']} was computed from" in err and digest in err
    assert not page.exists()


def test_a_run_with_bad_records_is_bad_input(tmp_path: Path, reports: dict[str, Path]) -> None:
    run = json.loads((SEED / "run.json").read_text())
    run["observations"][3]["quality_milli"] = "high"
    bad = tmp_path / "run.json"
    bad.write_text(json.dumps(run))
    page = tmp_path / "report.html"
    code, _, err = run_cli("render", reports["seed"], "--run", bad, "--html", "-o", page)
    assert code == exit_codes.BAD_INPUT
    assert "observations[3]" in err and "quality_milli" in err
    assert not page.exists()


@pytest.mark.parametrize("what", ["run", "missing", "garbage"])
def test_a_report_that_is_not_one_is_bad_input(tmp_path: Path, what: str) -> None:
    given = {"run": SEED / "run.json", "missing": tmp_path / "nothing.json", "garbage": tmp_path / "garbage.json"}[what]
    (tmp_path / "garbage.json").write_text("{not json")
    page = tmp_path / "report.html"
    code, _, err = run_cli("render", given, "--html", "-o", page)
    assert code == exit_codes.BAD_INPUT, err
    assert str(given) in err and "Traceback" not in err
    assert not page.exists()


def test_comparison_page_and_text(tmp_path: Path, reports: dict[str, Path]) -> None:
    page = tmp_path / "cmp.html"
    code, _, err = run_cli("render", reports["seed"], reports["regressed"], "--html", "-o", page)
    assert code == exit_codes.OK, err  # rendering is not a gate: eceb compare exits 10
    data = page.read_text()
    assert "REGRESSED" in data and "db-failover-steps" in data and "budget_up" in data
    code, out, _ = run_cli("render", reports["seed"], reports["regressed"], "--text")
    assert code == exit_codes.OK
    assert out.splitlines()[-1].startswith("REGRESSED: ")
    code, out, _ = run_cli("render", reports["seed"], reports["seed"], "--text")
    assert out.splitlines()[-1].startswith("no regression")


def test_comparison_of_different_roots_is_refused_unless_allowed(tmp_path: Path, reports: dict[str, Path]) -> None:
    page = tmp_path / "cmp.html"
    code, _, err = run_cli("render", reports["seed"], reports["public"], "--html", "-o", page)
    assert code == exit_codes.BAD_INPUT
    assert "task root" in err and "corpus root" in err
    assert not page.exists()
    code, _, err = run_cli(
        "render", reports["seed"], reports["public"], "--html", "-o", page, "--allow-different-roots"
    )
    assert code == exit_codes.OK, err
    assert "differ" in page.read_text()


def test_an_output_that_is_an_input_or_unwritable_is_refused(tmp_path: Path, reports: dict[str, Path]) -> None:
    copy = tmp_path / "report.json"
    shutil.copy(reports["seed"], copy)
    before = copy.read_bytes()
    code, _, err = run_cli("render", copy, "--html", "-o", copy)
    assert code == exit_codes.OUTPUT and "input" in err
    assert copy.read_bytes() == before
    run = tmp_path / "run.json"
    shutil.copy(SEED / "run.json", run)
    code, _, _ = run_cli("render", reports["seed"], "--run", run, "--html", "-o", run)
    assert code == exit_codes.OUTPUT
    code, _, _ = run_cli("render", copy, "--html", "-o", tmp_path / "no-such-dir" / "x.html")
    assert code == exit_codes.OUTPUT


@pytest.mark.parametrize(
    "args",
    [
        ["--html"],  # no -o
        [],  # no form
        ["--text", "--run", str(SEED / "run.json")],
        ["--html", "-o", "x.html", "--allow-different-roots"],
        ["--html", "-o", "s3://bucket/x.html"],
        ["--html", "-o", "x.html", "--run", "s3://KEY:SECRET@bucket/run.json"],
    ],
)
def test_usage_errors(reports: dict[str, Path], args: list[str]) -> None:
    code, _, err = run_cli("render", reports["seed"], *args)
    assert code == exit_codes.USAGE, err
    assert "SECRET" not in err


def test_run_with_two_reports_is_a_usage_error(reports: dict[str, Path]) -> None:
    code, _, _ = run_cli("render", reports["seed"], reports["seed"], "--run", SEED / "run.json", "--html", "-o", "-")
    assert code == exit_codes.USAGE


def test_help_lists_the_exit_codes() -> None:
    script = Path(sys.executable).parent / "eceb"  # the installed command: its name keys the table of exit codes
    done = subprocess.run([script, "render", "--help"], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0
    assert "Exit codes: 0 success, 2 usage error, 3 bad input" in " ".join(done.stdout.split())


def test_report_and_run_from_s3(tmp_path: Path, reports: dict[str, Path], s3_server: S3Server, s3_bucket: str) -> None:
    client = s3_server.client()
    client.put_object(Bucket=s3_bucket, Key="nightly/report.json", Body=reports["seed"].read_bytes())
    client.put_object(Bucket=s3_bucket, Key="nightly/run.json", Body=(SEED / "run.json").read_bytes())
    local, remote = tmp_path / "local.html", tmp_path / "remote.html"
    assert run_cli("render", reports["seed"], "--run", SEED / "run.json", "--html", "-o", local)[0] == 0
    code, out, err = run_cli(
        "render",
        f"s3://{s3_bucket}/nightly/report.json",
        "--run",
        f"s3://{s3_bucket}/nightly/run.json",
        "--endpoint-url",
        s3_server.endpoint_url,
        "--html",
        "-o",
        remote,
    )
    assert code == exit_codes.OK, err
    assert remote.read_bytes() == local.read_bytes()
    for secret in s3_server.secrets:
        assert secret not in out + err
    code, _, err = run_cli(
        "render", f"s3://{s3_bucket}/nightly/gone.json", "--endpoint-url", s3_server.endpoint_url, "--text"
    )
    assert code == exit_codes.BAD_INPUT
    assert "gone.json" in err


HOSTILE_ID = "t\x1b]0;owned\x07\x1b[2K\x1b[1A\rPASS  disk-full-escalation\u202e"
"""A task id that, printed raw, sets the window title, erases and rewrites the line above."""


def hostile_report(reports: dict[str, Path], into: Path) -> Path:
    """The seed's report, hand-edited: a task renamed to :data:`HOSTILE_ID`
    and a failed assertion's message holding it (an old or hand-made report:
    ids are no longer validated when a report is read)."""
    document = json.loads(reports["seed"].read_text())
    document["tasks"][0]["task_id"] = HOSTILE_ID
    for task in document["tasks"]:
        for failure in task["failed_assertions"]:
            failure["message"] += f" ({HOSTILE_ID})"
    path = into / "hostile.json"
    path.write_text(json.dumps(document))
    return path


def test_text_outputs_escape_control_characters_of_ids(tmp_path: Path, reports: dict[str, Path]) -> None:
    hostile = hostile_report(reports, tmp_path)
    escaped = "t\\x1b]0;owned\\x07\\x1b[2K\\x1b[1A\\rPASS  disk-full-escalation\\u202e"
    for args in (["render", hostile, "--text"], ["render", reports["seed"], hostile, "--text"]):
        done = subprocess.run(
            [sys.executable, "-m", "eceb_cli", *map(str, args)], capture_output=True, cwd=tmp_path, check=False
        )
        assert done.returncode == exit_codes.OK, done.stderr
        out = done.stdout.decode()
        assert escaped in out
        assert all(line.isprintable() for line in out.splitlines()), out
    done = subprocess.run(
        [sys.executable, "-m", "eceb_cli", "compare", str(reports["seed"]), str(hostile)],
        capture_output=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == exit_codes.REGRESSION, done.stderr  # the task of the old name is missing
    assert f"  {escaped}: added;" in done.stdout.decode()
    assert all(line.isprintable() for line in done.stdout.decode().splitlines())
