"""``eceb pair run`` and ``eceb pair approve`` over what the ledger holds,
through the installed command line with the fake codex: a pair prepared in
two directories runs from one of them only, and an outcome the ledger never
recorded is recorded from the attempt's complete journal."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from eceb_worker.families.paired.journal import AttemptStatus
from tests.support.pair_experiment import PairExperiment, check_journal

NO_AUTOMATIC_STOP = {"execution": {"spending_stop": {"manual": True, "on_outcomes": []}}}
"""A mutated attempt stops the pair, not the spending: the other arm may run later."""

MUTATION = "fake-codex-was-here.txt"


def forget_outcome(experiment: PairExperiment, arm: str) -> None:
    """What a runner killed after ``attempt.json`` and before the ledger's outcome leaves."""
    db = sqlite3.connect(experiment.dir / "ledger.sqlite", isolation_level=None)
    db.execute("UPDATE executions SET outcome = NULL WHERE arm = ?", (arm,))
    db.close()


def test_a_pair_prepared_twice_runs_from_the_directory_that_started_it(tmp_path: Path) -> None:
    """Run one directory to its end (arm A), then the other: refused; the
    first completes the pair and the pilot is approved. (Two runners racing
    from two directories: tests/integration/test_ledger.py.)"""
    experiment = PairExperiment(tmp_path, NO_AUTOMATIC_STOP)
    first = experiment.ready()
    second = experiment.prepare(1, again=True)
    stopped = experiment.run(first, scenario="A=mutate")  # arm A runs, arm B is left for later
    assert stopped.returncode == 1, stopped.stderr
    (experiment.repo / MUTATION).unlink()
    refused = experiment.run(second)
    assert refused.returncode == 9, refused.stderr
    assert "refused: pair 1 " in refused.stderr and first.name in refused.stderr
    assert not (second / "attempts").exists() and len(experiment.invocations()) == 1
    assert [(e.arm, e.directory) for e in experiment.ledger()] == [("A", first.name)]
    done = experiment.run(first)
    assert done.returncode == 1 and "pair 1: arm A mutated; arm B completed" in done.stdout
    experiment.eceb("pair", "approve", str(experiment.dir), "--approver", "a reviewer", check=True)
    assert experiment.status()["inconsistencies"] == []


def test_run_and_approve_record_an_outcome_the_ledger_never_recorded(tmp_path: Path) -> None:
    experiment = PairExperiment(tmp_path, NO_AUTOMATIC_STOP)
    pair = experiment.ready()
    assert experiment.run(pair, scenario="A=mutate").returncode == 1
    (experiment.repo / MUTATION).unlink()
    forget_outcome(experiment, "A")
    shown = experiment.status()["inconsistencies"]
    assert any("the ledger says no outcome (the runner stopped before recording it)" in item for item in shown)
    done = experiment.run(pair)
    assert done.returncode == 1, done.stderr
    assert f"pair 1: recorded the outcome of attempt {pair.name}/A from its attempt.json: mutated" in done.stdout
    assert check_journal(pair / "attempts" / "B").status is AttemptStatus.COMPLETED
    assert [e.outcome for e in experiment.ledger()] == ["mutated", "completed"]
    forget_outcome(experiment, "B")
    approved = experiment.eceb("pair", "approve", str(experiment.dir), "--approver", "a reviewer", check=True)
    assert f"recorded the outcome of attempt {pair.name}/B from its attempt.json: completed" in approved.stdout
    assert [e.outcome for e in experiment.ledger()] == ["mutated", "completed"]
    assert experiment.status()["inconsistencies"] == []


def test_status_names_a_ledger_whose_authorized_count_disagrees_with_the_authorization(tmp_path: Path) -> None:
    experiment = PairExperiment(tmp_path)
    pair = experiment.ready(executions=4)
    db = sqlite3.connect(experiment.dir / "ledger.sqlite", isolation_level=None)
    db.execute("UPDATE ledger SET authorized_executions = 18")
    db.close()
    refused = experiment.run(pair)
    assert refused.returncode == 9 and "nothing runs until they agree" in refused.stderr
    (shown,) = experiment.status()["inconsistencies"]
    assert shown == (
        f"{experiment.dir / 'ledger.sqlite'}: holds 18 authorized executions, "
        f"{experiment.dir / 'authorization.json'} authorizes 4: nothing runs until they agree"
    )
    text = experiment.eceb("pair", "status", str(experiment.dir), check=True).stdout
    assert "inconsistencies: none" not in text and "holds 18 authorized executions" in text
    (experiment.dir / "authorization.json").unlink()
    (missing,) = experiment.status()["inconsistencies"]
    assert missing.startswith(f"{experiment.dir / 'authorization.json'}: missing, though the ledger")


def test_a_symbolic_link_among_the_pair_directorys_entries_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    experiment = PairExperiment(tmp_path)
    pair = experiment.ready()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (pair / "attempts").symlink_to(elsewhere, target_is_directory=True)
    refused = experiment.run(pair)
    assert refused.returncode == 3, refused.stderr
    assert f"{pair / 'attempts'}: is a symbolic link" in refused.stderr
    assert list(elsewhere.iterdir()) == [] and experiment.ledger() == [] and experiment.invocations() == []
    (pair / "attempts").unlink()
    task = pair / "task.json"
    moved = tmp_path / "task.json"
    task.rename(moved)
    task.symlink_to(moved)
    again = experiment.run(pair)
    assert again.returncode == 3 and f"{task}: is a symbolic link" in again.stderr
    assert not (pair / "attempts").exists() and experiment.ledger() == []
