"""``eceb publish`` and ``eceb publish --check`` on real files: bundles of
both examples built into temporary directories and verified, every bound
file changed by one byte, removed or joined by another, overclaimed
classes, outputs that are inputs and hostile manifests (ECEB-0.1 §15, §16)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import blake3
import pytest

from eceb_cli import exit_codes
from tests.support.paths import EXAMPLES, REPO, SHARED

SEED = EXAMPLES / "enterprise-seed"
PUBLIC = EXAMPLES / "public-eng-mix"
CORPORA = {"enterprise-seed": SEED / "corpus", "public-eng-mix": SHARED / "corpora" / "public-eng-mix" / "files"}


def eceb(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eceb_cli", *map(str, args)], capture_output=True, text=True, cwd=REPO, check=False
    )


def report_of(example: Path, tmp_path: Path, run: Path | None = None) -> Path:
    report = tmp_path / f"{example.name}-report.json"
    done = eceb(
        "evaluate", example / "benchmark.json", run or example / "run.json", "--corpus", CORPORA[example.name],
        "-o", report, "-q",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return report


def publish(
    example: Path, report: Path, out: Path, *extra: str | Path, run: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return eceb(
        "publish", example / "benchmark.json", run or example / "run.json", report,
        "--sources", example / "sources.json", "--implementation-revision", "rev-1", "-o", out, *extra,
    )  # fmt: skip


def check(bundle: Path, corpus: Path = CORPORA["enterprise-seed"]) -> subprocess.CompletedProcess[str]:
    return eceb("publish", "--check", bundle, "--corpus", corpus)


@pytest.fixture
def seed_bundle(tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle"
    done = publish(SEED, report_of(SEED, tmp_path), bundle)
    assert done.returncode == 0, done.stderr
    return bundle


@pytest.mark.parametrize("example", [SEED, PUBLIC], ids=lambda p: p.name)
def test_publish_then_check_passes_on_both_examples(example: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    done = publish(example, report_of(example, tmp_path), bundle)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in bundle.iterdir()) == [
        "benchmark.json", "manifest.json", "registry.jsonl", "report.json", "run.json", "sources.json",
    ]  # fmt: skip
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["schema"] == "symgliph.eceb/publication-v0.1"
    claim = {"claimed": "conformance_seed", "non_empirical": True, "run_claim_class": "conformance_seed"}
    assert manifest["claim"] == claim
    assert manifest["uncertainty"]["method"] == "bootstrap_percentile"
    assert manifest["uncertainty"]["statement"].startswith("95.00 % bootstrap percentile intervals (1,000 resamples)")
    assert manifest["incidents"]["declared"] is False
    assert manifest["human_review"]["status"] == "none"
    assert manifest["licences"]["public"] is True
    assert (bundle / "run.json").read_bytes() == (example / "run.json").read_bytes()
    done = check(bundle, CORPORA[example.name])
    assert done.returncode == 0, done.stderr
    assert "recomputed byte for byte" in done.stdout


def test_the_seed_bundle_states_its_retries_and_failed_tasks(seed_bundle: Path) -> None:
    manifest = json.loads((seed_bundle / "manifest.json").read_text())
    run = json.loads((SEED / "run.json").read_text())
    retries = [a for a in run["auxiliary_costs"] if a["kind"] == "retry"]
    assert retries and len(manifest["incidents"]["retries"]) == len(retries)
    assert manifest["incidents"]["failed_tasks"] == sorted(
        [
            "pii-export-approval",
            "pii-export-expiry",
            "vpc-subnet-zone",
            "breakglass-review",
            "incident-timeline",
            "zero-token-baseline",
            "model-swap",
        ]
    )
    assert manifest["measurements"]["observations"] == len(run["observations"])


def test_a_changed_byte_in_each_bound_file_is_named_together(seed_bundle: Path) -> None:
    bound = [f["path"] for f in json.loads((seed_bundle / "manifest.json").read_text())["files"]]
    assert len(bound) == 5
    for name in bound:
        path = seed_bundle / name
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x01
        path.write_bytes(bytes(data))
    done = check(seed_bundle)
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    for name in bound:
        assert f"{seed_bundle / name}: changed" in done.stderr
    assert "5 reasons found." in done.stderr


def test_a_missing_and_an_added_file_are_named_together(seed_bundle: Path) -> None:
    (seed_bundle / "sources.json").unlink()
    (seed_bundle / "notes.txt").write_text("not bound\n")
    (seed_bundle / "sub").mkdir()
    (seed_bundle / "sub" / "extra.json").write_text("{}")
    done = check(seed_bundle)
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    assert f"{seed_bundle / 'sources.json'}: missing" in done.stderr
    assert f"{seed_bundle / 'notes.txt'}: added" in done.stderr
    assert f"{seed_bundle / 'sub/extra.json'}: added" in done.stderr


def rebind_report(bundle: Path, report: dict[str, Any]) -> None:
    """Write ``report`` into ``bundle`` as canonical JSON and bind it again in
    the manifest: every digest matches, the report is what was edited."""
    data = (json.dumps(report, sort_keys=True, separators=(",", ":")) + "\n").encode()
    (bundle / "report.json").write_bytes(data)
    manifest = json.loads((bundle / "manifest.json").read_text())
    for bound in manifest["files"]:
        if bound["role"] == "report":
            bound["size_bytes"], bound["digest"] = len(data), blake3.blake3(data).hexdigest()
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def test_a_report_that_does_not_recompute_is_named(seed_bundle: Path) -> None:
    # The bundled report changed and bound again: every digest matches, but it is not what the corpus makes.
    report = json.loads((seed_bundle / "report.json").read_text())
    report["eceb_version"] = "0.0.9"
    rebind_report(seed_bundle, report)
    done = check(seed_bundle)
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    assert "does not recompute byte for byte" in done.stderr
    assert "field 'eceb_version'" in done.stderr


def test_an_edited_manifest_field_is_named(seed_bundle: Path) -> None:
    path = seed_bundle / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["roots"]["task_root"] = "0" * 64
    manifest["human_review"]["status"] = "full"
    path.write_text(json.dumps(manifest))
    done = check(seed_bundle)
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    assert "field 'roots.task_root'" in done.stderr
    assert "field 'human_review.status'" in done.stderr


def test_publish_refuses_public_reproduction_for_the_non_empirical_seed_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    done = publish(SEED, report_of(SEED, tmp_path), out, "--claim", "public_reproduction")
    assert done.returncode == exit_codes.PUBLICATION_REFUSED
    assert "stronger than the run's own claim class conformance_seed" in done.stderr
    assert "needs an empirical run" in done.stderr
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_check_refuses_a_manifest_that_claims_more_than_its_run(seed_bundle: Path) -> None:
    path = seed_bundle / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["claim"]["claimed"] = "enterprise_proxy"
    path.write_text(json.dumps(manifest))
    done = check(seed_bundle)
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    assert "enterprise_proxy is stronger than the run's own claim class" in done.stderr
    assert "enterprise_proxy needs an empirical run" in done.stderr


def _validated_run(tmp_path: Path, review: str) -> Path:
    run = json.loads((SEED / "run.json").read_text())
    run["claim_class"], run["non_empirical"] = "enterprise_validated", False
    for configuration in run["configurations"]:
        configuration["judge"]["human_review"] = review
    path = tmp_path / f"run-{review}.json"
    path.write_text(json.dumps(run))
    return path


def test_enterprise_validated_needs_human_review_and_declared_controls(tmp_path: Path) -> None:
    run = _validated_run(tmp_path, "none")
    report = report_of(SEED, tmp_path, run)
    out = tmp_path / "bundle"
    done = publish(SEED, report, out, "--claim", "enterprise_validated", run=run)
    assert done.returncode == exit_codes.PUBLICATION_REFUSED
    for needed in ("declared sampling", "declared authorization", "declared reproducibility"):
        assert needed in done.stderr
    assert "configuration primary's judge has 'none'" in done.stderr
    assert "configuration small-model's judge has 'none'" in done.stderr
    assert "empirical" not in done.stderr and "stronger" not in done.stderr
    assert not out.exists()


def test_enterprise_validated_with_its_evidence_publishes_and_checks(tmp_path: Path) -> None:
    run = _validated_run(tmp_path, "sampled")
    report = report_of(SEED, tmp_path, run)
    declarations = tmp_path / "declarations.json"
    declarations.write_text(
        json.dumps(
            {
                "schema": "symgliph.eceb/declarations-v0.1",
                "sampling": "every task of the seed",
                "authorization": "synthetic data; no authorization needed",
                "reproducibility": "pinned model revisions, seed 7",
                "exclusions": [{"task_id": "model-swap", "strategy": "naive_top_k", "reason": "not recorded"}],
                "timeouts": [
                    {"task_id": "db-failover-steps", "strategy": "compiled", "budget": 256, "description": "retried"}
                ],
            }
        )
    )
    out = tmp_path / "bundle"
    done = publish(SEED, report, out, "--claim", "enterprise_validated", "--declarations", declarations, run=run)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["incidents"]["declared"] is True
    assert manifest["incidents"]["exclusions"][0]["task_id"] == "model-swap"
    assert manifest["human_review"]["status"] == "sampled"
    assert (out / "declarations.json").read_bytes() == declarations.read_bytes()
    done = check(out)
    assert done.returncode == 0, done.stderr


def _closed_sources(tmp_path: Path) -> Path:
    """The seed's sources file, its one source declared not redistributable."""
    sources = json.loads((SEED / "sources.json").read_text())
    sources["sources"][0]["redistributable"] = False
    path = tmp_path / "closed-sources.json"
    path.write_text(json.dumps(sources))
    return path


def test_answers_disclosing_restricted_text_of_a_closed_corpus_are_refused(tmp_path: Path) -> None:
    run = _validated_run(tmp_path, "sampled")
    report = report_of(SEED, tmp_path, run)
    declarations = tmp_path / "declarations.json"
    declarations.write_text(
        json.dumps(
            {
                "schema": "symgliph.eceb/declarations-v0.1",
                "sampling": "every task",
                "authorization": "synthetic data",
                "reproducibility": "seed 7",
            }
        )
    )
    out = tmp_path / "bundle"
    done = eceb(
        "publish", SEED / "benchmark.json", run, report, "--sources", _closed_sources(tmp_path),
        "--declarations", declarations, "--implementation-revision", "rev-1", "-o", out,
        "--claim", "enterprise_validated",
    )  # fmt: skip
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    assert not out.exists()
    lines = [line for line in done.stderr.splitlines() if "disclosure(s)" in line]
    assert {line.split("task ")[1].split(":")[0] for line in lines} == {
        "'pii-export-expiry'", "'breakglass-credential'"
    }  # fmt: skip
    assert "(compiled@256 rep 1, compiled@256 rep 2, compiled@512 rep 2)" in done.stderr
    assert "not redistributable" in done.stderr
    assert "run cannot be redacted" in done.stderr
    secret = (SEED / "corpus" / "infrastructure" / "break-glass-access.md").read_bytes()[177:204].decode()
    assert secret not in done.stderr and secret not in done.stdout
    # The same run, its sources redistributable: the corpus may publish the text, the bundle is written.
    done = eceb(
        "publish", SEED / "benchmark.json", run, report, "--sources", SEED / "sources.json",
        "--declarations", declarations, "--implementation-revision", "rev-1", "-o", out,
        "--claim", "enterprise_validated",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_a_report_not_checked_for_disclosures_of_a_closed_corpus_is_refused(tmp_path: Path) -> None:
    report = tmp_path / "unchecked.json"
    done = eceb(
        "evaluate", SEED / "benchmark.json", SEED / "run.json", "--corpus", CORPORA["enterprise-seed"],
        "--no-disclosure-check", "-o", report, "-q",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    out = tmp_path / "bundle"
    done = eceb(
        "publish", SEED / "benchmark.json", SEED / "run.json", report, "--sources", _closed_sources(tmp_path),
        "--implementation-revision", "rev-1", "-o", out,
    )  # fmt: skip
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    assert "evaluated with --no-disclosure-check" in done.stderr and not out.exists()


def test_output_never_overwrites_an_input(tmp_path: Path) -> None:
    report = report_of(SEED, tmp_path)
    before = report.read_bytes()
    for out in (report, SEED / "run.json", tmp_path):
        done = publish(SEED, report, out)
        assert done.returncode == exit_codes.OUTPUT, done.stderr
    assert report.read_bytes() == before


def test_bad_sources_file_is_bad_input_and_nothing_is_written(tmp_path: Path) -> None:
    sources = json.loads((SEED / "sources.json").read_text())
    sources["sources"][0]["redistributable"] = "yes"
    path = tmp_path / "sources.json"
    path.write_text(json.dumps(sources))
    out = tmp_path / "bundle"
    done = eceb(
        "publish", SEED / "benchmark.json", SEED / "run.json", report_of(SEED, tmp_path), "--sources", path,
        "--implementation-revision", "r", "-o", out,
    )  # fmt: skip
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert "sources.json, sources[0]: field 'redistributable'" in done.stderr
    assert not out.exists()


def _hostile(bundle: Path, edit: object) -> subprocess.CompletedProcess[str]:
    path = bundle / "manifest.json"
    if isinstance(edit, bytes):
        path.write_bytes(edit)
    else:
        manifest = json.loads(path.read_text())
        edit(manifest)  # type: ignore[operator]
        path.write_text(json.dumps(manifest))
    return check(bundle)


def _escape(manifest: dict) -> None:  # type: ignore[type-arg]
    manifest["files"][0]["path"] = "../outside.json"


def _wrong_type(manifest: dict) -> None:  # type: ignore[type-arg]
    manifest["files"][1]["size_bytes"] = "many"


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (b"{not json", "manifest.json"),
        (b"", "manifest.json"),
        (_wrong_type, "files[1]: field 'size_bytes'"),
        (_escape, "files[0]: field 'path'"),
        (lambda m: m.update(files="all"), "'files'"),
        (lambda m: m["files"].pop(), "binds no"),
    ],
    ids=["not-json", "empty", "wrong-type", "dot-dot", "files-not-a-list", "role-missing"],
)
def test_hostile_manifests_are_bad_input_naming_the_field(seed_bundle: Path, edit: object, named: str) -> None:
    (seed_bundle.parent / "outside.json").write_text("{}")
    done = _hostile(seed_bundle, edit)
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert named in done.stderr
    assert str(seed_bundle / "manifest.json") in done.stderr
    assert "internal error" not in done.stderr


def test_a_symbolic_link_in_the_bundle_is_bad_input(seed_bundle: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_bytes((seed_bundle / "run.json").read_bytes())
    (seed_bundle / "run.json").unlink()
    os.symlink(outside, seed_bundle / "run.json")
    done = check(seed_bundle)
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert "'run.json' is a symbolic link" in done.stderr


def test_the_manifest_missing_is_bad_input(seed_bundle: Path) -> None:
    (seed_bundle / "manifest.json").unlink()
    done = check(seed_bundle)
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert "manifest.json" in done.stderr


@pytest.mark.parametrize("example", [SEED, PUBLIC], ids=lambda p: p.name)
def test_the_committed_bundles_check(example: Path) -> None:
    done = check(example / "bundle", CORPORA[example.name])
    assert done.returncode == 0, f"{done.stderr}\nrebuild them: python examples/make_bundles.py"


def test_usage_errors() -> None:
    assert eceb("publish", "--check", SEED).returncode == exit_codes.USAGE  # no --corpus
    assert eceb("publish", SEED / "benchmark.json").returncode == exit_codes.USAGE
    assert eceb("publish", "--check", "s3://bucket/bundle", "--corpus", SEED).returncode == exit_codes.USAGE


def test_a_corpus_that_does_not_verify_is_exit_4(seed_bundle: Path, tmp_path: Path) -> None:
    import shutil

    corpus = tmp_path / "corpus"
    shutil.copytree(CORPORA["enterprise-seed"], corpus)
    changed = next(p for p in sorted(corpus.rglob("*")) if p.is_file())
    changed.write_bytes(changed.read_bytes() + b"\n")
    done = check(seed_bundle, corpus)
    assert done.returncode == exit_codes.VERIFICATION_FAILED, done.stderr
    assert changed.name in done.stderr


def test_check_json_prints_the_manifest_bytes(seed_bundle: Path) -> None:
    done = eceb("publish", "--check", seed_bundle, "--corpus", CORPORA["enterprise-seed"], "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.encode() == (seed_bundle / "manifest.json").read_bytes()


@pytest.mark.parametrize("option", ["--uncertainty=none", "--no-disclosure-check"])
def test_a_report_evaluated_with_an_option_recomputes_with_it(option: str, tmp_path: Path) -> None:
    # The report states how it was evaluated (uncertainty, disclosure_check): the check evaluates so again.
    report = tmp_path / "report.json"
    done = eceb(
        "evaluate", SEED / "benchmark.json", SEED / "run.json", "--corpus", CORPORA["enterprise-seed"],
        "-o", report, "-q", option,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    bundle = tmp_path / "bundle"
    done = publish(SEED, report, bundle)
    assert done.returncode == 0, done.stderr
    done = check(bundle)
    assert done.returncode == 0, done.stderr
    assert "recomputed byte for byte" in done.stdout


def test_a_fifo_in_the_bundle_is_named_as_one(seed_bundle: Path) -> None:
    os.mkfifo(seed_bundle / "pipe")
    done = check(seed_bundle)
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert "'pipe' is not a regular file" in done.stderr
    assert "symbolic link" not in done.stderr


def test_a_recomputed_report_names_each_differing_leaf_briefly(seed_bundle: Path) -> None:
    report = json.loads((seed_bundle / "report.json").read_text())
    report["tasks"][0]["token_savings_bps"] += 1
    rebind_report(seed_bundle, report)
    done = check(seed_bundle)
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    assert "field 'tasks[0].token_savings_bps'" in done.stderr
    assert max(map(len, done.stderr.splitlines())) < 600
