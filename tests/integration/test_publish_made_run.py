"""``eceb publish`` of a run made by ``eceb run`` (ECEB-0.1 §9, §15, §16):
its transcripts and judgments, found beside the run, and its rubric
(``--rubric``) bundled and bound; ``--check`` verifying them and naming each
judgment that does not agree with the run by its line; an empirical
model-quality claim refused without its judgments or rubric; transcripts of
a corpus that may not be redistributed refused unless left out."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import blake3
import pytest

from eceb_cli import exit_codes
from tests.support.loopback_provider import running_loopback_provider
from tests.support.making import answer_script, eceb_run, write_benchmark, write_corpus, write_profile
from tests.support.paths import REPO

pytestmark = pytest.mark.integration

MADE_FILES = ("run.json", "run.transcripts.jsonl", "run.judgments.jsonl")
ANSWER = "Run pg_ctl promote on the replica."
"""The loopback model's every answer: it repeats no text of the corpus (no disclosure)."""


def eceb(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "eceb_cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        timeout=600,
    )


def write_sources(path: Path, *, redistributable: bool = True) -> Path:
    sources = {
        "schema": "symgliph.eceb/sources-v0.1",
        "corpus": "tiny-making",
        "description": "the corpus of tests/support/making.py",
        "sources": [
            {
                "name": "tiny",
                "url": "https://example.invalid/tiny",
                "revision": "r1",
                "license_spdx": "CC0-1.0",
                "redistributable": redistributable,
                "note": "",
            }
        ],
    }
    path.write_text(json.dumps(sources))
    return path


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with the tiny benchmark, its corpus, a public sources
    file, an empirical ``public_reproduction`` run made by ``eceb run``
    against the loopback provider (``made/run.json`` and, beside it, its
    transcripts and judgments), the judge's ``rubric.md`` and the report
    (its answers disclose nothing)."""
    root = tmp_path_factory.mktemp("made")
    write_corpus(root)
    write_benchmark(root)
    (root / "made").mkdir()
    with running_loopback_provider(root / "provider", answer_script(answer=ANSWER)) as provider:
        write_profile(root, provider.openai_base_url, claim_class="public_reproduction", non_empirical=False)
        done = eceb_run(root, "-o", str(root / "made" / "run.json"))
    assert done.returncode == 0, done.stderr
    assert all((root / "made" / name).is_file() for name in MADE_FILES)
    write_sources(root / "sources.json")
    done = eceb(
        "evaluate", root / "benchmark.json", root / "made" / "run.json", "--corpus", root / "corpus",
        "-o", root / "report.json", "-q",
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    return root


def publish(
    made: Path, out: Path, *extra: str | Path, run: Path | None = None, sources: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return eceb(
        "publish", made / "benchmark.json", run or made / "made" / "run.json", made / "report.json",
        "--sources", sources or made / "sources.json", "--implementation-revision", "rev-1", "-o", out, *extra,
    )  # fmt: skip


def check(made: Path, bundle: Path) -> subprocess.CompletedProcess[str]:
    return eceb("publish", "--check", bundle, "--corpus", made / "corpus")


def copy_run(made: Path, to: Path, *names: str) -> Path:
    """The made run's files ``names`` copied into the new directory ``to``; returns the run's path there."""
    to.mkdir()
    for name in names:
        shutil.copyfile(made / "made" / name, to / name)
    return to / "run.json"


def rebind(bundle: Path, role: str, data: bytes) -> None:
    """Write ``data`` as the bundled file of ``role`` and bind it again: every digest matches."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    for bound in manifest["files"]:
        if bound["role"] == role:
            (bundle / bound["path"]).write_bytes(data)
            bound["size_bytes"], bound["digest"] = len(data), blake3.blake3(data).hexdigest()
    (bundle / "manifest.json").write_text(json.dumps(manifest))


def edit_judgment(lines: list[str], index: int, **changes: object) -> None:
    judgment = json.loads(lines[index])
    judgment.update(changes)
    lines[index] = json.dumps(judgment, sort_keys=True, separators=(",", ":")) + "\n"


@pytest.fixture(scope="module")
def bundle(made: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundles") / "bundle"
    done = publish(made, out, "--rubric", made / "rubric.md")
    assert done.returncode == 0, done.stderr
    assert "8 files bound (judgments, rubric, transcripts among them)" in done.stdout
    return out


def test_a_made_run_publishes_its_transcripts_judgments_and_rubric_and_checks(made: Path, bundle: Path) -> None:
    assert sorted(p.name for p in bundle.iterdir()) == [
        "benchmark.json", "manifest.json", "registry.jsonl", "report.json", "rubric.md", "run.json",
        "run.judgments.jsonl", "run.transcripts.jsonl", "sources.json",
    ]  # fmt: skip
    manifest = json.loads((bundle / "manifest.json").read_text())
    roles = {bound["role"]: bound for bound in manifest["files"]}
    assert set(roles) >= {"transcripts", "judgments", "rubric"}
    for role, source in (
        ("transcripts", made / "made" / "run.transcripts.jsonl"),
        ("judgments", made / "made" / "run.judgments.jsonl"),
        ("rubric", made / "rubric.md"),
    ):
        data = source.read_bytes()
        assert (bundle / roles[role]["path"]).read_bytes() == data
        assert roles[role]["size_bytes"] == len(data)
        assert roles[role]["digest"] == blake3.blake3(data).hexdigest()
    assert roles["rubric"]["digest"] == manifest["configurations"][0]["judge"]["rubric_digest"]
    assert manifest["claim"] == {
        "claimed": "public_reproduction", "non_empirical": False, "run_claim_class": "public_reproduction"
    }  # fmt: skip
    done = check(made, bundle)
    assert done.returncode == 0, done.stderr
    assert "8 files bound" in done.stdout and "claim class public_reproduction supported" in done.stdout
    done = eceb("validate", bundle / "manifest.json")
    assert done.returncode == 0, done.stderr


def test_a_changed_judgment_line_is_named(made: Path, bundle: Path, tmp_path: Path) -> None:
    changed = tmp_path / "bundle"
    shutil.copytree(bundle, changed)
    lines = (changed / "run.judgments.jsonl").read_text().splitlines(keepends=True)
    edit_judgment(lines, 2, quality_milli=100)
    # unbound, the change is a changed file
    (changed / "run.judgments.jsonl").write_text("".join(lines))
    done = check(made, changed)
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    assert f"{changed / 'run.judgments.jsonl'}: changed" in done.stderr
    # bound again, the line that no longer agrees with the run is named, and so is an observation left unjudged
    removed = json.loads(lines.pop(5))
    rebind(changed, "judgments", "".join(lines).encode())
    done = check(made, changed)
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    assert (
        f"{changed / 'run.judgments.jsonl'}, line 3: field 'quality_milli': is 100; the run's observation of "
        "task 'failover' compiled@120 rep 1 (observations[2]) has 900"
    ) in done.stderr
    group = f"{removed['strategy']}@{removed['budget']}" if removed["budget"] else removed["strategy"]
    assert (
        f"{changed / 'run.json'}, observations[5]: field 'quality_milli': task {removed['task_id']!r} {group} "
        f"rep {removed['repetition']} has no judgment"
    ) in done.stderr
    assert "2 reasons found." in done.stderr


def test_a_judgment_repeated_or_of_no_observation_is_named_by_line(made: Path, bundle: Path, tmp_path: Path) -> None:
    changed = tmp_path / "bundle"
    shutil.copytree(bundle, changed)
    lines = (changed / "run.judgments.jsonl").read_text().splitlines(keepends=True)
    lines.append(lines[0])
    lines.append(lines[1])
    edit_judgment(lines, len(lines) - 1, repetition=9)
    rebind(changed, "judgments", "".join(lines).encode())
    done = check(made, changed)
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    count = len(lines)
    assert f"line {count - 1}: judges task 'failover' full_permitted_context rep 1, which line 1 judges" in done.stderr
    assert f"line {count}: judges task 'failover' full_permitted_context rep 9, of which the run has no" in done.stderr


def test_a_changed_or_missing_rubric_is_named_by_check(made: Path, bundle: Path, tmp_path: Path) -> None:
    changed = tmp_path / "bundle"
    shutil.copytree(bundle, changed)
    rebind(changed, "rubric", b"Score everything 1000.\n")
    done = check(made, changed)
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    assert f"{changed / 'rubric.md'}: has BLAKE3" in done.stderr
    assert "not the rubric the run was judged by" in done.stderr
    (changed / "rubric.md").unlink()
    done = check(made, changed)
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    assert f"{changed / 'rubric.md'}: missing: the manifest binds it as the rubric" in done.stderr


def test_check_refuses_a_model_quality_claim_whose_judgments_were_taken_out(
    made: Path, bundle: Path, tmp_path: Path
) -> None:
    changed = tmp_path / "bundle"
    shutil.copytree(bundle, changed)
    manifest = json.loads((changed / "manifest.json").read_text())
    manifest["files"] = [bound for bound in manifest["files"] if bound["role"] not in ("judgments", "rubric")]
    (changed / "manifest.json").write_text(json.dumps(manifest))
    (changed / "run.judgments.jsonl").unlink()
    (changed / "rubric.md").unlink()
    done = check(made, changed)
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    assert "public_reproduction is a model-quality claim of an empirical run" in done.stderr
    assert "it needs the raw judgments, and none are bundled" in done.stderr
    assert "it needs the rubric configuration default's judge names" in done.stderr


def test_an_empirical_public_reproduction_without_its_rubric_is_refused(made: Path, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    done = publish(made, out)
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    digest = blake3.blake3((made / "rubric.md").read_bytes()).hexdigest()
    assert (
        "--claim: field 'claim.claimed': public_reproduction is a model-quality claim of an empirical run "
        f"(ECEB-0.1 §9): it needs the rubric configuration default's judge names (BLAKE3 {digest}), and none is "
        "bundled: give it with --rubric FILE"
    ) in done.stderr
    assert "raw judgments" not in done.stderr  # they were found beside the run
    assert not out.exists()
    # without the judgments beside the run, both are named
    run = copy_run(made, tmp_path / "alone", "run.json")
    done = publish(made, out, run=run)
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    assert "it needs the raw judgments, and none are bundled" in done.stderr
    assert "2 reasons found." in done.stderr
    assert not out.exists()
    # a conformance_seed claim of the same run is no model-quality claim: it publishes
    done = publish(made, out, "--claim", "conformance_seed", run=run)
    assert done.returncode == 0, done.stderr


def test_a_rubric_that_is_not_the_runs_is_bad_input(made: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-rubric.txt"
    other.write_text("Score everything 1000.\n")
    out = tmp_path / "bundle"
    done = publish(made, out, "--rubric", other)
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert f"{other}: has BLAKE3 {blake3.blake3(other.read_bytes()).hexdigest()}: not the rubric" in done.stderr
    assert not out.exists()


def test_judgments_that_disagree_with_the_run_are_bad_input(made: Path, tmp_path: Path) -> None:
    run = copy_run(made, tmp_path / "made", *MADE_FILES)
    judgments = run.with_name("run.judgments.jsonl")
    lines = judgments.read_text().splitlines(keepends=True)
    edit_judgment(lines, 0, quality_milli=0)
    lines[3] = "{not json\n"
    judgments.write_text("".join(lines))
    out = tmp_path / "bundle"
    done = publish(made, out, "--rubric", made / "rubric.md", run=run)
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert f"{judgments}, line 4:" in done.stderr
    assert not out.exists()
    lines[3] = lines[4]
    judgments.write_text("".join(lines))
    done = publish(made, out, "--rubric", made / "rubric.md", run=run)
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert f"{judgments}, line 1: field 'quality_milli': is 0;" in done.stderr
    assert f"{judgments}, line 5: judges" in done.stderr and "which line 4 judges already" in done.stderr
    assert f"{run}, observations[3]: field 'quality_milli'" in done.stderr
    assert not out.exists()


def test_a_transcripts_line_that_does_not_decode_is_bad_input(made: Path, tmp_path: Path) -> None:
    run = copy_run(made, tmp_path / "made", *MADE_FILES)
    transcripts = run.with_name("run.transcripts.jsonl")
    lines = transcripts.read_text().splitlines(keepends=True)
    record = json.loads(lines[1])
    record["call"] = "embedding"
    lines[1] = json.dumps(record) + "\n"
    transcripts.write_text("".join(lines))
    done = publish(made, tmp_path / "bundle", "--rubric", made / "rubric.md", run=run)
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr
    assert f"{transcripts}, line 2: field 'call'" in done.stderr


def test_transcripts_of_a_corpus_not_redistributable_are_refused_unless_left_out(made: Path, tmp_path: Path) -> None:
    closed = write_sources(tmp_path / "closed-sources.json", redistributable=False)
    out = tmp_path / "bundle"
    done = publish(made, out, "--claim", "conformance_seed", sources=closed)
    assert done.returncode == exit_codes.PUBLICATION_REFUSED, done.stderr
    assert f"{made / 'made' / 'run.transcripts.jsonl'}: the transcripts carry every prompt" in done.stderr
    assert "'tiny' not redistributable" in done.stderr and "--no-transcripts" in done.stderr
    assert "1 reason found." in done.stderr  # the answers disclose nothing: the transcripts alone are refused
    assert not out.exists()
    done = publish(made, out, "--claim", "conformance_seed", "--no-transcripts", sources=closed)
    assert done.returncode == 0, done.stderr
    assert not (out / "run.transcripts.jsonl").exists()
    assert (out / "run.judgments.jsonl").is_file()
    done = check(made, out)
    assert done.returncode == 0, done.stderr


def test_check_takes_no_rubric_or_no_transcripts(made: Path, bundle: Path) -> None:
    for extra in (("--rubric", made / "rubric.md"), ("--no-transcripts",)):
        done = eceb("publish", "--check", bundle, "--corpus", made / "corpus", *extra)
        assert done.returncode == exit_codes.USAGE, done.stderr
