"""The closed vocabularies of ECEB-0.1 and the schema identifiers eceb reads and writes."""

from __future__ import annotations

from typing import Final, Literal, get_args

__all__ = [
    "BENCHMARK_SCHEMA",
    "SAFE_INTEGER_MAX",
    "CLAIM_CLASSES",
    "CLASSIFICATIONS",
    "REPORT_SCHEMA",
    "RUN_SCHEMA",
    "STRATEGIES",
    "ClaimClass",
    "Strategy",
    "REGISTRY_SCHEMA",
    "RULES_SCHEMA",
    "SOURCE_KINDS",
    "VERIFICATION_SCHEMA",
    "Classification",
    "SourceKind",
]

SourceKind = Literal[
    "code",
    "rfc",
    "runbook",
    "pull_request",
    "chat",
    "issue",
    "api_spec",
    "infrastructure",
    "policy",
]
"""The nine reference enterprise source kinds (ECEB-0.1 §5)."""

Classification = Literal["public", "internal", "confidential", "restricted"]
"""The four information classifications (ECEB-0.1 §6). Listed, never ordered:
access is granted only by a task's explicit allow-list."""

Strategy = Literal["full_permitted_context", "naive_top_k", "compiled"]
"""The three registered context strategies (ECEB-0.1 §7)."""

ClaimClass = Literal["conformance_seed", "public_reproduction", "enterprise_proxy", "enterprise_validated"]
"""Claim classes, weakest first (ECEB-0.1 §15)."""

SOURCE_KINDS: Final[tuple[str, ...]] = get_args(SourceKind)
CLASSIFICATIONS: Final[tuple[str, ...]] = get_args(Classification)
STRATEGIES: Final[tuple[str, ...]] = get_args(Strategy)
CLAIM_CLASSES: Final[tuple[str, ...]] = get_args(ClaimClass)

SAFE_INTEGER_MAX: Final = 2**53 - 1
"""Largest integer any input or report field may hold: RFC 8785 (I-JSON)
numbers are exact only up to 2^53 - 1."""

BENCHMARK_SCHEMA: Final = "symgliph.eceb/benchmark-v0.1"
RUN_SCHEMA: Final = "symgliph.eceb/run-v0.1"
REPORT_SCHEMA: Final = "symgliph.eceb/report-v0.1"
REGISTRY_SCHEMA: Final = "symgliph.eceb/registry-v0.1"
RULES_SCHEMA: Final = "symgliph.eceb/rules-v0.1"
VERIFICATION_SCHEMA: Final = "symgliph.eceb/verification-v0.1"
