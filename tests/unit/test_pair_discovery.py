"""A discovery answer passes only with exactly the IDs and references its
selector derives (task-context-benchmark-reference.md, "Original task
specifications")."""

from __future__ import annotations

import pytest

from eceb_worker.families.paired.discovery import Derived, Reference, derive, discovery_problems, selected
from eceb_worker.families.paired.specs import Selector
from tests.support.paths import REPO

pytestmark = pytest.mark.unit

SELECTOR = Selector(kind="marker", pattern="REQ-[0-9]+", paths=("greet",))
FIXTURE = REPO / "examples" / "paired" / "repo"


def fixture_files() -> dict[str, bytes]:
    every = [p.relative_to(FIXTURE).as_posix() for p in FIXTURE.rglob("*") if p.is_file()]
    return {path: (FIXTURE / path).read_bytes() for path in selected(SELECTOR, every)}


def test_the_example_selector_derives_the_fixtures_requirement_references() -> None:
    files = fixture_files()
    assert sorted(files) == ["greet/greet.go", "greet/greet_test.go"]
    derived = derive(SELECTOR, files)
    assert derived.ids == ("REQ-1", "REQ-2")
    assert derived.references == (
        Reference("REQ-1", "greet/greet.go", 6),
        Reference("REQ-1", "greet/greet.go", 10),
        Reference("REQ-2", "greet/greet.go", 15),
    )


def test_only_exactly_the_derived_set_passes() -> None:
    derived = derive(SELECTOR, fixture_files())
    exact = {
        "ids": list(derived.ids),
        "references": [{"id": r.id, "path": r.path, "line": r.line} for r in derived.references],
    }
    assert discovery_problems(exact, derived) == ()
    missing = {**exact, "ids": ["REQ-1"], "references": exact["references"][:1]}
    assert discovery_problems(missing, derived) == (
        "missing id REQ-2",
        "missing reference REQ-1 at greet/greet.go:10",
        "missing reference REQ-2 at greet/greet.go:15",
    )
    extra = {**exact, "ids": [*exact["ids"], "REQ-3"]}
    assert discovery_problems(extra, derived) == ("id REQ-3 is not required",)
    wrong_line = {**exact, "references": [{**exact["references"][0], "line": 7}, *exact["references"][1:]]}
    assert discovery_problems(wrong_line, derived) == (
        "missing reference REQ-1 at greet/greet.go:6",
        "reference REQ-1 at greet/greet.go:7 is not required",
    )


@pytest.mark.parametrize(
    "answer",
    [None, [], {"ids": "REQ-1"}, {"ids": [1]}, {"ids": [], "references": [{"id": "x"}]}, {"ids": [], "references": 3}],
)
def test_an_answer_of_another_shape_is_named(answer: object) -> None:
    assert discovery_problems(answer, Derived(ids=(), references=())) != ()


def test_a_selector_over_the_whole_repository_and_an_empty_derivation() -> None:
    everything = Selector(kind="marker", pattern="NOPE-[0-9]+", paths=(".",))
    assert selected(everything, ["a", "b/c"]) == ["a", "b/c"]
    assert derive(everything, {"a": b"nothing here"}) == Derived(ids=(), references=())
    assert discovery_problems({"ids": [], "references": []}, Derived(ids=(), references=())) == ()
