"""A syntax error at the very end of a JSON Lines record is located on that
record's own line (its last column), never at column 1 of the next line,
which belongs to another record."""

from __future__ import annotations

import pytest

from eceb_worker.core.decoding import record_problems
from eceb_worker.core.lenient import decode_lenient
from eceb_worker.corpus.artifacts import Artifact


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b""])
def test_a_record_cut_short_is_located_at_the_end_of_its_own_line(ending: bytes) -> None:
    raw = b'{"artifact_id": "a", "path": "b"' + ending
    [problem] = record_problems(raw, Artifact, file="registry.jsonl", record="line 5", line=5)
    assert problem.message == "invalid JSON at line 5, column 33: Expecting ',' delimiter"


def test_the_line_break_of_a_valid_record_changes_nothing() -> None:
    assert decode_lenient(b'{"a": 1}\r\n', line=3) == ({"a": 1}, "")
