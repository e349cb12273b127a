"""``eceb pair summary`` through the installed command line, over pairs the
real runner wrote (``eceb pair run`` with the fake codex): outcomes,
assessments, credits, differences, the schedule check and the verdict.

The clean run of the nine pairs is built once per test process
(tests/support/nine_pairs.py, about 8 s). Its records hold absolute paths
(the manifests' command lines, ``invocation.json``, the freeze's
repository), so it is never copied to another place: the tests here only
read it (a symbolic link or a list of its pair directories is made outside
it), and the one test that could write into it restores it afterwards.
The changed-evidence tests are in test_pair_summary_corruptions.py. The
cheaper wrong answer, the wrong command and the rate variants are runs of
their own (only the pairs they need).
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eceb_worker.core.canonical import canonical_json
from eceb_worker.pipeline.paired.summary import summarize_pairs
from tests.support.nine_pairs import (
    PairsRun,
    attempts_of,
    nine_pairs,
    restore,
    run_pairs,
    summary_cli,
    validate_summary,
    write_assessments,
)

TASKS = ("explanation", "discovery", "verification")
ORDERS = {1: "AB", 2: "BA", 3: "AB", 4: "BA", 5: "AB", 6: "BA", 7: "AB", 8: "BA", 9: "AB"}
"""The seed's fixed schedule: explanation A/B (pilot), B/A, A/B; discovery
B/A, A/B, B/A; verification A/B, B/A, A/B; repeat by repeat."""
EXECUTED = [f"pair {position} arm {arm}" for position, order in ORDERS.items() for arm in order]
METRICS = (
    "input_tokens",
    "cached_input_tokens",
    "uncached_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "credits",
    "wall_clock_seconds",
    "cue_estimate_tokens",
    "context_cost_tokens",
)
RATE = {"input": Fraction("1.25"), "cached_input": Fraction("0.125"), "output": Fraction(10)}
"""examples/paired/rates.json, the one snapshot."""
EXPLANATIONS = [f"{position}/{arm}" for position in (1, 4, 7) for arm in "AB"]


@pytest.fixture(scope="module")
def nine(tmp_path_factory: pytest.TempPathFactory) -> PairsRun:
    return nine_pairs(tmp_path_factory)


@pytest.fixture
def guarded(nine: PairsRun) -> Iterator[PairsRun]:
    """The nine pairs, put back as the run left them after the test."""
    try:
        yield nine
    finally:
        restore(nine)


def bundle_of(run: PairsRun) -> Path:
    assert run.bundle is not None
    return run.bundle


def attempt_id(run: PairsRun, short: str) -> str:
    """``"4/B"`` -> the id of arm B's attempt of pair 4."""
    position, arm = short.split("/")
    return f"{run.pair(int(position)).name}/{arm}"


def measure(attempt: dict[str, Any], metric: str) -> dict[str, Any]:
    found: dict[str, Any] = next(m for m in attempt["measures"] if m["metric"] == metric)
    return found


def metric_of(group: dict[str, Any], metric: str) -> dict[str, Any]:
    found: dict[str, Any] = next(m for m in group["metrics"] if m["metric"] == metric)
    return found


def median(values: list[Fraction]) -> Fraction:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def test_the_nine_clean_pairs_with_accurate_assessments_reach_a_verdict(nine: PairsRun, tmp_path: Path) -> None:
    shown = summary_cli(nine.experiment, str(nine.dir), "--assessments", str(bundle_of(nine)), out=tmp_path / "s.json")
    document = shown.document
    assert shown.done.returncode == 0, shown.done.stdout
    verdict = document["verdict"]
    assert (verdict["reached"], verdict["reasons"], verdict["synthetic"]) == (True, [], True)
    assert document["frozen_pairs"] == 9 and document["synthetic"] is True
    assert document["directories"] == [str(p) for p in nine.pairs]
    assert [(p["position"], p["task"], "".join(p["order"]), p["pilot"]) for p in document["pairs"]] == [
        (position, TASKS[(position - 1) % 3], ORDERS[position], position == 1) for position in range(1, 10)
    ]
    assert all(p["complete"] and p["problems"] == [] for p in document["pairs"])
    attempts = attempts_of(document)
    assert len(attempts) == 18
    for attempt in attempts.values():
        assert (attempt["state"], attempt["outcome"], attempt["evidence"]) == ("completed", "passed", []), attempt
        assert [(link["link"], link["holds"]) for link in attempt["schema_identity"]] == [
            ("pair", True),
            ("request", True),
            ("capture", True),
            ("invocation", True),
        ]
        assert attempt["synthetic"] is True
        tokens = {m: Fraction(measure(attempt, m)["value"]) for m in ("input_tokens", "cached_input_tokens")}
        output = Fraction(measure(attempt, "output_tokens")["value"])
        expected = (
            (tokens["input_tokens"] - tokens["cached_input_tokens"]) * RATE["input"]
            + tokens["cached_input_tokens"] * RATE["cached_input"]
            + output * RATE["output"]
        ) / 1_000_000
        credits = attempt["credits"]
        assert (Fraction(credits["credits"]), credits["rate"], credits["unavailable"]) == (
            expected,
            "synthetic-2026-11",
            None,
        )
        assert "not account billing" in credits["label"]
        assert Fraction(measure(attempt, "credits")["value"]) == expected
    assert sorted(a["assessment"] for a in attempts.values() if a["assessment"] is not None) == ["accurate"] * 6
    assert {attempt_id(nine, short) for short in EXPLANATIONS} == {
        i for i, a in attempts.items() if a["binding"] is not None
    }

    for group, pairs in [(document["overall"], 9), *((task, 3) for task in document["per_task"])]:
        assert group["pairs"] == pairs
        for metric in METRICS[:-1]:
            found = metric_of(group, metric)
            assert (found["known"], found["unknown"], found["unknown_reasons"]) == (pairs, 0, []), (group, metric)
            assert found["median"] is not None
        cost = metric_of(group, "context_cost_tokens")
        assert (cost["known"], cost["unknown"], cost["median"]) == (0, pairs, None)
        assert len(cost["unknown_reasons"]) == pairs
        assert all("no cost of writing or maintaining the frozen overview" in why for why in cost["unknown_reasons"])
    assert [group["group"] for group in document["per_task"]] == list(TASKS)

    differences = [
        Fraction(a["credits"]["credits"]) - Fraction(b["credits"]["credits"])
        for a, b in (pair["arms"] for pair in document["pairs"])
    ]
    assert [
        Fraction(next(d for d in p["differences"] if d["metric"] == "credits")["value"]) for p in document["pairs"]
    ] == (differences)
    assert Fraction(metric_of(document["overall"], "credits")["median"]) == median(differences)
    assert verdict["result"] == (
        "task cue (B) used fewer credits"
        if median(differences) > 0
        else "frozen overview (A) used fewer credits"
        if median(differences) < 0
        else "no difference in credits"
    )
    assert "not account billing" in verdict["basis"]

    schedule = document["schedule"]
    assert (schedule["follows_schedule"], schedule["deviations"], schedule["not_executed"]) == (True, [], [])
    assert schedule["executed"] == EXECUTED
    assert schedule["imbalance"] == [
        {"task": "explanation", "a_first": 2, "b_first": 1, "ratio": "2:1"},
        {"task": "discovery", "a_first": 1, "b_first": 2, "ratio": "2:1"},
        {"task": "verification", "a_first": 2, "b_first": 1, "ratio": "2:1"},
        {"task": None, "a_first": 5, "b_first": 4, "ratio": "5:4"},
    ]
    assert [(group["group"], group["pairs"]) for group in schedule["by_order"]] == [("A first", 5), ("B first", 4)]
    assert [(r["check"], r["exit_code"], r["problem"]) for r in document["reexecutions"]] == [("go-test", 0, None)]
    assert "not account billing" in document["credit_label"]
    assert document["statement"] is not None and "verify software handling" in document["statement"]

    text = nine.experiment.eceb("pair", "summary", str(nine.dir), "--assessments", str(bundle_of(nine)))
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert f"verdict: {verdict['result']} (synthetic: verifies software handling only)" in lines
    assert f"  SYNTHETIC: {document['statement']}" in lines
    assert "not account billing" in text.stdout


def test_without_assessments_the_explanation_attempts_are_unassessed(nine: PairsRun, tmp_path: Path) -> None:
    shown = summary_cli(nine.experiment, str(nine.dir), out=tmp_path / "s.json")
    document = shown.document
    assert shown.done.returncode == 1
    attempts = attempts_of(document)
    explanations = {attempt_id(nine, short) for short in EXPLANATIONS}
    for identity, attempt in attempts.items():
        if identity in explanations:
            assert (attempt["outcome"], attempt["assessment"]) == ("unassessed", "none"), attempt
            assert any("no bound assessment" in reason for reason in attempt["reasons"])
            assert attempt["binding"]["attempt"] == identity
        else:
            assert (attempt["outcome"], attempt["assessment"], attempt["binding"]) == ("passed", None, None)
    assert all(pair["complete"] for pair in document["pairs"]), "an unassessed attempt stays visible and counted"
    verdict = document["verdict"]
    assert verdict["reached"] is False and verdict["result"] is None
    assert len(verdict["reasons"]) == 6, verdict["reasons"]
    for short in EXPLANATIONS:
        position, arm = short.split("/")
        assert any(
            reason.startswith(f"pair {position} arm {arm} ") and "unassessed" in reason for reason in verdict["reasons"]
        ), (short, verdict["reasons"])
    assert "verdict: none (6 reasons)" in shown.done.stdout


def test_an_assessment_that_does_not_bind_its_attempt_is_rejected(nine: PairsRun, tmp_path: Path) -> None:
    unassessed = summary_cli(nine.experiment, str(nine.dir), out=tmp_path / "unassessed.json").document
    wrong = {
        attempt_id(nine, "1/A"): ("answer", "0" * 64),
        attempt_id(nine, "4/B"): ("rubric", "1" * 64),
        attempt_id(nine, "7/A"): ("policy", "2" * 64),
    }
    bundle = write_assessments(
        unassessed, tmp_path / "bundle.json", changes={identity: {f: v} for identity, (f, v) in wrong.items()}
    )
    shown = summary_cli(nine.experiment, str(nine.dir), "--assessments", str(bundle), out=tmp_path / "s.json")
    assert shown.done.returncode == 1
    attempts = attempts_of(shown.document)
    for identity, (field, _) in wrong.items():
        attempt = attempts[identity]
        assert attempt["outcome"] == "unassessed", attempt
        assert attempt["assessment"].startswith("rejected: ") and f"{field}: binds" in attempt["assessment"]
        assert any(reason.startswith(f"assessment rejected: {field}: ") for reason in attempt["reasons"])
        others = {"answer", "rubric", "policy"} - {field}
        assert not any(f"{other}: binds" in attempt["assessment"] for other in others), "only the wrong field is named"
    for short in ("1/B", "4/A", "7/B"):
        assert (attempts[attempt_id(nine, short)]["outcome"], attempts[attempt_id(nine, short)]["assessment"]) == (
            "passed",
            "accurate",
        )
    assert sum(1 for a in attempts.values() if a["outcome"] == "passed") == 15
    verdict = shown.document["verdict"]
    assert verdict["reached"] is False and len(verdict["reasons"]) == 3, verdict["reasons"]
    for short in ("1/A", "4/B", "7/A"):
        position, arm = short.split("/")
        assert any(r.startswith(f"pair {position} arm {arm} ") for r in verdict["reasons"]), verdict["reasons"]


def test_a_symbolic_link_and_a_repeated_directory_change_nothing(nine: PairsRun, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(nine.dir, target_is_directory=True)
    bundle = ("--assessments", str(bundle_of(nine)))

    def run(name: str, *inputs: Path) -> bytes:
        return summary_cli(nine.experiment, *map(str, inputs), *bundle, out=tmp_path / f"{name}.json").data

    real = run("real", nine.dir)
    assert run("linked", link) == real
    assert run("twice", nine.dir, link, nine.dir) == real
    pairs = run("pairs", *nine.pairs)
    assert pairs == real, "the experiment directory is the list of its pair directories"
    assert run("linked-pairs", *(link / p.name for p in nine.pairs)) == pairs
    repeated = run("repeated", *nine.pairs, link / nine.pair(1).name, nine.pair(1), nine.pair(5))
    assert repeated == pairs
    document = json.loads(repeated)
    assert len(document["pairs"]) == 9 and document["directories"] == [str(p) for p in nine.pairs]
    assert document["verdict"]["reached"] is True


def test_one_pair_short_gives_no_verdict(nine: PairsRun, tmp_path: Path) -> None:
    shown = summary_cli(
        nine.experiment, *map(str, nine.pairs[:8]), "--assessments", str(bundle_of(nine)), out=tmp_path / "s.json"
    )
    document = shown.document
    assert shown.done.returncode == 1
    assert [p["position"] for p in document["pairs"]] == list(range(1, 9))
    assert all(p["complete"] for p in document["pairs"])
    verdict = document["verdict"]
    assert verdict["reached"] is False
    assert len(verdict["reasons"]) == 1, verdict["reasons"]
    assert "8 complete pairs" in verdict["reasons"][0] and "exactly 9" in verdict["reasons"][0]
    schedule = document["schedule"]
    assert schedule["executed"] == EXECUTED[:16] and schedule["follows_schedule"] is True
    assert len(schedule["not_executed"]) == 2
    assert schedule["not_executed"][0].startswith("pair 9 arm A") and "17" in schedule["not_executed"][0]
    assert schedule["not_executed"][1].startswith("pair 9 arm B") and "18" in schedule["not_executed"][1]


def test_a_cheaper_wrong_answer_never_wins_and_a_wrong_command_fails(tmp_path: Path) -> None:
    run = run_pairs(tmp_path / "run", count=3, scenarios={2: "B=cheap-wrong", 3: "A=wrong-command"})
    shown = summary_cli(run.experiment, str(run.dir), out=tmp_path / "s.json")
    assert shown.done.returncode == 1
    by_position = {pair["position"]: pair for pair in shown.document["pairs"]}
    discovery = by_position[2]
    a, b = discovery["arms"]
    assert discovery["task"] == "discovery" and discovery["complete"] is True
    assert (a["outcome"], b["outcome"], b["state"]) == ("passed", "failed", "completed")
    assert b["reasons"], "the wrong answer says why"
    assert Fraction(b["credits"]["credits"]) < Fraction(a["credits"]["credits"])
    assert Fraction(measure(b, "input_tokens")["value"]) < Fraction(measure(a, "input_tokens")["value"])
    credits = next(d for d in discovery["differences"] if d["metric"] == "credits")
    assert Fraction(credits["value"]) > 0, "A - B: the wrong arm used fewer credits"
    assert discovery["preferred"] == "A" and "only arm A passed" in discovery["preference"]

    verification = by_position[3]
    a, b = verification["arms"]
    assert verification["task"] == "verification" and verification["complete"] is True
    assert (a["outcome"], a["state"], b["outcome"]) == ("failed", "completed", "passed")
    assert any("recorded no execution of the frozen command" in reason for reason in a["reasons"]), a["reasons"]
    assert verification["preferred"] == "B"

    verdict = shown.document["verdict"]
    assert verdict["reached"] is False
    assert any(r.startswith("pair 2 arm B did not succeed (failed)") for r in verdict["reasons"]), verdict["reasons"]
    assert any(r.startswith("pair 3 arm A did not succeed (failed)") for r in verdict["reasons"]), verdict["reasons"]
    assert any("3 complete pairs" in r and "exactly 9" in r for r in verdict["reasons"]), verdict["reasons"]


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(list(range(9))))
def test_the_order_of_the_pair_directories_changes_nothing(nine: PairsRun, order: list[int]) -> None:
    expected = canonical_json(summarize_pairs(list(nine.pairs), assessments=[bundle_of(nine)]))
    shuffled = summarize_pairs([nine.pairs[i] for i in order], assessments=[bundle_of(nine)])
    assert canonical_json(shuffled) == expected


def test_the_command_line_order_of_the_pair_directories_changes_nothing(nine: PairsRun, tmp_path: Path) -> None:
    bundle = ("--assessments", str(bundle_of(nine)))
    forward = summary_cli(nine.experiment, *map(str, nine.pairs), *bundle, out=tmp_path / "forward.json")
    shuffled = [nine.pairs[i] for i in (4, 8, 0, 6, 2, 7, 1, 5, 3)]
    backward = summary_cli(nine.experiment, *map(str, shuffled), *bundle, out=tmp_path / "shuffled.json")
    assert backward.data == forward.data
    assert forward.data == canonical_json(summarize_pairs(list(nine.pairs), assessments=[bundle_of(nine)])) + b"\n"


@pytest.mark.parametrize(
    ("rates", "cause"),
    [
        ({"model": "another-model"}, "incompatible_model"),
        ({"speed_tier": "priority"}, "incompatible_speed_tier"),
        ({"as_of": "2099-01-01"}, "future_rate"),
        ({"unit": "credits_per_thousand_tokens"}, "incompatible_unit"),
    ],
    ids=["another-model", "another-speed-tier", "future-as-of", "another-unit"],
)
def test_rates_that_do_not_apply_make_every_credit_estimate_unavailable(
    tmp_path: Path, rates: dict[str, str], cause: str
) -> None:
    run = run_pairs(tmp_path / "run", count=1, rates=rates)
    pilot = str(run.pair(1))
    unassessed = summary_cli(run.experiment, pilot, out=tmp_path / "unassessed.json").document
    bundle = write_assessments(unassessed, tmp_path / "bundle.json")
    shown = summary_cli(run.experiment, pilot, "--assessments", str(bundle), out=tmp_path / "s.json")
    assert shown.done.returncode == 1
    (pair,) = shown.document["pairs"]
    assert pair["complete"] is True
    for attempt in pair["arms"]:
        assert attempt["outcome"] == "passed", attempt["reasons"]
        credits = attempt["credits"]
        assert (credits["credits"], credits["rate"], credits["unavailable"]) == (None, None, cause), credits
        assert credits["reason"] and "not account billing" in credits["label"]
        found = measure(attempt, "credits")
        assert found["value"] is None and found["unknown"] == credits["reason"]
        assert measure(attempt, "input_tokens")["value"] is not None, "the token counts stay known"
    difference = next(d for d in pair["differences"] if d["metric"] == "credits")
    assert difference["value"] is None and difference["unknown"]
    assert "0" not in {measure(a, "credits")["value"] for a in pair["arms"]}
    overall = metric_of(shown.document["overall"], "credits")
    assert (overall["known"], overall["unknown"], overall["median"]) == (0, 1, None)
    verdict = shown.document["verdict"]
    assert verdict["reached"] is False
    assert any("credit differences are unknown" in reason for reason in verdict["reasons"]), verdict["reasons"]
    assert any("1 complete pairs" in reason for reason in verdict["reasons"]), verdict["reasons"]
    assert f"unavailable ({cause})" in shown.done.stdout


def test_a_missing_counter_or_one_past_the_range_leaves_the_attempt_judged_and_each_metric_that_needs_it_unknown(
    tmp_path: Path,
) -> None:
    """Arm A's usage lacks ``cached_input_tokens``; arm B's reports input
    10^20 and output 2^63 tokens. Both turns completed: both answers are
    judged like any other; only what needs those counters is unknown."""
    run = run_pairs(tmp_path / "run", count=1, scenarios={1: "A=missing-counter,B=huge-counters"})
    pilot = run.pair(1)
    for arm in ("A", "B"):
        record = run.experiment.attempt(pilot, arm)
        assert (record.status.value, record.transport.value if record.transport else None) == ("completed", "completed")
    runner = (pilot / "attempts" / "A" / "runner.stderr").read_text()
    assert "missing_counters: the completed turn's usage lacks cached_input_tokens" in runner
    unassessed = summary_cli(run.experiment, str(pilot), out=tmp_path / "unassessed.json").document
    bundle = write_assessments(unassessed, tmp_path / "bundle.json")
    shown = summary_cli(run.experiment, str(pilot), "--assessments", str(bundle), out=tmp_path / "s.json")
    (pair,) = shown.document["pairs"]
    a, b = pair["arms"]
    assert (a["state"], a["outcome"], b["state"], b["outcome"]) == ("completed", "passed", "completed", "passed")
    assert pair["complete"] is True
    lacks = "the completed turn's usage lacks cached_input_tokens"
    assert (a["credits"]["credits"], a["credits"]["unavailable"], a["credits"]["reason"]) == (
        None,
        "missing_counters",
        lacks,
    )
    for metric in ("cached_input_tokens", "uncached_input_tokens"):
        assert measure(a, metric) == {"metric": metric, "value": None, "unknown": f"missing_counters: {lacks}"}
    assert all(measure(a, m)["value"] is not None for m in ("input_tokens", "output_tokens", "reasoning_output_tokens"))
    assert b["credits"]["unavailable"] == "overflow"
    past = {"input_tokens": 10**20, "output_tokens": 2**63}
    for metric, count in past.items():
        assert measure(b, metric)["unknown"] == f"overflow: {metric} {count} exceeds {2**63 - 1}"
    assert measure(b, "uncached_input_tokens")["value"] is None
    assert measure(b, "cached_input_tokens")["value"] is not None
    overall = {m["metric"]: m for m in shown.document["overall"]["metrics"]}
    for metric in ("input_tokens", "cached_input_tokens", "uncached_input_tokens", "output_tokens", "credits"):
        assert (overall[metric]["known"], overall[metric]["unknown"], overall[metric]["median"]) == (0, 1, None), metric
    assert overall["reasoning_output_tokens"]["known"] == 1


def test_quiet_prints_only_the_verdict_line_and_still_writes_the_outputs(nine: PairsRun, tmp_path: Path) -> None:
    bundle = ("--assessments", str(bundle_of(nine)))
    loud = summary_cli(nine.experiment, str(nine.dir), *bundle, out=tmp_path / "loud.json")
    out, table = tmp_path / "quiet.json", tmp_path / "quiet.csv"
    done = nine.experiment.eceb("pair", "summary", str(nine.dir), *bundle, "-q", "-o", str(out), "--csv", str(table))
    assert (done.returncode, done.stderr) == (0, "")
    result = loud.document["verdict"]["result"]
    assert done.stdout.splitlines() == [f"verdict: {result} (synthetic: verifies software handling only)"]
    assert len(loud.done.stdout.splitlines()) > 50, "without -q, the whole account"
    assert out.read_bytes() == loud.data and len(table.read_text().splitlines()) == 10
    without = nine.experiment.eceb("pair", "summary", str(nine.pair(1)), "-q")
    assert without.returncode == 1 and without.stdout.splitlines() == [without.stdout.strip()]
    assert without.stdout.startswith("verdict: none (")
    missing = nine.experiment.eceb("pair", "summary", str(tmp_path / "nowhere"), "-q")
    assert missing.returncode in (2, 3) and missing.stderr.strip(), "errors are still shown"


def test_csv_on_standard_output_is_a_header_and_one_row_per_pair(nine: PairsRun) -> None:
    done = nine.experiment.eceb("pair", "summary", str(nine.dir), "--assessments", str(bundle_of(nine)), "--csv", "-")
    assert done.returncode == 0, done.stderr
    rows = list(csv.reader(io.StringIO(done.stdout)))
    assert len(rows) == 10, "the header and nine rows, nothing else"
    header, *pairs = rows
    assert header[:10] == [
        "directory",
        "position",
        "task",
        "repeat",
        "order",
        "pilot",
        "complete",
        "outcome_A",
        "outcome_B",
        "preferred",
    ]
    assert len(header) == 10 + 3 * len(METRICS)
    assert all(len(row) == len(header) for row in pairs)
    assert [row[:9] for row in pairs] == [
        [
            str(nine.pair(position)),
            str(position),
            TASKS[(position - 1) % 3],
            str((position - 1) // 3 + 1),
            "/".join(ORDERS[position]),
            str(position == 1).lower(),
            "true",
            "passed",
            "passed",
        ]
        for position in range(1, 10)
    ]
    column = header.index("A_minus_B_credits")
    assert all(row[column] for row in pairs) and header.index("A_minus_B_context_cost_tokens") > column
    assert all(row[header.index("A_minus_B_context_cost_tokens")] == "" for row in pairs)


def test_json_on_standard_output_is_the_document_alone(nine: PairsRun) -> None:
    done = nine.experiment.eceb("pair", "summary", str(nine.dir), "--assessments", str(bundle_of(nine)), "-o", "-")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    validate_summary(document)
    assert done.stdout.encode() == canonical_json(document) + b"\n"
    assert document["verdict"]["reached"] is True and len(document["pairs"]) == 9


@pytest.mark.parametrize("option", ["-o", "--csv"])
@pytest.mark.parametrize("where", ["summary.json", "attempts/A/summary.json", "by a link/summary.json"])
def test_an_output_inside_a_pair_directory_is_refused(
    guarded: PairsRun, tmp_path: Path, option: str, where: str
) -> None:
    target = guarded.pair(2) / where
    if where.startswith("by a link"):
        link = tmp_path / "link"
        link.symlink_to(guarded.pair(2), target_is_directory=True)
        target = link / "summary.json"
    done = guarded.experiment.eceb("pair", "summary", str(guarded.dir), option, str(target))
    assert done.returncode == 6, (done.stdout, done.stderr)
    assert str(guarded.pair(2)) in done.stderr and "inside the task-pair directory" in done.stderr
    assert not target.exists() and done.stdout == ""
    assert not list(guarded.pair(2).rglob("*summary*")), "nothing is written"


def test_a_directory_that_is_neither_a_pair_nor_an_experiment_is_bad_input(nine: PairsRun, tmp_path: Path) -> None:
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "notes.txt").write_text("not a pair\n")
    out = tmp_path / "s.json"
    done = nine.experiment.eceb("pair", "summary", str(nine.pair(1)), str(stray), "-o", str(out))
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert str(stray) in done.stderr and "neither a task-pair directory" in done.stderr
    assert not out.exists()


@pytest.mark.parametrize("where", ["experiment freeze", "experiment ledger", "repository HEAD"])
def test_an_output_over_the_experiments_records_or_into_the_repository_is_refused(
    guarded: PairsRun, where: str
) -> None:
    target = {
        "experiment freeze": guarded.dir / "freeze.json",
        "experiment ledger": guarded.dir / "ledger.sqlite",
        "repository HEAD": guarded.experiment.repo / ".git" / "HEAD",
    }[where]
    before = target.read_bytes()
    done = guarded.experiment.eceb(
        "pair", "summary", str(guarded.dir), "--assessments", str(bundle_of(guarded)), "-o", str(target)
    )
    assert done.returncode == 6, (done.stdout, done.stderr)
    assert "which the summary reads: nothing is written there" in done.stderr
    assert target.read_bytes() == before


def test_a_name_that_is_not_utf8_is_added_evidence_not_an_internal_error(guarded: PairsRun, tmp_path: Path) -> None:
    attempt = guarded.pair(2) / "attempts" / "A"
    stray = attempt / os.fsdecode(b"x\xfe")
    stray.write_bytes(b"")
    try:
        out = tmp_path / "s.json"
        done = guarded.experiment.eceb("pair", "summary", str(guarded.dir), "-o", str(out))
        assert done.returncode == 1, (done.stdout, done.stderr)
        document = json.loads(out.read_bytes())
        arm = next(a for a in document["pairs"][1]["arms"] if a["arm"] == "A")
        assert arm["outcome"] == "unverified"
        assert "x\\xfe: added to the journal (no runner writes it)" in arm["evidence"]
    finally:
        stray.unlink()


def test_a_bundle_given_twice_is_read_once(nine: PairsRun, tmp_path: Path) -> None:
    bundle = str(bundle_of(nine))
    done = summary_cli(
        nine.experiment, str(nine.dir), "--assessments", bundle, "--assessments", bundle, out=tmp_path / "s.json"
    )
    assert done.done.returncode == 0, done.done.stderr
    assert done.document["verdict"]["reached"] is True
