"""The closed vocabularies of ECEB-0.1 and the schema identifiers eceb reads and writes."""

from __future__ import annotations

from typing import Final, Literal, get_args

__all__ = [
    "CLASSIFICATIONS",
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

SOURCE_KINDS: Final[tuple[str, ...]] = get_args(SourceKind)
CLASSIFICATIONS: Final[tuple[str, ...]] = get_args(Classification)

REGISTRY_SCHEMA: Final = "symgliph.eceb/registry-v0.1"
RULES_SCHEMA: Final = "symgliph.eceb/rules-v0.1"
VERIFICATION_SCHEMA: Final = "symgliph.eceb/verification-v0.1"
