"""The paired benchmark's execution ledger over a real SQLite file: nothing
starts beyond its authorization, after a stop, after the pilot without an
approval, twice, or from a second directory of a pair; two runners racing
for the last execution, or for one pair from two directories, cannot both
start; every SQLite error is bad input or an output error naming the file."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from eceb_worker.errors import ExecutionRefused, InputError, OutputError
from eceb_worker.io import sqlite_files
from eceb_worker.io.paired.ledger import Ledger

FREEZE = "f" * 64
EVIDENCE = "e" * 64
DIRECTORY = {1: "task-pair-01-x", 2: "task-pair-02-x"}


def new_ledger(tmp_path: Path, authorized: int = 18) -> Ledger:
    return Ledger.create(tmp_path / "ledger.sqlite", freeze_digest=FREEZE, authorized_executions=authorized)


def run_pilot(ledger: Ledger) -> None:
    for arm in ("A", "B"):
        ledger.start(pair=1, arm=arm, attempt_id=f"1{arm}", directory=DIRECTORY[1])
        ledger.finish(f"1{arm}", "completed")


def test_the_pilot_runs_and_the_next_pair_waits_for_an_approval(tmp_path: Path) -> None:
    ledger = new_ledger(tmp_path)
    ledger.start(pair=1, arm="A", attempt_id="1A", directory=DIRECTORY[1])
    with pytest.raises(ExecutionRefused, match="the pilot has not finished"):
        ledger.approve_continuation(freeze_digest=FREEZE, pilot_evidence_digest=EVIDENCE, approver="reviewer")
    ledger.finish("1A", "completed")
    ledger.start(pair=1, arm="B", attempt_id="1B", directory=DIRECTORY[1])
    ledger.finish("1B", "failed")
    with pytest.raises(ExecutionRefused, match="continuation needs an approval"):
        ledger.start(pair=2, arm="B", attempt_id="2B", directory=DIRECTORY[2])
    with pytest.raises(ExecutionRefused, match="another freeze"):
        ledger.approve_continuation(freeze_digest="0" * 64, pilot_evidence_digest=EVIDENCE, approver="reviewer")
    ledger.approve_continuation(freeze_digest=FREEZE, pilot_evidence_digest=EVIDENCE, approver="reviewer")
    assert ledger.start(pair=2, arm="B", attempt_id="2B", directory=DIRECTORY[2]).position == 3
    assert [(e.position, e.pair, e.arm, e.outcome) for e in Ledger.open(ledger.path).entries()] == [
        (1, 1, "A", "completed"),
        (2, 1, "B", "failed"),
        (3, 2, "B", None),
    ]


def test_nothing_runs_twice_beyond_its_authorization_or_after_a_stop(tmp_path: Path) -> None:
    ledger = new_ledger(tmp_path, authorized=3)
    run_pilot(ledger)
    with pytest.raises(ExecutionRefused, match="started before: nothing runs twice"):
        ledger.start(pair=1, arm="A", attempt_id="1A-again", directory=DIRECTORY[1])
    ledger.approve_continuation(freeze_digest=FREEZE, pilot_evidence_digest=EVIDENCE, approver="reviewer")
    ledger.start(pair=2, arm="B", attempt_id="2B", directory=DIRECTORY[2])  # never finished: it still counts
    with pytest.raises(ExecutionRefused, match="all 3 authorized executions have started"):
        ledger.start(pair=2, arm="A", attempt_id="2A", directory=DIRECTORY[2])
    (tmp_path / "stopped").mkdir()
    stopped = new_ledger(tmp_path / "stopped")
    stopped.stop("daily credit limit reached")
    with pytest.raises(ExecutionRefused, match="spending stopped: daily credit limit reached"):
        stopped.start(pair=1, arm="A", attempt_id="1A", directory=DIRECTORY[1])


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
        ledger.start(pair=1, arm=arm, attempt_id=f"runner-{arm}", directory=DIRECTORY[1])
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


def test_a_pair_runs_from_one_directory(tmp_path: Path) -> None:
    """Two directories of pair 1 (prepared again): once one holds an
    execution of the pair, the other's arm is refused, and the pair's
    other arm still runs from the first."""
    ledger = new_ledger(tmp_path)
    ledger.start(pair=1, arm="A", attempt_id="first/A", directory="first")
    with pytest.raises(ExecutionRefused, match="pair 1 arm A started from first, not second: a pair runs from one"):
        ledger.start(pair=1, arm="B", attempt_id="second/B", directory="second")
    ledger.start(pair=1, arm="B", attempt_id="first/B", directory="first")
    assert [(e.arm, e.directory) for e in Ledger.open(ledger.path).entries()] == [("A", "first"), ("B", "first")]


def _race_directories(
    path: str,
    arm: str,
    ready: multiprocessing.synchronize.Barrier,
    results: multiprocessing.Queue,  # type: ignore[type-arg]
) -> None:
    ledger = Ledger.open(Path(path))
    ready.wait()
    try:
        ledger.start(pair=1, arm=arm, attempt_id=f"dir-{arm}/{arm}", directory=f"dir-{arm}")
    except ExecutionRefused as refused:
        results.put(f"refused: {refused}")
    else:
        results.put("started")


def test_two_directories_racing_for_the_arms_of_one_pair_cannot_split_it(tmp_path: Path) -> None:
    """Arm A from one directory and arm B from another, released together:
    one starts, the other is refused in the same transaction."""
    context = multiprocessing.get_context("spawn")
    for attempt in range(3):
        ledger = Ledger.create(tmp_path / f"split-{attempt}.sqlite", freeze_digest=FREEZE, authorized_executions=18)
        ready, results = context.Barrier(2), context.Queue()
        args = [(str(ledger.path), arm, ready, results) for arm in ("A", "B")]
        runners = [context.Process(target=_race_directories, args=arg) for arg in args]
        for runner in runners:
            runner.start()
        outcomes = sorted(results.get(timeout=60) for _ in runners)
        for runner in runners:
            runner.join(timeout=60)
        assert outcomes[0].startswith("refused: pair 1 arm ") and "a pair runs from one directory" in outcomes[0]
        assert outcomes[1] == "started", outcomes
        assert len(ledger.entries()) == 1


def damage(path: Path, *statements: str) -> None:
    """Run ``statements`` on the ledger file at ``path`` from another connection."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in statements:
            db.execute(statement)
    finally:
        db.close()


def make_read_only(path: Path) -> None:
    """Mark the SQLite file ``path`` read-only in its header (the file
    format's write version above 2): SQLite then refuses every write, to
    root as well, while reads still work."""
    with path.open("r+b") as file:
        file.seek(18)
        file.write(bytes([3]))


@pytest.mark.parametrize(
    ("statements", "message"),
    [
        (("DROP TABLE stops",), "not an execution ledger, or a damaged one (no such table: stops)"),
        (("DELETE FROM ledger",), "ledger: holds 0 rows, not one"),
        (("UPDATE ledger SET authorized_executions = 'many'",), "field 'authorized_executions': not a non-negative"),
        (("DELETE FROM executions WHERE position = 1",), "position 2, not 1: an execution was deleted"),
        (("UPDATE executions SET pair = 'one'",), "executions[1]: Expected `int`, got `str`"),
    ],
    ids=["dropped-table", "deleted-ledger-row", "text-count", "deleted-execution", "text-pair"],
)
def test_a_damaged_ledger_is_bad_input_naming_its_file(
    tmp_path: Path, statements: tuple[str, ...], message: str
) -> None:
    ledger = new_ledger(tmp_path)
    run_pilot(ledger)
    ledger.close()
    damage(ledger.path, *statements)
    with pytest.raises(InputError) as raised:
        Ledger.open(ledger.path).start(pair=2, arm="B", attempt_id="2B", directory=DIRECTORY[2])
    assert str(raised.value).startswith(f"{ledger.path}"), raised.value
    assert message in str(raised.value)


def test_a_file_that_is_no_ledger_or_an_unknown_attempt_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "text.sqlite").write_text("not a database, though long enough to look like one" * 4)
    with pytest.raises(InputError, match=r"text\.sqlite: not an execution ledger, or a damaged one"):
        Ledger.open(tmp_path / "text.sqlite")
    ledger = new_ledger(tmp_path)
    with pytest.raises(InputError, match="executions: holds no start of attempt 1A: an execution was deleted"):
        ledger.finish("1A", "completed")


def test_a_finished_attempt_keeps_its_outcome(tmp_path: Path) -> None:
    ledger = new_ledger(tmp_path)
    ledger.start(pair=1, arm="A", attempt_id="1A", directory=DIRECTORY[1])
    assert ledger.finish("1A", "failed") is True
    assert ledger.finish("1A", "completed") is False
    assert [e.outcome for e in ledger.entries()] == ["failed"]


def test_a_read_only_ledger_cannot_be_written_and_says_so(tmp_path: Path) -> None:
    ledger = new_ledger(tmp_path)
    ledger.close()
    make_read_only(ledger.path)
    ledger = Ledger.open(ledger.path)  # reading it still works
    assert ledger.entries() == []
    with pytest.raises(
        OutputError, match=r"ledger.sqlite: the execution ledger cannot be used: read-only \(attempt to write a re"
    ):
        ledger.start(pair=1, arm="A", attempt_id="1A", directory=DIRECTORY[1])
    with pytest.raises(OutputError, match="cannot be used: read-only"):
        ledger.stop("budget")


def test_a_ledger_held_by_another_connection_beyond_the_busy_timeout_is_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_files, "BUSY_TIMEOUT_S", 0.1)  # the connection reads it there
    ledger = new_ledger(tmp_path)
    holder = sqlite3.connect(ledger.path, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(OutputError, match=r"ledger\.sqlite: the execution ledger cannot be used: busy"):
            ledger.start(pair=1, arm="A", attempt_id="1A", directory=DIRECTORY[1])
        with pytest.raises(OutputError, match=r"ledger\.sqlite: the execution ledger cannot be used: busy"):
            Ledger.open(ledger.path)
        holder.execute("ROLLBACK")
    finally:
        holder.close()
    assert ledger.start(pair=1, arm="A", attempt_id="1A", directory=DIRECTORY[1]).position == 1
