"""The run profile (``symgliph.eceb/run-profile-v0.1``): everything ``eceb
run`` needs besides the benchmark and the corpus, declared by the user.

It names the model (provider, base URL, model name, input window, request
limits, where its credential is found: never the credential itself), the
decoding parameters and pricing snapshot the run records (ECEB-0.1 §7, §8),
the prompt template, the context system (a command speaking JSON Lines, or
an HTTP URL), which baselines eceb builds, the judge (an LLM judge with a
rubric bound by digest, or a command), and the spending limits of the
journal (an authorized count of paid executions and a spending stop).
Relative paths in it are relative to the profile file.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

from eceb_worker.core.arithmetic import SAFE_INTEGER_MAX
from eceb_worker.core.digests import Digest
from eceb_worker.core.identifiers import Identifier
from eceb_worker.families.eceb.run import Decoding, PricingSnapshot, Tokenizer
from eceb_worker.families.eceb.vocabulary import ClaimClass

__all__ = [
    "RUN_PROFILE_SCHEMA",
    "CommandJudge",
    "ContextSystemSpec",
    "LlmJudge",
    "ModelSpec",
    "PromptSpec",
    "RunProfile",
    "Spending",
    "StrategySpec",
]

RUN_PROFILE_SCHEMA: Final = "symgliph.eceb/run-profile-v0.1"

Positive = Annotated[int, msgspec.Meta(gt=0, le=SAFE_INTEGER_MAX)]
Count = Annotated[int, msgspec.Meta(ge=0, le=SAFE_INTEGER_MAX)]
NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Api = Literal["openai-chat", "openai-responses", "anthropic-messages"]


class ModelSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A model behind a provider's API.

    Fields:
        api: ``openai-chat`` (Chat Completions), ``openai-responses``
            (Responses) or ``anthropic-messages`` (Messages).
        provider: the provider's name as the run records it (``openai``,
            ``azure``, ``vllm``, ``anthropic``, ...).
        name: the model name sent to the provider.
        base_url: the API's base URL (empty: the SDK's default); an
            OpenAI-compatible server (Azure, vLLM, Ollama, a LiteLLM proxy)
            is reached through ``openai-chat`` with its base URL.
        api_key_env: the environment variable holding the credential.
        api_key_file: a file holding it instead (first line), when set.
        input_window_tokens: the model's declared input window, in tokens:
            the full permitted-context baseline is packed up to it.
        timeout_s: seconds before one call is abandoned (a transient failure).
        requests_per_minute, tokens_per_minute: the provider's limits, kept
            by eceb (0: no limit).
    """

    api: Api
    provider: NonEmpty
    name: NonEmpty
    base_url: str = ""
    api_key_env: str = ""
    api_key_file: str = ""
    input_window_tokens: Positive
    timeout_s: Annotated[int, msgspec.Meta(gt=0, le=3600)] = 120
    requests_per_minute: Count = 0
    tokens_per_minute: Count = 0


class PromptSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The model prompt: a system text and a user template.

    Fields:
        system: the system instruction, sent as it is.
        template: the user message; ``{query}`` and ``{context}`` are
            replaced by the task's query and the rendered context (no other
            replacement: braces elsewhere are kept).
    """

    system: str = ""
    template: NonEmpty = "Answer the question using only the context.\n\nContext:\n{context}\n\nQuestion: {query}\n"


class ContextSystemSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The user's context system: exactly one of ``command`` and ``url``.

    Fields:
        command: the program and its arguments, started once and spoken to
            in JSON Lines on its standard input and output.
        url: an HTTP endpoint taking each request as a ``POST``.
        timeout_s: seconds to answer one request.
        revision: the context-construction implementation's revision
            (ECEB-0.1 §16), recorded with the run.
    """

    command: tuple[str, ...] = ()
    url: str = ""
    timeout_s: Annotated[int, msgspec.Meta(gt=0, le=3600)] = 60
    revision: str = ""


class StrategySpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which strategies the run makes (ECEB-0.1 §7).

    Fields:
        naive_top_k: whether eceb builds the BM25 baseline at every budget
            of each task's ladder.
        repetitions: repetitions of every group; 0 takes each task's
            ``required_repetitions``.
    """

    naive_top_k: bool = True
    repetitions: Count = 0


class LlmJudge(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="kind", tag="llm"):
    """A model judging each answer against a rubric (ECEB-0.1 §9).

    Fields:
        profile: the judge profile's name, recorded in the run.
        rubric: the rubric file (Markdown or text).
        rubric_digest: its BLAKE3; the run refuses to start when the file
            differs.
        model: the judging model.
        decoding: the judge's decoding parameters.
        pricing: the judge model's pricing snapshot (its spend is an
            auxiliary cost of the judged group, ECEB-0.1 §8).
        human_review: ``none``, ``sampled`` or ``full``.
    """

    profile: Identifier
    rubric: NonEmpty
    rubric_digest: Digest
    model: ModelSpec
    decoding: Decoding
    pricing: PricingSnapshot
    human_review: Literal["none", "sampled", "full"] = "none"


class CommandJudge(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="kind", tag="command"
):
    """A program scoring each answer deterministically: it reads one JSON
    object on standard input (the task and the answer) and prints a score
    in thousandths (0..1000).

    Fields:
        profile: the judge profile's name.
        command: the program and its arguments.
        timeout_s: seconds to score one answer.
        revision: the program's revision, recorded as the judge model's.
    """

    profile: Identifier
    command: Annotated[tuple[str, ...], msgspec.Meta(min_length=1)]
    timeout_s: Annotated[int, msgspec.Meta(gt=0, le=3600)] = 60
    revision: str = ""


class Spending(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The journal's limits on paid executions (the rules of the paired
    family's ledger: an authorized count, a spending stop, nothing twice).

    Fields:
        authorized_executions: how many paid calls (answers and LLM
            judgments) may start; 0: the plan's own count. A retry of a
            started call is the same call (the retry policy bounds it; its
            possible cost counts towards the stop).
        stop_micro_usd: estimated spend (pricing snapshot) beyond which no
            call starts; 0: no stop.
    """

    authorized_executions: Count = 0
    stop_micro_usd: Count = 0


class RunProfile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A run profile (schema ``symgliph.eceb/run-profile-v0.1``; see the module).

    Fields:
        schema, run_id, claim_class (ECEB-0.1 §15), configuration_id.
        non_empirical: true when the model or judge is a stand-in (a
            loopback provider, a scripted judge): the run says so (ECEB-0.1 §9).
        model, decoding, pricing, tokenizer: the answering configuration.
        prompt: the prompt template.
        context_system: the system under test.
        strategies: which baselines eceb builds, how many repetitions.
        judge: an LLM judge or a command judge.
        spending: the journal's limits.
        in_flight: executions in flight at once.
    """

    schema: Literal["symgliph.eceb/run-profile-v0.1"]
    run_id: Identifier
    claim_class: ClaimClass
    non_empirical: bool = False
    configuration_id: Identifier = "default"
    model: ModelSpec
    decoding: Decoding
    pricing: PricingSnapshot
    tokenizer: Tokenizer = Tokenizer(name="eceb-utf8-bytes-div-3")
    prompt: PromptSpec = PromptSpec()
    context_system: ContextSystemSpec
    strategies: StrategySpec = StrategySpec()
    judge: LlmJudge | CommandJudge
    spending: Spending = Spending()
    in_flight: Annotated[int, msgspec.Meta(gt=0, le=1024)] = 8
