"""``eceb pair run`` interrupted and raced, through the installed command
line with the fake codex: SIGINT and SIGTERM cancel the running attempt
and complete its journal; a SIGKILLed runner leaves an incomplete journal
that ``status`` shows and ``run`` never restarts; two runners racing for
the last authorized execution start it once."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from eceb_worker.families.paired.journal import JOURNAL_ORDER, AttemptStatus
from tests.support.pair_experiment import PairExperiment, check_journal, fake_processes, wait_for


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_cancels_the_running_attempt(tmp_path: Path, signum: int, code: int) -> None:
    experiment = PairExperiment(tmp_path)
    pair = experiment.ready()
    runner = experiment.spawn("pair", "run", str(pair), scenario="A=hang")
    try:
        wait_for(lambda: len(experiment.invocations()) == 1, what="the provider to start")
        wait_for(lambda: fake_processes(str(pair)) != [], what="the provider's process")
        runner.send_signal(signum)
        stdout, stderr = runner.communicate(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == code, stderr
    assert fake_processes(str(pair)) == [], "the provider's process group is gone"
    record = check_journal(pair / "attempts" / "A")
    assert (record.status, record.exit_code, record.signal) == (AttemptStatus.CANCELLED, None, signal.SIGTERM)
    assert f"the runner received {signal.Signals(signum).name}: the provider was stopped" in record.problems
    assert record.usage is None
    assert not (pair / "attempts" / "B").exists() and len(experiment.invocations()) == 1
    assert "no further arm started" in stderr and "pair 1: arm A cancelled; arm B not started" in stdout
    assert [(e.arm, e.outcome) for e in experiment.ledger()] == [("A", "cancelled")]
    assert experiment.status()["inconsistencies"] == []


def test_a_killed_runner_leaves_an_incomplete_journal_never_restarted(tmp_path: Path) -> None:
    experiment = PairExperiment(tmp_path)
    pair = experiment.ready()
    runner = experiment.spawn("pair", "run", str(pair), scenario="A=slow-ok", sleep=1)
    try:
        wait_for(lambda: len(experiment.invocations()) == 1, what="the provider to start")
        runner.kill()
        runner.communicate(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
    # the provider runs in its own session, but the kernel stops it when its runner dies
    wait_for(lambda: fake_processes(str(pair)) == [], timeout_s=5, what="the provider to be stopped with its runner")
    attempt = pair / "attempts" / "A"
    assert sorted(p.name for p in attempt.iterdir()) == sorted(JOURNAL_ORDER[:9])
    status = experiment.status()
    arm = status["pairs"][0]["arms"][0]
    assert (arm["state"], arm["usage"], arm["partial_usage"]) == ("incomplete journal", None, None)
    assert (status["executions"][0]["outcome"], status["remaining"]) == (None, 17)
    text = experiment.eceb("pair", "status", str(experiment.dir), check=True).stdout
    assert "  arm A: incomplete journal" in text
    done = experiment.run(pair)
    assert done.returncode == 1, done.stderr
    assert "pair 1 arm A: started before, never run again" in done.stdout
    assert "pair 1: arm A incomplete journal; arm B completed" in done.stdout
    assert [call["arm"] for call in experiment.invocations()] == ["A", "B"]
    assert not (attempt / "attempt.json").exists()
    assert check_journal(pair / "attempts" / "B").status is AttemptStatus.COMPLETED
    assert [(e.arm, e.outcome) for e in experiment.ledger()] == [("A", None), ("B", "completed")]
    assert experiment.run(pair).returncode == 9


@pytest.mark.parametrize("same_directory", [True, False], ids=["same-directory", "two-directories"])
def test_two_runners_racing_for_the_last_execution_start_it_once(tmp_path: Path, same_directory: bool) -> None:
    experiment = PairExperiment(tmp_path)
    first = experiment.ready(executions=1)
    second = first if same_directory else experiment.prepare(1, again=True)
    runners = [experiment.spawn("pair", "run", str(pair)) for pair in (first, second)]
    results = [(runner, *runner.communicate(timeout=60)) for runner in runners]
    codes = sorted(runner.returncode for runner, _, _ in results)
    assert codes == [1, 9], results
    loser = next(err for runner, _, err in results if runner.returncode == 9)
    assert "refused:" in loser
    winner = next(err for runner, _, err in results if runner.returncode == 1)
    assert "no further arm starts: refused: all 1 authorized executions have started" in winner
    assert len(experiment.invocations()) == 1
    (entry,) = experiment.ledger()
    assert (entry.position, entry.arm, entry.outcome) == (1, "A", "completed")
    attempts = [pair / "attempts" for pair in {first, second}]
    started = [directory / "A" for directory in attempts if (directory / "A").exists()]
    assert len(started) == 1 and check_journal(started[0]).status is AttemptStatus.COMPLETED
    for directory in attempts:
        assert not (directory / "B").exists()
        assert not directory.exists() or not list(directory.glob(".*")), "no staging directory is left"


def test_a_complete_stream_in_an_incomplete_journal_is_never_a_total(tmp_path: Path) -> None:
    """A journal that lost its attempt.json (the runner died between the
    provider's end and the record) keeps its stream's usage as partial only."""
    experiment = PairExperiment(tmp_path)
    pair = experiment.ready()
    assert experiment.run(pair).returncode == 0
    (pair / "attempts" / "A" / "attempt.json").unlink()
    arm = experiment.status()["pairs"][0]["arms"][0]
    assert (arm["state"], arm["usage"], arm["synthetic"]) == ("incomplete journal", None, True)
    assert arm["partial_usage"]["input_tokens"] > 0
    text = experiment.eceb("pair", "status", str(experiment.dir), check=True).stdout
    assert "  arm A: incomplete journal (synthetic)" in text and "partial usage (never a total): input" in text


def test_a_pair_killed_mid_run_is_in_every_metrics_coverage(tmp_path: Path) -> None:
    """``kill -9`` of the runner during pair 2 (discovery, B first): the summary shows
    pair 2 and counts it, for each metric, as unknown where its incomplete
    journal cannot support it and known where both arms can (the cue estimates)."""
    experiment = PairExperiment(tmp_path)
    pilot = experiment.ready()
    assert experiment.run(pilot).returncode == 0
    experiment.eceb("pair", "approve", str(experiment.dir), "--approver", "a reviewer", check=True)
    second = experiment.prepare()
    runner = experiment.spawn("pair", "run", str(second), scenario="B=slow-ok", sleep=30)
    try:
        wait_for(lambda: len(experiment.invocations()) == 3, what="pair 2's first provider to start")
        runner.kill()
        runner.communicate(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
    wait_for(lambda: fake_processes(str(second)) == [], timeout_s=10, what="the provider to be stopped with its runner")
    done = experiment.eceb("pair", "summary", str(experiment.dir), "-o", str(tmp_path / "summary.json"))
    assert done.returncode == 1, done.stderr
    document = json.loads((tmp_path / "summary.json").read_text())
    assert [(p["position"], p["complete"]) for p in document["pairs"]] == [(1, True), (2, False)]
    assert [a["state"] for a in document["pairs"][1]["arms"]] == ["not started", "incomplete journal"]
    overall = {m["metric"]: m for m in document["overall"]["metrics"]}
    assert document["overall"]["pairs"] == 2
    for metric in ("input_tokens", "credits", "wall_clock_seconds"):
        found = overall[metric]
        assert (found["known"], found["unknown"]) == (1, 1), metric
        (reason,) = found["unknown_reasons"]
        assert reason.startswith("pair 2: arm A: the attempt did not start; arm B: "), reason
    assert (overall["cue_estimate_tokens"]["known"], overall["cue_estimate_tokens"]["unknown"]) == (2, 0)
    explanation, discovery, _ = document["per_task"]
    assert (explanation["pairs"], discovery["pairs"]) == (1, 1), "pair 2 is the first discovery pair"
    assert any("pair 2 (" in reason and "does not count" in reason for reason in document["verdict"]["reasons"])
