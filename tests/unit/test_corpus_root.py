"""The corpus root (ECEB-0.1 §5): framing, ordering, permutation invariance."""

from __future__ import annotations

import blake3
import msgspec
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.corpus.artifacts import CLASSIFICATIONS, SOURCE_KINDS, Artifact
from eceb_worker.corpus.corpus_root import CORPUS_ROOT_DOMAIN, canonical_record, corpus_root
from tests.support.helpers import artifact

ids = st.text(st.characters(exclude_categories=["Cs", "Cc"]), min_size=1, max_size=12)
artifacts = st.builds(
    lambda i, kind, cls, content: artifact(i, path=f"p/{i}", kind=kind, classification=cls, content=content),
    ids,
    st.sampled_from(SOURCE_KINDS),
    st.sampled_from(CLASSIFICATIONS),
    st.binary(max_size=16),
)
registries = st.lists(artifacts, max_size=12, unique_by=lambda a: a.artifact_id)


def test_empty_corpus_root_is_the_domain_alone() -> None:
    assert CORPUS_ROOT_DOMAIN == b"symgliph:eceb:corpus:v0.1\x00"
    assert corpus_root([]) == blake3.blake3(CORPUS_ROOT_DOMAIN).hexdigest()


def test_framing_every_record_ends_with_newline_sorted_by_canonical_bytes() -> None:
    """Pins docs/INTERPRETATIONS.md "Corpus root framing" and "Record ordering"."""
    a = artifact("a", content=b"1")
    ab = artifact("a b", content=b"2")
    # Canonical bytes compare '"' (0x22) after ' ' (0x20): "a b" sorts before "a".
    expected = blake3.blake3(
        CORPUS_ROOT_DOMAIN + canonical_record(ab) + b"\n" + canonical_record(a) + b"\n"
    ).hexdigest()
    assert corpus_root([a, ab]) == expected
    assert corpus_root([ab, a]) == expected


def test_known_root_of_a_fixed_registry() -> None:
    a = Artifact(
        artifact_id="runbook/disk-full.md",
        path="runbook/disk-full.md",
        kind="runbook",
        classification="internal",
        source_digest="af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
        size_bytes=0,
    )
    record = (
        b'{"artifact_id":"runbook/disk-full.md","classification":"internal","kind":"runbook",'
        b'"path":"runbook/disk-full.md","source_digest":"af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"}'
    )
    assert canonical_record(a) == record
    assert corpus_root([a]) == blake3.blake3(b"symgliph:eceb:corpus:v0.1\x00" + record + b"\n").hexdigest()


def test_size_is_not_part_of_the_root() -> None:
    a = artifact("a", content=b"x")
    assert corpus_root([a]) == corpus_root([msgspec.structs.replace(a, size_bytes=99)])


@given(registries, st.randoms())
def test_root_unchanged_under_any_permutation(items: list[Artifact], rnd: object) -> None:
    shuffled = list(items)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert corpus_root(shuffled) == corpus_root(items)


@given(registries.filter(bool), st.data())
def test_any_single_field_change_changes_the_root(items: list[Artifact], data: st.DataObject) -> None:
    index = data.draw(st.integers(0, len(items) - 1))
    target = items[index]
    field = data.draw(st.sampled_from(["artifact_id", "path", "kind", "classification", "source_digest"]))
    current = getattr(target, field)
    if field == "kind":
        new = data.draw(st.sampled_from([k for k in SOURCE_KINDS if k != current]))
    elif field == "classification":
        new = data.draw(st.sampled_from([c for c in CLASSIFICATIONS if c != current]))
    elif field == "source_digest":
        new = blake3.blake3(current.encode()).hexdigest()
    else:
        new = current + "x"
    changed = [*items[:index], msgspec.structs.replace(target, **{field: new}), *items[index + 1 :]]
    assert corpus_root(changed) != corpus_root(items)
