"""The paired benchmark's execution ledger over a real SQLite file: nothing
starts beyond its authorization, after a stop, after the pilot without an
approval, or twice; two runners racing for the last execution cannot both
start it."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from eceb_worker.errors import ExecutionRefused, OutputError
from eceb_worker.io.ledger import Ledger

FREEZE = "f" * 64
EVIDENCE = "e" * 64


def new_ledger(tmp_path: Path, authorized: int = 18) -> Ledger:
    return Ledger.create(tmp_path / "ledger.sqlite", freeze_digest=FREEZE, authorized_executions=authorized)


def run_pilot(ledger: Ledger) -> None:
    for arm in ("A", "B"):
        ledger.start(pair=1, arm=arm, attempt_id=f"1{arm}")
        ledger.finish(f"1{arm}", "completed")


def test_the_pilot_runs_and_the_next_pair_waits_for_an_approval(tmp_path: Path) -> None:
    ledger = new_ledger(tmp_path)
    ledger.start(pair=1, arm="A", attempt_id="1A")
    with pytest.raises(ExecutionRefused, match="the pilot has not finished"):
        ledger.approve_continuation(freeze_digest=FREEZE, pilot_evidence_digest=EVIDENCE, approver="reviewer")
    ledger.finish("1A", "completed")
    ledger.start(pair=1, arm="B", attempt_id="1B")
    ledger.finish("1B", "failed")
    with pytest.raises(ExecutionRefused, match="continuation needs an approval"):
        ledger.start(pair=2, arm="B", attempt_id="2B")
    with pytest.raises(ExecutionRefused, match="another freeze"):
        ledger.approve_continuation(freeze_digest="0" * 64, pilot_evidence_digest=EVIDENCE, approver="reviewer")
    ledger.approve_continuation(freeze_digest=FREEZE, pilot_evidence_digest=EVIDENCE, approver="reviewer")
    assert ledger.start(pair=2, arm="B", attempt_id="2B").position == 3
    assert [(e.position, e.pair, e.arm, e.outcome) for e in Ledger.open(ledger.path).entries()] == [
        (1, 1, "A", "completed"),
        (2, 1, "B", "failed"),
        (3, 2, "B", None),
    ]


def test_nothing_runs_twice_beyond_its_authorization_or_after_a_stop(tmp_path: Path) -> None:
    ledger = new_ledger(tmp_path, authorized=3)
    run_pilot(ledger)
    with pytest.raises(ExecutionRefused, match="started before: nothing runs twice"):
        ledger.start(pair=1, arm="A", attempt_id="1A-again")
    ledger.approve_continuation(freeze_digest=FREEZE, pilot_evidence_digest=EVIDENCE, approver="reviewer")
    ledger.start(pair=2, arm="B", attempt_id="2B")  # never finished: it still counts
    with pytest.raises(ExecutionRefused, match="all 3 authorized executions have started"):
        ledger.start(pair=2, arm="A", attempt_id="2A")
    (tmp_path / "stopped").mkdir()
    stopped = new_ledger(tmp_path / "stopped")
    stopped.stop("daily credit limit reached")
    with pytest.raises(ExecutionRefused, match="spending stopped: daily credit limit reached"):
        stopped.start(pair=1, arm="A", attempt_id="1A")


def test_a_ledger_is_never_reused_and_must_exist(tmp_path: Path) -> None:
    new_ledger(tmp_path).close()
    with pytest.raises(OutputError, match="cannot create the ledger"):
        new_ledger(tmp_path)
    with pytest.raises(ExecutionRefused, match="no ledger"):
        Ledger.open(tmp_path / "missing.sqlite")


def _race(path: str, arm: str, ready: multiprocessing.synchronize.Barrier, results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    ledger = Ledger.open(Path(path))
    ready.wait()
    try:
        ledger.start(pair=1, arm=arm, attempt_id=f"runner-{arm}")
    except ExecutionRefused as refused:
        results.put(f"refused: {refused}")
    else:
        results.put("started")


def test_two_runners_racing_for_the_last_execution_start_it_once(tmp_path: Path) -> None:
    """Two processes, released together, each try to start an execution
    when one remains authorized: exactly one starts."""
    context = multiprocessing.get_context("spawn")
    for attempt in range(5):
        ledger = Ledger.create(tmp_path / f"race-{attempt}.sqlite", freeze_digest=FREEZE, authorized_executions=1)
        ready, results = context.Barrier(2), context.Queue()
        runners = [context.Process(target=_race, args=(str(ledger.path), arm, ready, results)) for arm in ("A", "B")]
        for runner in runners:
            runner.start()
        outcomes = sorted(results.get(timeout=60) for _ in runners)
        for runner in runners:
            runner.join(timeout=60)
        assert outcomes[0] == "refused: all 1 authorized executions have started", outcomes
        assert outcomes[1] == "started", outcomes
        assert len(ledger.entries()) == 1
