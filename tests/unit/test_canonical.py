"""RFC 8785 canonical JSON: the reference implementation against the
official vectors, and eceb's one encoder against the reference over every
document shape eceb writes."""

from __future__ import annotations

import json
import string

import msgspec
import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.core.arithmetic import SAFE_INTEGER_MAX
from eceb_worker.core.canonical import canonical_json, canonical_lines
from eceb_worker.corpus.corpus_root import canonical_record
from tests.support.helpers import artifact
from tests.support.paths import SHARED

VECTORS = SHARED / "vectors" / "rfc8785"
IN_DOMAIN = {"arrays.json", "french.json", "unicode.json"}
"""The vectors whose documents are of the shape eceb writes (no floats, no
key outside the Basic Multilingual Plane): the encoder must give their bytes."""


def vector_names() -> list[str]:
    if not (VECTORS / "input").is_dir():
        pytest.fail(f"RFC 8785 vectors not found at {VECTORS}: the tests read ../shared/ beside the checkout")
    return sorted(p.name for p in (VECTORS / "input").glob("*.json"))


@pytest.mark.parametrize("name", vector_names())
def test_rfc8785_official_vectors(name: str) -> None:
    value = json.loads((VECTORS / "input" / name).read_bytes())
    expected = (VECTORS / "output" / name).read_bytes()
    assert rfc8785.dumps(value) == expected
    if name in IN_DOMAIN:
        assert canonical_json(value) == expected


def test_vectors_cover_escapes_and_non_ascii() -> None:
    names = vector_names()
    assert {"unicode.json", "weird.json", "french.json"} <= set(names)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"b": 1, "a": 'é\n\u001f"\\/'}, '{"a":"é\\n\\u001f\\"\\\\/","b":1}'),
        ({"\r": 2, "ö": 3, "€": 1}, '{"\\r":2,"ö":3,"€":1}'),
        ([2**53 - 1, -(2**53 - 1), 0, True, None], "[9007199254740991,-9007199254740991,0,true,null]"),
    ],
)
def test_canonical_json_known_forms(value: object, expected: str) -> None:
    assert canonical_json(value) == expected.encode() == rfc8785.dumps(value)


no_surrogates = st.text(st.characters(exclude_categories=["Cs"]))
keys = st.text(string.ascii_letters + string.digits + "_", min_size=1, max_size=12)
documents = st.recursive(
    st.none() | st.booleans() | st.integers(-SAFE_INTEGER_MAX, SAFE_INTEGER_MAX) | no_surrogates,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=20,
)


@given(documents)
def test_encoder_is_rfc8785_on_eceb_documents(value: object) -> None:
    """ASCII keys, integers within ±(2^53 − 1), any string: the shape of every report and record."""
    assert canonical_json(value) == rfc8785.dumps(value)


@given(st.lists(documents, max_size=5))
def test_lines_are_the_records_each_ended(values: list[object]) -> None:
    assert canonical_lines(values) == b"".join(canonical_json(v) + b"\n" for v in values)


@given(artifact_id=no_surrogates.filter(bool), path=no_surrogates.filter(bool))
def test_record_encoder_is_rfc8785(artifact_id: str, path: str) -> None:
    record = artifact(artifact_id, path=path)
    assert canonical_record(record) == rfc8785.dumps(record.root_record())


def test_canonical_record_holds_the_five_spec_fields_only() -> None:
    record = msgspec.json.decode(canonical_record(artifact("x", content=b"abc")))
    assert sorted(record) == ["artifact_id", "classification", "kind", "path", "source_digest"]
