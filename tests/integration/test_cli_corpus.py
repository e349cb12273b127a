"""``eceb corpus register|root|verify`` through the real command line: outputs and exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eceb_cli import exit_codes
from eceb_cli.main import main
from tests.support.helpers import invoke

RULES = """
schema = "symgliph.eceb/rules-v0.1"
exclude = ["**/*.tmp"]
[[rule]]
glob = "runbook/**"
kind = "runbook"
classification = "internal"
[[rule]]
glob = "policy/**"
kind = "policy"
classification = "restricted"
"""


def run(*args: str) -> tuple[int, str, str]:
    result = invoke(main, *args)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    for name, text in {
        "runbook/disk-full.md": "Free space on /var.\n",
        "runbook/oom.md": "Raise the memory limit.\n",
        "policy/access.md": "Restricted data stays in region.\n",
        "policy/scratch.tmp": "ignored",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (tmp_path / "rules.toml").write_text(RULES)
    return root


def register(tmp_path: Path, corpus: Path) -> Path:
    registry = tmp_path / "registry.jsonl"
    code, _out, err = run(
        "corpus", "register", str(corpus), "--rules", str(tmp_path / "rules.toml"), "-o", str(registry)
    )
    assert code == exit_codes.OK, err
    return registry


def test_register_root_verify(tmp_path: Path, corpus: Path) -> None:
    registry = register(tmp_path, corpus)
    lines = registry.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["artifact_count"] == 3
    assert [json.loads(line)["artifact_id"] for line in lines[1:]] == [
        "policy/access.md",
        "runbook/disk-full.md",
        "runbook/oom.md",
    ]
    code, out, _ = run("corpus", "root", str(registry))
    assert (code, out.strip()) == (0, header["corpus_root"])
    code, out, _ = run(
        "corpus", "verify", str(registry), "--source", str(corpus), "--rules", str(tmp_path / "rules.toml")
    )
    assert code == exit_codes.OK
    assert "verified: 3/3 artifacts" in out
    assert "0 files not in the registry" in out


def test_an_unregistered_file_fails_verification_by_name_never_content(tmp_path: Path, corpus: Path) -> None:
    registry = register(tmp_path, corpus)
    rules = ("--rules", str(tmp_path / "rules.toml"))
    (corpus / "policy/extra.md").write_text("new secret doc\n")
    code, out, err = run("corpus", "verify", str(registry), "--source", str(corpus), *rules)
    assert code == exit_codes.VERIFICATION_FAILED
    assert "UNREGISTERED  policy/extra.md  not in the registry" in err
    assert "FAILED: 3/3 artifacts match" in out
    assert "1 file not in the registry" in out
    assert "secret" not in out + err
    code, out, err = run("corpus", "verify", str(registry), "--source", str(corpus), "--json", *rules)
    assert code == exit_codes.VERIFICATION_FAILED
    report = json.loads(out)
    assert report["findings"] == []
    assert report["unregistered"] == {"count": 1, "excluded": 1, "fail": True, "paths": ["policy/extra.md"]}
    assert "secret" not in out + err
    # Reported only: exit 0, still named.
    code, out, err = run("corpus", "verify", str(registry), "--source", str(corpus), "--unregistered", "report", *rules)
    assert code == exit_codes.OK
    assert "unregistered  policy/extra.md" in err
    assert "verified: 3/3 artifacts match" in out
    assert "1 file not in the registry (reported only)" in out
    # Not looked for: the report as before, without the field.
    code, out, _ = run("corpus", "verify", str(registry), "--source", str(corpus), "--json", "--unregistered", "ignore")
    assert code == exit_codes.OK
    assert "unregistered" not in json.loads(out)


def test_files_the_rules_exclude_are_unregistered_unless_the_rules_are_given(tmp_path: Path, corpus: Path) -> None:
    registry = register(tmp_path, corpus)
    code, out, err = run("corpus", "verify", str(registry), "--source", str(corpus), "--json")
    assert code == exit_codes.VERIFICATION_FAILED
    assert json.loads(out)["unregistered"]["paths"] == ["policy/scratch.tmp"]
    code, out, _ = run(
        "corpus", "verify", str(registry), "--source", str(corpus), "--json", "--rules", str(tmp_path / "rules.toml")
    )
    assert code == exit_codes.OK
    assert json.loads(out)["unregistered"] == {"count": 0, "excluded": 1, "fail": True, "paths": []}
    # Rules that exclude everything hide nothing unseen: how many they left out is said.
    everything = tmp_path / "everything.toml"
    everything.write_text(
        (tmp_path / "rules.toml").read_text(encoding="utf-8").replace("exclude = [", 'exclude = ["**", ', 1),
        encoding="utf-8",
    )
    code, out, _ = run("corpus", "verify", str(registry), "--source", str(corpus), "--rules", str(everything))
    assert code == exit_codes.OK
    listed = sum(1 for path in corpus.rglob("*") if path.is_file())
    assert f"0 files not in the registry ({listed} more left out by the rules' exclude globs)" in out
    bad = tmp_path / "bad.toml"
    bad.write_text('schema = "symgliph.eceb/rules-v0.1"\n[[rule]]\nglob = "**"\nkind = "wiki"\n')
    code, _, err = run("corpus", "verify", str(registry), "--source", str(corpus), "--rules", str(bad))
    assert code == exit_codes.BAD_INPUT
    assert "bad.toml" in err


def test_unregistered_files_shown_are_capped_with_a_count_of_the_rest(tmp_path: Path, corpus: Path) -> None:
    registry = register(tmp_path, corpus)
    rules = ("--rules", str(tmp_path / "rules.toml"))
    (corpus / "new").mkdir()
    for number in range(25):
        (corpus / f"new/{number:02d}.md").write_text("x")
    (corpus / "new/a\x1b[31mb.md").write_text("x")  # printed escaped
    code, out, err = run("corpus", "verify", str(registry), "--source", str(corpus), *rules)
    assert code == exit_codes.VERIFICATION_FAILED
    lines = [line for line in err.splitlines() if line.startswith("UNREGISTERED")]
    assert lines == [f"UNREGISTERED  new/{n:02d}.md  not in the registry" for n in range(10)]
    assert "... and 16 more not in the registry (--json lists them all)" in err
    assert "\x1b" not in out + err
    assert "26 files not in the registry" in out
    code, out, _ = run("corpus", "verify", str(registry), "--source", str(corpus), "--json", *rules)
    found = json.loads(out)["unregistered"]
    assert found["count"] == 26
    assert found["paths"][-1] == "new/a\\x1b[31mb.md"


def test_register_is_deterministic(tmp_path: Path, corpus: Path) -> None:
    first = register(tmp_path, corpus).read_bytes()
    assert register(tmp_path, corpus).read_bytes() == first


def test_unmatched_files_are_all_listed_and_nothing_is_written(tmp_path: Path, corpus: Path) -> None:
    (corpus / "notes").mkdir()
    (corpus / "notes/a.md").write_text("a")
    (corpus / "notes/b.md").write_text("b")
    output = tmp_path / "registry.jsonl"
    code, _, err = run("corpus", "register", str(corpus), "--rules", str(tmp_path / "rules.toml"), "-o", str(output))
    assert code == exit_codes.BAD_INPUT
    assert "2 files under notes/: no rule gives them a kind and a classification: notes/a.md, notes/b.md" in err
    assert not output.exists()
    assert list(tmp_path.glob(".registry.jsonl*")) == []


def test_files_no_rule_classifies_are_grouped_by_directory_with_counts(tmp_path: Path, corpus: Path) -> None:
    """Each group: its directory, what its files lack, their count, the first
    three named; a group of one file keeps its own problem; other problems
    stay beside them; ``-v`` lists every file, one problem a line."""
    for number in range(40):
        (corpus / f"wiki/team{number % 4}/page{number:02d}.md").parent.mkdir(parents=True, exist_ok=True)
        (corpus / f"wiki/team{number % 4}/page{number:02d}.md").write_text("x")
    (corpus / "TOP.md").write_text("x")
    (corpus / "LICENSE").write_text("x")
    (corpus / "runbook/bad\\name.md").write_text("x")  # not portable: its own problem
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES + '[[rule]]\nglob = "wiki/team0/**"\nkind = "chat"\n')
    output = tmp_path / "registry.jsonl"
    code, _, err = run("corpus", "register", str(corpus), "--rules", str(rules), "-o", str(output))
    assert code == exit_codes.BAD_INPUT
    assert not output.exists()
    lines = err.splitlines()
    assert lines[-1] == "4 problems found."
    assert "runbook/bad\\name.md" in lines[0]
    assert lines[1:4] == [
        f"error: {rules}, 2 files at the top level: no rule gives them a kind and a classification: "
        "LICENSE, TOP.md (-v lists every file)",
        f"error: {rules}, 10 files under wiki/: field 'classification': no rule gives them a classification: "
        "wiki/team0/page00.md, wiki/team0/page04.md, wiki/team0/page08.md and 7 more (-v lists every file)",
        f"error: {rules}, 30 files under wiki/: no rule gives them a kind and a classification: "
        "wiki/team1/page01.md, wiki/team1/page05.md, wiki/team1/page09.md and 27 more (-v lists every file)",
    ]
    code, _, err = run("corpus", "register", str(corpus), "--rules", str(rules), "-o", str(output), "-v")
    assert code == exit_codes.BAD_INPUT
    assert err.splitlines()[-1] == f"{1 + 2 * 2 + 30 * 2 + 10} problems found."
    assert f"error: {rules}, wiki/team3/page39.md: field 'kind': no rule gives this file a kind" in err


def test_register_refuses_escaping_symlinks(tmp_path: Path, corpus: Path) -> None:
    (tmp_path / "outside.md").write_text("x")
    (corpus / "runbook/link.md").symlink_to(tmp_path / "outside.md")
    code, _, err = run(
        "corpus", "register", str(corpus), "--rules", str(tmp_path / "rules.toml"), "-o", str(tmp_path / "r.jsonl")
    )
    assert code == exit_codes.BAD_INPUT
    assert "runbook/link.md" in err
    assert "outside corpus" in err


def test_tampered_copy_fails_naming_exactly_the_changed_artifacts(tmp_path: Path, corpus: Path) -> None:
    registry = register(tmp_path, corpus)
    copy = tmp_path / "copy"
    shutil.copytree(corpus, copy)
    (copy / "runbook/oom.md").write_text("Tampered.\n")
    (copy / "policy/access.md").unlink()
    code, out, err = run("corpus", "verify", str(registry), "--source", str(copy), "--json")
    assert code == exit_codes.VERIFICATION_FAILED
    report = json.loads(out)
    assert {(f["path"], f["status"]) for f in report["findings"]} == {
        ("runbook/oom.md", "stale"),
        ("policy/access.md", "missing"),
    }
    assert report["verified_count"] == 1
    code, out, err = run("corpus", "verify", str(registry), "--source", str(copy))
    assert code == exit_codes.VERIFICATION_FAILED
    assert "STALE  runbook/oom.md" in err
    assert "MISSING  policy/access.md" in err
    assert "FAILED: 1/3" in out


def test_bad_registry_is_bad_input(tmp_path: Path, corpus: Path) -> None:
    registry = register(tmp_path, corpus)
    registry.write_text(registry.read_text().replace('"kind":"runbook"', '"kind":"wiki"'))
    code, _, err = run("corpus", "verify", str(registry), "--source", str(corpus))
    assert code == exit_codes.BAD_INPUT
    assert err.count("'wiki' is not one of") == 2
    assert "line 3" in err
    assert "line 4" in err


def test_missing_registry_file_is_bad_input(tmp_path: Path) -> None:
    code, _, err = run("corpus", "root", str(tmp_path / "nope.jsonl"))
    assert code == exit_codes.BAD_INPUT
    assert "nope.jsonl" in err


def test_missing_source_directory_is_storage_error(tmp_path: Path, corpus: Path) -> None:
    registry = register(tmp_path, corpus)
    code, _, err = run("corpus", "verify", str(registry), "--source", str(tmp_path / "absent"))
    assert code == exit_codes.STORAGE
    assert "absent" in err


def test_usage_error_exit_code() -> None:
    code, _, _ = run("corpus", "verify")
    assert code == exit_codes.USAGE


def test_invalid_endpoint_is_storage_error_without_echoing_it(tmp_path: Path, corpus: Path) -> None:
    registry = register(tmp_path, corpus)
    for endpoint in ("ftp://host", "http://127.0.0.1:99999", "http://127.0.0.1:abc"):
        code, out, err = run(
            "corpus", "verify", str(registry), "--source", "s3://bucket/prefix", "--endpoint-url", endpoint
        )
        assert code == exit_codes.STORAGE, endpoint
        assert "invalid S3 endpoint URL" in err
    # An endpoint holding credentials is refused before anything (the one rule of eceb_worker.core.urls).
    code, out, err = run(
        "corpus", "verify", str(registry), "--source", "s3://bucket/prefix", "--endpoint-url", "ftp://user:secret@host"
    )
    assert code == exit_codes.USAGE
    assert "secret" not in out + err
    assert "takes no credentials" in err


def test_unwritable_output_fails_before_the_work(tmp_path: Path, corpus: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run(
        "corpus", "register", str(corpus), "--rules", str(tmp_path / "rules.toml"), "-o", str(blocker / "r.jsonl")
    )
    assert code == exit_codes.OUTPUT
    assert "not a directory" in err


def test_register_reports_every_problem_in_one_run(tmp_path: Path, corpus: Path) -> None:
    (corpus / "notes").mkdir()
    (corpus / "notes/unclassified.md").write_text("n")
    (tmp_path / "outside.md").write_text("x")
    (corpus / "runbook/escape.md").symlink_to(tmp_path / "outside.md")
    (corpus / "runbook/bad\x01name.md").write_text("c")
    code, _, err = run(
        "corpus", "register", str(corpus), "--rules", str(tmp_path / "rules.toml"), "-o", str(tmp_path / "r.jsonl")
    )
    assert code == exit_codes.BAD_INPUT
    assert "notes/unclassified.md" in err
    assert "runbook/escape.md" in err
    assert "runbook/bad\\x01name.md" in err
    assert "\x01" not in err
