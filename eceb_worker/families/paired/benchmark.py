"""The paired benchmark definition: what ``eceb pair freeze`` freezes
(task-context-benchmark-reference.md, "Paid experiment preflight
conditions" and "Paired inputs and retained outputs").

A :class:`PairBenchmark` (``benchmark.json``) names, relative to its own
file: the three task specifications, the frozen overview (arm A's
context), the cue command that produces arm B's context
(``repocue/task-cue-1``) and the common estimate budget both contexts must
fit, the provider settings both arms share, the success criteria and
rubric, the independent assessor, the pair and evidence coverage, the
dated credit rates and where external evidence is kept, and the execution
controls (authorized execution count, spending stop, pilot continuation).

Nothing in it authorizes a paid execution: authorization (the seed's G3)
and the pilot's continuation are separate records a person makes
(:mod:`eceb_worker.families.paired.records`). Pure: Structs only.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

from eceb_worker.families.paired.specs import Identifier, Text

__all__ = ["BENCHMARK_SCHEMA", "LOCAL_ONLY", "Coverage", "PairBenchmark", "Success", "estimate_tokens"]

BENCHMARK_SCHEMA: Final = "symgliph.eceb/pair-benchmark-v0.1"
LOCAL_ONLY: Final = "local preparation only: does not authorize paid execution"
"""The label of the bundled examples (the seed: "These are local preparation
examples. They do not authorize paid execution")."""

CUE_ESTIMATE: Final = "utf8-bytes-div-4-ceil"
"""The one token estimate of a context's size: its bytes divided by 4,
rounded up (:func:`estimate_tokens`)."""

FilePath = Annotated[
    str,
    msgspec.Meta(min_length=1, max_length=4096, description="A file path relative to the benchmark file."),
]


def estimate_tokens(size: int) -> int:
    """The estimated tokens of a context of ``size`` bytes (:data:`CUE_ESTIMATE`)."""
    return -(-size // 4)


class TaskFiles(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The three task specification files (one per task kind of the schedule)."""

    explanation: FilePath
    discovery: FilePath
    verification: FilePath


class CueCommand(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The declared command that produces arm B's task cue, and the common budget.

    Fields:
        argv: the command (no shell). ``argv[0]`` containing a ``/`` is a path
            relative to the benchmark file; otherwise it is looked up on PATH.
            It runs in the repository with ``ECEB_TASK`` (the task file's
            absolute path) and ``ECEB_DECLARATION`` (the declaration's
            repository path) in its environment, and writes the cue
            (a JSON document, ``schema: repocue/task-cue-1``) to standard output.
        budget_tokens: the common estimate budget: both arms' contexts (the
            overview and every cue) must estimate at most this many tokens.
        estimate: how a context's tokens are estimated (:data:`CUE_ESTIMATE`).
        timeout_s: a cue command still running after this many seconds is
            stopped and the pair is not prepared.
    """

    argv: Annotated[tuple[Annotated[str, msgspec.Meta(min_length=1, max_length=4096)], ...], msgspec.Meta(min_length=1)]
    budget_tokens: Annotated[int, msgspec.Meta(ge=1, le=10_000_000)]
    estimate: Literal["utf8-bytes-div-4-ceil"] = "utf8-bytes-div-4-ceil"
    timeout_s: Annotated[int, msgspec.Meta(ge=1, le=3600)] = 120


class ProviderSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The coding-agent CLI and the settings both arms share.

    Fields:
        adapter: the provider adapter (``"codex-exec"``: Codex CLI's ``codex exec --json``).
        executable: the provider's executable, looked up on PATH unless it
            contains a ``/`` (then relative to the benchmark file);
            ``ECEB_PAIR_PROVIDER`` overrides it.
        model: the model, passed as ``-m``; never chosen automatically.
        reasoning_effort: passed as ``-c model_reasoning_effort=...``.
        speed_tier: ``"standard"`` passes nothing; any other value is passed
            as ``-c service_tier=...``.
        sandbox: always ``"read-only"``: the repository must not change.
        timeout_s: an attempt still running after this many seconds is
            stopped and recorded as timed out.
    """

    adapter: Literal["codex-exec"] = "codex-exec"
    executable: Annotated[str, msgspec.Meta(min_length=1, max_length=4096)] = "codex"
    model: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}\Z")]
    reasoning_effort: Annotated[str, msgspec.Meta(pattern=r"^[a-z]{1,32}\Z")]
    speed_tier: Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z_-]{0,31}\Z")] = "standard"
    sandbox: Literal["read-only"] = "read-only"
    timeout_s: Annotated[int, msgspec.Meta(ge=1, le=86_400)] = 1800


class Success(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The success criteria and the rubric, each a file bound by digest when frozen."""

    criteria: FilePath
    rubric: FilePath


class Assessor(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Who assesses explanation answers. ``identity``: a name or role;
    ``independent`` must be true (the seed asks for an independent assessor)."""

    identity: Text
    independent: Literal[True]


class Coverage(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The exact pair and evidence coverage a verdict needs.

    Fields:
        pairs: the exact pair count of the frozen policy (the schedule's 9).
        evidence: what every attempt must retain, in words.
        missing_semantic_evidence: how an attempt whose semantic evidence
            (an assessment) is missing is treated: ``"unassessed"`` (kept
            visible, no complete comparison) or ``"failed"``.
    """

    pairs: Annotated[int, msgspec.Meta(ge=1, le=1000)]
    evidence: Text
    missing_semantic_evidence: Literal["unassessed", "failed"]


class SpendingStop(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The spending stop controls.

    Fields:
        manual: ``eceb pair stop`` records a stop; no execution starts after it.
        on_outcomes: attempt outcomes after which the runner records a stop
            itself (e.g. ``["mutated"]``).
    """

    manual: Literal[True] = True
    on_outcomes: tuple[
        Literal["failed", "partial", "malformed", "incompatible", "mutated", "timed_out", "spawn_failed"], ...
    ] = ()


class ExecutionControls(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How many executions may be authorized, when spending stops, and how
    the pilot continues.

    Fields:
        authorized_executions: the execution count an authorization grants
            (at most the schedule's 18).
        spending_stop: :class:`SpendingStop`.
        pilot_continuation: ``"explicit-approval"``: no pair after the pilot
            without a recorded approval binding the pilot's evidence.
    """

    authorized_executions: Annotated[int, msgspec.Meta(ge=0, le=18)]
    spending_stop: SpendingStop = SpendingStop()
    pilot_continuation: Literal["explicit-approval"] = "explicit-approval"


class PairBenchmark(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``benchmark.json`` of the paired benchmark (``schema``: :data:`BENCHMARK_SCHEMA`).

    Fields:
        label: what the file authorizes, in words (the examples say :data:`LOCAL_ONLY`).
        synthetic: true when its rates are synthetic: they verify software
            handling only. (Synthetic usage is told by the provider's stream:
            :attr:`~eceb_worker.families.paired.transport.Transport.synthetic`.)
        tasks: :class:`TaskFiles`.
        overview: arm A's context, the frozen overview (a file).
        cue: :class:`CueCommand`.
        provider: :class:`ProviderSettings`.
        success, assessor, coverage: see their classes.
        rates: a credit rates file (optional; bound by digest when frozen).
        external_evidence: where evidence kept outside the pair directories
            lives (a location, in words or as a URL without credentials).
        execution: :class:`ExecutionControls`.
    """

    schema: Literal["symgliph.eceb/pair-benchmark-v0.1"]
    label: Text
    synthetic: bool
    id: Identifier
    tasks: TaskFiles
    overview: FilePath
    cue: CueCommand
    provider: ProviderSettings
    success: Success
    assessor: Assessor
    coverage: Coverage
    rates: FilePath | None = None
    external_evidence: Text
    execution: ExecutionControls
