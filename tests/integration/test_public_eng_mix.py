"""The real public corpus (../shared/corpora/public-eng-mix): registered, checked in, verified."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from eceb_cli import exit_codes
from eceb_cli.main import main
from tests.support.paths import REPO

EXAMPLE = REPO / "examples" / "public-eng-mix"
CORPUS = REPO.parent / "shared" / "corpora" / "public-eng-mix" / "files"


@pytest.fixture(scope="module")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"the public corpus is expected at {CORPUS} (../shared beside the checkout)")
    return CORPUS


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_checked_in_registry_is_what_register_builds(tmp_path: Path, corpus: Path) -> None:
    out = tmp_path / "registry.jsonl"
    code, _, err = invoke("corpus", "register", str(corpus), "--rules", str(EXAMPLE / "rules.toml"), "-o", str(out))
    assert code == exit_codes.OK, err
    assert out.read_bytes() == (EXAMPLE / "registry.jsonl").read_bytes()


def test_registry_covers_the_manifest_with_all_kinds_and_classifications(corpus: Path) -> None:
    import json

    lines = (EXAMPLE / "registry.jsonl").read_text().splitlines()
    artifacts = [json.loads(line) for line in lines[1:]]
    manifest = {
        row.split("\t")[0]: row.split("\t")[1] for row in (corpus.parent / "MANIFEST.tsv").read_text().splitlines()[1:]
    }
    assert {a["path"]: a["kind"] for a in artifacts} == manifest
    assert {a["classification"] for a in artifacts} == {"public", "internal", "confidential", "restricted"}


def test_verifies_from_disk(corpus: Path) -> None:
    code, out, err = invoke("corpus", "verify", str(EXAMPLE / "registry.jsonl"), "--source", str(corpus))
    assert code == exit_codes.OK, err
    assert "verified: 2419/2419" in out


def test_tampered_copy_names_exactly_the_changed_artifacts(tmp_path: Path, corpus: Path) -> None:
    copy = tmp_path / "files"
    shutil.copytree(corpus, copy)
    changed = "runbook/openshift-runbooks/alerts/cluster-monitoring-operator/KubeAPIDown.md"
    removed = "policy/github-site-policy/Policies/privacy-policies/github-general-privacy-statement.md"
    assert (copy / changed).is_file()
    assert (copy / removed).is_file()
    with (copy / changed).open("a") as f:
        f.write("\n")
    (copy / removed).unlink()
    code, _, err = invoke("corpus", "verify", str(EXAMPLE / "registry.jsonl"), "--source", str(copy))
    assert code == exit_codes.VERIFICATION_FAILED
    reported = [line.split()[1] for line in err.splitlines() if line.startswith(("STALE", "MISSING"))]
    assert sorted(reported) == sorted([changed, removed])
