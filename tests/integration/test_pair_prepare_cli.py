"""``eceb pair prepare`` through the installed command line: a unique
task-pair directory whose manifest binds every retained file, both arms
identical but for their context, the cue produced by the declared cue
command in the real repository; nothing paid is run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest
from jsonschema import Draft202012Validator

from eceb_worker.core.digests import digest_bytes
from eceb_worker.families.paired.pairs import arm_problems
from eceb_worker.families.paired.records import Manifest
from eceb_worker.io.paired.git import git_state
from eceb_worker.io.paired.ledger import Ledger
from tests.support.paired_experiment import Bench, make_bench
from tests.support.paths import REPO

PAIR_NAME = re.compile(r"task-pair-01-explanation-r1-[0-9a-f]{8}")


@pytest.fixture
def frozen(tmp_path: Path) -> Bench:
    bench = make_bench(tmp_path)
    done = bench.freeze()
    assert done.returncode == 0, done.stderr
    return bench


def prepared_directory(bench: Bench, *args: str) -> Path:
    done = bench.eceb("prepare", bench.experiment, *args)
    assert done.returncode == 0, done.stderr
    line = done.stdout.splitlines()[0]
    assert line.startswith("prepared ")
    return Path(line.removeprefix("prepared "))


def test_prepare_retains_every_file_by_digest_and_both_arms_differ_only_in_context(frozen: Bench) -> None:
    fingerprint = git_state(frozen.repository).fingerprint
    pair = prepared_directory(frozen)
    assert pair.parent == frozen.experiment.resolve()
    assert PAIR_NAME.fullmatch(pair.name)
    data = (pair / "manifest.json").read_bytes()
    document = json.loads(data)
    schema = json.loads((REPO / "schema" / "pair-manifest-v0.1.json").read_text(encoding="utf-8"))
    assert list(Draft202012Validator(schema).iter_errors(document)) == []
    manifest = msgspec.json.decode(data, type=Manifest)

    on_disk = sorted(p.relative_to(pair).as_posix() for p in pair.rglob("*") if p.is_file())
    listed = sorted(f.path for f in manifest.files)
    assert on_disk == sorted([*listed, "manifest.json"])
    assert listed == sorted(
        [
            "answer.schema.json",
            "arms/A/context",
            "arms/B/context",
            "benchmark.json",
            "costs.json",
            "freeze.json",
            "rates.json",
            "task.json",
        ]
    )
    for entry in manifest.files:
        content = (pair / entry.path).read_bytes()
        assert (entry.blake3, entry.size) == (digest_bytes(content), len(content)), entry.path
    assert manifest.output_schema_digest == digest_bytes((pair / "answer.schema.json").read_bytes())
    assert manifest.freeze_digest == digest_bytes((frozen.experiment / "freeze.json").read_bytes())
    assert (pair / "freeze.json").read_bytes() == (frozen.experiment / "freeze.json").read_bytes()
    assert (pair / "task.json").read_bytes() == (frozen.example / "tasks" / "explanation.json").read_bytes()
    assert (pair / "answer.schema.json").read_bytes() == (
        frozen.example / "tasks" / "explanation.answer.schema.json"
    ).read_bytes()
    assert (pair / "benchmark.json").read_bytes() == frozen.benchmark.read_bytes()

    assert arm_problems(manifest, "manifest.json") == []
    first, second = manifest.arms
    assert (first.arm.value, second.arm.value) == ("A", "B")
    assert first.inputs == second.inputs
    assert (first.inputs.task_id, first.inputs.targets, first.inputs.sandbox) == (
        "explain-hello",
        ("greet/greet.go",),
        "read-only",
    )
    assert (pair / "arms" / "A" / "context").read_bytes() == (frozen.example / "overview.md").read_bytes()
    cue = json.loads((pair / "arms" / "B" / "context").read_bytes())
    assert (cue["schema"], cue["task"], cue["declaration"]) == (
        "repocue/task-cue-1",
        "explain-hello",
        ".repocue/declaration.json",
    )
    assert cue["excerpts"][0]["path"] == "greet/greet.go"  # ran in the repository
    assert first.cue_command is None and second.cue_command is not None
    for arm in manifest.arms:
        schema_path = arm.argv[arm.argv.index("--output-schema") + 1]
        assert schema_path == str(pair / "attempts" / arm.arm.value / "answer.schema.json")
        assert arm.argv[arm.argv.index("-C") + 1] == str(frozen.repository.resolve())
        assert arm.argv[0] == str(frozen.bin / "codex")
        assert " ".join(arm.argv[1:3]) == "exec --json"
    costs = json.loads((pair / "costs.json").read_bytes())
    assert costs["maintenance"]["known"] is False and costs["cue"]["known"] is False
    assert not (pair / "attempts").exists()  # attempts are eceb pair run's
    assert [p.name for p in frozen.experiment.iterdir() if p.name.startswith(".")] == []
    assert git_state(frozen.repository).fingerprint == fingerprint


def test_freeze_and_prepare_never_run_the_provider_but_for_its_version(tmp_path: Path) -> None:
    bench = make_bench(tmp_path)
    log = tmp_path / "codex-invocations.jsonl"
    bench.env["FAKE_CODEX_LOG"] = str(log)
    assert bench.freeze().returncode == 0
    assert bench.eceb("authorize", bench.experiment, "--approver", "Ada").returncode == 0
    prepared_directory(bench)
    assert not log.exists()


def test_a_pair_prepared_again_gets_a_second_directory_only_when_asked_and_pair_two_runs_b_first(
    frozen: Bench,
) -> None:
    one = prepared_directory(frozen)
    refused = frozen.eceb("prepare", frozen.experiment)
    assert refused.returncode == 6, refused.stderr
    assert f"pair 1 is already prepared in {frozen.experiment.resolve() / one.name}" in refused.stderr
    assert sorted(p.name for p in frozen.experiment.glob("task-pair-*")) == [one.name]
    two = prepared_directory(frozen, "--again")
    assert one != two
    assert PAIR_NAME.fullmatch(one.name) and PAIR_NAME.fullmatch(two.name)
    discovery = prepared_directory(frozen, "--pair", "2")
    assert re.fullmatch(r"task-pair-02-discovery-r1-[0-9a-f]{8}", discovery.name)
    manifest = msgspec.json.decode((discovery / "manifest.json").read_bytes(), type=Manifest)
    assert [arm.arm.value for arm in manifest.arms] == ["B", "A"]
    assert arm_problems(manifest, "manifest.json") == []


def test_the_default_pair_is_the_first_none_of_whose_executions_started(frozen: Bench) -> None:
    assert frozen.eceb("authorize", frozen.experiment, "--approver", "Ada").returncode == 0
    ledger = Ledger.open(frozen.experiment / "ledger.sqlite")
    ledger.start(pair=1, arm="A", attempt_id="pilot-A", directory="task-pair-01")
    ledger.close()
    pair = prepared_directory(frozen)
    assert pair.name.startswith("task-pair-02-discovery-r1-")


def assert_not_prepared(done: object, bench: Bench, *needles: str) -> None:
    assert done.returncode == 3, (done.stdout, done.stderr)
    for needle in needles:
        assert needle in done.stderr, (needle, done.stderr)
    assert [p.name for p in bench.experiment.iterdir()] == ["freeze.json"]


def test_a_schema_changed_since_the_freeze_is_refused_naming_it(frozen: Bench) -> None:
    frozen.edit_json("tasks/explanation.answer.schema.json", lambda schema: schema.update(title="changed"))
    done = frozen.eceb("prepare", frozen.experiment)
    assert_not_prepared(done, frozen, "explanation.answer.schema.json: changed since the freeze")


def test_a_cue_over_the_common_budget_is_refused_with_its_estimate(tmp_path: Path) -> None:
    bench = make_bench(tmp_path)
    bench.edit_json("benchmark.json", lambda b: b["cue"].update(budget_tokens=150))  # the overview's 126 fit
    assert bench.freeze().returncode == 0
    done = bench.eceb("prepare", bench.experiment)
    assert_not_prepared(done, bench, "the cue estimates", "over the common cue budget of 150 tokens")
    assert re.search(r"the cue estimates (\d+) tokens \((\d+) bytes / 4, rounded up\)", done.stderr)


def test_a_failing_cue_command_is_refused(tmp_path: Path) -> None:
    bench = make_bench(tmp_path)
    failing = bench.example / "failing-cue.sh"
    failing.write_text("#!/bin/sh\necho 'cue: no index for this task' >&2\nexit 3\n", encoding="utf-8")
    failing.chmod(0o755)
    bench.edit_json("benchmark.json", lambda b: b["cue"].update(argv=["./failing-cue.sh"]))
    assert bench.freeze().returncode == 0
    done = bench.eceb("prepare", bench.experiment)
    assert_not_prepared(done, bench, "failed with exit code 3: cue: no index for this task")


def test_a_cue_that_is_not_a_task_cue_of_the_task_or_changes_the_repository_is_refused(tmp_path: Path) -> None:
    bench = make_bench(tmp_path)
    wrong = bench.example / "wrong-cue.sh"
    wrong.write_text('#!/bin/sh\necho \'{"schema": "repocue/other", "task": "another"}\'\n', encoding="utf-8")
    wrong.chmod(0o755)
    bench.edit_json("benchmark.json", lambda b: b["cue"].update(argv=["./wrong-cue.sh"]))
    assert bench.freeze().returncode == 0
    done = bench.eceb("prepare", bench.experiment)
    assert_not_prepared(done, bench, "the cue's schema is 'repocue/other'", "the cue is for the task 'another'")

    (bench.experiment / "freeze.json").unlink()
    wrong.write_text("#!/bin/sh\necho built > build.log\n", encoding="utf-8")
    assert bench.freeze().returncode == 0
    done = bench.eceb("prepare", bench.experiment)
    assert_not_prepared(done, bench, "the repository changed while the cue command ran")


def test_a_repository_moved_since_the_freeze_is_refused(frozen: Bench) -> None:
    (frozen.repository / "README.md").write_text("changed\n", encoding="utf-8")
    frozen.git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qam", "move on")
    done = frozen.eceb("prepare", frozen.experiment)
    assert_not_prepared(done, frozen, "the repository is not as frozen")


def test_a_provider_changed_or_gone_since_the_freeze_is_refused_naming_it_with_the_schema_together(
    frozen: Bench,
) -> None:
    provider = (frozen.bin / "codex").resolve()
    provider.write_bytes(provider.read_bytes() + b"\n# changed\n")
    frozen.edit_json("tasks/explanation.answer.schema.json", lambda schema: schema.update(title="changed"))
    done = frozen.eceb("prepare", frozen.experiment)
    assert_not_prepared(
        done,
        frozen,
        "explanation.answer.schema.json: changed since the freeze",
        f"{provider}: the provider executable changed since the freeze; freeze again into a new directory",
    )
    assert done.stderr.index("answer.schema.json") < done.stderr.index("the provider executable")

    provider.unlink()
    done = frozen.eceb("prepare", frozen.experiment)
    assert_not_prepared(done, frozen, f"{provider}: ")
    assert "the provider executable changed" not in done.stderr
