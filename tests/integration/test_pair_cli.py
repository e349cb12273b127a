"""``eceb pair plan`` through the installed command line."""

from __future__ import annotations

import json
import subprocess
import sys

import msgspec
from jsonschema import Draft202012Validator

from eceb_worker.core.canonical import canonical_json
from eceb_worker.families.paired.schedule import Plan, plan
from tests.support.paths import REPO

ECEB = (sys.executable, "-m", "eceb_cli")


def test_plan_prints_the_schedule_order_counts_and_imbalance() -> None:
    done = subprocess.run([*ECEB, "pair", "plan"], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert "  explanation   A/B pilot      B/A            A/B" in lines
    assert "  discovery     B/A            A/B            B/A" in lines
    assert "  pair 1: explanation repeat 1, A then B (pilot): executions 1-2, 2 in all" in lines
    assert "  pair 9: verification repeat 3, A then B: executions 17-18, 18 in all" in lines
    assert "9 pairs, 18 executions (the 2-execution pilot included)" in lines
    assert "  discovery     1:2  (imbalance 2:1)" in lines
    assert "  overall       5:4  (imbalance 5:4)" in lines
    assert "Three repeats support descriptive values only." in lines


def test_plan_json_is_the_canonical_plan_valid_against_its_schema() -> None:
    done = subprocess.run([*ECEB, "pair", "plan", "--json"], capture_output=True, check=False)
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout == canonical_json(plan()) + b"\n"
    document = json.loads(done.stdout)
    schema = json.loads((REPO / "schema" / "pair-plan-v0.1.json").read_text())
    assert list(Draft202012Validator(schema).iter_errors(document)) == []
    assert msgspec.json.decode(done.stdout, type=Plan) == plan()
    assert document["schema"] == "symgliph.eceb/pair-plan-v0.1"


def test_plan_quiet_prints_only_the_execution_order() -> None:
    done = subprocess.run([*ECEB, "pair", "plan", "-q"], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert len(lines) == 9, "a line a pair, nothing else"
    assert lines[0] == "pair 1: explanation repeat 1, A then B (pilot): executions 1-2, 2 in all"
    assert lines[-1] == "pair 9: verification repeat 3, A then B: executions 17-18, 18 in all"
    quiet_json = subprocess.run([*ECEB, "pair", "plan", "-q", "--json"], capture_output=True, check=False)
    assert quiet_json.stdout == canonical_json(plan()) + b"\n", "-q keeps the document asked for"
