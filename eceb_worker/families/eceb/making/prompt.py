"""The model prompt of an execution and the digests an observation records
(ECEB-0.1 §8): eceb renders the prompt itself from the profile's template,
so the digests are over the exact bytes it sends.

``query_digest`` is the BLAKE3 of the task's query (UTF-8).
``context_digest`` is the BLAKE3 of the exact model input: the system text
and the rendered user message, as the canonical JSON array
``[system, prompt]``: two repetitions given the same context have the same
digest (ECEB-0.1 §13), any byte of difference in what the model saw changes it.
"""

from __future__ import annotations

import re
from typing import Final

from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.digests import digest_bytes
from eceb_worker.families.eceb.making.profile import PromptSpec

__all__ = ["CONTEXT_DIGEST_DOMAIN", "context_digest", "query_digest", "render_prompt"]

CONTEXT_DIGEST_DOMAIN: Final = b"symgliph:eceb:model-input:v0.1\0"
_PLACEHOLDER: Final = re.compile(r"\{(query|context)\}")


def render_prompt(spec: PromptSpec, *, query: str, context: str) -> str:
    """The user message: the template with ``{query}`` and ``{context}``
    replaced in one pass (a query holding ``{context}`` stays as it is)."""
    values = {"query": query, "context": context}
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], spec.template)


def query_digest(query: str) -> str:
    """BLAKE3 of the query's UTF-8 bytes (64 hex)."""
    return digest_bytes(query.encode())


def context_digest(system: str, prompt: str) -> str:
    """BLAKE3 of the exact model input (see the module), 64 hex."""
    return digest_bytes(CONTEXT_DIGEST_DOMAIN + canonical_json([system, prompt]))
