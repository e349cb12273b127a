"""``eceb run`` end to end: a real context system process, the loopback
provider through the real SDKs, the journal, faults, resumption and spend."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.helpers import refusing_loopback_port
from tests.support.making import (
    ANSWER,
    PLANTED_KEY,
    answer_script,
    eceb_run,
    write_benchmark,
    write_corpus,
    write_profile,
)

pytestmark = pytest.mark.integration

PLANNED_EXECUTIONS = 2 * (1 + 2 + 2) + 2 * (1 + 1 + 1)
"""Executions of the tiny benchmark: failover (baseline, compiled and naive_top_k at 120 and 400) and
raft-election (baseline, compiled and naive_top_k at 400), 2 repetitions each."""


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    write_corpus(tmp_path)
    write_benchmark(tmp_path)
    return tmp_path


def test_run_makes_a_run_that_evaluates(tiny: Path, start_loopback_provider) -> None:
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"))
    assert done.returncode == 0, done.stderr
    assert f"{PLANNED_EXECUTIONS}/{PLANNED_EXECUTIONS} executions made" in done.stdout
    stats = provider.stats()
    assert stats["answered"] == 2 * PLANNED_EXECUTIONS  # one answer and one judgment each
    run = json.loads((tiny / "run.json").read_text())
    assert len(run["observations"]) == PLANNED_EXECUTIONS
    assert run["configurations"][0]["model"]["revision"] == "gpt-test-2026-01-01"
    assert all(o["answer"] == ANSWER and o["quality_milli"] == 900 for o in run["observations"])
    judges = [a for a in run["auxiliary_costs"] if a["description"].startswith("judge")]
    assert len(judges) == PLANNED_EXECUTIONS
    # every group's repetitions saw the same prompt (ECEB-0.1 §13)
    digests: dict[tuple[str, str, int | None], set[str]] = {}
    for o in run["observations"]:
        digests.setdefault((o["task_id"], o["strategy"], o["budget"]), set()).add(o["context_digest"])
    assert all(len(d) == 1 for d in digests.values())
    lines = (tiny / "run.transcripts.jsonl").read_text().splitlines()
    assert len(lines) == 2 * PLANNED_EXECUTIONS
    assert len((tiny / "run.judgments.jsonl").read_text().splitlines()) == PLANNED_EXECUTIONS
    evaluated = subprocess.run(
        [
            sys.executable,
            "-m",
            "eceb_cli",
            "evaluate",
            str(tiny / "benchmark.json"),
            str(tiny / "run.json"),
            "--corpus",
            str(tiny / "corpus"),
            "-o",
            str(tiny / "report.json"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert evaluated.returncode in (0, 1), evaluated.stderr
    report = json.loads((tiny / "report.json").read_text())
    assert report["summary"]["total_tasks"] == 2
    rendered = subprocess.run(
        [
            sys.executable,
            "-m",
            "eceb_cli",
            "render",
            str(tiny / "report.json"),
            "--html",
            "-o",
            str(tiny / "report.html"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert rendered.returncode == 0, rendered.stderr


def test_the_same_journal_gives_the_same_bytes(tiny: Path, start_loopback_provider) -> None:
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url)
    assert eceb_run(tiny, "-o", str(tiny / "run.json")).returncode == 0
    first = [(tiny / name).read_bytes() for name in ("run.json", "run.transcripts.jsonl", "run.judgments.jsonl")]
    answered = provider.stats()["answered"]
    again = eceb_run(tiny, "-o", str(tiny / "run.json"), "--resume")
    assert again.returncode == 0, again.stderr
    assert provider.stats()["answered"] == answered  # nothing sent again
    assert f"(all {PLANNED_EXECUTIONS} before this run: no call sent)" in again.stdout
    second = [(tiny / name).read_bytes() for name in ("run.json", "run.transcripts.jsonl", "run.judgments.jsonl")]
    assert first == second


def test_dry_run_calls_nothing(tiny: Path, start_loopback_provider) -> None:
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url)
    done = eceb_run(tiny, "--dry-run")
    assert done.returncode == 0, done.stderr
    assert f"plan: {PLANNED_EXECUTIONS} executions of 2 tasks" in done.stdout
    assert "spend at most: $" in done.stdout
    assert provider.stats()["total"] == 0
    assert not (tiny / "run.journal").exists()


def test_transient_faults_are_retried_and_their_possible_cost_kept(tiny: Path, start_loopback_provider) -> None:
    script = answer_script(faults={"1": "429", "2": "500", "3": "drop", "4": "timeout"}, retry_after_s=0, hold_s=30)
    provider = start_loopback_provider(script)
    write_profile(tiny, provider.openai_base_url)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"))
    assert done.returncode == 0, done.stderr
    assert "4 attempts retried" in done.stdout
    run = json.loads((tiny / "run.json").read_text())
    assert len(run["observations"]) == PLANNED_EXECUTIONS
    retries = [a for a in run["auxiliary_costs"] if a["kind"] == "retry"]
    assert len(retries) == 3  # the 500, the dropped connection and the timeout may have been billed; the 429 was not
    assert all("upper bound" in a["description"] for a in retries)


def test_a_refused_credential_stops_the_run_and_never_shows(tiny: Path, start_loopback_provider) -> None:
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"), key=PLANTED_KEY)
    assert done.returncode == 12, done.stderr
    assert "401" in done.stderr
    assert PLANTED_KEY not in done.stdout + done.stderr
    assert not (tiny / "run.json").exists()
    assert PLANTED_KEY.encode() not in (tiny / "run.journal").read_bytes()


def test_planted_key_never_reaches_the_outputs(tiny: Path, start_loopback_provider) -> None:
    provider = start_loopback_provider(answer_script(), api_key=PLANTED_KEY)
    write_profile(tiny, provider.openai_base_url)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"), key=PLANTED_KEY)
    assert done.returncode == 0, done.stderr
    for name in ("run.json", "run.transcripts.jsonl", "run.judgments.jsonl", "run.journal"):
        assert PLANTED_KEY.encode() not in (tiny / name).read_bytes(), name
    assert PLANTED_KEY not in done.stdout + done.stderr


def test_spending_stop_then_resume_with_a_higher_stop(tiny: Path, start_loopback_provider) -> None:
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url, spending={"stop_micro_usd": 5_000}, in_flight=1)
    stopped = eceb_run(tiny, "-o", str(tiny / "run.json"))
    assert stopped.returncode == 9, stopped.stderr
    assert "spending stopped" in stopped.stderr
    assert not (tiny / "run.json").exists()
    paid = provider.stats()["answered"]
    assert 0 < paid < 2 * PLANNED_EXECUTIONS
    write_profile(tiny, provider.openai_base_url, spending={"stop_micro_usd": 0}, in_flight=1)
    resumed = eceb_run(tiny, "-o", str(tiny / "run.json"), "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert provider.stats()["answered"] == 2 * PLANNED_EXECUTIONS  # nothing paid twice


def test_a_journal_is_never_reused_silently(tiny: Path, start_loopback_provider) -> None:
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url)
    assert eceb_run(tiny, "-o", str(tiny / "run.json")).returncode == 0
    again = eceb_run(tiny, "-o", str(tiny / "run.json"))
    assert again.returncode == 6
    assert "--resume" in again.stderr
    write_profile(tiny, provider.openai_base_url, run_id="another-run")
    other = eceb_run(tiny, "-o", str(tiny / "run.json"), "--resume")
    assert other.returncode == 3
    assert "bound to another plan" in other.stderr


def test_kill_9_then_resume_pays_for_nothing_twice(tiny: Path, start_loopback_provider) -> None:
    provider = start_loopback_provider(answer_script(delay_ms=150))
    write_profile(tiny, provider.openai_base_url, in_flight=2)
    command = [
        sys.executable,
        "-m",
        "eceb_cli",
        "run",
        str(tiny / "benchmark.json"),
        str(tiny / "profile.json"),
        "--corpus",
        str(tiny / "corpus"),
        "-o",
        str(tiny / "run.json"),
    ]
    process = subprocess.Popen(
        command,
        env={**__import__("os").environ, "ECEB_TEST_KEY": "sk-loopback-test-key"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while provider.stats()["answered"] < 6:
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    sent_before = provider.stats()["total"]
    assert not (tiny / "run.json").exists()
    first = eceb_run(tiny, "-o", str(tiny / "run.json"), "--resume")
    if first.returncode == 9:  # calls were in flight at the kill: their outcome is unknown
        assert "outcome" in first.stderr and "unknown" in first.stderr
        first = eceb_run(tiny, "-o", str(tiny / "run.json"), "--resume", "--rerun-unknown")
    assert first.returncode == 0, first.stderr
    journal_attempts = _attempts(tiny)
    # every request the server saw is an attempt the journal holds (one journaled just before the kill may
    # never have been sent); only a call of unknown outcome, sent again when allowed, may have been paid twice
    stats = provider.stats()
    unknown = [a for a in journal_attempts if a[1] == "unknown"]
    assert stats["total"] <= len(journal_attempts)
    assert stats["answered"] <= 2 * PLANNED_EXECUTIONS + len(unknown)
    made = [a for a in journal_attempts if a[1] == "ok"]
    assert len(made) == 2 * PLANNED_EXECUTIONS
    assert len({a[0] for a in made}) == len(made)
    assert sent_before <= len(journal_attempts)
    run = json.loads((tiny / "run.json").read_text())
    assert len(run["observations"]) == PLANNED_EXECUTIONS


def _attempts(root: Path) -> list[tuple[str, str | None]]:
    import sqlite3

    db = sqlite3.connect(root / "run.journal")
    try:
        return [(str(c), o) for c, o in db.execute("SELECT call_id, outcome FROM attempts WHERE paid = 1 ORDER BY seq")]
    finally:
        db.close()


@pytest.mark.parametrize("api", ["openai-responses", "anthropic-messages"])
def test_every_api_makes_the_same_run(tiny: Path, start_loopback_provider, api: str) -> None:
    provider = start_loopback_provider(answer_script(usage={"cached_tokens": 16, "reasoning_tokens": 4}))
    write_profile(tiny, provider.base_url_for(api), api=api)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"))
    assert done.returncode == 0, done.stderr
    run = json.loads((tiny / "run.json").read_text())
    assert len(run["observations"]) == PLANNED_EXECUTIONS
    assert all(o["cached_input_tokens"] == 16 for o in run["observations"])
    assert provider.stats()["answered"] == 2 * PLANNED_EXECUTIONS


JUDGE = """\
import json, sys
given = json.load(sys.stdin)
print(1000 if "pg_ctl promote" in given["answer"] else 0)
"""


def test_a_command_judge_scores_every_answer_for_free(tiny: Path, start_loopback_provider) -> None:
    provider = start_loopback_provider(answer_script())
    (tiny / "judge.py").write_text(JUDGE)
    judge = {"kind": "command", "profile": "exact-terms", "command": [sys.executable, "judge.py"], "revision": "v1"}
    write_profile(tiny, provider.openai_base_url, judge=judge)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"))
    assert done.returncode == 0, done.stderr
    assert provider.stats()["answered"] == PLANNED_EXECUTIONS  # answers only
    run = json.loads((tiny / "run.json").read_text())
    assert {o["quality_milli"] for o in run["observations"]} == {1000}
    assert run["configurations"][0]["judge"]["model"] == {
        "provider": "command",
        "name": sys.executable,
        "revision": "v1",
    }
    assert not [a for a in run["auxiliary_costs"] if a["description"].startswith("judge")]


def test_an_answer_the_provider_rejects_fails_its_execution_only(tiny: Path, start_loopback_provider) -> None:
    script = answer_script()
    script["rules"] = [{"name": "reject", "match": "Raft", "purpose": "answer", "faults": {"1": "400", "2": "400"}}]
    provider = start_loopback_provider(script)
    write_profile(tiny, provider.openai_base_url)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"))
    assert done.returncode == 1, done.stderr
    assert "2 failed" in done.stdout
    run = json.loads((tiny / "run.json").read_text())
    assert len(run["observations"]) == PLANNED_EXECUTIONS - 2


def test_decoding_an_api_cannot_take_is_refused_before_anything_runs(tiny: Path, start_loopback_provider) -> None:
    provider = start_loopback_provider(answer_script())
    write_profile(
        tiny,
        provider.anthropic_base_url,
        api="anthropic-messages",
        decoding={"temperature_milli": 0, "top_p_milli": 900, "seed": 7, "max_output_tokens": 50},
    )
    done = eceb_run(tiny, "-o", str(tiny / "run.json"))
    assert done.returncode == 3, done.stderr
    for field in ("'seed'", "'temperature_milli'", "'top_p_milli'"):
        assert f"decoding: field {field}" in done.stderr
    assert provider.stats()["total"] == 0
    assert not (tiny / "run.journal").exists()


def test_a_missing_credential_is_named_before_anything_is_created(tiny: Path, start_loopback_provider) -> None:
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"), key="")
    assert done.returncode == 3, done.stderr
    assert "ECEB_TEST_KEY" in done.stderr
    assert not (tiny / "run.journal").exists()
    assert provider.stats()["total"] == 0


def test_a_corpus_one_level_off_is_named_and_leaves_no_journal(tiny: Path, start_loopback_provider) -> None:
    provider = start_loopback_provider(answer_script())
    write_profile(tiny, provider.openai_base_url)
    done = eceb_run(tiny, "-o", str(tiny / "run.json"), "--corpus", str(tiny))
    assert done.returncode == 5, done.stderr
    assert "is it the corpus directory the registry describes?" in done.stderr
    assert not (tiny / "run.journal").exists()
    assert provider.stats()["total"] == 0


def test_a_provider_that_is_not_there_is_named_by_its_address(tiny: Path) -> None:
    with refusing_loopback_port() as port:
        write_profile(tiny, f"http://127.0.0.1:{port}/v1", in_flight=1)
        done = eceb_run(tiny, "-o", str(tiny / "run.json"), timeout=600)
    assert done.returncode == 12, done.stderr
    assert f"loopback at http://127.0.0.1:{port}/v1 (openai-chat): could not send the request" in done.stderr
    assert "keeps what was made: the same command with --resume goes on" in done.stderr
