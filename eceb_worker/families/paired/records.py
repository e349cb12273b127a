"""The records of a paired experiment: the freeze, the approvals, each task
pair's manifest and each attempt's journal
(task-context-benchmark-reference.md, "Paired inputs and retained outputs"
and "Paid experiment preflight conditions").

An experiment directory holds::

    freeze.json                 Freeze: the preflight record (eceb pair freeze)
    authorization.json          Authorization: G3, a person's (eceb pair authorize)
    ledger.sqlite               the execution ledger (eceb_worker.io.paired.ledger)
    continuation.json           ContinuationApproval after the pilot (eceb pair approve)
    task-pair-NN-KIND-rR-XXXXXXXX/   one per prepared pair (eceb pair prepare)
        benchmark.json  freeze.json  task.json  answer.schema.json  [rates.json]
        costs.json      arms/A/context  arms/B/context
        manifest.json   Manifest: every file above by digest and size, both arms' command lines
        attempts/A/ attempts/B/     one journal per attempt (eceb pair run), in this order:
            cue  prompt.txt  request.json  submitted-prompt.txt  answer.schema.json
            invocation.json  attempt-start.json (the commit point)
            provider.jsonl  provider.stderr  runner.stdout  runner.stderr
            attempt.json (atomic rename: status, exit, every file's digest)

Every record is canonical JSON; a record's digest is the BLAKE3 of its
bytes. Records bind each other by digest: the manifest binds the freeze and
the answer schema (``output_schema_digest``), a request binds the schema
digest and the pair's schema path, an invocation the captured schema, an
attempt start the request and the invocation, an attempt every file of its
journal (:mod:`eceb_worker.families.paired.journal`). Pure: Structs only.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

from eceb_worker.core.digests import Digest
from eceb_worker.families.paired.schedule import Arm, ScheduledPair, TaskKind
from eceb_worker.families.paired.specs import Check, Identifier

__all__ = [
    "AUTHORIZATION_SCHEMA",
    "CONTINUATION_SCHEMA",
    "COSTS_SCHEMA",
    "FREEZE_SCHEMA",
    "MANIFEST_SCHEMA",
    "ArmCommand",
    "ArmInputs",
    "Authorization",
    "ContinuationApproval",
    "Cost",
    "Costs",
    "Executable",
    "FileDigest",
    "Freeze",
    "FrozenTask",
    "Manifest",
    "ObservedSupport",
    "PairPosition",
    "Repository",
    "SourcePin",
    "position_of",
    "Timestamp",
]

FREEZE_SCHEMA: Final = "symgliph.eceb/pair-freeze-v0.1"
AUTHORIZATION_SCHEMA: Final = "symgliph.eceb/pair-authorization-v0.1"
CONTINUATION_SCHEMA: Final = "symgliph.eceb/pair-continuation-v0.1"
MANIFEST_SCHEMA: Final = "symgliph.eceb/pair-manifest-v0.1"
COSTS_SCHEMA: Final = "symgliph.eceb/pair-costs-v0.1"

GitId = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?\Z", description="A git object id.")]
Timestamp = Annotated[
    str,
    msgspec.Meta(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z\Z"),
]
"""A UTC time, RFC 3339 with ``Z`` (recorded, never used in a figure)."""


class FileDigest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A file bound by content: ``path`` (as recorded: relative to the
    directory of the record that lists it, or as given), ``blake3`` and
    ``size`` (bytes)."""

    path: str
    blake3: Digest
    size: Annotated[int, msgspec.Meta(ge=0)]


class Executable(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An executable's identity: ``name`` as declared, ``path`` its absolute
    real path, ``blake3`` and ``size`` of its bytes, ``version`` what
    ``--version`` printed (stripped; ``None`` when not asked)."""

    name: str
    path: str
    blake3: Digest
    size: Annotated[int, msgspec.Meta(ge=0)]
    version: str | None = None


class Repository(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The target repository's state.

    Fields:
        path: its absolute physical path.
        reviewed_revision: the commit the experiment is frozen at (``HEAD`` at freeze).
        head: ``HEAD``'s commit id.
        tree: the id of ``HEAD``'s tree.
        fingerprint: BLAKE3 of the work tree's state: ``HEAD``, its tree and
            ``git status --porcelain=v1 -z --untracked-files=all --ignored``
            (:func:`eceb_worker.io.paired.git.tree_fingerprint`); equal before and
            after an attempt unless something changed.
        clean: no change, untracked or ignored file beside the commit.
    """

    path: str
    reviewed_revision: GitId
    head: GitId
    tree: GitId
    fingerprint: Digest
    clean: bool


class SourcePin(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A declared source pinned at the reviewed revision: ``path``, git
    ``object`` id and ``type`` (``"blob"`` or ``"tree"``)."""

    path: str
    object: GitId
    type: Literal["blob", "tree"]


class FrozenTask(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A task specification as frozen: its ``kind``, ``id``, the task file
    and its answer schema file by digest."""

    kind: TaskKind
    id: Identifier
    file: FileDigest
    answer_schema: FileDigest


class ObservedSupport(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What is known of the provider's support for the evidence a comparison
    needs: ``usage`` (``turn.completed`` usage counters), ``completion``
    (``turn.completed`` itself), ``output`` (a final agent message under
    ``--output-schema``). Each is ``"unobserved"`` until a recorded stream of
    the frozen provider shows it (``eceb pair freeze --observed-stream``):
    local checks establish no actual support, and neither does a synthetic
    stream (``evidence_synthetic``: its thread id says ``synthetic-``).
    ``evidence``: the recorded stream by digest, or ``None``."""

    usage: Literal["observed", "unobserved"] = "unobserved"
    completion: Literal["observed", "unobserved"] = "unobserved"
    output: Literal["observed", "unobserved"] = "unobserved"
    evidence: FileDigest | None = None
    evidence_synthetic: bool = False


class Freeze(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The preflight record (``freeze.json``, ``schema``: :data:`FREEZE_SCHEMA`):
    every item of the seed's "Paid experiment preflight conditions", bound by
    digest or exact value. Its digest (BLAKE3 of its canonical bytes) is
    what authorizations, approvals, the ledger and every manifest bind.

    Fields:
        label, synthetic: copied from the benchmark.
        benchmark: the benchmark file.
        repository: :class:`Repository` (clean required).
        declaration: the declaration's path, git blob id and digest.
        sources: the declared sources pinned (:class:`SourcePin`).
        checks: the declared check commands, exact.
        tasks: the three tasks (:class:`FrozenTask`), in the schedule's order.
        overview: arm A's context file; ``overview_tokens`` its estimate.
        cue_command: the cue command's executable identity and ``cue_argv``;
            ``cue_timeout_s``: how long it may run.
        cue_budget_tokens: the common estimate budget.
        provider: the provider executable's identity (with ``--version``).
        model, reasoning_effort, speed_tier, sandbox: the shared settings.
        observed_support: :class:`ObservedSupport`.
        success_criteria, rubric: the files by digest.
        assessor: identity; assessor_independent: always true.
        pairs: the exact pair count; evidence_coverage and
            missing_semantic_evidence: as the benchmark states them.
        rates: the rates file by digest, or ``None``.
        external_evidence: where external evidence is kept.
        authorized_executions, spending_stop_on, pilot_continuation: the execution controls.
        frozen_at: when it was written.
    """

    schema: Literal["symgliph.eceb/pair-freeze-v0.1"]
    label: str
    synthetic: bool
    benchmark: FileDigest
    repository: Repository
    declaration: FileDigest
    declaration_object: GitId
    sources: tuple[SourcePin, ...]
    checks: tuple[Check, ...]
    tasks: tuple[FrozenTask, ...]
    overview: FileDigest
    overview_tokens: int
    cue_command: Executable
    cue_argv: tuple[str, ...]
    cue_timeout_s: int = 120
    cue_budget_tokens: int
    provider: Executable
    adapter: str
    model: str
    reasoning_effort: str
    speed_tier: str
    sandbox: str
    timeout_s: int
    observed_support: ObservedSupport
    success_criteria: FileDigest
    rubric: FileDigest
    assessor: str
    assessor_independent: bool
    pairs: int
    evidence_coverage: str
    missing_semantic_evidence: str
    rates: FileDigest | None
    external_evidence: str
    authorized_executions: int
    spending_stop_on: tuple[str, ...]
    pilot_continuation: str
    frozen_at: Timestamp


class Authorization(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """G3: a person's authorization of paid execution (``authorization.json``,
    ``schema``: :data:`AUTHORIZATION_SCHEMA`), bound to one freeze. Passing
    local checks never creates one.

    Fields: ``freeze_digest``, ``authorized_executions`` (at most the
    freeze's), ``approver`` (who), ``statement`` (what they authorize, in
    words), ``recorded_at``.
    """

    schema: Literal["symgliph.eceb/pair-authorization-v0.1"]
    freeze_digest: Digest
    authorized_executions: Annotated[int, msgspec.Meta(ge=0, le=18)]
    approver: str
    statement: str
    recorded_at: Timestamp


class ContinuationApproval(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A person's approval to continue after the pilot (``continuation.json``,
    ``schema``: :data:`CONTINUATION_SCHEMA`).

    Fields: ``freeze_digest``; ``pilot_evidence_digest``: BLAKE3 of the
    canonical list of the pilot pair's manifest digest and its two
    ``attempt.json`` digests (:func:`eceb_worker.pipeline.paired.approvals.pilot_evidence`);
    ``pilot_pair``: the pilot's directory name; ``approver``; ``recorded_at``.
    """

    schema: Literal["symgliph.eceb/pair-continuation-v0.1"]
    freeze_digest: Digest
    pilot_evidence_digest: Digest
    pilot_pair: str
    approver: str
    recorded_at: Timestamp


class PairPosition(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which pair of the schedule: ``position`` (1-based execution order),
    ``task``, ``repeat``, ``order`` (the arms in the order they run) and ``pilot``."""

    position: Annotated[int, msgspec.Meta(ge=1)]
    task: TaskKind
    repeat: Annotated[int, msgspec.Meta(ge=1)]
    order: tuple[Arm, Arm]
    pilot: bool


def position_of(pair: ScheduledPair) -> PairPosition:
    """The :class:`PairPosition` a manifest records of schedule pair ``pair``."""
    return PairPosition(position=pair.position, task=pair.task, repeat=pair.repeat, order=pair.order, pilot=pair.pilot)


class Cost(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A cost that is ``known`` or not: ``tokens`` (estimated, an integer) or
    ``None`` when unknown, and ``basis`` saying how it is known or why not."""

    known: bool
    tokens: int | None
    basis: str


class Costs(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``costs.json`` (``schema``: :data:`COSTS_SCHEMA`): the maintenance cost
    of arm A's overview and the cost of producing arm B's cue, each known or unknown."""

    schema: Literal["symgliph.eceb/pair-costs-v0.1"]
    maintenance: Cost
    cue: Cost


class ArmInputs(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What an arm receives besides its context; equal for both arms of a
    pair (the seed: "Both receive the same task, declaration path, targets,
    checks, model, reasoning, speed, read-only setting, and answer schema").

    Fields: ``task_id``, ``declaration`` (its repository path), ``targets``,
    ``checks`` (ids), ``model``, ``reasoning_effort``, ``speed_tier``,
    ``sandbox``, ``output_schema_digest`` (the pair's answer schema).
    """

    task_id: str
    declaration: str
    targets: tuple[str, ...]
    checks: tuple[str, ...]
    model: str
    reasoning_effort: str
    speed_tier: str
    sandbox: str
    output_schema_digest: Digest


class ArmCommand(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One arm of a prepared pair.

    Fields:
        arm: ``A`` or ``B``.
        inputs: :class:`ArmInputs`, what it shares with the other arm.
        context: its context file in the pair directory (``arms/A/context``).
        context_tokens: the context's estimated tokens (at most the budget).
        cue_command: for arm B, the identity of the command that produced
            the cue; ``None`` for arm A (the frozen overview).
        argv: the actual command line the adapter will run.
        attempt: the attempt directory, relative to the pair directory.
    """

    arm: Arm
    inputs: ArmInputs
    context: FileDigest
    context_tokens: int
    cue_command: Executable | None
    argv: tuple[str, ...]
    attempt: str


class Manifest(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``manifest.json`` of a task-pair directory (``schema``: :data:`MANIFEST_SCHEMA`).

    Fields:
        label, synthetic: copied from the freeze.
        freeze_digest: the freeze this pair was prepared under.
        pair: :class:`PairPosition`.
        task_id: the task's id.
        output_schema_digest: BLAKE3 of ``answer.schema.json``'s actual bytes,
            taken before any attempt.
        answer_schema: the pair's schema path (``"answer.schema.json"``).
        files: every file of the directory but the manifest, by digest and size.
        arms: both arms (:class:`ArmCommand`), in the order they run.
        prepared_at: when it was written.
    """

    schema: Literal["symgliph.eceb/pair-manifest-v0.1"]
    label: str
    synthetic: bool
    freeze_digest: Digest
    pair: PairPosition
    task_id: str
    output_schema_digest: Digest
    answer_schema: str
    files: tuple[FileDigest, ...]
    arms: tuple[ArmCommand, ArmCommand]
    prepared_at: Timestamp
