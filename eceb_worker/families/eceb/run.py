"""Recorded runs (ECEB-0.1 §7, §8, §13): what a context-construction system
did for every task, strategy, budget and repetition.

A run file (``symgliph.eceb/run-v0.1``) is one JSON document: a header (the
configurations used, the benchmark and corpus it was recorded against, the
claim class), the observations, and auxiliary cost records.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from eceb_worker.core.arithmetic import SAFE_INTEGER_MAX
from eceb_worker.core.digests import Digest, RecordDigest
from eceb_worker.core.identifiers import Identifier, RecordIdentifier
from eceb_worker.families.eceb.vocabulary import ClaimClass, Strategy

__all__ = [
    "AuxiliaryCost",
    "BenchmarkReference",
    "Configuration",
    "Decoding",
    "FactorialExperiment",
    "JudgeProfile",
    "ModelIdentity",
    "Observation",
    "PricingSnapshot",
    "Run",
    "RunEnvelope",
    "RunHeader",
    "SelectedArtifact",
    "Tokenizer",
]

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Count = Annotated[int, msgspec.Meta(ge=0, le=SAFE_INTEGER_MAX)]
MicroUsd = Annotated[int, msgspec.Meta(ge=0, le=SAFE_INTEGER_MAX, description="US dollars x 1,000,000.")]
Milli = Annotated[int, msgspec.Meta(ge=0, le=1000, description="Thousandths (0..1000).")]
Date = Annotated[str, msgspec.Meta(pattern=r"^\d{4}-\d{2}-\d{2}\Z", description="Calendar date, YYYY-MM-DD.")]
Factor = Literal["model", "judge", "tokenizer", "decoding", "pricing", "task_text"]


class ModelIdentity(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A model as the provider names it; ``revision`` is the immutable provider
    revision when the provider exposes one (ECEB-0.1 §8: SHOULD)."""

    provider: NonEmpty
    name: NonEmpty
    revision: str = ""


class JudgeProfile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The external judge that produced ``quality_milli`` (ECEB-0.1 §9).

    Fields:
        profile: name of the judge prompt and rubric.
        model: the judging model.
        rubric_digest: BLAKE3 of the rubric text, when published.
        human_review: ``none``, ``sampled`` or ``full``.
    """

    profile: NonEmpty
    model: ModelIdentity
    rubric_digest: Digest | None = None
    human_review: Literal["none", "sampled", "full"] = "none"


class Tokenizer(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The tokenizer used for local (non-authoritative) token counts."""

    name: NonEmpty
    revision: str = ""


class Decoding(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Decoding parameters, in integers: temperature and top-p in thousandths."""

    temperature_milli: Count
    top_p_milli: Milli = 1000
    max_output_tokens: Annotated[int, msgspec.Meta(gt=0, le=SAFE_INTEGER_MAX)]
    seed: Annotated[int, msgspec.Meta(ge=-SAFE_INTEGER_MAX, le=SAFE_INTEGER_MAX)] | None = None


class PricingSnapshot(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Prices in force for a run (ECEB-0.1 §8: source and date).

    Rates are micro-USD per million tokens. The cost of an observation is
    ``((input - cached) * input_rate + cached * cached_input_rate) / 10^6`` for
    input and ``output * output_rate / 10^6`` for output (the task-context
    benchmark reference's credit formula, in micro-USD).
    """

    source: NonEmpty
    date: Date
    input_micro_usd_per_mtok: Count
    cached_input_micro_usd_per_mtok: Count
    output_micro_usd_per_mtok: Count


class Configuration(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One model/judge/tokenizer/decoding/pricing combination observations refer to."""

    configuration_id: Identifier
    model: ModelIdentity
    judge: JudgeProfile
    tokenizer: Tokenizer
    decoding: Decoding
    pricing: PricingSnapshot


class BenchmarkReference(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The benchmark a run was recorded against: its id and task root."""

    benchmark_id: Identifier
    task_root: Digest


class FactorialExperiment(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Declares which factors may differ between strategies (ECEB-0.1 §7)."""

    factors: Annotated[tuple[Factor, ...], msgspec.Meta(min_length=1)]
    description: str = ""


class SelectedArtifact(msgspec.Struct, frozen=True, kw_only=True, gc=False, forbid_unknown_fields=True):
    """An artifact placed in the context, with the digest of the bytes used."""

    artifact_id: RecordIdentifier
    observed_digest: RecordDigest


class Observation(msgspec.Struct, frozen=True, kw_only=True, gc=False, forbid_unknown_fields=True):
    """One repetition of one task under one strategy and budget (ECEB-0.1 §8).

    Fields:
        task_id, strategy, repetition (one-based).
        budget: declared token budget; required for ``compiled``, absent
            (null) for ``full_permitted_context``, optional for ``naive_top_k``.
        configuration_id: which of the run's configurations produced it.
        query_digest: BLAKE3 of the query text the system was given.
        input_tokens: provider-reported prompt tokens (cached included).
        cached_input_tokens: provider-reported cached subset; null when the
            provider does not report it.
        output_tokens: provider-reported output tokens.
        local_prompt_tokens: eceb-independent local count, labelled separately
            (ECEB-0.1 §16); never used for gates or cost.
        input_cost_micro_usd, output_cost_micro_usd: recorded cost.
        latency_ms: end-to-end latency.
        quality_milli: the judge's score, thousandths.
        answer: the complete answer.
        selected_artifacts: artifacts in the context, with observed digests.
        context_digest: BLAKE3 of the exact rendered model context.
    """

    task_id: RecordIdentifier
    strategy: Strategy
    budget: Annotated[int, msgspec.Meta(gt=0, le=SAFE_INTEGER_MAX)] | None = None
    repetition: Annotated[int, msgspec.Meta(ge=1, le=SAFE_INTEGER_MAX)]
    configuration_id: RecordIdentifier
    query_digest: RecordDigest
    input_tokens: Count
    cached_input_tokens: Count | None = None
    output_tokens: Count
    local_prompt_tokens: Count | None = None
    input_cost_micro_usd: MicroUsd
    output_cost_micro_usd: MicroUsd
    latency_ms: Count
    quality_milli: Milli
    answer: str
    selected_artifacts: tuple[SelectedArtifact, ...]
    context_digest: RecordDigest


class AuxiliaryCost(msgspec.Struct, frozen=True, kw_only=True, gc=False, forbid_unknown_fields=True):
    """Spend outside the observations themselves (ECEB-0.1 §8: embedding
    requests, tool calls, retries), charged to one task/strategy/budget group.

    Fields:
        task_id, strategy, budget: the group charged (budget null for groups
            without one).
        repetition: the repetition it belongs to, when known.
        kind: ``embedding``, ``tool_call``, ``retry`` or ``other``.
        description: free text.
        cost_micro_usd: the spend.
    """

    task_id: RecordIdentifier
    strategy: Strategy
    budget: Annotated[int, msgspec.Meta(gt=0, le=SAFE_INTEGER_MAX)] | None = None
    repetition: Annotated[int, msgspec.Meta(ge=1, le=SAFE_INTEGER_MAX)] | None = None
    kind: Literal["embedding", "tool_call", "retry", "other"]
    description: str = ""
    cost_micro_usd: MicroUsd


class RunHeader(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Everything a run file holds besides its observations and auxiliary costs.

    Fields:
        schema: the schema identifier.
        run_id: a name for the run.
        claim_class: what the run may be taken as evidence of (ECEB-0.1 §15).
        non_empirical: true when scores or usage are synthetic (ECEB-0.1 §9).
        benchmark: the benchmark it was recorded against.
        corpus_root: the corpus root it was recorded against.
        configurations: model/judge/tokenizer/decoding/pricing combinations.
        factorial_experiment: factors allowed to differ between strategies.
    """

    schema: Literal["symgliph.eceb/run-v0.1"]
    run_id: Identifier
    claim_class: ClaimClass
    non_empirical: bool
    benchmark: BenchmarkReference
    corpus_root: Digest
    configurations: Annotated[tuple[Configuration, ...], msgspec.Meta(min_length=1)]
    factorial_experiment: FactorialExperiment | None = None


class Run(RunHeader, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A recorded run (schema ``symgliph.eceb/run-v0.1``): the header fields
    of :class:`RunHeader`, and

    Fields:
        observations: every observation, in any order.
        auxiliary_costs: spend charged to groups beyond their observations.
    """

    observations: tuple[Observation, ...]
    auxiliary_costs: tuple[AuxiliaryCost, ...] = ()


class RunEnvelope(RunHeader, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A run whose observations and auxiliary costs are left undecoded
    (``msgspec.Raw`` slices of the file), to be decoded task by task."""

    observations: tuple[msgspec.Raw, ...]
    auxiliary_costs: tuple[msgspec.Raw, ...] = ()

    def header(self) -> RunHeader:
        """The :class:`RunHeader` part."""
        return RunHeader(**{f: getattr(self, f) for f in RunHeader.__struct_fields__})
