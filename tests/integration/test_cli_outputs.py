"""Where ``-o`` writes, for every command that takes it: never over one of
the command's inputs (whatever the spelling of the path), ``-`` for
standard output, only into a directory that exists, never to a URL."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from eceb_cli import exit_codes
from eceb_cli.dist import main as dist_main
from eceb_cli.main import main
from tests.support.helpers import invoke
from tests.support.paths import REPO

SEED = REPO / "examples" / "enterprise-seed"


def run(*args: str) -> tuple[int, bytes, str]:
    result = invoke(main, *args)
    return result.exit_code, result.stdout_bytes, result.stderr


@pytest.fixture
def seed(tmp_path: Path) -> Path:
    """A copy of the seed (benchmark, run, registry, rules, corpus)."""
    target = tmp_path / "seed"
    shutil.copytree(SEED, target)
    return target


def evaluate(seed: Path, output: str | Path) -> tuple[int, bytes, str]:
    return run(
        "evaluate",
        str(seed / "benchmark.json"),
        str(seed / "run.json"),
        "--corpus",
        str(seed / "corpus"),
        "--workers",
        "1",
        "-o",
        str(output),
    )


def spellings(seed: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The input ``seed/name`` as the same path, relative, through a symbolic
    link to it or to its directory, and as a hard link."""
    target = seed / name
    (seed / "link.json").symlink_to(target)
    (seed.parent / "dir-link").symlink_to(seed, target_is_directory=True)
    os.link(target, seed / "hard.json")
    monkeypatch.chdir(seed)
    return [str(target), name, f"./sub/../{name}", str(seed / "link.json"), f"../dir-link/{name}", "hard.json"]


@pytest.mark.parametrize("name", ["run.json", "benchmark.json", "registry.jsonl"])
def test_evaluate_refuses_to_write_over_an_input(seed: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (seed / "sub").mkdir()
    before = (seed / name).read_bytes()
    for output in spellings(seed, name, monkeypatch):
        code, out, err = evaluate(seed, output)
        assert code == exit_codes.OUTPUT, (output, err)
        assert f"is the input {seed / name}" in err or f"is the input {name}" in err, err
        assert out == b""
        assert (seed / name).read_bytes() == before


def test_evaluate_refuses_to_write_over_a_registered_artifact(seed: Path) -> None:
    artifact = seed / "corpus" / "runbook" / "disk-full.md"
    before = artifact.read_bytes()
    code, _, err = evaluate(seed, artifact)
    assert code == exit_codes.OUTPUT, err
    assert "registered artifact runbook/disk-full.md" in err
    assert artifact.read_bytes() == before


def test_register_refuses_its_rules_and_its_corpus(seed: Path) -> None:
    rules = seed / "rules.toml"
    before = rules.read_bytes()
    for output in (rules, seed / "corpus" / "registry.jsonl", seed / "corpus" / "runbook" / "disk-full.md"):
        code, _, err = run("corpus", "register", str(seed / "corpus"), "--rules", str(rules), "-o", str(output))
        assert code == exit_codes.OUTPUT, (output, err)
        assert rules.read_bytes() == before
    assert not (seed / "corpus" / "registry.jsonl").exists()


def test_dash_writes_standard_output(seed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = evaluate(seed, "-")
    assert code == exit_codes.TASKS_FAILED, err
    assert evaluate(seed, tmp_path / "report.json")[0] == exit_codes.TASKS_FAILED
    assert out == (tmp_path / "report.json").read_bytes()
    assert "8/15 tasks pass" in err
    assert not Path("-").exists()
    code, out, err = run("corpus", "register", str(seed / "corpus"), "--rules", str(seed / "rules.toml"), "-o", "-")
    assert code == exit_codes.OK, err
    assert out == (SEED / "registry.jsonl").read_bytes()
    assert "corpus root" in err


def test_missing_directories_are_not_created(seed: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "dir" / "x.json"
    code, _, err = evaluate(seed, missing)
    assert code == exit_codes.OUTPUT
    assert f"{missing}: directory {tmp_path / 'missing' / 'dir'} does not exist" in err
    rules = str(seed / "rules.toml")
    code, _, err = run("corpus", "register", str(seed / "corpus"), "--rules", rules, "-o", str(missing))
    assert code == exit_codes.OUTPUT
    result = invoke(dist_main, "result", "0" * 32, "-o", str(missing))
    assert result.exit_code == exit_codes.OUTPUT, result.output
    assert "does not exist" in result.stderr
    assert not (tmp_path / "missing").exists()


def test_urls_are_refused_as_outputs(seed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(seed)
    code, _, err = evaluate(seed, "s3://bucket/x.json")
    assert code == exit_codes.USAGE
    assert "-o" in err and "local file" in err
    rules = str(seed / "rules.toml")
    code, _, err = run("corpus", "register", str(seed / "corpus"), "--rules", rules, "-o", "s3://bucket/r.jsonl")
    assert code == exit_codes.USAGE
    result = invoke(dist_main, "result", "0" * 32, "-o", "s3://bucket/x.json")
    assert result.exit_code == exit_codes.USAGE, result.output
    assert not (seed / "s3:").exists()


def test_an_output_never_replaces_a_fifo_and_follows_a_link(seed: Path, tmp_path: Path) -> None:
    """An output is renamed into place: what is at its path must be a regular
    file or nothing. A FIFO stays and is refused (a device is refused by the
    same test of the file's type; none is used here, as a failing run would
    replace it); a symbolic link stays and the file it names is written."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    args = ("evaluate", str(seed / "benchmark.json"), str(seed / "run.json"), "--corpus", str(seed / "corpus"), "-o")
    code, _, err = run(*args, str(fifo))
    assert code == exit_codes.OUTPUT, err
    assert "is not a regular file" in err
    assert fifo.is_fifo()
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    code, _, err = run(*args, str(link))
    assert code == exit_codes.TASKS_FAILED, err
    assert link.is_symlink()
    assert b'"passing_tasks":8' in (tmp_path / "elsewhere.json").read_bytes()
