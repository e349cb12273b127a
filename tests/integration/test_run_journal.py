"""The journal of ``eceb run``: a SQLite file deciding each paid call before it is sent."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from eceb_worker.errors import ExecutionRefused, InputError, OutcomeUnknown, OutputError
from eceb_worker.io.run_journal import JournalBinding, RunJournal

pytestmark = pytest.mark.integration

PLAN = "a" * 64


def _create(path: Path, *, authorized: int = 10, stop: int = 0) -> RunJournal:
    return RunJournal.create(path, JournalBinding(plan_digest=PLAN, authorized_calls=authorized, stop_micro_usd=stop))


def test_a_made_call_is_never_sent_again(tmp_path: Path) -> None:
    with _create(tmp_path / "j") as journal:
        attempt = journal.begin("x:answer", 5)
        journal.finish(attempt, "ok", cost_micro_usd=3, record=b"{}")
        with pytest.raises(ExecutionRefused, match="nothing runs twice"):
            journal.begin("x:answer", 5)
        assert journal.result("x:answer") == b"{}"


def test_a_final_failure_is_an_outcome_and_a_transient_one_is_retried(tmp_path: Path) -> None:
    with _create(tmp_path / "j") as journal:
        first = journal.begin("x:answer", 5)
        journal.finish(first, "transient", maybe_billed=True, detail="HTTP 500")
        second = journal.begin("x:answer", 5)
        assert second.attempt == 2
        journal.finish(second, "final", detail="HTTP 400")
        with pytest.raises(ExecutionRefused, match="failed finally"):
            journal.begin("x:answer", 5)
        summary = journal.summary()
        assert (summary.failed, summary.retried, summary.possible_micro_usd) == (1, 1, 5)


def test_authorized_calls_count_every_start(tmp_path: Path) -> None:
    with _create(tmp_path / "j", authorized=2) as journal:
        journal.begin("a:answer", 1)
        journal.begin("b:answer", 1)
        with pytest.raises(ExecutionRefused, match="all 2 authorized paid calls"):
            journal.begin("c:answer", 1)
        journal.begin("c:judge", 0, paid=False)  # an unpaid call does not count


def test_the_spending_stop_counts_what_may_have_been_billed(tmp_path: Path) -> None:
    with _create(tmp_path / "j", stop=100) as journal:
        a = journal.begin("a:answer", 60)
        journal.finish(a, "ok", cost_micro_usd=30, record=b"{}")
        b = journal.begin("b:answer", 60)  # 30 known + 60 in flight: 90
        with pytest.raises(ExecutionRefused, match="spending stopped"):
            journal.begin("c:answer", 20)
        journal.finish(b, "ok", cost_micro_usd=10, record=b"{}")
        with pytest.raises(ExecutionRefused, match="spending stopped"):  # a stop stays recorded
            journal.begin("d:answer", 1)
        assert journal.stops()
        journal.set_limits(authorized_calls=10, stop_micro_usd=0)
        journal.begin("d:answer", 1)


def test_an_attempt_left_in_flight_is_unknown_after_a_stop(tmp_path: Path) -> None:
    path = tmp_path / "j"
    journal = _create(path)
    journal.begin("a:answer", 40)
    journal.close()  # the process stopped while the call was sent
    with RunJournal.open(path, plan_digest=PLAN) as reopened:
        with pytest.raises(OutcomeUnknown, match="--rerun-unknown"):
            reopened.begin("a:answer", 40)
        again = reopened.begin("a:answer", 40, rerun_unknown=True)
        assert again.attempt == 2
        assert reopened.summary().unknown == 0
        assert [a.outcome for a in reopened.attempts("a:answer")] == ["unknown", None]
        assert reopened.summary().possible_micro_usd == 80  # both may be billed until the second answers


def test_a_journal_is_bound_to_its_plan_and_to_one_process(tmp_path: Path) -> None:
    path = tmp_path / "j"
    with _create(path), pytest.raises(OutputError, match="in use by another eceb run"):
        RunJournal.open(path, plan_digest=PLAN)
    with pytest.raises(InputError, match="bound to another plan"):
        RunJournal.open(path, plan_digest="b" * 64)
    with pytest.raises(OutputError, match="cannot create"):
        _create(path)
    with pytest.raises(InputError, match="no run journal"):
        RunJournal.open(tmp_path / "missing", plan_digest=PLAN)


def test_a_file_that_is_not_a_journal_is_named(tmp_path: Path) -> None:
    path = tmp_path / "j"
    path.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(InputError, match="not a run journal"):
        RunJournal.open(path, plan_digest=PLAN)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(InputError, match="run journal"):
        RunJournal.open(other, plan_digest=PLAN)


def test_threads_racing_for_the_last_authorized_call_start_one(tmp_path: Path) -> None:
    with _create(tmp_path / "j", authorized=1) as journal:
        started: list[str] = []
        refused: list[str] = []

        def race(name: str) -> None:
            try:
                journal.begin(f"{name}:answer", 1)
                started.append(name)
            except ExecutionRefused:
                refused.append(name)

        threads = [threading.Thread(target=race, args=(str(i),)) for i in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(started) == 1 and len(refused) == 15
