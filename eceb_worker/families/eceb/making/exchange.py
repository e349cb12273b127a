"""What ``eceb run`` asks of a model provider, a context system and a judge:
the exchanged values as Structs, and each party as a small Protocol that an
adapter implements (:mod:`eceb_worker.io.models`,
:mod:`eceb_worker.io.context_systems`, :mod:`eceb_worker.io.judges`).

Nothing here performs I/O. A party that fails raises
:class:`~eceb_worker.errors.ProviderError`, saying whether the failure is
transient (worth another attempt after ``retry_after_s``) and whether the
provider may have billed the failed attempt; the one retry policy of paid
executions (:mod:`eceb_worker.pipeline.making.retry`) decides what happens next.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol

import msgspec

from eceb_worker.core.arithmetic import SAFE_INTEGER_MAX
from eceb_worker.families.eceb.making.protocol import ContextRequest, ContextResponse

__all__ = [
    "ContextSystem",
    "ModelProvider",
    "ModelRequest",
    "ModelResponse",
    "StructuredOutput",
    "Usage",
]

Count = Annotated[int, msgspec.Meta(ge=0, le=SAFE_INTEGER_MAX)]


class StructuredOutput(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A JSON Schema the answer must follow (a judge's structured output).

    Fields:
        name: the schema's name as providers ask for one (``[A-Za-z0-9_-]``).
        schema: the JSON Schema (an object schema, strict: every property
            required, no additional properties).
    """

    name: str
    schema: dict[str, Any]


class ModelRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One call of a model: a system text and one user message.

    Fields:
        purpose: ``answer`` (an execution) or ``judge`` (a judgment).
        system: the system instruction (may be empty).
        prompt: the user message, exactly the bytes whose BLAKE3 is the
            observation's ``context_digest`` for an answer.
        max_output_tokens, temperature_milli, top_p_milli, seed: decoding,
            temperature and top-p in thousandths (ECEB-0.1 §7).
        structured_output: the JSON Schema the answer must follow, if any.
    """

    purpose: Literal["answer", "judge"]
    system: str = ""
    prompt: str
    max_output_tokens: Annotated[int, msgspec.Meta(gt=0, le=SAFE_INTEGER_MAX)]
    temperature_milli: Count = 0
    top_p_milli: Annotated[int, msgspec.Meta(ge=0, le=1000)] = 1000
    seed: int | None = None
    structured_output: StructuredOutput | None = None


class Usage(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Token usage as the provider reported it (ECEB-0.1 §16: authoritative).

    Fields:
        input_tokens: prompt tokens, cached ones included.
        cached_input_tokens: the cached subset; ``None`` when the provider
            does not report it.
        output_tokens: completion tokens, reasoning ones included.
        reasoning_tokens: the reasoning subset; ``None`` when not reported.
    """

    input_tokens: Count
    cached_input_tokens: Count | None = None
    output_tokens: Count
    reasoning_tokens: Count | None = None


class ModelResponse(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A model's answer to one :class:`ModelRequest`.

    Fields:
        text: the answer's text (for structured output, the JSON text).
        usage: the provider's usage.
        model_revision: the immutable model revision the provider named in
            its response (e.g. OpenAI's ``model`` field), ``""`` when none.
        request_body: the JSON body sent, as bytes (no headers: credentials
            never enter it).
        response_body: the JSON body received, as bytes.
    """

    text: str
    usage: Usage
    model_revision: str = ""
    request_body: bytes = b""
    response_body: bytes = b""


class ModelProvider(Protocol):
    """A model behind a provider's API (adapters in :mod:`eceb_worker.io.models`)."""

    @property
    def name(self) -> str:
        """The provider's name as the run records it, e.g. ``"openai"``."""
        ...

    def complete(self, request: ModelRequest) -> ModelResponse:
        """One call, never retried here. Raises
        :class:`~eceb_worker.errors.ProviderError` (transient or final; its
        message carries no credential and no prompt text)."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class ContextSystem(Protocol):
    """The user's context system (adapters in :mod:`eceb_worker.io.context_systems`)."""

    def build(self, request: ContextRequest) -> ContextResponse:
        """The system's context for ``request``. Raises
        :class:`~eceb_worker.errors.ProviderError` when the system cannot be
        reached, answers out of protocol or does not answer in time."""
        ...

    def close(self) -> None:
        """Stop the system (a subprocess) or release connections."""
        ...
