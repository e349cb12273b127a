"""RFC 8785 canonical JSON: the official vectors, and the fast record encoder."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.engine.canonical import canonical_json
from eceb_worker.engine.corpus_root import canonical_record
from eceb_worker.errors import InputError
from tests.helpers import artifact

VECTORS = Path(__file__).resolve().parents[1].parent / "shared" / "vectors" / "rfc8785"


def vector_names() -> list[str]:
    if not (VECTORS / "input").is_dir():
        pytest.fail(f"RFC 8785 vectors not found at {VECTORS}: the tests read ../shared/ beside the checkout")
    return sorted(p.name for p in (VECTORS / "input").glob("*.json"))


@pytest.mark.parametrize("name", vector_names())
def test_rfc8785_official_vectors(name: str) -> None:
    value = json.loads((VECTORS / "input" / name).read_bytes())
    assert canonical_json(value) == (VECTORS / "output" / name).read_bytes()


def test_vectors_cover_escapes_and_non_ascii() -> None:
    names = vector_names()
    assert {"unicode.json", "weird.json", "french.json"} <= set(names)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"b": 1, "a": 'é\n\u001f"\\/'}, '{"a":"é\\n\\u001f\\"\\\\/","b":1}'),
        ({"€": 1, "\r": 2, "ö": 3, "\U0001f600": 4}, '{"\\r":2,"ö":3,"€":1,"😀":4}'),
        ([1.0, -0.0, 1e21, 1e-7], "[1,0,1e+21,1e-7]"),
    ],
)
def test_canonical_json_known_forms(value: object, expected: str) -> None:
    assert canonical_json(value) == expected.encode()


@pytest.mark.parametrize("value", [{"a": "\ud800"}, {"a": float("nan")}, {"a": float("inf")}, {1: "x"}])
def test_canonical_json_rejects_what_rfc8785_forbids(value: object) -> None:
    with pytest.raises(InputError, match="cannot canonicalize"):
        canonical_json(value, where="probe")


no_surrogates = st.text(st.characters(exclude_categories=["Cs"]), min_size=1)


@given(artifact_id=no_surrogates, path=no_surrogates)
def test_record_encoder_is_rfc8785(artifact_id: str, path: str) -> None:
    record = artifact(artifact_id, path=path)
    assert canonical_record(record) == rfc8785.dumps(record.root_record())


def test_canonical_record_holds_the_five_spec_fields_only() -> None:
    record = msgspec.json.decode(canonical_record(artifact("x", content=b"abc")))
    assert sorted(record) == ["artifact_id", "classification", "kind", "path", "source_digest"]
