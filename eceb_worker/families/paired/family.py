"""The paired task-context benchmark as a benchmark family
(:class:`~eceb_worker.families.Family`): the documents it publishes."""

from __future__ import annotations

from typing import Final

import msgspec

from eceb_worker.families import Document
from eceb_worker.families.paired import assessments, benchmark, credits, journal, records, specs, status
from eceb_worker.families.paired import summary_document as pair_summary
from eceb_worker.families.paired.schedule import PLAN_SCHEMA, Plan

__all__ = ["FAMILY"]


def _document(kind: str, schema_id: str, struct: type[msgspec.Struct]) -> Document:
    """A document whose schema file is named after its ``schema`` identifier."""
    return Document(kind, schema_id, schema_id.rsplit("/", 1)[1] + ".json", struct)


class PairedFamily(msgspec.Struct, frozen=True):
    """task-context-benchmark-reference.md as a :class:`~eceb_worker.families.Family`."""

    name: str = "paired"
    seed: str = "task-context-benchmark-reference"
    documents: tuple[Document, ...] = (
        _document("pair plan", PLAN_SCHEMA, Plan),
        _document("pair rates", credits.RATES_SCHEMA, credits.RatesFile),
        Document(
            "assessments", assessments.EVALUATION_SCHEMA, "pair-assessments-v0.1.json", assessments.AssessmentBundle
        ),
        _document("pair benchmark", benchmark.BENCHMARK_SCHEMA, benchmark.PairBenchmark),
        _document("pair declaration", specs.DECLARATION_SCHEMA, specs.Declaration),
        _document("explanation task", specs.EXPLANATION_SCHEMA, specs.ExplanationTask),
        _document("discovery task", specs.DISCOVERY_SCHEMA, specs.DiscoveryTask),
        _document("verification task", specs.VERIFICATION_SCHEMA, specs.VerificationTask),
        _document("pair freeze", records.FREEZE_SCHEMA, records.Freeze),
        _document("pair authorization", records.AUTHORIZATION_SCHEMA, records.Authorization),
        _document("pair continuation", records.CONTINUATION_SCHEMA, records.ContinuationApproval),
        _document("pair manifest", records.MANIFEST_SCHEMA, records.Manifest),
        _document("pair costs", records.COSTS_SCHEMA, records.Costs),
        _document("attempt request", journal.REQUEST_SCHEMA, journal.Request),
        _document("attempt invocation", journal.INVOCATION_SCHEMA, journal.Invocation),
        _document("attempt start", journal.ATTEMPT_START_SCHEMA, journal.AttemptStart),
        _document("attempt", journal.ATTEMPT_SCHEMA, journal.Attempt),
        _document("pair status", status.STATUS_SCHEMA, status.PairStatus),
        _document("pair summary", pair_summary.SUMMARY_SCHEMA, pair_summary.Summary),
    )


FAMILY: Final = PairedFamily()
