"""Claim classes (ECEB-0.1 §15), each rule on its own: the partial order,
non-empirical runs, public corpora, replayable configurations and the
enterprise controls; every reason returned together, nothing upgraded."""

from __future__ import annotations

from typing import get_args

import msgspec
import pytest

from eceb_worker.families.eceb.claims import (
    ClaimEvidence,
    at_most,
    claim_evidence,
    claim_reasons,
    controls_reasons,
    disclosure_reasons,
    empirical_reasons,
    order_reasons,
    public_corpus_reasons,
    replayable_reasons,
)
from eceb_worker.families.eceb.declarations import Declarations, Source, SourcesFile
from eceb_worker.families.eceb.run import Run
from eceb_worker.families.eceb.vocabulary import ClaimClass
from tests.support.paths import EXAMPLES

CLASSES: tuple[ClaimClass, ...] = get_args(ClaimClass)

STRONG = ClaimEvidence(
    run_claim_class="enterprise_validated",
    non_empirical=False,
    not_redistributable=(),
    source_count=2,
    unrevisioned=(),
    reviews=(("primary", "full"),),
    undeclared_controls=(),
)
"""Evidence that supports every class."""


def with_(**changes: object) -> ClaimEvidence:
    return msgspec.structs.replace(STRONG, **changes)


@pytest.mark.parametrize("claimed", CLASSES)
def test_strong_evidence_supports_every_class(claimed: ClaimClass) -> None:
    assert claim_reasons(claimed, STRONG) == []


def test_the_partial_order() -> None:
    below = {(a, b) for a in CLASSES for b in CLASSES if at_most(a, b)}
    assert below == {
        *((c, c) for c in CLASSES),
        ("conformance_seed", "public_reproduction"),
        ("conformance_seed", "enterprise_proxy"),
        ("conformance_seed", "enterprise_validated"),
        ("public_reproduction", "enterprise_validated"),
        ("enterprise_proxy", "enterprise_validated"),
    }


def test_a_claim_stronger_than_the_run_is_refused() -> None:
    evidence = with_(run_claim_class="conformance_seed")
    assert order_reasons("public_reproduction", evidence) == [
        "public_reproduction is stronger than the run's own claim class conformance_seed: "
        "a result is never evidence for a stronger class"
    ]
    assert order_reasons("conformance_seed", evidence) == []


def test_the_two_middle_classes_are_not_comparable() -> None:
    [reason] = order_reasons("enterprise_proxy", with_(run_claim_class="public_reproduction"))
    assert "not comparable with the run's own claim class public_reproduction" in reason
    assert order_reasons("public_reproduction", with_(run_claim_class="enterprise_proxy")) != []


@pytest.mark.parametrize("claimed", CLASSES)
def test_a_non_empirical_run_supports_conformance_seed_only(claimed: ClaimClass) -> None:
    reasons = empirical_reasons(claimed, with_(non_empirical=True))
    assert (reasons == []) == (claimed == "conformance_seed")


@pytest.mark.parametrize("claimed", ["public_reproduction", "enterprise_proxy"])
def test_a_public_claim_needs_every_source_redistributable(claimed: ClaimClass) -> None:
    [reason] = public_corpus_reasons(claimed, with_(not_redistributable=("vendor/docs", "crm")))
    assert reason.endswith("sources not declared redistributable: vendor/docs, crm")
    assert public_corpus_reasons(claimed, with_(source_count=0)) == [
        f"{claimed} needs a public corpus; no source is declared"
    ]
    assert public_corpus_reasons("enterprise_validated", with_(not_redistributable=("crm",))) == []
    assert public_corpus_reasons("conformance_seed", with_(not_redistributable=("crm",))) == []


def test_public_reproduction_needs_revisions_of_every_model_and_judge_model() -> None:
    missing = ("configuration a: model p/m", "configuration a: judge model p/j")
    assert len(replayable_reasons("public_reproduction", with_(unrevisioned=missing))) == 2
    for other in ("conformance_seed", "enterprise_proxy", "enterprise_validated"):
        assert replayable_reasons(other, with_(unrevisioned=missing)) == []


def test_enterprise_validated_needs_controls_and_human_review() -> None:
    evidence = with_(undeclared_controls=("sampling", "reproducibility"), reviews=(("a", "none"), ("b", "sampled")))
    reasons = controls_reasons("enterprise_validated", evidence)
    assert len(reasons) == 3
    assert "declared sampling" in reasons[0] and "declared reproducibility" in reasons[1]
    assert "configuration a's judge has 'none'" in reasons[2]
    assert controls_reasons("enterprise_proxy", evidence) == []


@pytest.mark.parametrize("claimed", CLASSES)
def test_a_claim_above_the_seed_class_needs_answers_checked_for_disclosures(claimed: ClaimClass) -> None:
    unchecked = with_(disclosure_checked=False)
    if claimed == "conformance_seed":
        assert disclosure_reasons(claimed, unchecked) == [] and claim_reasons(claimed, unchecked) == []
    else:
        assert disclosure_reasons(claimed, unchecked) == [
            f"{claimed} needs answers checked for disclosures of restricted text (ECEB-0.1 §1, §17); the report "
            "was evaluated with --no-disclosure-check"
        ]
        assert claim_reasons(claimed, unchecked) == disclosure_reasons(claimed, unchecked)


def test_every_reason_is_returned_together() -> None:
    weak = ClaimEvidence(
        run_claim_class="conformance_seed",
        non_empirical=True,
        not_redistributable=("crm",),
        source_count=1,
        unrevisioned=("configuration a: model p/m",),
        reviews=(("a", "none"),),
        undeclared_controls=("sampling", "authorization", "reproducibility"),
    )
    assert len(claim_reasons("public_reproduction", weak)) == 4  # order, empirical, corpus, revision
    assert len(claim_reasons("enterprise_validated", weak)) == 6  # order, empirical, three controls, review
    assert claim_reasons("conformance_seed", weak) == []


def test_evidence_of_the_seed_run() -> None:
    run = msgspec.json.decode((EXAMPLES / "enterprise-seed" / "run.json").read_bytes(), type=Run)
    sources = SourcesFile(
        schema="symgliph.eceb/sources-v0.1",
        corpus="c",
        sources=(
            Source(name="a", license_spdx="MIT", redistributable=True),
            Source(name="b", license_spdx="LicenseRef-x", redistributable=False),
        ),
    )
    evidence = claim_evidence(run, sources, None)
    assert evidence.non_empirical and evidence.run_claim_class == "conformance_seed"
    assert evidence.not_redistributable == ("b",) and evidence.source_count == 2
    assert evidence.unrevisioned == ()
    assert evidence.reviews == (("primary", "none"), ("small-model", "none"))
    assert evidence.undeclared_controls == ("sampling", "authorization", "reproducibility")
    declared = Declarations(
        schema="symgliph.eceb/declarations-v0.1", sampling="all", authorization=" ", reproducibility="x"
    )
    assert claim_evidence(run, sources, declared).undeclared_controls == ("authorization",)
