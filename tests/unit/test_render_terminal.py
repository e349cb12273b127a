"""Untrusted text at the text and Markdown edges: every id, path and
message printed to a terminal with its non-printable characters escaped
(:func:`~eceb_worker.render.terminal.printable`), in the evaluation
summary, the comparison text, error reports and ``eceb-dist status``; every
id and message of a Markdown comparison inert
(:func:`~eceb_worker.render.markdown.markdown_text`); the change of the
count of passing tasks said in words."""

from __future__ import annotations

import re
import unicodedata
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eceb_cli import console, dist_views
from eceb_worker.cluster.job_record import JobRecord, decode_job
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.comparison import Thresholds, compare_reports
from eceb_worker.families.eceb.verdicts import Assertion
from eceb_worker.render.comparison import comparison_lines, comparison_markdown, passing_change_text
from eceb_worker.render.markdown import ZERO_WIDTH_JOINER, markdown_text
from eceb_worker.render.terminal import printable
from eceb_worker.render.text import report_lines, task_lines
from tests.unit.test_comparison import OLD, report, result

pytestmark = pytest.mark.unit

HOSTILE = "t\x1b]0;owned\x07\x1b[2K\x1b[1A\rPASS  t: fine\u202e\x9b31m\n"
"""A task id that, printed raw, sets the window title, erases the line,
moves up a line and rewrites it, reverses the text and starts a new line."""

TERMINAL_ACTIVE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""Characters a terminal acts on rather than shows."""


def test_printable_escapes_every_control_and_keeps_the_rest() -> None:
    assert printable(HOSTILE) == ("t\\x1b]0;owned\\x07\\x1b[2K\\x1b[1A\\rPASS  t: fine\\u202e\\x9b31m\\n")
    assert printable("\t\udc80\U000e0041\u00a0é ü 日本 \\x1b") == "\\t\\udc80\\U000e0041\\xa0é ü 日本 \\x1b"
    plain = "plain-id/with_punctuation: 1,000 (ok)"
    assert printable(plain) is plain


@given(st.text())
def test_printable_output_is_printable_and_escaping_twice_changes_nothing(text: str) -> None:
    once = printable(text)
    assert once.isprintable() and printable(once) == once
    assert not TERMINAL_ACTIVE.search(once)
    if text.isprintable():
        assert once == text


def _failing_task() -> Any:
    failure = Assertion(gate="quality", strategy="compiled", budget=256, repetition=1, message=f"id {HOSTILE}")
    return result(HOSTILE + "2", passed=False, budget=None, failures=(failure,))


def test_the_evaluation_summary_escapes_ids_and_messages() -> None:
    hostile = report(result(HOSTILE), _failing_task())
    lines = [*report_lines(hostile, "corpus\x1b[2K", report_path="out\r.json"), *task_lines(hostile.tasks[0])]
    assert lines and all(line.isprintable() for line in lines)
    assert any(line.startswith("PASS  t\\x1b]0;owned\\x07\\x1b[2K") for line in lines)
    assert any(line.startswith("      quality: compiled@256 rep 1: id t\\x1b]0;owned") for line in lines)


def test_the_comparison_text_escapes_ids() -> None:
    lines = list(comparison_lines(compare_reports(OLD, report(*OLD.tasks, result(HOSTILE)), Thresholds())))
    assert all(line.isprintable() for line in lines)
    assert any(line.startswith(f"  {printable(HOSTILE)}: added; - -> PASS;") for line in lines)


@pytest.mark.parametrize(
    ("change", "words"),
    [(0, "no change"), (1, "+1: 1 more task passes"), (3, "+3: 3 more tasks pass"), (-1, "-1: 1 fewer task passes")],
)
def test_the_change_of_passing_tasks_is_said_in_words(change: int, words: str) -> None:
    assert passing_change_text(change) == words


def test_the_comparison_says_no_change_and_changes_in_words() -> None:
    same = list(comparison_lines(compare_reports(OLD, OLD, Thresholds())))
    assert "tasks passing       2/3 -> 2/3  (no change)" in same
    fewer = report(result("t-1", passed=False), *OLD.tasks[1:])
    assert "tasks passing       2/3 -> 1/3  (-1: 1 fewer task passes)" in comparison_lines(
        compare_reports(OLD, fewer, Thresholds())
    )
    assert "| tasks passing | 2/3 | 2/3 | no change |" in comparison_markdown(compare_reports(OLD, OLD, Thresholds()))


@pytest.mark.parametrize(
    ("given_text", "inert"),
    [
        ("![t](https://tracker.example/p.png)", "\\!\\[t\\](https\\://tracker.example/p.png)"),
        ("[c](javascript:alert(1))", "\\[c\\](javascript:alert(1))"),
        ("@org/team and @user", f"@{ZERO_WIDTH_JOINER}org/team and @{ZERO_WIDTH_JOINER}user"),
        ("see #12 or www.evil.example", f"see #{ZERO_WIDTH_JOINER}12 or www\\.evil.example"),
        ("<img src=x onerror=alert(1)>&amp;", "\\<img src=x onerror=alert(1)>\\&amp;"),
        ("a|b `c` *d* _e_ ~~f~~ $g$", "a\\|b \\`c\\` \\*d\\* \\_e\\_ \\~\\~f\\~\\~ \\$g\\$"),
        ("line\nbreak\r\x1b[2K", "line\\\\nbreak\\\\r\\\\x1b\\[2K"),
        ("back\\slash", "back\\\\slash"),
    ],
)
def test_markdown_text_is_inert(given_text: str, inert: str) -> None:
    assert markdown_text(given_text) == inert


@given(st.text())
def test_markdown_text_leaves_no_markup(text: str) -> None:
    inert = markdown_text(text)
    assert "\n" not in inert and not TERMINAL_ACTIVE.search(inert)
    unescaped = re.sub(r"\\.", "", inert)  # what a backslash does not escape
    assert not set(unescaped) & set("`*_[]<!|&~$\\")
    assert not re.search(r"[@#](?!\u200d)", inert)
    assert not re.search(r"(?<!\\)://", inert) and not re.search(r"(?i)www\.", unescaped)
    assert unicodedata.category(ZERO_WIDTH_JOINER) == "Cf"


def test_a_markdown_comparison_carries_no_image_link_mention_or_control() -> None:
    ids = ("![t](https://tracker.example/p.png)", "[c](javascript:alert(1))", "@org/team", HOSTILE)
    new = report(*OLD.tasks, *(result(task_id) for task_id in ids))
    text = comparison_markdown(compare_reports(OLD, new, Thresholds()))
    assert "![" not in text and "](" not in text.replace("\\](", "") and "https://" not in text
    assert "@org" not in text and f"@{ZERO_WIDTH_JOINER}org/team" in text
    assert not TERMINAL_ACTIVE.search(text.replace("\n", ""))
    rows = [line for line in text.splitlines() if line.startswith("| ") and "added" in line]
    assert len(rows) == 4 and all(len(re.findall(r"(?<!\\)\|", row)) == 8 for row in rows)  # 7 cells, intact


def test_error_reports_escape_what_an_input_holds(capsys: pytest.CaptureFixture[str]) -> None:
    console.report_input_error(InputError([Problem(file="run\x1b[2K.json", record=HOSTILE, message="bad \r id")]))
    console.echo(HOSTILE)
    out, err = capsys.readouterr()
    assert out == printable(HOSTILE) + "\n"
    assert err.endswith("1 problem found.\n") and all(line.isprintable() for line in err.splitlines())
    assert "run\\x1b[2K.json" in err and "bad \\r id" in err


class _Store:
    def get(self, job_id: str) -> JobRecord:
        return decode_job(job_id, {"phase": "failed", "error_kind": "input", "error": f"task {HOSTILE} broke"})

    def failures(self, _job_id: str) -> list[str]:
        return [f"shard 1: task {HOSTILE}"]


def test_dist_status_escapes_failures_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    cluster: Any = SimpleNamespace(store=_Store(), waiting=lambda _job_id: ([], []), making_status=lambda _record: None)
    dist_views.print_status(cluster, "job-1", as_json=False)
    out, _ = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 2 and all(line.isprintable() for line in lines)
    assert lines[0].startswith("job-1: failed;") and lines[0].endswith(f"error: task {printable(HOSTILE)} broke")
    assert lines[1] == f"  failure: shard 1: task {printable(HOSTILE)}"
