"""The context-system protocol: what eceb asks the user's context system for
one execution, and what it answers (``eceb run``; ECEB-0.1 §7 ``compiled``).

One request and one response per execution, each one JSON document
(schemas ``context-request-v0.1.json`` and ``context-response-v0.1.json``).
Over a subprocess, each is one line of JSON on the system's standard input
and output (JSON Lines, UTF-8, one request answered before the next is
sent); over HTTP, the request is the body of a ``POST`` and the response the
body of its ``200`` answer (``Content-Type: application/json``).

The system answers with the context it rendered and the artifacts it put in
it, each with the BLAKE3 digest of the bytes it read (the gates check them
against the registry, ECEB-0.1 §11 gate 5). It may add a local token count
(ECEB-0.1 §16: labelled separately, never used for gates or cost). It may
answer ``error`` instead, naming why it could not build a context; the
execution then records no observation.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

from eceb_worker.core.arithmetic import SAFE_INTEGER_MAX
from eceb_worker.corpus.artifacts import Classification
from eceb_worker.families.eceb.run import SelectedArtifact
from eceb_worker.families.eceb.vocabulary import Strategy

__all__ = [
    "CONTEXT_REQUEST_SCHEMA",
    "CONTEXT_RESPONSE_SCHEMA",
    "ContextRequest",
    "ContextResponse",
    "Permissions",
]

CONTEXT_REQUEST_SCHEMA: Final = "symgliph.eceb/context-request-v0.1"
CONTEXT_RESPONSE_SCHEMA: Final = "symgliph.eceb/context-response-v0.1"

Positive = Annotated[int, msgspec.Meta(gt=0, le=SAFE_INTEGER_MAX)]


class Permissions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What the task's actor may receive (ECEB-0.1 §6, §14).

    Fields:
        allowed_classifications: the classifications the task permits (none
            inferred from order).
        denied_artifacts: artifact ids the actor must not receive, whatever
            their classification.
    """

    allowed_classifications: tuple[Classification, ...]
    denied_artifacts: tuple[str, ...] = ()


class ContextRequest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One execution's request to the context system.

    Fields:
        schema: ``symgliph.eceb/context-request-v0.1``.
        request_id: the execution's id; the response echoes it.
        task_id: the benchmark task.
        query: the task's query, exactly as the model will see it.
        strategy: the strategy asked for (``compiled``; ``naive_top_k`` only
            when the profile delegates it to the system).
        budget_tokens: the declared token budget of the whole prompt.
        repetition: one-based repetition number (ECEB-0.1 §13): a
            repeatable system answers every repetition with the same context.
        permissions: what the actor may receive.
    """

    schema: Literal["symgliph.eceb/context-request-v0.1"] = "symgliph.eceb/context-request-v0.1"
    request_id: str
    task_id: str
    query: str
    strategy: Strategy
    budget_tokens: Positive
    repetition: Positive
    permissions: Permissions


class ContextResponse(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The context system's answer to one :class:`ContextRequest`.

    Fields:
        schema: ``symgliph.eceb/context-response-v0.1``.
        request_id: the request's id, echoed.
        context: the rendered context text (UTF-8); eceb places it in the
            prompt template as it is.
        selected_artifacts: the artifacts in the context, each with the
            BLAKE3 digest of the bytes the system read.
        local_prompt_tokens: the system's own token count of the context,
            when it has one (labelled separately, ECEB-0.1 §16).
        error: why no context could be built; when not empty, ``context``
            and ``selected_artifacts`` are ignored and the execution records
            no observation.
    """

    schema: Literal["symgliph.eceb/context-response-v0.1"] = "symgliph.eceb/context-response-v0.1"
    request_id: str
    context: str = ""
    selected_artifacts: tuple[SelectedArtifact, ...] = ()
    local_prompt_tokens: Annotated[int, msgspec.Meta(ge=0, le=SAFE_INTEGER_MAX)] | None = None
    error: str = ""
