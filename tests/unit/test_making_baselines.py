"""eceb's own baselines (ECEB-0.1 §7): permitted artifacts, the token
estimate, rendering, full permitted-context packing and the BM25 baseline."""

from __future__ import annotations

import blake3
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.families.eceb.benchmark import Task
from eceb_worker.families.eceb.making.baselines import (
    Bm25Index,
    decode_text,
    estimate_tokens,
    full_permitted_context,
    naive_top_k,
    permitted,
    render_artifact,
)
from eceb_worker.families.eceb.making.protocol import Permissions
from eceb_worker.families.eceb.run import SelectedArtifact
from tests.support.helpers import artifact


def task(allowed: tuple[str, ...] = ("public", "internal"), denied: tuple[str, ...] = ()) -> Task:
    return Task(
        task_id="t",
        query="q",
        required_artifacts=(),
        allowed_classifications=allowed,  # type: ignore[arg-type]
        denied_artifacts=denied,
        budget_ladder=(100,),
        minimum_quality_milli=0,
        maximum_quality_regression_milli=0,
        required_repetitions=1,
    )


def item(artifact_id: str, content: bytes, classification: str = "internal") -> tuple[Artifact, bytes]:
    return artifact(artifact_id, classification=classification, content=content), content


def tokens_of_block(pair: tuple[Artifact, bytes]) -> int:
    return estimate_tokens(render_artifact(pair[0], decode_text(pair[1])))


CORPUS = [
    item("runbook/etcd", b"etcd database quota low space: defragment with etcdctl defrag to reclaim space"),
    item("runbook/api", b"the API server error budget burn alert fires when requests fail"),
    item("policy/licenses", b"allowed third party licenses: BSD-3-Clause, MIT, Apache-2.0"),
    item("code/route", b"package dispatch; func DefaultRouteOpts() { group_wait = 30 * time.Second }"),
    item("chat/notes", b"meeting notes: nothing about databases or quotas here"),
]


# --- permitted ------------------------------------------------------------------------------------------------------


def test_permitted_keeps_allowed_classifications_and_drops_denied_in_id_order() -> None:
    artifacts = [
        artifact("b", classification="internal"),
        artifact("a", classification="restricted"),
        artifact("d", classification="public"),
        artifact("c", classification="internal"),
    ]
    chosen = permitted(task(("public", "internal"), denied=("c",)), artifacts)
    assert [a.artifact_id for a in chosen] == ["b", "d"]


def test_permitted_infers_nothing_from_classification_order() -> None:
    artifacts = [artifact(c, classification=c) for c in ("public", "internal", "confidential", "restricted")]
    chosen = permitted(task(("restricted",)), artifacts)
    assert [a.artifact_id for a in chosen] == ["restricted"]


def test_permitted_accepts_a_requests_permissions() -> None:
    artifacts = [artifact("a"), artifact("b")]
    rules = Permissions(allowed_classifications=("internal",), denied_artifacts=("a",))
    assert [a.artifact_id for a in permitted(rules, artifacts)] == ["b"]


# --- estimate and rendering ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("a", 1), ("abc", 1), ("abcd", 2), ("abcdef", 2), ("é", 1), ("日本", 2), ("x" * 3000, 1000)],
)
def test_estimate_is_utf8_bytes_over_three_rounded_up(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


def test_render_escapes_the_attributes_and_keeps_the_text() -> None:
    a = artifact('a"<b>&c', path="dir/it's.md")
    block = render_artifact(a, 'text with "quotes" & <tags>')
    assert block == (
        '<artifact id="a&quot;&lt;b&gt;&amp;c" path="dir/it&#x27;s.md">\ntext with "quotes" & <tags>\n</artifact>\n'
    )


def test_text_is_decoded_with_replacement() -> None:
    assert decode_text(b"ok \xff\xfe end") == "ok \ufffd\ufffd end"


# --- full permitted context ----------------------------------------------------------------------------------------


def test_full_permitted_context_takes_everything_that_fits_in_id_order() -> None:
    packed = full_permitted_context(list(reversed(CORPUS)), 10_000)
    ids = [s.artifact_id for s in packed.selected_artifacts]
    assert ids == sorted(a.artifact_id for a, _ in CORPUS)
    assert packed.context == "".join(
        render_artifact(a, decode_text(d)) for a, d in sorted(CORPUS, key=lambda p: p[0].artifact_id)
    )
    assert packed.estimated_tokens == estimate_tokens(packed.context)
    assert packed.permitted_count == packed.selected_count == len(CORPUS)
    assert packed.permitted_bytes == packed.selected_bytes == sum(len(d) for _, d in CORPUS)


def test_each_selected_artifact_carries_the_digest_of_the_bytes_read() -> None:
    stale = artifact("x", content=b"old bytes")
    packed = full_permitted_context([(stale, b"new bytes")], 1000)
    assert packed.selected_artifacts == (
        SelectedArtifact(artifact_id="x", observed_digest=blake3.blake3(b"new bytes").hexdigest()),
    )


def test_an_artifact_that_does_not_fit_is_skipped_and_the_next_ones_are_tried() -> None:
    small_a = item("a", b"x" * 30)
    large_b = item("b", b"y" * 3000)
    small_c = item("c", b"z" * 30)
    budget = tokens_of_block(small_a) + tokens_of_block(small_c) + 2
    packed = full_permitted_context([small_a, large_b, small_c], budget)
    assert [s.artifact_id for s in packed.selected_artifacts] == ["a", "c"]
    assert packed.estimated_tokens <= budget
    assert packed.permitted_count == 3 and packed.selected_count == 2
    assert packed.permitted_bytes == 3060 and packed.selected_bytes == 60


@pytest.mark.parametrize("available", [-5, 0, 1])
def test_nothing_fits_in_a_tiny_window(available: int) -> None:
    packed = full_permitted_context(CORPUS, available)
    assert packed.context == "" and packed.selected_artifacts == () and packed.estimated_tokens == 0
    assert packed.permitted_count == len(CORPUS)


def test_a_block_exactly_filling_the_window_fits() -> None:
    only = item("a", b"abc" * 50)
    packed = full_permitted_context([only], tokens_of_block(only))
    assert packed.selected_count == 1
    assert full_permitted_context([only], tokens_of_block(only) - 1).selected_count == 0


def test_an_artifact_given_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="given twice"):
        full_permitted_context([CORPUS[0], CORPUS[0]], 100)
    with pytest.raises(ValueError, match="given twice"):
        Bm25Index.build([("a", "x"), ("a", "y")])


# --- BM25 ----------------------------------------------------------------------------------------------------------


def index_of(corpus: list[tuple[Artifact, bytes]]) -> Bm25Index:
    return Bm25Index.build([(a.artifact_id, decode_text(d)) for a, d in corpus])


def test_bm25_ranks_the_matching_artifact_first_and_leaves_out_zero_scores() -> None:
    index = index_of(CORPUS)
    ranked = index.rank("etcdctl defrag reclaim space", [a.artifact_id for a, _ in CORPUS])
    assert ranked == ["runbook/etcd"]
    assert index.rank("database quota", [a.artifact_id for a, _ in CORPUS])[0] == "runbook/etcd"
    assert len(index) == len(CORPUS)


def test_bm25_ranks_only_the_permitted_ids_it_holds() -> None:
    index = index_of(CORPUS)
    assert index.rank("etcdctl defrag", ["runbook/api", "unknown"]) == []
    assert index.rank("etcdctl defrag", []) == []


def test_bm25_query_without_a_known_word_ranks_nothing() -> None:
    index = index_of(CORPUS)
    ids = [a.artifact_id for a, _ in CORPUS]
    assert index.rank("", ids) == []
    assert index.rank("the and of", ids) == []
    assert index.rank("zzzunknownword", ids) == []


def test_bm25_over_texts_without_words_ranks_nothing() -> None:
    index = Bm25Index.build([("a", ""), ("b", "x ! ?")])
    assert index.rank("x", ["a", "b"]) == []
    assert Bm25Index.build([]).rank("x", ["a"]) == []


def test_bm25_ties_are_broken_by_artifact_id() -> None:
    index = Bm25Index.build([("c", "alpha beta"), ("a", "alpha beta"), ("b", "alpha beta"), ("d", "gamma")])
    assert index.rank("alpha", ["c", "b", "a", "d"]) == ["a", "b", "c"]


def test_naive_top_k_packs_in_score_order_within_the_window() -> None:
    index = index_of(CORPUS)
    offered = permitted(task(("internal",), denied=("runbook/api",)), [a for a, _ in CORPUS])
    pairs = [p for p in CORPUS if p[0] in offered]
    packed = naive_top_k(index, "etcd database quotas space", pairs, 10_000)
    ids = [s.artifact_id for s in packed.selected_artifacts]
    assert ids[0] == "runbook/etcd"
    assert "runbook/api" not in ids
    assert set(ids) <= {"runbook/etcd", "chat/notes"}
    assert packed.permitted_count == len(pairs)
    tight = naive_top_k(index, "etcd database quotas space", pairs, tokens_of_block(CORPUS[0]))
    assert [s.artifact_id for s in tight.selected_artifacts] == ["runbook/etcd"]


# --- order invariance ----------------------------------------------------------------------------------------------

WORDS = ["etcd", "quota", "space", "defrag", "api", "budget", "license", "route", "alert", "token", "pod", "node"]

corpora = st.dictionaries(
    st.text(alphabet="abcdefgh/", min_size=1, max_size=6),
    st.lists(st.sampled_from(WORDS), min_size=0, max_size=12).map(" ".join),
    min_size=1,
    max_size=8,
)


@given(corpora, st.randoms(use_true_random=False), st.lists(st.sampled_from(WORDS), max_size=4), st.integers(0, 400))
def test_baselines_do_not_depend_on_input_order(
    texts: dict[str, str], rnd: object, query_words: list[str], available: int
) -> None:
    pairs = [(artifact(i, content=t.encode()), t.encode()) for i, t in texts.items()]
    shuffled = list(pairs)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    query = " ".join(query_words)
    index = Bm25Index.build([(a.artifact_id, t.decode()) for a, t in pairs])
    shuffled_index = Bm25Index.build([(a.artifact_id, t.decode()) for a, t in shuffled])
    ids = [a.artifact_id for a, _ in pairs]
    shuffled_ids = [a.artifact_id for a, _ in shuffled]
    assert index.rank(query, ids) == shuffled_index.rank(query, shuffled_ids)
    assert full_permitted_context(pairs, available) == full_permitted_context(shuffled, available)
    assert naive_top_k(index, query, pairs, available) == naive_top_k(shuffled_index, query, shuffled, available)
    assert permitted(task(("internal",)), [a for a, _ in pairs]) == permitted(
        task(("internal",)), [a for a, _ in shuffled]
    )


@given(corpora, st.integers(0, 400))
def test_packing_never_exceeds_the_window(texts: dict[str, str], available: int) -> None:
    pairs = [(artifact(i, content=t.encode()), t.encode()) for i, t in texts.items()]
    packed = full_permitted_context(pairs, available)
    assert packed.estimated_tokens <= max(available, 0)
    assert packed.estimated_tokens == estimate_tokens(packed.context)
    assert packed.selected_count == len(packed.selected_artifacts) <= packed.permitted_count


def test_bm25s_is_imported_by_the_baselines_alone() -> None:
    from tests.unit.test_layers import imports, modules

    importers = [module for module, path in modules() if any(t.split(".")[0] == "bm25s" for t, _ in imports(path))]
    assert importers == ["eceb_worker.families.eceb.making.baselines"]
