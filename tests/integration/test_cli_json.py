"""``--json`` where a person might script the output: each prints one JSON
object on standard output that says what the text says, and nothing else."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.paired_experiment import make_bench
from tests.support.paths import REPO

SEED = REPO / "examples" / "enterprise-seed"


def _eceb(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eceb_cli", *args], capture_output=True, text=True, check=False)


def _one_object(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1, done.stdout
    found = json.loads(done.stdout)
    assert isinstance(found, dict)
    return found


def test_validate_json_names_the_roots_the_text_names() -> None:
    text = _eceb("validate", str(SEED / "benchmark.json"))
    found = _one_object(_eceb("validate", str(SEED / "benchmark.json"), "--json"))
    assert found["kind"] == "benchmark" and found["valid"] is True and found["task_count"] == 15
    assert f"task root {found['task_root']}" in text.stdout and f"corpus root {found['corpus_root']}" in text.stdout
    run = _one_object(_eceb("validate", str(SEED / "run.json"), "--json"))
    assert run["kind"] == "run" and run["valid"] is True


def test_an_invalid_file_with_json_prints_nothing_on_stdout(tmp_path: Path) -> None:
    bad = tmp_path / "run.json"
    bad.write_text('{"schema": "symgliph.eceb/run-v0.1"}', encoding="utf-8")
    done = _eceb("validate", str(bad), "--json")
    assert done.returncode == 3 and done.stdout == "" and "problem" in done.stderr


def test_corpus_root_and_register_json(tmp_path: Path) -> None:
    root = _one_object(_eceb("corpus", "root", str(SEED / "registry.jsonl"), "--json"))
    assert root["artifact_count"] == 12
    out = tmp_path / "registry.jsonl"
    registered = _one_object(
        _eceb("corpus", "register", str(SEED / "corpus"), "--rules", str(SEED / "rules.toml"), "-o", str(out), "--json")
    )
    assert registered["corpus_root"] == root["corpus_root"] and registered["artifact_count"] == 12
    assert registered["registry"] == str(out) and out.exists()
    refused = _eceb(
        "corpus", "register", str(SEED / "corpus"), "--rules", str(SEED / "rules.toml"), "-o", "-", "--json"
    )
    assert refused.returncode == 2 and "--json" in refused.stderr


def test_register_quiet_prints_only_the_corpus_root(tmp_path: Path) -> None:
    out = tmp_path / "registry.jsonl"
    done = _eceb("corpus", "register", str(SEED / "corpus"), "--rules", str(SEED / "rules.toml"), "-o", str(out), "-q")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"corpus root {_root(out)}"]


def _root(registry: Path) -> str:
    return str(_one_object(_eceb("corpus", "root", str(registry), "--json"))["corpus_root"])


def test_pair_freeze_and_prepare_json(tmp_path: Path) -> None:
    bench = make_bench(tmp_path)
    frozen = bench.eceb("freeze", bench.benchmark, "--repo", bench.repository, "--into", bench.experiment, "--json")
    found = _one_object(frozen)
    assert Path(str(found["freeze"])).resolve() == (bench.experiment / "freeze.json").resolve()
    assert len(str(found["freeze_digest"])) == 64 and found["replaced"] is False
    prepared = _one_object(bench.eceb("prepare", bench.experiment, "--json"))
    directory = Path(str(prepared["directory"]))
    assert (directory / "manifest.json").exists()
    assert prepared["pair"] == 1 and prepared["pilot"] is True
    assert {arm["arm"] for arm in prepared["arms"]} == {"A", "B"}  # type: ignore[attr-defined]
