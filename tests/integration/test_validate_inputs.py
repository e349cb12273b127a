"""``eceb validate`` on real files: every problem listed at once (schema
problems and the checks of every record that decoded), every kind of file
eceb reads recognised (publication manifests, sources and declarations
included), ids with control characters refused and shown escaped, syntax
errors located by line and column."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from eceb_worker.errors import InputError, Problem
from eceb_worker.pipeline.validation import kind_of, validate_file
from tests.support.paths import REPO

SEED = REPO / "examples" / "enterprise-seed"
ESCAPES = "T\x1b]0;owned\x07\x1b[2K\x1b[1A\r"


def _eceb(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eceb_cli", *args], capture_output=True, text=True, check=False)


def _seed_copy(tmp_path: Path) -> Path:
    for name in ("benchmark.json", "registry.jsonl", "run.json", "sources.json"):
        shutil.copy(SEED / name, tmp_path / name)
    return tmp_path


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _problems(path: Path) -> list[Problem]:
    with pytest.raises(InputError) as caught:
        validate_file(path, kind_of(path))
    return caught.value.problems


def test_a_schema_problem_does_not_hide_the_checks_of_the_tasks_that_decoded(tmp_path: Path) -> None:
    benchmark_at = _seed_copy(tmp_path) / "benchmark.json"
    benchmark = _load(benchmark_at)
    benchmark["tasks"][0]["allowed_classifications"][0] = "publik"
    benchmark["tasks"][1]["budget_ladder"] = [5, 3, 2]
    benchmark["tasks"][3]["required_artifacts"] = ["no/such/artifact"]
    benchmark["tasks"][4]["task_id"] = benchmark["tasks"][5]["task_id"]
    benchmark_at.write_text(json.dumps(benchmark), encoding="utf-8")
    found = {(p.record.split(" ")[0], p.field, p.message.split(" ")[-1]) for p in _problems(benchmark_at)}
    assert found == {
        ("tasks[0]", "allowed_classifications[0]", "restricted"),
        ("tasks[1]", "budget_ladder[1]", "5"),
        ("tasks[1]", "budget_ladder[2]", "3"),
        ("tasks[3]", "required_artifacts", "registry"),
        ("tasks[5]", "task_id", "tasks[4])"),
    }


def test_a_benchmark_not_json_is_located_and_says_its_other_checks_wait(tmp_path: Path) -> None:
    benchmark_at = _seed_copy(tmp_path) / "benchmark.json"
    lines = benchmark_at.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[17] = lines[17].replace('"', "", 1)
    benchmark_at.write_text("".join(lines), encoding="utf-8")
    done = _eceb("validate", str(benchmark_at))
    assert done.returncode == 3, done.stderr
    assert "(line 18, column " in done.stderr and "other checks wait until it is valid JSON" in done.stderr


def test_a_registry_line_not_json_names_the_line_and_column(tmp_path: Path) -> None:
    registry_at = _seed_copy(tmp_path) / "registry.jsonl"
    lines = registry_at.read_bytes().splitlines(keepends=True)
    lines[3] = b'{"artifact_id": x}\n'
    registry_at.write_bytes(b"".join(lines))
    [problem] = _problems(registry_at)
    assert (problem.record, problem.message) == ("line 4", "invalid JSON at line 4, column 17: Expecting value")


def test_a_task_id_with_terminal_escapes_is_refused_and_shown_escaped(tmp_path: Path) -> None:
    benchmark_at = _seed_copy(tmp_path) / "benchmark.json"
    benchmark = _load(benchmark_at)
    benchmark["tasks"][2]["task_id"] = ESCAPES
    benchmark_at.write_text(json.dumps(benchmark), encoding="utf-8")
    done = _eceb("validate", str(benchmark_at))
    assert done.returncode == 3 and done.stdout == ""
    assert f"{benchmark_at}, tasks[2]: field 'task_id':" in done.stderr
    assert "'\\x1b' (U+001B) at character 2" in done.stderr
    assert not any(c in done.stderr for c in "\x1b\x07\r")


def test_a_run_whose_records_name_ids_with_control_characters_is_refused(tmp_path: Path) -> None:
    run_at = _seed_copy(tmp_path) / "run.json"
    run = _load(run_at)
    run["run_id"] = "r\u202e"
    run["observations"][0]["selected_artifacts"][0]["artifact_id"] = "a\x1b[2K"
    run_at.write_text(json.dumps(run), encoding="utf-8")
    header = _problems(run_at)
    assert [(p.record, p.field) for p in header] == [("", "run_id")]
    run["run_id"] = "r"
    run_at.write_text(json.dumps(run), encoding="utf-8")
    [problem] = _problems(run_at)
    assert (problem.record, problem.field) == ("observations[0]", "selected_artifacts[0].artifact_id")
    assert "'\\x1b' (U+001B)" in problem.message


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        (SEED / "sources.json", "sources"),
        (SEED / "bundle" / "manifest.json", "publication"),
        (SEED / "bundle" / "sources.json", "sources"),
    ],
)
def test_publication_files_are_recognised_and_validated(path: Path, kind: str) -> None:
    assert kind_of(path) == kind
    assert validate_file(path, kind).line() == f"{path}: valid {kind}"


def test_a_declarations_file_is_recognised_and_every_problem_listed(tmp_path: Path) -> None:
    declarations_at = tmp_path / "declarations.json"
    declared: dict[str, Any] = {
        "schema": "symgliph.eceb/declarations-v0.1",
        "sampling": "all tasks",
        "exclusions": [{"task_id": "disk-full-escalation", "strategy": "compiled", "reason": "r"}],
    }
    declarations_at.write_text(json.dumps(declared), encoding="utf-8")
    assert kind_of(declarations_at) == "declarations"
    assert validate_file(declarations_at, "declarations").valid
    declared["exclusions"].append({"task_id": "t\r", "reason": ""})
    declared["timeouts"] = [{"task_id": "t", "strategy": "slow", "description": "d"}]
    declarations_at.write_text(json.dumps(declared), encoding="utf-8")
    found = {(p.record, p.field) for p in _problems(declarations_at)}
    assert found == {("exclusions[1]", "task_id"), ("exclusions[1]", "reason"), ("timeouts[0]", "strategy")}


def test_sources_and_manifests_are_checked_beyond_their_schema(tmp_path: Path) -> None:
    sources_at = tmp_path / "sources.json"
    sources = _load(SEED / "sources.json")
    sources["sources"].append(dict(sources["sources"][0]))
    sources_at.write_text(json.dumps(sources), encoding="utf-8")
    [problem] = _problems(sources_at)
    assert (problem.field, "declared more than once" in problem.message) == ("name", True)
    manifest_at = tmp_path / "manifest.json"
    manifest = _load(SEED / "bundle" / "manifest.json")
    manifest["files"].append(dict(manifest["files"][0]))
    manifest_at.write_text(json.dumps(manifest), encoding="utf-8")
    assert {p.message.split(" ")[-1] for p in _problems(manifest_at)} == {"twice"}
    manifest["publik"] = 1
    manifest_at.write_text(json.dumps(manifest), encoding="utf-8")
    assert [p.field for p in _problems(manifest_at)] == ["publik"]


def test_validate_names_every_kind_it_reads_when_a_file_names_none(tmp_path: Path) -> None:
    other = tmp_path / "other.json"
    other.write_text('{"schema": "x"}', encoding="utf-8")
    [problem] = _problems_of_kind(other)
    for schema in ("publication-v0.1", "sources-v0.1", "declarations-v0.1"):
        assert f"symgliph.eceb/{schema}" in problem.message


def _problems_of_kind(path: Path) -> list[Problem]:
    with pytest.raises(InputError) as caught:
        kind_of(path)
    return caught.value.problems


def test_a_run_against_a_broken_benchmark_says_its_checks_against_it_wait(tmp_path: Path) -> None:
    from eceb_worker.pipeline.inputs import WAITING_FOR_BENCHMARK

    broken = tmp_path / "benchmark.json"
    text = (SEED / "benchmark.json").read_text(encoding="utf-8").replace('"public"', '"publik"', 1)
    broken.write_text(text, encoding="utf-8")
    (tmp_path / "registry.jsonl").write_bytes((SEED / "registry.jsonl").read_bytes())
    result = subprocess.run(
        [sys.executable, "-m", "eceb_cli", "validate", str(SEED / "run.json"), "--benchmark", str(broken)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 3
    assert "'publik'" in result.stderr
    assert f"{SEED / 'run.json'}: {WAITING_FOR_BENCHMARK}" in result.stderr
