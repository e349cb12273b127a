"""What the journal keeps of each call (``eceb run``): enough to write the
run, its transcripts and its judgments again, byte for byte, without
calling anything (ECEB-0.1 §8, §9).

Records are JSON (msgspec) in the journal; request and response bodies are
the provider's JSON as sent and received (no headers: credentials never
enter them).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from eceb_worker.families.eceb.making.exchange import Usage
from eceb_worker.families.eceb.run import SelectedArtifact

__all__ = ["AnswerRecord", "CallRecord", "JudgeRecord", "decode_record", "encode_record"]


class AnswerRecord(msgspec.Struct, frozen=True, kw_only=True, tag_field="call", tag="answer"):
    """An execution's answer call, made.

    Fields:
        selected_artifacts: the context's artifacts with observed digests.
        local_prompt_tokens: the local count of the prompt (labelled, ECEB-0.1 §16).
        query_digest, context_digest: see :mod:`.prompt`.
        usage: the provider's usage; input_cost_micro_usd and
            output_cost_micro_usd by the pricing snapshot (:mod:`.costs`).
        latency_ms: end to end: context built, prompt sent, answer read.
        answer: the answer text.
        model_revision: the revision the provider named.
        request_body, response_body: the provider's JSON as sent and received.
    """

    selected_artifacts: tuple[SelectedArtifact, ...]
    local_prompt_tokens: int | None
    query_digest: str
    context_digest: str
    usage: Usage
    input_cost_micro_usd: int
    output_cost_micro_usd: int
    latency_ms: int
    answer: str
    model_revision: str
    request_body: msgspec.Raw
    response_body: msgspec.Raw


class JudgeRecord(msgspec.Struct, frozen=True, kw_only=True, tag_field="call", tag="judge"):
    """An execution's judgment, made.

    Fields:
        quality_milli: the score, thousandths.
        rationale: the judge's reason (LLM judge) or ``""``.
        judge_prompt: the judge's user message (LLM judge) or the command
            judge's input, kept for publication (ECEB-0.1 §9).
        raw_judgment: the judge's output as received.
        usage: the judge's usage (``None`` for a command judge).
        cost_micro_usd: its cost by the judge's pricing snapshot (0 for a command).
        model_revision: the judging model's revision, or the command's.
        request_body, response_body: the provider's JSON (LLM judge), else ``null``.
    """

    quality_milli: int
    rationale: str
    judge_prompt: str
    raw_judgment: str
    usage: Usage | None
    cost_micro_usd: int
    model_revision: str
    request_body: msgspec.Raw = msgspec.Raw(b"null")
    response_body: msgspec.Raw = msgspec.Raw(b"null")


CallRecord = AnswerRecord | JudgeRecord
Outcome = Literal["ok", "transient", "final", "unknown"]

_DECODER: msgspec.json.Decoder[CallRecord] = msgspec.json.Decoder(CallRecord)


def encode_record(record: CallRecord) -> bytes:
    """The record's JSON bytes, as the journal keeps them."""
    return msgspec.json.encode(record)


def decode_record(data: bytes) -> CallRecord:
    """A record from the journal's bytes; ``msgspec.DecodeError`` on damage."""
    record: CallRecord = _DECODER.decode(data)
    return record
