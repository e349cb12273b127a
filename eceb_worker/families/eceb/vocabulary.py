"""The closed vocabularies of ECEB-0.1 runs and the schema identifiers of
its documents (the corpus's own, source kinds and classifications, are in
:mod:`eceb_worker.corpus.artifacts`)."""

from __future__ import annotations

from typing import Final, Literal

__all__ = [
    "BENCHMARK_SCHEMA",
    "REPORT_SCHEMA",
    "RUN_SCHEMA",
    "ClaimClass",
    "Strategy",
]

Strategy = Literal["full_permitted_context", "naive_top_k", "compiled"]
"""The three registered context strategies (ECEB-0.1 §7)."""

ClaimClass = Literal["conformance_seed", "public_reproduction", "enterprise_proxy", "enterprise_validated"]
"""Claim classes, weakest first (ECEB-0.1 §15)."""

BENCHMARK_SCHEMA: Final = "symgliph.eceb/benchmark-v0.1"
RUN_SCHEMA: Final = "symgliph.eceb/run-v0.1"
REPORT_SCHEMA: Final = "symgliph.eceb/report-v0.1"
