"""``eceb pair summary`` over evidence changed after the real runner wrote
it: each answer-schema identity link broken on its own, a journal file
edited, deleted or added, a journal without ``attempt.json``. What is
missing or changed keeps its attempt visible and its pair from counting.

The nine pairs are the clean run of tests/support/nine_pairs.py, built
once per test process. Its records hold absolute paths, so a copy
elsewhere would itself be changed evidence: every test changes files of
the one run in place, and the ``changed`` fixture puts the experiment
directory back from its pristine copy after each test (the tests of a
module run one after another).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.digests import digest_bytes
from eceb_worker.families.paired.journal import Request
from tests.support.nine_pairs import PairsRun, attempts_of, invocation_of, nine_pairs, rebind, restore, summary_cli

LINKS = ("pair", "request", "capture", "invocation")


@pytest.fixture(scope="module")
def nine(tmp_path_factory: pytest.TempPathFactory) -> PairsRun:
    return nine_pairs(tmp_path_factory)


@pytest.fixture
def changed(nine: PairsRun) -> Iterator[PairsRun]:
    """The nine pairs, to change in place; put back after the test."""
    try:
        yield nine
    finally:
        restore(nine)


def summarized(run: PairsRun, out: Path) -> dict[str, Any]:
    assert run.bundle is not None
    shown = summary_cli(run.experiment, str(run.dir), "--assessments", str(run.bundle), out=out)
    assert shown.done.returncode == 1, shown.done.stdout
    return shown.document


def pair_of(document: dict[str, Any], position: int) -> dict[str, Any]:
    found: dict[str, Any] = next(p for p in document["pairs"] if p["position"] == position)
    return found


def only_this_pair_fails(document: dict[str, Any], position: int) -> None:
    """Every pair but ``position`` complete with both attempts passed; no verdict."""
    assert len(attempts_of(document)) == 18, "every attempt stays visible"
    for pair in document["pairs"]:
        if pair["position"] != position:
            assert pair["complete"] is True, pair["problems"]
            assert [a["outcome"] for a in pair["arms"]] == ["passed", "passed"]
    assert pair_of(document, position)["complete"] is False
    assert pair_of(document, position)["preferred"] is None
    verdict = document["verdict"]
    assert verdict["reached"] is False
    assert any("8 complete pairs" in r and "exactly 9" in r for r in verdict["reasons"]), verdict["reasons"]
    assert any(r.startswith(f"pair {position} (") and "does not count" in r for r in verdict["reasons"])
    assert metric_known(document, "credits") == 8


def metric_known(document: dict[str, Any], metric: str) -> int:
    known: int = next(m for m in document["overall"]["metrics"] if m["metric"] == metric)["known"]
    return known


def break_link(run: PairsRun, link: str, attempt: Path) -> None:
    """Break one link of ``attempt``'s answer-schema identity chain, rebinding
    the rest of the journal so that only that link breaks where possible."""
    if link == "pair":  # the pair's schema, bound by manifest.json: nothing can rebind it
        pair_schema = attempt.parent.parent / "answer.schema.json"
        pair_schema.write_bytes(pair_schema.read_bytes() + b"\n")
    elif link == "request":
        request = msgspec.json.decode((attempt / "request.json").read_bytes(), type=Request)
        moved = msgspec.structs.replace(request, pair_schema_path="./answer.schema.json")
        rebind(attempt, {"request.json": canonical_json(moved)})
    elif link == "capture":  # the captured bytes changed, and the invocation binding them
        captured = (attempt / "answer.schema.json").read_bytes() + b"\n"
        invocation = invocation_of(attempt)
        schema = msgspec.structs.replace(invocation.output_schema, blake3=digest_bytes(captured), size=len(captured))
        moved_invocation = msgspec.structs.replace(invocation, output_schema=schema)
        rebind(attempt, {"answer.schema.json": captured, "invocation.json": canonical_json(moved_invocation)})
    else:
        invocation = invocation_of(attempt)
        elsewhere = str(attempt.parent.parent / "answer.schema.json")
        schema = msgspec.structs.replace(invocation.output_schema, path=elsewhere)
        rebind(attempt, {"invocation.json": canonical_json(msgspec.structs.replace(invocation, output_schema=schema))})


@pytest.mark.parametrize("link", LINKS)
def test_each_schema_identity_link_breaks_on_its_own(changed: PairsRun, tmp_path: Path, link: str) -> None:
    pair = changed.pair(2)
    attempt = pair / "attempts" / "B"
    break_link(changed, link, attempt)
    document = summarized(changed, tmp_path / "s.json")
    only_this_pair_fails(document, 2)
    broken_arms = ("A", "B") if link == "pair" else ("B",)
    for shown in pair_of(document, 2)["arms"]:
        links = {item["link"]: item for item in shown["schema_identity"]}
        assert list(links) == list(LINKS)
        if shown["arm"] in broken_arms:
            assert [name for name, item in links.items() if not item["holds"]] == [link], links
            assert links[link]["problem"]
            assert shown["outcome"] == "unverified"
            assert f"schema identity, {link} link: {links[link]['problem']}" in shown["evidence"]
            if link != "pair":
                assert shown["evidence"] == [f"schema identity, {link} link: {links[link]['problem']}"], (
                    "only the link breaks: the rest of the journal is rebound"
                )
        else:
            assert all(item["holds"] for item in links.values())
            assert (shown["outcome"], shown["evidence"]) == ("passed", [])
    problems = pair_of(document, 2)["problems"]
    assert any(p.startswith("arm B is unverified: ") and f"{link} link" in p for p in problems), problems


@pytest.mark.parametrize(
    ("change", "file", "said"),
    [
        ("edited", "runner.stdout", "runner.stdout: changed since attempt.json bound it"),
        ("deleted", "provider.stderr", "provider.stderr: missing"),
        ("added", "notes.txt", "notes.txt: added to the journal"),
    ],
)
def test_an_edited_deleted_or_added_journal_file_keeps_the_attempt_visible(
    changed: PairsRun, tmp_path: Path, change: str, file: str, said: str
) -> None:
    attempt = changed.pair(5) / "attempts" / "A"
    path = attempt / file
    if change == "edited":
        path.write_bytes(path.read_bytes() + b"one more line\n")
    elif change == "deleted":
        path.unlink()
    else:
        path.write_text("a note nobody bound\n")
    document = summarized(changed, tmp_path / "s.json")
    only_this_pair_fails(document, 5)
    a, b = pair_of(document, 5)["arms"]
    assert a["outcome"] == "unverified" and a["state"] == "completed"
    assert any(line.startswith(said) for line in a["evidence"]), a["evidence"]
    assert all(file in line for line in a["evidence"]), a["evidence"]
    assert (b["outcome"], b["evidence"]) == ("passed", [])
    assert a["measures"] and a["credits"] is not None, "the attempt's figures stay visible"
    reasons = document["verdict"]["reasons"]
    assert any(file in reason for reason in reasons), reasons


def test_an_incomplete_journal_is_shown_incomplete(changed: PairsRun, tmp_path: Path) -> None:
    attempt = changed.pair(6) / "attempts" / "B"
    (attempt / "attempt.json").unlink()
    document = summarized(changed, tmp_path / "s.json")
    only_this_pair_fails(document, 6)
    a, b = pair_of(document, 6)["arms"]
    assert a["outcome"] == "passed"
    assert (b["state"], b["outcome"], b["ended_at"]) == ("incomplete journal", "incomplete", None)
    assert b["ledger_position"] is not None and b["started_at"] is not None, "the execution counts and stays visible"
    assert any(reason.startswith("incomplete journal") for reason in b["reasons"]), b["reasons"]
    for metric in ("input_tokens", "cached_input_tokens", "uncached_input_tokens", "output_tokens"):
        found = next(m for m in b["measures"] if m["metric"] == metric)
        assert found["value"] is None, found
        assert "partial" in found["unknown"] and "never a total" in found["unknown"], found
    credits = b["credits"]
    assert (credits["credits"], credits["unavailable"]) == (None, "incomplete_turn"), credits
    credit = next(m for m in b["measures"] if m["metric"] == "credits")
    assert credit["value"] is None and credit["unknown"]
    problems = pair_of(document, 6)["problems"]
    assert any(p.startswith("arm B is incomplete: incomplete journal") for p in problems), problems
