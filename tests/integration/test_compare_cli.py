"""``eceb compare`` end to end on both bundled examples: each evaluated to a
report, then compared with itself and with the report of a copy of its run
holding a planted regression; the formats, ``-o``, the refusals and bad
reports (exit 3, never 70), reports read from a loopback S3 server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from eceb_cli import exit_codes
from eceb_cli.main import main
from eceb_worker.families.eceb.comparison import Comparison
from tests.support.paths import EXAMPLES, REPO, SHARED
from tests.support.s3_server import S3Server

ECEB = (sys.executable, "-m", "eceb_cli")
SEED = EXAMPLES / "enterprise-seed"
MIX = EXAMPLES / "public-eng-mix"
MIX_CORPUS = SHARED / "corpora" / "public-eng-mix" / "files"

SEED_PLANTED = "disk-full-escalation"
"""Passes at 256 with no other budget observed: a lower quality there fails it."""
MIX_PLANTED = "droplet-graceful-shutdown"
"""Passes at 1,024; with a lower quality there it passes at 2,048 only."""


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def run_eceb(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ECEB, *args], capture_output=True, text=True, timeout=120, cwd=REPO, check=False)


def planted_run(example: Path, task_id: str, budget: int, into: Path) -> Path:
    """A copy of ``example``'s run in which every compiled repetition of
    ``task_id`` at ``budget`` is judged of quality 100."""
    run: dict[str, Any] = json.loads((example / "run.json").read_text())
    lowered = 0
    for observation in run["observations"]:
        if (observation["task_id"], observation["strategy"], observation["budget"]) == (task_id, "compiled", budget):
            observation["quality_milli"] = 100
            lowered += 1
    assert lowered, f"{task_id}@{budget} has no compiled observation"
    path = into / "run.json"
    path.write_text(json.dumps(run, indent=1))
    return path


def evaluate(example: Path, run: Path, corpus: Path, report: Path) -> Path:
    code, out, err = cli(
        "evaluate", str(example / "benchmark.json"), str(run), "--corpus", str(corpus), "-o", str(report)
    )
    assert code in (exit_codes.OK, exit_codes.TASKS_FAILED), out + err
    return report


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both examples' reports, and each one's with the planted regression."""
    if not MIX_CORPUS.is_dir():
        pytest.fail(f"the real corpus is missing: put public-eng-mix in {MIX_CORPUS.parent} (see README, Set-up)")
    root = tmp_path_factory.mktemp("reports")
    for name in ("seed-planted", "mix-planted"):
        (root / name).mkdir()
    return {
        "seed": evaluate(SEED, SEED / "run.json", SEED / "corpus", root / "seed.json"),
        "seed-planted": evaluate(
            SEED, planted_run(SEED, SEED_PLANTED, 256, root / "seed-planted"), SEED / "corpus", root / "seed-2.json"
        ),
        "mix": evaluate(MIX, MIX / "run.json", MIX_CORPUS, root / "mix.json"),
        "mix-planted": evaluate(
            MIX, planted_run(MIX, MIX_PLANTED, 1024, root / "mix-planted"), MIX_CORPUS, root / "mix-2.json"
        ),
    }


@pytest.mark.parametrize("example", ["seed", "mix"])
def test_a_report_compared_with_itself_does_not_regress(reports: dict[str, Path], example: str) -> None:
    done = run_eceb("compare", str(reports[example]), str(reports[example]))
    assert done.returncode == exit_codes.OK, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    passing = "8/15" if example == "seed" else "17/20"
    assert lines[-1] == f"no regression ({passing} -> {passing} tasks pass)"
    assert f"tasks passing       {passing} -> {passing}  (no change)" in lines
    assert "REGRESSION" not in done.stdout and done.stderr == ""


def test_the_planted_regression_of_the_seed_fails_naming_the_task(reports: dict[str, Path]) -> None:
    done = run_eceb("compare", str(reports["seed"]), str(reports["seed-planted"]))
    assert done.returncode == exit_codes.REGRESSION, done.stdout + done.stderr
    assert f"REGRESSION  pass_to_fail: task {SEED_PLANTED} passed before and fails now" in done.stdout
    assert f"  {SEED_PLANTED}: PASS -> FAIL" in done.stdout
    assert "tasks passing       8/15 -> 7/15  (-1: 1 fewer task passes)" in done.stdout
    assert done.stdout.splitlines()[-1].startswith("REGRESSED: ")
    assert "Traceback" not in done.stderr


def test_the_planted_regression_of_the_real_corpus_raises_the_budget(reports: dict[str, Path]) -> None:
    code, out, _ = cli("compare", str(reports["mix"]), str(reports["mix-planted"]), "--json")
    assert code == exit_codes.REGRESSION
    comparison = msgspec.json.decode(out.encode(), type=Comparison)
    [task] = [t for t in comparison.tasks if t.task_id == MIX_PLANTED]
    assert (task.old_minimum_viable_budget, task.new_minimum_viable_budget, task.budget_change) == (1024, 2048, 1024)
    assert task.old_passed and task.new_passed
    assert task.token_savings_change_bps is not None and task.token_savings_change_bps < 0
    kinds = {r.kind for r in task.regressions}
    assert {"budget_up", "token_savings_drop", "cost_savings_drop"} <= kinds
    assert [t.task_id for t in comparison.tasks if t.changed] == [MIX_PLANTED]
    loose = (
        "--max-budget-increase",
        "1024",
        "--max-token-savings-drop",
        "10000",
        "--max-cost-savings-drop",
        "10000",
    )
    code, out, _ = cli("compare", str(reports["mix"]), str(reports["mix-planted"]), *loose)
    assert code == exit_codes.OK, out
    assert out.splitlines()[-1] == "no regression (17/20 -> 17/20 tasks pass)"


def test_json_matches_the_published_schema(reports: dict[str, Path]) -> None:
    code, out, _ = cli("compare", str(reports["seed"]), str(reports["seed-planted"]), "--json")
    assert code == exit_codes.REGRESSION
    document = json.loads(out)
    schema = json.loads((REPO / "schema" / "comparison-v0.1.json").read_text())
    assert not list(Draft202012Validator(schema).iter_errors(document))
    assert document["schema"] == "symgliph.eceb/comparison-v0.1"
    assert document["regressed"] is True and document["claim_classes_differ"] is False
    assert [r["kind"] for r in document["regressions"]] == ["pass_to_fail", "mean_token_savings_drop"]
    assert [r["task_id"] for r in document["regressions"]] == [SEED_PLANTED, None]
    assert document["old"]["inputs"]["run_digest"] != document["new"]["inputs"]["run_digest"]
    again = cli("compare", str(reports["seed"]), str(reports["seed-planted"]), "--json")[1]
    assert again == out  # deterministic bytes


def test_markdown_for_a_ci_comment(reports: dict[str, Path]) -> None:
    code, out, _ = cli("compare", str(reports["seed"]), str(reports["seed-planted"]), "--markdown")
    assert code == exit_codes.REGRESSION
    assert out.startswith("## eceb compare: regressed\n")
    assert f"| {SEED_PLANTED} | kept | PASS -> FAIL |" in out
    assert f"- **pass_to_fail**: task {SEED_PLANTED} passed before and fails now" in out
    code, out, _ = cli("compare", str(reports["seed"]), str(reports["seed"]), "--markdown")
    assert code == exit_codes.OK and out.startswith("## eceb compare: no regression\n")
    assert "No task changed." in out


def test_output_to_a_file_or_to_standard_output(reports: dict[str, Path], tmp_path: Path) -> None:
    target = tmp_path / "comparison.md"
    done = run_eceb("compare", str(reports["seed"]), str(reports["seed-planted"]), "--markdown", "-o", str(target))
    assert done.returncode == exit_codes.REGRESSION
    assert target.read_text().startswith("## eceb compare: regressed")
    assert done.stdout == f"REGRESSED: 2 regression(s) (8/15 -> 7/15 tasks pass); comparison written to {target}\n"
    done = run_eceb("compare", str(reports["seed"]), str(reports["seed-planted"]), "--json", "-o", "-")
    assert done.returncode == exit_codes.REGRESSION
    assert json.loads(done.stdout)["regressed"] is True  # standard output holds the document alone
    assert "REGRESSED" in done.stderr


def test_quiet_prints_the_verdict_only(reports: dict[str, Path]) -> None:
    code, out, _ = cli("compare", "-q", str(reports["seed"]), str(reports["seed-planted"]))
    assert code == exit_codes.REGRESSION
    assert out == "REGRESSED: 2 regression(s) (8/15 -> 7/15 tasks pass)\n"


def test_an_output_that_is_one_of_the_reports_is_refused(reports: dict[str, Path], tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    old.write_bytes(reports["seed"].read_bytes())
    before = old.read_bytes()
    for target in (str(old), str(tmp_path / "." / "old.json")):
        code, _, err = cli("compare", str(old), str(reports["seed-planted"]), "--json", "-o", target)
        assert code == exit_codes.OUTPUT, err
    assert old.read_bytes() == before
    code, _, err = cli("compare", str(old), str(old), "-o", str(tmp_path / "missing" / "x.json"))
    assert code == exit_codes.OUTPUT, err


def test_usage_errors(reports: dict[str, Path]) -> None:
    seed = str(reports["seed"])
    assert cli("compare", seed, seed, "--json", "--markdown")[0] == exit_codes.USAGE
    assert cli("compare", seed)[0] == exit_codes.USAGE
    assert cli("compare", seed, seed, "--max-budget-increase", "-1")[0] == exit_codes.USAGE
    assert cli("compare", seed, seed, "-o", "s3://bucket/x.json")[0] == exit_codes.USAGE
    code, _, err = cli("compare", "s3://KEY:SECRET@bucket/old.json", seed)
    assert code == exit_codes.USAGE and "SECRET" not in err


def test_reports_of_different_roots_are_refused_unless_allowed(reports: dict[str, Path]) -> None:
    code, _, err = cli("compare", str(reports["seed"]), str(reports["mix"]))
    assert code == exit_codes.BAD_INPUT
    assert f"error: {reports['mix']}: field 'inputs.task_root': task root " in err
    assert f"error: {reports['mix']}: field 'inputs.corpus_root': corpus root " in err
    assert str(reports["seed"]) in err and "--allow-different-roots" in err
    code, out, _ = cli("compare", str(reports["seed"]), str(reports["mix"]), "--allow-different-roots")
    assert code == exit_codes.REGRESSION  # every task of the seed is missing from the other report
    assert "REGRESSION  removed: task disk-full-escalation (passed before) is missing from the new report" in out
    assert "task root           e571ed60f6d5d801... -> a1e8ae01793c6365...  (differ)" in out


def test_a_different_claim_class_is_said_in_every_format(reports: dict[str, Path], tmp_path: Path) -> None:
    document = json.loads(reports["seed"].read_text())
    document["claim_class"], document["non_empirical"] = "public_reproduction", False
    other = tmp_path / "other.json"
    other.write_text(json.dumps(document))
    seed = str(reports["seed"])
    code, out, _ = cli("compare", seed, str(other))
    assert code == exit_codes.OK
    note = "claim classes differ: old conformance_seed (non-empirical), new public_reproduction (empirical)"
    assert (
        out.splitlines()[0] == f"NOTE: {note}; results of one claim class are not evidence for another (ECEB-0.1 §15)"
    )
    assert note.replace("_", "\\_") in cli("compare", seed, str(other), "--markdown")[1]  # Markdown-escaped
    assert json.loads(cli("compare", seed, str(other), "--json")[1])["claim_classes_differ"] is True


def _bad_reports(tmp_path: Path, good: Path) -> dict[str, tuple[Path, str]]:
    document = json.loads(good.read_text())
    cases: dict[str, tuple[bytes, str]] = {
        "not-json": (b"{not json", "invalid JSON"),
        "empty": (b"", ""),
        "truncated": (good.read_bytes()[:500], ""),
        "a-run": ((SEED / "run.json").read_bytes(), "is a run (schema 'symgliph.eceb/run-v0.1'), not a report"),
        "a-list": (b"[]", ""),
    }
    wrong_type = json.loads(good.read_text())
    wrong_type["tasks"][2]["minimum_viable_budget"] = "256"
    cases["wrong-type"] = (json.dumps(wrong_type).encode(), "tasks[2]")
    twice = dict(document, tasks=[*document["tasks"], document["tasks"][0]])
    cases["task-twice"] = (json.dumps(twice).encode(), "appears more than once")
    missing = dict(document)
    del missing["summary"]
    cases["no-summary"] = (json.dumps(missing).encode(), "summary")
    found = {}
    for name, (data, expected) in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_bytes(data)
        found[name] = (path, expected)
    found["missing"] = (tmp_path / "no-such-report.json", "cannot read")
    found["a-directory"] = (tmp_path, "cannot read")
    return found


def test_a_bad_report_is_bad_input_naming_it_never_an_internal_error(reports: dict[str, Path], tmp_path: Path) -> None:
    for name, (path, expected) in _bad_reports(tmp_path, reports["seed"]).items():
        for args in ((str(reports["seed"]), str(path)), (str(path), str(reports["seed"]))):
            done = run_eceb("compare", *args, "--json")
            assert done.returncode == exit_codes.BAD_INPUT, (name, done.stderr)
            assert f"error: {path}" in done.stderr, (name, done.stderr)
            assert expected in done.stderr, (name, done.stderr)
            assert "internal error" not in done.stderr and "Traceback" not in done.stderr
            assert done.stdout == ""


def test_reports_read_from_s3(reports: dict[str, Path], s3_server: S3Server, s3_bucket: str) -> None:
    client = s3_server.client()
    for name in ("seed", "seed-planted"):
        client.put_object(Bucket=s3_bucket, Key=f"nightly/{name}.json", Body=reports[name].read_bytes())
    old, new = f"s3://{s3_bucket}/nightly/seed.json", f"s3://{s3_bucket}/nightly/seed-planted.json"
    code, out, err = cli("compare", old, new, "--endpoint-url", s3_server.endpoint_url)
    assert code == exit_codes.REGRESSION, err
    assert f"REGRESSION  pass_to_fail: task {SEED_PLANTED}" in out
    code, _, err = cli("compare", old, f"s3://{s3_bucket}/nightly/none.json", "--endpoint-url", s3_server.endpoint_url)
    assert code == exit_codes.BAD_INPUT and f"s3://{s3_bucket}/nightly/none.json" in err
    for secret in s3_server.secrets:
        assert secret not in out + err


def test_the_summary_evaluate_prints_is_the_one_the_readme_shows(reports: dict[str, Path], tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text()
    sample = readme.split("```text\nPASS  db-failover-steps", 1)[1].split("```", 1)[0]
    report = tmp_path / "report.json"
    code, out, err = cli(
        "evaluate",
        str(SEED / "benchmark.json"),
        str(SEED / "run.json"),
        "--corpus",
        str(SEED / "corpus"),
        "-o",
        str(report),
    )
    assert code == exit_codes.TASKS_FAILED
    printed = out + err
    for line in ("PASS  db-failover-steps" + sample).splitlines():
        assert line in printed.splitlines(), line
    assert f"HTML report with plots: eceb render {report} --html -o report.html" in printed.splitlines()
    assert f"8/15 tasks pass; report written to {report}" in printed.splitlines()


def test_markdown_of_hand_made_ids_carries_no_image_link_mention_or_control(
    reports: dict[str, Path], tmp_path: Path
) -> None:
    document = json.loads(reports["seed"].read_text())
    ids = ["![t](https://tracker.example/p.png)", "[c](javascript:alert(1))", "@org/team", "x\x1b[2K\rPASS"]
    for task, task_id in zip(document["tasks"], ids, strict=False):
        task["task_id"] = task_id
    hand_made = tmp_path / "hand-made.json"
    hand_made.write_text(json.dumps(document))
    done = run_eceb("compare", str(reports["seed"]), str(hand_made), "--markdown")
    assert done.returncode == exit_codes.REGRESSION, done.stderr
    out = done.stdout
    assert "\\!\\[t\\](https\\://tracker.example/p.png)" in out and "\\[c\\](javascript:alert(1))" in out
    assert "@\u200dorg/team" in out and "x\\\\x1b\\[2K\\\\rPASS" in out
    assert "![" not in out and "https://" not in out and "@org" not in out and "\x1b" not in out
