"""``eceb pair freeze`` through the installed command line, over a real git
repository made by examples/paired/make-repo.sh and a provider stand-in
that answers ``--version`` only."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from eceb_worker.core.digests import digest_bytes
from eceb_worker.io.paired.git import git_state
from eceb_worker.io.paired.ledger import Ledger
from tests.support.paired_experiment import FAKE_VERSION, Bench, make_bench
from tests.support.paths import REPO


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    return make_bench(tmp_path)


def schema_errors(document: Any, name: str) -> list[str]:
    schema = json.loads((REPO / "schema" / name).read_text(encoding="utf-8"))
    return [error.message for error in Draft202012Validator(schema).iter_errors(document)]


def file_digest(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    return {"blake3": digest_bytes(data), "size": len(data)}


def test_the_example_freezes_with_every_item_bound(bench: Bench) -> None:
    done = bench.freeze()
    assert done.returncode == 0, done.stderr
    path = bench.experiment / "freeze.json"
    data = path.read_bytes()
    record = json.loads(data)
    assert schema_errors(record, "pair-freeze-v0.1.json") == []
    assert f"freeze digest: {digest_bytes(data)}" in done.stdout.splitlines()
    assert "Freezing authorizes nothing: paid execution needs `eceb pair authorize` (G3)" in done.stdout
    assert "local checks establish no actual provider support" in done.stdout
    assert "label: local preparation only: does not authorize paid execution" in done.stdout

    head = bench.git("rev-parse", "HEAD")
    repository = record["repository"]
    assert repository == {
        "path": str(bench.repository.resolve()),
        "reviewed_revision": head,
        "head": head,
        "tree": bench.git("rev-parse", "HEAD^{tree}"),
        "fingerprint": git_state(bench.repository).fingerprint,
        "clean": True,
    }
    declaration = bench.repository / ".repocue" / "declaration.json"
    assert record["declaration"] == {"path": ".repocue/declaration.json", **file_digest(declaration)}
    assert record["declaration_object"] == bench.git("rev-parse", "HEAD:.repocue/declaration.json")
    assert record["sources"] == [
        {"path": path, "object": bench.git("rev-parse", f"HEAD:{path}"), "type": kind}
        for path, kind in (("go.mod", "blob"), ("greet", "tree"), ("docs", "tree"))
    ]
    assert record["checks"] == [{"id": "go-test", "argv": ["go", "test", "-count=1", "./..."], "cwd": "."}]
    assert [(task["kind"], task["id"]) for task in record["tasks"]] == [
        ("explanation", "explain-hello"),
        ("discovery", "requirements-of-greet"),
        ("verification", "go-test"),
    ]
    for task in record["tasks"]:
        for key in ("file", "answer_schema"):
            assert task[key] == {"path": task[key]["path"], **file_digest(bench.example / task[key]["path"])}
    assert record["tasks"][0]["answer_schema"]["path"] == "tasks/explanation.answer.schema.json"
    assert record["benchmark"] == {"path": str(bench.benchmark.resolve()), **file_digest(bench.benchmark)}
    for key, name in (("overview", "overview.md"), ("success_criteria", "criteria.md"), ("rubric", "rubric.md")):
        assert record[key] == {"path": name, **file_digest(bench.example / name)}
    assert record["rates"] == {"path": "rates.json", **file_digest(bench.example / "rates.json")}
    assert record["overview_tokens"] == -(-(bench.example / "overview.md").stat().st_size // 4)
    assert record["cue_budget_tokens"] == 1200
    cue = bench.example / "cue.py"
    assert record["cue_command"] == {
        "name": "./cue.py",
        "path": str(cue.resolve()),
        **file_digest(cue),
        "version": None,
    }
    assert record["cue_argv"] == ["./cue.py"]
    codex = bench.bin / "codex"
    assert record["provider"] == {"name": "codex", "path": str(codex), **file_digest(codex), "version": FAKE_VERSION}
    assert (record["model"], record["reasoning_effort"], record["speed_tier"], record["sandbox"]) == (
        "gpt-5-codex",
        "medium",
        "standard",
        "read-only",
    )
    assert record["observed_support"] == {
        "usage": "unobserved",
        "completion": "unobserved",
        "output": "unobserved",
        "evidence": None,
        "evidence_synthetic": False,
    }
    assert (record["assessor_independent"], record["pairs"], record["missing_semantic_evidence"]) == (
        True,
        9,
        "unassessed",
    )
    assert (record["authorized_executions"], record["spending_stop_on"], record["pilot_continuation"]) == (
        18,
        ["mutated"],
        "explicit-approval",
    )
    assert not (bench.experiment / "authorization.json").exists()
    assert not (bench.experiment / "ledger.sqlite").exists()


def assert_refused(done: Any, bench: Bench, *needles: str) -> None:
    assert done.returncode == 3, (done.stdout, done.stderr)
    for needle in needles:
        assert needle in done.stderr, (needle, done.stderr)
    assert not bench.experiment.exists()


def test_a_dirty_tree_is_refused_naming_the_modified_and_the_untracked_file(bench: Bench) -> None:
    (bench.repository / "greet" / "greet.go").write_text("package greet\n", encoding="utf-8")
    (bench.repository / "notes.txt").write_text("scratch\n", encoding="utf-8")
    done = bench.freeze()
    assert_refused(done, bench, "the work tree is not clean", "greet/greet.go (changed, M)", "notes.txt (untracked)")


def test_a_non_strict_answer_schema_is_named_by_its_pointer(bench: Bench) -> None:
    def loosen(schema: dict[str, Any]) -> None:
        del schema["properties"]["references"]["items"]["additionalProperties"]
        schema["properties"]["references"]["items"]["required"] = ["id"]

    bench.edit_json("tasks/discovery.answer.schema.json", loosen)
    done = bench.freeze()
    assert_refused(
        done,
        bench,
        "discovery.answer.schema.json, /properties/references/items: field 'additionalProperties': must be false",
        "/properties/references/items: field 'required': must list line, path",
    )


def test_an_untracked_declaration_is_refused(bench: Bench) -> None:
    bench.git("rm", "-q", "--cached", ".repocue/declaration.json")
    bench.git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "untrack")
    done = bench.freeze()
    assert_refused(
        done,
        bench,
        "declaration.json: the declaration is untracked at HEAD",
        ".repocue/declaration.json (untracked)",
    )


def test_a_missing_target_and_a_check_unknown_to_the_declaration_are_refused(bench: Bench) -> None:
    bench.edit_json("tasks/explanation.json", lambda task: task.update(targets=["greet/missing.go"]))
    bench.edit_json("tasks/discovery.json", lambda task: task.update(checks=["lint"]))
    done = bench.freeze()
    assert_refused(
        done,
        bench,
        "explanation.json: field 'targets[0]': 'greet/missing.go' is not in the commit",
        "discovery.json: field 'checks[0]': 'lint' is not a check of the declaration .repocue/declaration.json",
    )


def test_an_overview_over_the_common_budget_is_refused(bench: Bench) -> None:
    bench.edit_json("benchmark.json", lambda b: b["cue"].update(budget_tokens=100))
    done = bench.freeze()
    assert_refused(done, bench, "overview.md: the overview estimates 126 tokens", "common cue budget of 100 tokens")


def test_every_problem_of_every_input_is_listed_together(bench: Bench) -> None:
    bench.edit_json("benchmark.json", lambda b: (b["cue"].update(budget_tokens=100), b["coverage"].update(pairs=8)))
    bench.edit_json("tasks/verification.json", lambda task: task.update(check="vet"))
    bench.edit_json("tasks/explanation.answer.schema.json", lambda schema: schema.update(additionalProperties=True))
    bench.edit_json("tasks/discovery.json", lambda task: task.update(targets=["nowhere"], checks=["lint"]))
    (bench.repository / "scratch").write_text("x", encoding="utf-8")
    done = bench.freeze(None)
    assert_refused(
        done,
        bench,
        "field 'pairs': 8 is not the schedule's exact pair count 9",
        "verification.json: field 'check': 'vet' is not listed in the task's checks",
        "explanation.answer.schema.json, /: field 'additionalProperties': must be false",
        "'nowhere' is not in the commit",
        "'lint' is not a check of the declaration",
        "the overview estimates 126 tokens",
        "scratch (untracked)",
        "7 problems found.",
    )


def test_a_provider_that_cannot_be_found_or_run_is_a_problem(bench: Bench) -> None:
    env = {**bench.env, "ECEB_PAIR_PROVIDER": str(bench.root / "no-such-codex")}
    done = bench.eceb("freeze", bench.benchmark, "--repo", bench.repository, "--into", bench.experiment, env=env)
    assert_refused(done, bench, "ECEB_PAIR_PROVIDER: executable", "no-such-codex' not found")
    broken = bench.root / "broken-codex"
    broken.write_text("#!/bin/sh\necho 'no version here' >&2\nexit 4\n", encoding="utf-8")
    broken.chmod(0o755)
    bench.edit_json("benchmark.json", lambda b: b["provider"].update(executable=str(broken)))
    done = bench.freeze()
    assert_refused(done, bench, "field 'executable':", "--version exited with 4: no version here")
    bench.edit_json("benchmark.json", lambda b: b["provider"].update(executable="codex"))
    only_git = bench.root / "only-git"
    only_git.mkdir()
    (only_git / "git").symlink_to(shutil.which("git") or "git")
    env = {**bench.env, "PATH": str(only_git)}
    done = bench.eceb("freeze", bench.benchmark, "--repo", bench.repository, "--into", bench.experiment, env=env)
    assert done.returncode == 3
    assert "executable 'codex' not found on PATH" in done.stderr


def test_freezing_again_replaces_the_freeze_until_an_authorization_or_an_attempt(bench: Bench) -> None:
    assert bench.freeze().returncode == 0
    again = bench.freeze()
    assert again.returncode == 0, again.stderr
    assert "it replaces the earlier freeze.json" in again.stdout

    prepared = bench.eceb("prepare", bench.experiment)
    assert prepared.returncode == 0, prepared.stderr
    (pair,) = bench.experiment.glob("task-pair-*")
    (pair / "attempts" / "A").mkdir(parents=True)
    (pair / "attempts" / "A" / "attempt-start.json").write_text("{}", encoding="utf-8")
    before = (bench.experiment / "freeze.json").read_bytes()
    refused = bench.freeze()
    assert refused.returncode == 9
    assert "attempt-start.json" in refused.stderr and "freeze into a new directory" in refused.stderr
    assert (bench.experiment / "freeze.json").read_bytes() == before


def test_freezing_is_refused_once_the_ledger_records_a_started_execution(bench: Bench) -> None:
    bench.experiment.mkdir()
    ledger = Ledger.create(bench.experiment / "ledger.sqlite", freeze_digest="f" * 64, authorized_executions=2)
    ledger.start(pair=1, arm="A", attempt_id="pilot-A", directory="task-pair-01")
    ledger.close()
    done = bench.freeze()
    assert done.returncode == 9
    assert "holds ledger.sqlite" in done.stderr
    assert not (bench.experiment / "freeze.json").exists()


def test_an_experiment_inside_the_repository_is_refused(bench: Bench) -> None:
    done = bench.freeze(bench.repository / "exp")
    assert done.returncode == 6
    assert "lies inside the repository" in done.stderr
    assert not (bench.repository / "exp").exists()


def test_a_directory_that_is_not_a_git_work_tree_is_a_problem_among_the_others(bench: Bench) -> None:
    plain = bench.root / "plain"
    plain.mkdir()
    bench.edit_json("benchmark.json", lambda b: b["cue"].update(budget_tokens=100))
    done = bench.eceb("freeze", bench.benchmark, "--repo", plain, "--into", bench.experiment)
    assert_refused(done, bench, "plain: not a usable git work tree", "the overview estimates 126 tokens")


def test_observed_support_is_read_from_a_recorded_stream_of_the_provider(bench: Bench) -> None:
    """``--observed-stream``: a recorded stream of a completed turn makes
    usage, completion and output observed, bound by digest; the real CLI's
    network failure shows none of them; a synthetic stream shows nothing."""
    recorded = REPO / "tests" / "fixtures" / "codex" / "network-failure.jsonl"
    completed = bench.root / "completed.jsonl"
    usage = {"input_tokens": 9, "cached_input_tokens": 0, "output_tokens": 3, "reasoning_output_tokens": 1}
    events = [
        {"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": "{}"}},
        {"type": "turn.completed", "usage": usage},
    ]
    completed.write_text("".join(json.dumps(event) + "\n" for event in events))
    synthetic = bench.root / "synthetic.jsonl"
    synthetic.write_text(completed.read_text().replace("0199a213", "synthetic-0199a213"))
    for stream, seen, shown in (
        (completed, "observed", "usage, completion, output observed (from"),
        (recorded, "unobserved", "usage, completion, output unobserved (from"),
        (synthetic, "unobserved", "is synthetic: it establishes no actual provider support"),
    ):
        done = bench.eceb(
            "freeze", bench.benchmark, "--repo", bench.repository, "--into", bench.experiment,
            "--observed-stream", stream,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert shown in done.stdout
        support = json.loads((bench.experiment / "freeze.json").read_bytes())["observed_support"]
        assert (support["usage"], support["completion"], support["output"]) == (seen, seen, seen)
        assert support["evidence"] == {"path": str(stream.resolve()), **file_digest(stream)}
    missing = bench.eceb(
        "freeze", bench.benchmark, "--repo", bench.repository, "--into", bench.root / "other",
        "--observed-stream", bench.root / "none.jsonl",
    )  # fmt: skip
    assert missing.returncode == 3 and "none.jsonl: cannot read" in missing.stderr


def test_a_change_hidden_from_git_status_still_makes_the_tree_unclean(bench: Bench) -> None:
    """An index entry git status is told not to look at (assume-unchanged,
    skip-worktree) could hide a change, before a freeze or during an attempt."""
    bench.git("update-index", "--assume-unchanged", "README.md")
    (bench.repository / "README.md").write_text("changed where git status does not look\n")
    assert bench.git("status", "--porcelain") == ""
    done = bench.freeze()
    assert done.returncode == 3, done.stdout + done.stderr
    assert "README.md (hidden from git status (assume-unchanged or skip-worktree))" in done.stderr
    assert not (bench.experiment / "freeze.json").exists()


def test_a_freeze_never_overwrites_one_of_its_inputs_the_rates_included(bench: Bench) -> None:
    assert bench.freeze().returncode == 0
    before = (bench.experiment / "freeze.json").read_bytes()
    bench.edit_json("benchmark.json", lambda value: value.update(rates="../exp/freeze.json"))
    done = bench.freeze()
    assert done.returncode == 3, done.stdout + done.stderr  # a freeze is no rates file; nothing is written
    assert (bench.experiment / "freeze.json").read_bytes() == before


def test_rates_that_are_not_a_rates_file_are_a_problem_of_the_freeze(bench: Bench) -> None:
    bench.edit_json("rates.json", lambda value: value["rates"][0].update(input=1.25, unit="usd"))
    done = bench.freeze()
    assert done.returncode == 3, done.stdout + done.stderr
    assert "rates.json, rates[0]: field 'input'" in done.stderr
    # A snapshot in another unit is a valid snapshot that never applies (the summary says so): not a problem here.
    assert "field 'unit'" not in done.stderr
    assert not (bench.experiment / "freeze.json").exists()
