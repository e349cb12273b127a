"""``eceb pair run`` and ``eceb pair status`` through the installed command
line, over the example's fixture repository (real git, real SQLite), with
the fake codex as the only substitute: complete journals, failed and
malformed arms, partial output, mutations, wrong commands, cheaper wrong
answers, changed schemas and every refusal."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from eceb_worker.core.canonical import canonical_json
from eceb_worker.errors import InputError
from eceb_worker.families.paired.journal import AttemptStatus
from eceb_worker.families.paired.transport import TransportStatus, read_transport
from eceb_worker.io.paired.provider import DeferredSignals
from eceb_worker.pipeline.paired.attempt import RunnerLog, run_attempt
from eceb_worker.pipeline.paired.checks import open_pair
from tests.support.pair_experiment import PairExperiment, check_journal

NOTICE = "One pair bounds the execution count, not the charges. The adapter has no hard billing ceiling."


@pytest.fixture
def experiment(tmp_path: Path) -> PairExperiment:
    return PairExperiment(tmp_path)


def test_the_pilot_pair_runs_with_complete_journals(experiment: PairExperiment) -> None:
    pair = experiment.ready()
    done = experiment.run(pair)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == NOTICE
    assert done.stdout.splitlines()[-1] == "pair 1: arm A completed; arm B completed"
    assert [(call["arm"], call["scenario"]) for call in experiment.invocations()] == [("A", "ok"), ("B", "ok")]
    for arm in ("A", "B"):
        attempt = pair / "attempts" / arm
        record = check_journal(attempt)
        assert (record.status, record.transport, record.problems) == (
            AttemptStatus.COMPLETED,
            TransportStatus.COMPLETED,
            (),
        )
        assert (record.exit_code, record.signal, record.partial_usage) == (0, None, None)
        assert record.usage is not None and record.usage.input_tokens > 0
        assert record.synthetic is True and record.fingerprint_after == record.fingerprint_before
        transport = read_transport((attempt / "provider.jsonl").read_bytes())
        assert transport.thread_id is not None and transport.thread_id.startswith("synthetic-")
        assert "synthetic" in (attempt / "provider.stderr").read_text()
        runner = (attempt / "runner.stdout").read_text()
        assert runner.splitlines()[0].startswith(f"pair 1 arm {arm}: attempt {pair.name}/{arm} started")
        assert f"pair 1 arm {arm}: completed (synthetic)" in runner and runner in done.stdout
        assert f"pair 1 arm {arm}: usage input {record.usage.input_tokens} " in runner
    assert not list((pair / "attempts").glob(".*")), "no staging directory is left"
    assert [(e.position, e.pair, e.arm, e.outcome) for e in experiment.ledger()] == [
        (1, 1, "A", "completed"),
        (2, 1, "B", "completed"),
    ]
    status = experiment.status()
    assert (status["remaining"], status["inconsistencies"], status["continuation"]) == (16, [], "not approved")
    assert [(arm["state"], arm["synthetic"]) for arm in status["pairs"][0]["arms"]] == [("completed", True)] * 2
    again = experiment.run(pair)
    assert again.returncode == 9 and "every arm of pair 1 has started: nothing runs twice" in again.stderr
    assert len(experiment.invocations()) == 2


@pytest.mark.parametrize("scenario", ["fail", "exit-error"])
def test_a_failed_arm_is_kept_and_the_other_arm_still_runs(experiment: PairExperiment, scenario: str) -> None:
    pair = experiment.ready()
    done = experiment.run(pair, scenario=f"A={scenario}")
    assert done.returncode == 1, done.stderr
    failed = check_journal(pair / "attempts" / "A")
    assert (failed.status, failed.exit_code, failed.usage) == (AttemptStatus.FAILED, 1, None)
    assert "the provider exited with 1" in failed.problems
    assert check_journal(pair / "attempts" / "B").status is AttemptStatus.COMPLETED
    assert "pair 1 arm A: the provider exited with 1" in (pair / "attempts" / "A" / "runner.stderr").read_text()
    assert [e.outcome for e in experiment.ledger()] == ["failed", "completed"]


@pytest.mark.parametrize(
    ("scenario", "problem", "usage"),
    [
        ("unknown-event", "provider.jsonl line 4: unknown event type 'model.rerouted'", "partial"),
        ("truncated", "provider.jsonl line 5: not a JSON value", None),
        ("off-schema", "answer /: Additional properties are not allowed ('unexpected' was unexpected)", "total"),
        ("not-json", "answer: not exactly one JSON value", "total"),
    ],
)
def test_malformed_output_is_malformed_naming_the_problem(
    experiment: PairExperiment, scenario: str, problem: str, usage: str | None
) -> None:
    pair = experiment.ready()
    done = experiment.run(pair, scenario=f"B={scenario}")
    assert done.returncode == 1, done.stderr
    record = check_journal(pair / "attempts" / "B")
    assert record.status is AttemptStatus.MALFORMED
    assert any(shown.startswith(problem) for shown in record.problems), record.problems
    # a completed turn's usage is a total even when its answer is wrong; a malformed stream's never is
    assert (record.usage is not None, record.partial_usage is not None) == (usage == "total", usage == "partial")
    assert check_journal(pair / "attempts" / "A").status is AttemptStatus.COMPLETED


def test_partial_output_never_has_a_usage(experiment: PairExperiment) -> None:
    pair = experiment.ready()
    done = experiment.run(pair, scenario="A=partial")
    assert done.returncode == 1
    record = check_journal(pair / "attempts" / "A")
    assert (record.status, record.transport, record.usage) == (AttemptStatus.PARTIAL, TransportStatus.PARTIAL, None)
    assert "provider.jsonl the stream ended before its turn completed" in record.problems
    assert record.answer is None  # a message of an open turn is no answer


def test_a_cheaper_wrong_answer_completes_with_its_usage(experiment: PairExperiment) -> None:
    pair = experiment.ready()
    assert experiment.run(pair, scenario="B=cheap-wrong").returncode == 0
    right, cheap = (check_journal(pair / "attempts" / arm) for arm in ("A", "B"))
    assert right.status is cheap.status is AttemptStatus.COMPLETED  # judging it is the summary's
    assert right.usage is not None and cheap.usage is not None
    assert cheap.usage.input_tokens < right.usage.input_tokens and cheap.answer != right.answer


def test_a_mutating_agent_stops_the_pair_and_the_next_run_is_refused_while_the_tree_is_dirty(tmp_path: Path) -> None:
    experiment = PairExperiment(tmp_path, {"execution": {"spending_stop": {"manual": True, "on_outcomes": []}}})
    pair = experiment.ready()
    done = experiment.run(pair, scenario="A=mutate")
    assert done.returncode == 1
    record = check_journal(pair / "attempts" / "A")
    assert record.status is AttemptStatus.MUTATED and record.fingerprint_after != record.fingerprint_before
    assert record.usage is not None  # the turn completed: its usage is kept
    assert not (pair / "attempts" / "B").exists() and len(experiment.invocations()) == 1
    assert "no further arm starts on a changed repository" in done.stderr
    dirty = experiment.run(pair)
    assert dirty.returncode == 9 and "is not as frozen (not clean)" in dirty.stderr
    assert len(experiment.invocations()) == 1
    (experiment.repo / "fake-codex-was-here.txt").unlink()  # the repository as frozen again: the other arm may run
    again = experiment.run(pair)
    assert again.returncode == 1 and "pair 1: arm A mutated; arm B completed" in again.stdout
    assert experiment.status()["inconsistencies"] == []


def test_an_outcome_the_freeze_lists_records_a_spending_stop(experiment: PairExperiment) -> None:
    pair = experiment.ready()  # the example's freeze stops spending on a mutated attempt
    done = experiment.run(pair, scenario="A=mutate")
    assert done.returncode == 1 and "spending stopped: attempt" in done.stderr
    (experiment.repo / "fake-codex-was-here.txt").unlink()
    stopped = experiment.run(pair)
    assert stopped.returncode == 9 and "refused: spending stopped: attempt" in stopped.stderr
    assert len(experiment.invocations()) == 1
    status = experiment.status()
    assert len(status["spending_stops"]) == 1 and status["inconsistencies"] == []
    assert [arm["state"] for arm in status["pairs"][0]["arms"]] == ["mutated", "not started"]


def test_a_schema_changed_after_prepare_spawns_nothing(experiment: PairExperiment) -> None:
    pair = experiment.ready()
    schema = pair / "answer.schema.json"
    schema.write_bytes(schema.read_bytes().replace(b'"claims"', b'"claims_changed"', 1))
    done = experiment.run(pair)
    assert done.returncode == 3
    assert f"error: {schema}: changed since the pair was prepared" in done.stderr
    assert experiment.invocations() == [] and experiment.ledger() == []
    assert not (pair / "attempts").exists()


def test_the_adapter_checks_the_schema_bytes_again_before_spawning(experiment: PairExperiment) -> None:
    """The schema changed after the run's first checks: the adapter's own check refuses."""
    pair = experiment.ready()
    opened = open_pair(pair)
    try:
        schema = pair / "answer.schema.json"
        schema.write_bytes(schema.read_bytes() + b"\n")
        with DeferredSignals() as signals, pytest.raises(InputError) as raised:
            run_attempt(opened, 0, signals, RunnerLog(print, print))
    finally:
        opened.ledger.close()
    assert raised.value.problems[0].file == str(schema)
    assert "nothing was spawned" in raised.value.problems[0].message
    assert experiment.invocations() == [] and experiment.ledger() == []
    assert not (pair / "attempts").exists()  # the staging directory, and the attempts directory it needed, are gone


def _spending_stop(experiment: PairExperiment) -> None:
    experiment.eceb("pair", "stop", str(experiment.dir), "--reason", "budget review", check=True)


def _provider_changed(experiment: PairExperiment) -> None:
    codex = experiment.bin / "codex"
    codex.write_bytes(codex.read_bytes() + b"# changed\n")


def _provider_not_executable(experiment: PairExperiment) -> None:
    (experiment.bin / "codex").chmod(0o644)


@pytest.mark.parametrize(
    ("authorized", "change", "message"),
    [
        (False, None, "refused: not authorized"),
        (True, _spending_stop, "refused: spending stopped: budget review"),
        (True, _provider_changed, "is not the frozen one"),
        (True, _provider_not_executable, "is not executable"),
    ],
    ids=["not-authorized", "spending-stop", "provider-changed", "provider-not-executable"],
)
def test_a_refused_run_spawns_nothing(
    experiment: PairExperiment, authorized: bool, change: object, message: str
) -> None:
    experiment.freeze()
    if authorized:
        experiment.authorize()
    pair = experiment.prepare()
    if callable(change):
        change(experiment)
    done = experiment.run(pair)
    assert done.returncode == 9, done.stderr
    assert message in done.stderr and done.stdout.splitlines()[0] == NOTICE
    assert experiment.invocations() == []
    assert not (pair / "attempts").exists()
    if authorized:
        assert experiment.ledger() == []


def test_pairs_run_in_order_and_after_the_pilot_only_once_approved(experiment: PairExperiment) -> None:
    pilot = experiment.ready()
    early = experiment.prepare(2)
    out_of_order = experiment.run(early)
    assert out_of_order.returncode == 9 and "pair 2 is not next in the schedule" in out_of_order.stderr
    assert experiment.run(pilot).returncode == 0
    unapproved = experiment.run(early)
    assert unapproved.returncode == 9 and "continuation needs an approval" in unapproved.stderr
    assert "eceb pair approve" in unapproved.stderr
    assert len(experiment.invocations()) == 2 and not (early / "attempts").exists()  # a refusal leaves nothing
    experiment.eceb("pair", "approve", str(experiment.dir), "--approver", "a reviewer", check=True)
    assert experiment.status()["continuation"] == "approved"
    done = experiment.run(early)
    assert done.returncode == 0, done.stderr
    assert [call["arm"] for call in experiment.invocations()] == ["A", "B", "B", "A"]  # discovery runs B/A
    for arm in ("A", "B"):
        assert check_journal(early / "attempts" / arm).status is AttemptStatus.COMPLETED


def test_a_wrong_verification_command_is_kept_as_evidence(experiment: PairExperiment) -> None:
    if shutil.which("go") is None:
        pytest.fail("the verification task runs the declared Go test: install Go (Debian package golang-go)")
    assert experiment.run(experiment.ready()).returncode == 0
    experiment.eceb("pair", "approve", str(experiment.dir), "--approver", "a reviewer", check=True)
    assert experiment.run(experiment.prepare()).returncode == 0
    verification = experiment.prepare()
    assert "verification" in verification.name
    done = experiment.run(verification, scenario="A=ok,B=wrong-command")
    assert done.returncode == 0, done.stderr
    frozen, wrong = (
        read_transport((verification / "attempts" / arm / "provider.jsonl").read_bytes()).commands for arm in ("A", "B")
    )
    assert frozen[0].command == "bash -lc 'go test -count=1 ./...'" and frozen[0].exit_code == 0
    assert wrong[0].command == "bash -lc 'go test ./...'" and "ok" in wrong[0].aggregated_output
    record = check_journal(verification / "attempts" / "B")
    assert record.status is AttemptStatus.COMPLETED  # the wrong command is evidence for the summary to judge
    answer = json.loads(read_transport((verification / "attempts" / "B" / "provider.jsonl").read_bytes()).answer or "")
    assert answer["command"] == "go test ./..."


def test_a_provider_past_its_timeout_is_stopped_and_timed_out(tmp_path: Path) -> None:
    experiment = PairExperiment(tmp_path, {"provider": {"timeout_s": 1}})
    pair = experiment.ready()
    done = experiment.run(pair, scenario="A=hang")
    assert done.returncode == 1
    record = check_journal(pair / "attempts" / "A")
    assert (record.status, record.exit_code, record.signal) == (AttemptStatus.TIMED_OUT, None, 15)
    assert "the provider ran past the timeout of 1 s and was stopped" in record.problems
    assert record.usage is None
    assert check_journal(pair / "attempts" / "B").status is AttemptStatus.COMPLETED


def test_status_of_a_directory_that_is_no_experiment_is_bad_input(tmp_path: Path) -> None:
    done = PairExperiment(tmp_path).eceb("pair", "status", str(tmp_path))
    assert done.returncode == 3 and "not an experiment directory: no freeze.json" in done.stderr


def test_status_reports_what_the_journals_and_the_ledger_disagree_on(experiment: PairExperiment) -> None:
    pair = experiment.ready()
    assert experiment.run(pair).returncode == 0
    with sqlite3.connect(experiment.dir / "ledger.sqlite") as db:
        db.execute("UPDATE executions SET outcome = 'failed' WHERE arm = 'A'")
    db.close()
    (pair / "attempts" / "A" / "runner.stdout").write_text("rewritten\n")
    shutil.rmtree(pair / "attempts" / "B")
    (pair / "attempts" / "B").mkdir()
    (pair / "attempts" / "B" / "attempt-start.json").write_text("{}")
    status = experiment.status()
    assert [arm["state"] for arm in status["pairs"][0]["arms"]] == ["completed", "incomplete journal"]
    shown = status["inconsistencies"]
    assert any("the ledger says failed" in item and item.endswith("attempt.json says completed") for item in shown)
    assert any("the ledger says completed, no valid attempt.json" in item for item in shown), shown
    assert f"{pair / 'attempts' / 'A' / 'runner.stdout'}: changed since attempt.json bound it" in shown
    text = experiment.eceb("pair", "status", str(experiment.dir), check=True).stdout
    assert "inconsistencies: 3" in text


def test_usage_is_labelled_synthetic_only_when_the_providers_stream_says_so(tmp_path: Path) -> None:
    """The synthetic label of an attempt comes from its stream (the
    substitute provider's thread id), not from the benchmark: a provider
    whose stream does not label itself has its usage recorded unlabelled,
    while the experiment's rates stay labelled synthetic."""
    experiment = PairExperiment(tmp_path)
    codex = experiment.bin / "codex"
    wrapper = codex.read_text()
    codex.write_text(wrapper.replace(' "$@"\n', ' "$@" | sed "s/\\"synthetic-/\\"0199a213-/"\n'))
    pair = experiment.ready()
    assert experiment.run(pair).returncode == 0
    for arm in ("A", "B"):
        attempt = check_journal(pair / "attempts" / arm)
        assert attempt.status is AttemptStatus.COMPLETED and attempt.usage is not None
        assert attempt.synthetic is False
    status = experiment.status()
    assert status["synthetic"] is True  # the example's rates
    assert [arm["synthetic"] for arm in status["pairs"][0]["arms"]] == [False, False]


def test_status_says_when_an_arm_cannot_start_for_want_of_authorized_executions(tmp_path: Path) -> None:
    experiment = PairExperiment(tmp_path)
    pair = experiment.ready(executions=1)
    done = experiment.run(pair)
    assert done.returncode == 1 and "all 1 authorized executions have started" in done.stdout + done.stderr
    text = experiment.eceb("pair", "status", str(experiment.dir), check=True).stdout
    assert "  arm B: not started (no authorized execution remains: it cannot start)" in text
    assert "executions: 1 started of 1 authorized, 0 remaining" in text


def test_status_names_a_pilot_journal_changed_after_its_approval(experiment: PairExperiment) -> None:
    pilot = experiment.ready()
    assert experiment.run(pilot).returncode == 0
    experiment.eceb("pair", "approve", str(experiment.dir), "--approver", "a reviewer", check=True)
    assert experiment.status()["inconsistencies"] == []
    record = pilot / "attempts" / "A" / "attempt.json"
    document = json.loads(record.read_bytes())
    document["problems"] = ["rewritten after the approval"]
    record.write_bytes(canonical_json(document))
    shown = experiment.status()["inconsistencies"]
    assert any("the pilot's evidence changed since it was approved" in item for item in shown), shown


def test_a_pair_after_the_pilot_needs_the_approval_record_and_the_evidence_it_approved(
    experiment: PairExperiment,
) -> None:
    """An approval row written into the ledger by hand is not an approval:
    continuation.json must exist, bind the freeze, and still match the
    pilot's evidence on disk."""
    pilot = experiment.ready()
    assert experiment.run(pilot).returncode == 0
    second = experiment.prepare(2)
    with sqlite3.connect(experiment.dir / "ledger.sqlite") as db:
        (freeze,) = db.execute("SELECT freeze_digest FROM ledger").fetchone()
        db.execute(
            "INSERT INTO approvals (freeze_digest, pilot_evidence_digest, approver) VALUES (?, ?, ?)",
            (freeze, "0" * 64, "nobody"),
        )
    db.close()
    forged = experiment.run(second)
    assert forged.returncode == 9 and "continuation.json: missing" in forged.stderr, forged.stderr
    with sqlite3.connect(experiment.dir / "ledger.sqlite") as db:
        db.execute("DELETE FROM approvals")
    db.close()
    experiment.eceb("pair", "approve", str(experiment.dir), "--approver", "a reviewer", check=True)
    record = pilot / "attempts" / "B" / "attempt.json"
    document = json.loads(record.read_bytes())
    document["problems"] = ["rewritten after the approval"]
    record.write_bytes(canonical_json(document))
    changed = experiment.run(second)
    assert changed.returncode == 9 and "the pilot's evidence changed since it was approved" in changed.stderr
    assert len(experiment.invocations()) == 2
