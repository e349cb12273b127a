"""``eceb corpus diff`` through the real command line: a planted change
(one file edited, one added, one removed, one reclassified by changed
rules) named in every format, the example benchmark's tasks whose evidence
moved, ``-o``, ``-q``, registries in any line order or in object storage,
and the refusals (a bad registry or benchmark: exit 3 naming file and
line; an output that is an input: exit 6; two formats: exit 2)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from eceb_cli import exit_codes
from eceb_cli.main import main
from tests.support.helpers import artifact, invoke, registry_bytes
from tests.support.paths import EXAMPLES, REPO
from tests.support.s3_server import S3Server

SEED = EXAMPLES / "enterprise-seed"
BENCHMARK = SEED / "benchmark.json"
ADDED = "runbook/new runbook +%é.md"


def run(*args: str) -> tuple[int, str, str]:
    result = invoke(main, *args)
    return result.exit_code, result.stdout, result.stderr


@dataclass(frozen=True)
class Planted:
    """The seed's registry (``old``), and ``new``: its corpus with one file
    edited, one added, one removed and one reclassified, registered again."""

    old: Path
    new: Path


@pytest.fixture
def planted(tmp_path: Path) -> Planted:
    corpus = tmp_path / "corpus"
    shutil.copytree(SEED / "corpus", corpus)
    old = tmp_path / "old registry.jsonl"
    code, _, err = run("corpus", "register", str(corpus), "--rules", str(SEED / "rules.toml"), "-o", str(old), "-q")
    assert code == exit_codes.OK, err
    assert old.read_bytes() == (SEED / "registry.jsonl").read_bytes()
    edited = corpus / "runbook" / "db-failover.md"
    edited.write_bytes(edited.read_bytes() + b"5. Page the database owner.\n")
    (corpus / ADDED).write_text("Rotate the on-call key.\n", encoding="utf-8")
    (corpus / "issue" / "ENG-4411.md").unlink()
    rules = (SEED / "rules.toml").read_text(encoding="utf-8")
    changed = rules.replace(
        "{policy/customer-pii-handling.md,infrastructure/break-glass-access.md}", "policy/customer-pii-handling.md"
    )
    assert changed != rules
    (tmp_path / "rules.toml").write_text(changed, encoding="utf-8")
    new = tmp_path / "new.jsonl"
    code, _, err = run("corpus", "register", str(corpus), "--rules", str(tmp_path / "rules.toml"), "-o", str(new))
    assert code == exit_codes.OK, err
    return Planted(old=old, new=new)


def test_a_planted_change_is_named(planted: Planted) -> None:
    code, out, err = run("corpus", "diff", str(planted.old), str(planted.new))
    assert (code, err) == (exit_codes.OK, "")
    lines = out.splitlines()
    assert lines[0] == "1 added, 1 removed, 2 changed, 9 unchanged; corpus root changed"
    assert lines[1].startswith(f"old  {planted.old}: 12 artifacts, 3,746 bytes, corpus root 58747aa98fcc")
    assert lines[2].startswith(f"new  {planted.new}: 12 artifacts,")
    assert f"  + {ADDED} (runbook, internal, 24 bytes, source digest " in out
    assert "  - issue/ENG-4411.md (issue, internal, 234 bytes, source digest f71471ffba489b0d...)" in lines
    assert "  ~ infrastructure/break-glass-access.md: classification restricted -> internal" in lines
    [failover] = [line for line in lines if line.startswith("  ~ runbook/db-failover.md: ")]
    assert "source_digest 9783f8034c361a76... -> " in failover and "; size_bytes 381 -> 409" in failover
    assert "benchmark" not in out


def test_with_the_example_benchmark_the_tasks_are_named(planted: Planted) -> None:
    code, out, err = run("corpus", "diff", str(planted.old), str(planted.new), "--benchmark", str(BENCHMARK))
    assert (code, err) == (exit_codes.OK, "")
    lines = out.splitlines()
    assert lines[0].endswith("; benchmark corpus root no longer holds, 4 of 15 tasks affected")
    assert any(line.startswith("benchmark enterprise-seed: pins corpus root 58747aa98fcc") for line in lines)
    assert "it held for OLD and no longer holds for NEW (pin NEW's corpus root before evaluating against NEW)" in out
    tasks = {
        line.split(":", 1)[0].strip(): line.split(":", 1)[1]
        for line in lines
        if line.startswith("  ") and ": " in line and not line.startswith(("  ~", "  +", "  -"))
    }
    assert set(tasks) == {"db-failover-steps", "jpy-rounding", "pii-export-approval", "breakglass-review"}
    assert tasks["db-failover-steps"].startswith(" required runbook/db-failover.md changed (source_digest ")
    assert tasks["jpy-rounding"] == " required issue/ENG-4411.md removed"
    assert tasks["breakglass-review"] == (
        " denied infrastructure/break-glass-access.md changed (classification restricted -> internal)"
    )
    # The benchmark's own registry compared with itself: its corpus root holds, no task moved.
    code, out, _ = run("corpus", "diff", str(planted.old), str(planted.old), "--benchmark", str(BENCHMARK), "-q")
    assert (code, out) == (
        exit_codes.OK,
        "no difference: 12 artifacts unchanged; corpus root unchanged; "
        "benchmark corpus root still holds, 0 of 15 tasks affected\n",
    )


def test_json_is_the_published_document(planted: Planted, tmp_path: Path) -> None:
    code, out, err = run("corpus", "diff", str(planted.old), str(planted.new), "--benchmark", str(BENCHMARK), "--json")
    assert (code, err) == (exit_codes.OK, "")
    schema = json.loads((REPO / "schema" / "corpus-diff-v0.1.json").read_text(encoding="utf-8"))
    document = json.loads(out)
    Draft202012Validator(schema).validate(document)
    assert out.count("\n") == 1 and out.endswith("\n")
    assert document["schema"] == "symgliph.eceb/corpus-diff-v0.1"
    assert [a["artifact_id"] for a in document["added"]] == [ADDED]
    assert [a["artifact_id"] for a in document["removed"]] == ["issue/ENG-4411.md"]
    assert {c["artifact_id"]: [f["field"] for f in c["changes"]] for c in document["changed"]} == {
        "infrastructure/break-glass-access.md": ["classification"],
        "runbook/db-failover.md": ["source_digest", "size_bytes"],
    }
    benchmark = document["benchmark"]
    assert (benchmark["old_corpus_root_holds"], benchmark["corpus_root_holds"]) == (True, False)
    assert benchmark["corpus_root"] == document["old"]["corpus_root"] != document["new"]["corpus_root"]
    assert [t["task_id"] for t in benchmark["tasks"]] == sorted(
        ["breakglass-review", "db-failover-steps", "jpy-rounding", "pii-export-approval"]
    )
    # The same bytes whatever the order of the registry's lines.
    header, *lines = planted.new.read_bytes().splitlines(keepends=True)
    reversed_lines = tmp_path / "reversed.jsonl"
    reversed_lines.write_bytes(header + b"".join(reversed(lines)))
    code, again, _ = run(
        "corpus", "diff", str(planted.old), str(reversed_lines), "--benchmark", str(BENCHMARK), "--json"
    )
    assert (code, again) == (exit_codes.OK, out)


def test_markdown(planted: Planted) -> None:
    code, out, _ = run(
        "corpus", "diff", str(planted.old), str(planted.new), "--benchmark", str(BENCHMARK), "--markdown"
    )
    assert code == exit_codes.OK
    assert out.startswith("## eceb corpus diff: 1 added, 1 removed, 2 changed, 9 unchanged; corpus root changed;")
    assert "### Added (1)" in out and "### Removed (1)" in out and "### Changed (2)" in out
    assert f"| {ADDED} | {ADDED} | runbook | internal | 24 |" in out
    assert "| infrastructure/break-glass-access.md | classification | restricted | internal |" in out
    assert "### Benchmark enterprise-seed" in out and "**no longer holds** for NEW" in out
    assert "| jpy-rounding | required | issue/ENG-4411.md | removed |  |" in out


def test_output_file_quiet_and_standard_output(planted: Planted, tmp_path: Path) -> None:
    summary = "1 added, 1 removed, 2 changed, 9 unchanged; corpus root changed"
    target = tmp_path / "diff.md"
    code, out, err = run("corpus", "diff", str(planted.old), str(planted.new), "--markdown", "-o", str(target))
    assert (code, out, err) == (exit_codes.OK, f"{summary}; diff written to {target}\n", "")
    assert target.read_text(encoding="utf-8").startswith(f"## eceb corpus diff: {summary}")
    code, out, err = run("corpus", "diff", str(planted.old), str(planted.new), "--json", "-o", "-")
    assert code == exit_codes.OK and json.loads(out)["differ"] is True
    assert err == f"{summary}; diff written to standard output\n"
    code, out, err = run("corpus", "diff", str(planted.old), str(planted.new), "-q")
    assert (code, out, err) == (exit_codes.OK, summary + "\n", "")


def test_a_bad_registry_or_benchmark_is_named_by_file_and_line(planted: Planted, tmp_path: Path) -> None:
    lines = planted.new.read_bytes().splitlines(keepends=True)
    lines[2] = b'{"artifact_id": "x",\n'
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines))
    target = tmp_path / "diff.txt"
    code, out, err = run("corpus", "diff", str(planted.old), str(bad), "-o", str(target))
    assert code == exit_codes.BAD_INPUT
    assert out == "" and not target.exists()
    assert f"error: {bad}, line 3: invalid JSON at line 3" in err
    # Every problem of every input at once: both registries and the benchmark.
    code, _, err = run("corpus", "diff", str(bad), str(SEED / "run.json"), "--benchmark", str(SEED / "run.json"))
    assert code == exit_codes.BAD_INPUT
    assert f"{bad}, line 3" in err
    assert f"error: {SEED / 'run.json'}: is a run (schema 'symgliph.eceb/run-v0.1'), not a registry" in err
    assert "not a benchmark" in err and "3 problems found." in err


def test_refusals_before_reading(planted: Planted, tmp_path: Path) -> None:
    code, _, err = run("corpus", "diff", str(planted.old), str(planted.new), "-o", str(planted.new))
    assert code == exit_codes.OUTPUT and "is the input" in err
    code, _, err = run("corpus", "diff", str(planted.old), str(planted.new), "--json", "--markdown")
    assert code == exit_codes.USAGE and "exclusive" in err
    code, _, err = run("corpus", "diff", "s3://KEY:SECRET@bucket/r.jsonl", str(planted.new))
    assert code == exit_codes.USAGE and "SECRET" not in err
    code, _, err = run("corpus", "diff", str(planted.old), str(tmp_path / "absent.jsonl"))
    assert code == exit_codes.BAD_INPUT and str(tmp_path / "absent.jsonl") in err


def test_ids_and_paths_are_printed_terminal_safe(tmp_path: Path) -> None:
    plain = artifact("runbook/a.md", content=b"a")
    hostile = artifact("runbook/b.md", path="runbook/\u202eb\u200b.md", content=b"b")
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_bytes(registry_bytes(plain))
    new.write_bytes(registry_bytes(plain, hostile))
    code, out, err = run("corpus", "diff", str(old), str(new))
    assert (code, err) == (exit_codes.OK, "")
    assert "\u202e" not in out and "\u200b" not in out
    assert "  + runbook/b.md (path runbook/\\u202eb\\u200b.md, runbook, internal, 1 byte," in out
    code, out, _ = run("corpus", "diff", str(old), str(new), "--json")
    assert json.loads(out)["added"][0]["path"] == "runbook/\u202eb\u200b.md"


def test_registries_read_from_s3(planted: Planted, s3_server: S3Server, s3_bucket: str) -> None:
    client = s3_server.client()
    keys = {"old": "nightly/last night +%é.jsonl", "new": "nightly/tonight.jsonl", "benchmark": "seed/benchmark.json"}
    client.put_object(Bucket=s3_bucket, Key=keys["old"], Body=planted.old.read_bytes())
    client.put_object(Bucket=s3_bucket, Key=keys["new"], Body=planted.new.read_bytes())
    client.put_object(Bucket=s3_bucket, Key=keys["benchmark"], Body=BENCHMARK.read_bytes())
    urls = {name: f"s3://{s3_bucket}/{key}" for name, key in keys.items()}
    endpoint = ("--endpoint-url", s3_server.endpoint_url)
    code, out, err = run(
        "corpus", "diff", urls["old"], urls["new"], "--benchmark", urls["benchmark"], "--json", *endpoint
    )
    assert code == exit_codes.OK, err
    _, local, _ = run("corpus", "diff", str(planted.old), str(planted.new), "--benchmark", str(BENCHMARK), "--json")
    assert out == local
    code, out, _ = run("corpus", "diff", urls["old"], urls["new"], *endpoint)
    assert out.splitlines()[1].startswith(f"old  {urls['old']}: 12 artifacts")
    missing = f"s3://{s3_bucket}/nightly/none.jsonl"
    code, out, err = run("corpus", "diff", urls["old"], missing, *endpoint)
    assert code == exit_codes.BAD_INPUT and missing in err
    for secret in s3_server.secrets:
        assert secret not in out + err
