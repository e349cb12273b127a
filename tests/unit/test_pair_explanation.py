"""An explanation answer's claims are cited, and every citation exists at
the frozen revision (the accuracy of the claims is the assessment's)."""

from __future__ import annotations

import pytest

from eceb_worker.families.paired.explanation import citation_problems, cited_paths

pytestmark = pytest.mark.unit

FILES = {"greet/greet.go": b"line 1\nline 2\nline 3\n", "docs/requirements.md": None}


def claim(text: str = "Hello greets the world", *citations: tuple[str, int]) -> dict[str, object]:
    return {"text": text, "citations": [{"path": p, "line": n} for p, n in citations]}


def test_cited_claims_whose_citations_exist_pass() -> None:
    answer = {"claims": [claim("a", ("greet/greet.go", 1)), claim("b", ("greet/greet.go", 3))]}
    assert cited_paths(answer) == ["greet/greet.go"]
    assert citation_problems(answer, FILES, 2) == ()


def test_every_fault_of_a_citation_is_named() -> None:
    answer = {
        "claims": [
            claim("a", ("greet/greet.go", 4)),
            claim("b", ("greet/greet.go", 0)),
            claim("c", ("docs/requirements.md", 1)),
            claim("d", ("missing.go", 1)),
            claim("e"),
            {"text": "", "citations": []},
            {"text": "f", "citations": [{"path": "greet/greet.go"}]},
        ]
    }
    assert citation_problems({"claims": answer["claims"]}, {**FILES, "missing.go": None}, 1) == (
        "claim 1 cites greet/greet.go:4, which has 3 lines",
        "claim 2 cites greet/greet.go:0, which has 3 lines",
        "claim 3 cites docs/requirements.md, which is not a file at the frozen revision",
        "claim 4 cites missing.go, which is not a file at the frozen revision",
        "claim 5 cites nothing",
        "claim 6 has no text",
        "claim 7 has a citation without a path and a line",
    )


def test_too_few_claims_and_another_shape() -> None:
    assert citation_problems({"claims": [claim("a", ("greet/greet.go", 1))]}, FILES, 2) == (
        "1 claims, fewer than the task's 2",
    )
    assert citation_problems([], FILES, 1) == ("the answer has no list of claims",)
