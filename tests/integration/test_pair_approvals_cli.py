"""``eceb pair authorize``, ``approve`` and ``stop`` through the installed
command line: a person's records, bound to the freeze, over a real SQLite
ledger; never created by a check passing."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.digests import digest_bytes
from eceb_worker.errors import ExecutionRefused
from eceb_worker.families.paired.journal import Attempt, AttemptStatus
from eceb_worker.io.paired.ledger import Ledger
from tests.support.paired_experiment import Bench, make_bench
from tests.support.paths import REPO

BILLING = "One pair bounds the execution count, not the charges. The adapter has no hard billing ceiling."


@pytest.fixture
def frozen(tmp_path: Path) -> Bench:
    bench = make_bench(tmp_path)
    done = bench.freeze()
    assert done.returncode == 0, done.stderr
    return bench


def valid(document: object, name: str) -> bool:
    schema = json.loads((REPO / "schema" / name).read_text(encoding="utf-8"))
    return not list(Draft202012Validator(schema).iter_errors(document))


def test_authorize_records_g3_bound_to_the_freeze_and_creates_the_ledger(frozen: Bench) -> None:
    exp = frozen.experiment
    done = frozen.eceb("authorize", exp, "--approver", "Ada Reviewer", "--executions", "2")
    assert done.returncode == 0, done.stderr
    assert BILLING in done.stdout
    record = json.loads((exp / "authorization.json").read_bytes())
    assert valid(record, "pair-authorization-v0.1.json")
    assert record["freeze_digest"] == digest_bytes((exp / "freeze.json").read_bytes())
    assert (record["authorized_executions"], record["approver"]) == (2, "Ada Reviewer")
    ledger = Ledger.open(exp / "ledger.sqlite")
    assert ledger.entries() == []
    ledger.start(pair=1, arm="A", attempt_id="a", directory="task-pair-01")
    ledger.start(pair=1, arm="B", attempt_id="b", directory="task-pair-01")
    with pytest.raises(ExecutionRefused, match="all 2 authorized executions"):
        ledger.start(pair=2, arm="B", attempt_id="c", directory="task-pair-02")
    ledger.close()

    again = frozen.eceb("authorize", exp, "--approver", "Someone Else")
    assert again.returncode == 9
    assert "already authorized" in again.stderr
    assert json.loads((exp / "authorization.json").read_bytes()) == record


def test_authorize_grants_the_frozen_count_by_default_and_never_more(frozen: Bench) -> None:
    exp = frozen.experiment
    more = frozen.eceb("authorize", exp, "--approver", "Ada", "--executions", "19")
    assert more.returncode == 3
    assert "the freeze allows from 1 to 18" in more.stderr
    assert not (exp / "authorization.json").exists() and not (exp / "ledger.sqlite").exists()
    done = frozen.eceb("authorize", exp, "--approver", "Ada")
    assert done.returncode == 0, done.stderr
    assert json.loads((exp / "authorization.json").read_bytes())["authorized_executions"] == 18


def test_authorize_refuses_a_changed_freeze_or_another_digest_than_the_one_reviewed(frozen: Bench) -> None:
    path = frozen.experiment / "freeze.json"
    original = path.read_bytes()
    path.write_bytes(original.replace(b'"authorized_executions":18', b'"authorized_executions": 17'))
    done = frozen.eceb("authorize", frozen.experiment, "--approver", "Ada")
    assert done.returncode == 3
    assert "the record was changed" in done.stderr
    assert not (frozen.experiment / "ledger.sqlite").exists()

    edited = original.replace(b'"authorized_executions":18', b'"authorized_executions":17')
    path.write_bytes(edited)  # still canonical: only the digest the person reviewed tells it apart
    reviewed = digest_bytes(original)
    done = frozen.eceb("authorize", frozen.experiment, "--approver", "Ada", "--freeze-digest", reviewed)
    assert done.returncode == 9
    assert f"not the freeze {reviewed} being authorized" in done.stderr
    assert not (frozen.experiment / "ledger.sqlite").exists()
    path.write_bytes(original)
    done = frozen.eceb("authorize", frozen.experiment, "--approver", "Ada", "--freeze-digest", reviewed)
    assert done.returncode == 0, done.stderr


def start_attempt(pair: Path, arm: str, ledger: Ledger) -> str:
    """Stand in for eceb pair run up to the commit point of ``arm``'s attempt."""
    attempt_id = f"{pair.name}/{arm}"
    ledger.start(pair=1, arm=arm, attempt_id=attempt_id, directory=pair.name)
    (pair / "attempts" / arm).mkdir(parents=True)
    (pair / "attempts" / arm / "attempt-start.json").write_text("{}", encoding="utf-8")
    return attempt_id


def finish_attempt(pair: Path, arm: str, ledger: Ledger, *, status: AttemptStatus) -> bytes:
    """Stand in for eceb pair run completing ``arm``'s journal: its attempt.json."""
    attempt_id = f"{pair.name}/{arm}"
    record = Attempt(
        schema="symgliph.eceb/pair-attempt-v0.1",
        attempt_id=attempt_id,
        synthetic=True,
        status=status,
        transport=None,
        problems=("the provider exited with 1",) if status is AttemptStatus.FAILED else (),
        exit_code=1 if status is AttemptStatus.FAILED else 0,
        signal=None,
        usage=None,
        partial_usage=None,
        answer=None,
        fingerprint_before="0" * 64,
        fingerprint_after="0" * 64,
        files=(),
        started_at="2026-12-01T10:00:00Z",
        ended_at="2026-12-01T10:01:00Z",
    )
    data = canonical_json(record)
    (pair / "attempts" / arm / "attempt.json").write_bytes(data)
    ledger.finish(attempt_id, status.value)
    return data


def test_approve_waits_for_the_pilot_and_binds_its_evidence(frozen: Bench) -> None:
    exp = frozen.experiment
    unauthorized = frozen.eceb("approve", exp, "--approver", "Ada")
    assert unauthorized.returncode == 9
    assert "not authorized" in unauthorized.stderr
    assert frozen.eceb("authorize", exp, "--approver", "Ada").returncode == 0
    not_started = frozen.eceb("approve", exp, "--approver", "Ada")
    assert not_started.returncode == 9
    assert "the pilot has not started" in not_started.stderr
    prepared = frozen.eceb("prepare", exp)
    assert prepared.returncode == 0, prepared.stderr
    (pair,) = exp.glob("task-pair-01-*")

    ledger = Ledger.open(exp / "ledger.sqlite")
    start_attempt(pair, "A", ledger)
    first = finish_attempt(pair, "A", ledger, status=AttemptStatus.FAILED)
    start_attempt(pair, "B", ledger)
    incomplete = frozen.eceb("approve", exp, "--approver", "Ada")
    assert incomplete.returncode == 9
    assert "the pilot has not finished" in incomplete.stderr and "attempts/B/attempt.json" in incomplete.stderr
    assert not (exp / "continuation.json").exists()
    second = finish_attempt(pair, "B", ledger, status=AttemptStatus.COMPLETED)
    ledger.close()

    done = frozen.eceb("approve", exp, "--approver", "Grace Approver")
    assert done.returncode == 0, done.stderr
    record = json.loads((exp / "continuation.json").read_bytes())
    assert valid(record, "pair-continuation-v0.1.json")
    manifest = digest_bytes((pair / "manifest.json").read_bytes())
    expected = digest_bytes(canonical_json([manifest, digest_bytes(first), digest_bytes(second)]))
    assert record["pilot_evidence_digest"] == expected
    assert (record["pilot_pair"], record["approver"]) == (pair.name, "Grace Approver")
    assert record["freeze_digest"] == digest_bytes((exp / "freeze.json").read_bytes())
    assert f"pilot evidence digest: {expected}" in done.stdout

    ledger = Ledger.open(exp / "ledger.sqlite")
    next_pair = ledger.start(pair=2, arm="B", attempt_id="next", directory="task-pair-02")
    assert next_pair.position == 3  # continuation recorded
    ledger.close()
    twice = frozen.eceb("approve", exp, "--approver", "Grace Approver")
    assert twice.returncode == 9
    assert "approved once" in twice.stderr


def test_stop_records_a_spending_stop_in_the_ledger(frozen: Bench) -> None:
    exp = frozen.experiment
    none = frozen.eceb("stop", exp, "--reason", "budget")
    assert none.returncode == 9
    assert "no ledger" in none.stderr
    assert frozen.eceb("authorize", exp, "--approver", "Ada").returncode == 0
    done = frozen.eceb("stop", exp, "--reason", "the pilot cost more than expected")
    assert done.returncode == 0, done.stderr
    assert "No execution starts after this stop." in done.stdout
    ledger = Ledger.open(exp / "ledger.sqlite")
    with pytest.raises(ExecutionRefused, match="spending stopped: the pilot cost more than expected"):
        ledger.start(pair=1, arm="A", attempt_id="a", directory="task-pair-01")
    ledger.close()


def test_authorize_is_refused_once_an_attempt_may_have_started(frozen: Bench) -> None:
    """A removed ledger and authorization are not authorized again while
    any attempt entry exists: the pilot never runs twice."""
    exp = frozen.experiment
    prepared = frozen.eceb("prepare", exp)
    assert prepared.returncode == 0, prepared.stderr
    (pair,) = exp.glob("task-pair-01-*")
    for entry in (".A.staging-0badc0de", "B"):  # a staging directory, any attempts/ entry
        (pair / "attempts" / entry).mkdir(parents=True)
        refused = frozen.eceb("authorize", exp, "--approver", "Ada")
        assert refused.returncode == 9, refused.stderr
        assert f"holds {entry}" in refused.stderr and "nothing is frozen or authorized here again" in refused.stderr
        assert not (exp / "ledger.sqlite").exists() and not (exp / "authorization.json").exists()
        shutil.rmtree(pair / "attempts")
    assert frozen.eceb("authorize", exp, "--approver", "Ada").returncode == 0
    ledger = Ledger.open(exp / "ledger.sqlite")
    start_attempt(pair, "A", ledger)
    ledger.close()
    (exp / "ledger.sqlite").unlink()
    (exp / "authorization.json").unlink()
    again = frozen.eceb("authorize", exp, "--approver", "Ada")
    assert again.returncode == 9
    assert "holds attempt-start.json" in again.stderr
    assert not (exp / "ledger.sqlite").exists() and not (exp / "authorization.json").exists()


@pytest.mark.parametrize("approver", ["", "   "], ids=["empty", "blank"])
def test_a_blank_approver_is_a_usage_error(frozen: Bench, approver: str) -> None:
    exp = frozen.experiment
    done = frozen.eceb("authorize", exp, "--approver", approver)
    assert done.returncode == 2 and "an authorization needs an approver" in done.stderr
    assert not (exp / "ledger.sqlite").exists() and not (exp / "authorization.json").exists()
    assert frozen.eceb("authorize", exp, "--approver", "Ada").returncode == 0
    done = frozen.eceb("approve", exp, "--approver", approver)
    assert done.returncode == 2 and "an approval needs an approver" in done.stderr
    assert not (exp / "continuation.json").exists()


def test_approve_records_an_outcome_the_ledger_never_recorded(frozen: Bench) -> None:
    """A runner that stopped after attempt.json and before the ledger's
    outcome: approve records the outcome from attempt.json, then approves."""
    exp = frozen.experiment
    assert frozen.eceb("authorize", exp, "--approver", "Ada").returncode == 0
    assert frozen.eceb("prepare", exp).returncode == 0
    (pair,) = exp.glob("task-pair-01-*")
    ledger = Ledger.open(exp / "ledger.sqlite")
    for arm in ("A", "B"):
        start_attempt(pair, arm, ledger)
        finish_attempt(pair, arm, ledger, status=AttemptStatus.COMPLETED)
    ledger.close()
    db = sqlite3.connect(exp / "ledger.sqlite", isolation_level=None)
    db.execute("UPDATE executions SET outcome = NULL WHERE arm = 'B'")
    db.close()
    status = frozen.eceb("status", exp)
    assert "the ledger says no outcome (the runner stopped before recording it)" in status.stdout
    done = frozen.eceb("approve", exp, "--approver", "Grace")
    assert done.returncode == 0, done.stderr
    assert f"recorded the outcome of attempt {pair.name}/B from its attempt.json: completed" in done.stdout
    assert [e.outcome for e in Ledger.open(exp / "ledger.sqlite").entries()] == ["completed", "completed"]
    assert "inconsistencies: none" in frozen.eceb("status", exp).stdout


@pytest.mark.parametrize(
    ("damage", "code", "message"),
    [
        ("DROP TABLE stops", 3, "not an execution ledger, or a damaged one (no such table: stops)"),
        ("DELETE FROM ledger", 3, "ledger.sqlite, ledger: holds 0 rows, not one"),
        ("UPDATE ledger SET authorized_executions = 'x'", 3, "field 'authorized_executions'"),
        ("read-only", 6, "ledger.sqlite: the execution ledger cannot be used: read-only"),
    ],
    ids=["dropped-table", "deleted-ledger-row", "text-count", "read-only"],
)
def test_a_damaged_or_read_only_ledger_is_a_documented_error(
    frozen: Bench, damage: str, code: int, message: str
) -> None:
    exp = frozen.experiment
    assert frozen.eceb("authorize", exp, "--approver", "Ada").returncode == 0
    path = exp / "ledger.sqlite"
    if damage == "read-only":  # the file format's write version above 2: SQLite refuses writes, to root too
        with path.open("r+b") as file:
            file.seek(18)
            file.write(bytes([3]))
    else:
        db = sqlite3.connect(path, isolation_level=None)
        db.execute(damage)
        db.close()
    done = frozen.eceb("stop", exp, "--reason", "budget")
    assert done.returncode == code, done.stderr
    assert message in done.stderr and "internal error" not in done.stderr
