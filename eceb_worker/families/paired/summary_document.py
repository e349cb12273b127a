"""The summary document of a paired experiment (``eceb pair summary``,
``schema``: :data:`SUMMARY_SCHEMA`; task-context-benchmark-reference.md,
"Paired inputs and retained outputs", "Credit and quality calculation",
"Fixed paid comparison schedule"): its Structs and the fixed texts it
carries. :mod:`eceb_worker.families.paired.summary` assembles it. Pure:
Structs only.
"""

from __future__ import annotations

import enum
from typing import Final, Literal

import msgspec

from eceb_worker.families.paired.assessments import Binding
from eceb_worker.families.paired.credits import CreditEstimate
from eceb_worker.families.paired.differences import MetricSummary
from eceb_worker.families.paired.schedule import Arm, Imbalance, TaskKind

__all__ = [
    "CREDITS",
    "DESCRIPTIVE",
    "DIFFERENCES",
    "METRICS",
    "ROUNDING",
    "SUMMARY_SCHEMA",
    "SYNTHETIC_STATEMENT",
    "AttemptSummary",
    "Breakdown",
    "IdentityLink",
    "Measure",
    "MetricDifference",
    "Outcome",
    "PairSummary",
    "Reexecution",
    "ScheduleCheck",
    "Summary",
    "Verdict",
]

SUMMARY_SCHEMA: Final = "symgliph.eceb/pair-summary-v0.1"
CREDITS: Final = "credits"
METRICS: Final = (
    "input_tokens",
    "cached_input_tokens",
    "uncached_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    CREDITS,
    "wall_clock_seconds",
    "cue_estimate_tokens",
    "context_cost_tokens",
)
"""Every metric of an attempt, in the order they are shown:

- the completed turn's tokens: input (the context included), cached input
  and reasoning output (subsets of input and output), uncached input
  (input − cached), output;
- ``credits``: the credit estimate (:mod:`~eceb_worker.families.paired.credits`), not account billing;
- ``wall_clock_seconds``: ``ended_at`` − ``started_at`` of ``attempt.json``;
- ``cue_estimate_tokens``: the estimated tokens of the arm's context (A the
  frozen overview, B the task cue) against the common budget;
- ``context_cost_tokens``: what providing that context cost, from
  ``costs.json``: the overview's maintenance for A, producing the cue for B.
"""

ROUNDING: Final = (
    "Every figure is exact: token counts are integers; credit estimates, seconds, differences and medians are "
    "exact decimals written out in full (a median of an even count is the exact midpoint); nothing is rounded."
)
SYNTHETIC_STATEMENT: Final = (
    "Synthetic usage, completion flags, rates and assessment judgments verify software handling only: "
    "they establish no actual provider support, charge, agent compliance, savings or continued-conversation benefit."
)
DESCRIPTIVE: Final = "Three repeats support descriptive values only: no p-value and no interval is given."
DIFFERENCES: Final = "Pair differences are overview minus task cue (A − B): positive means the task cue arm used less."


class Outcome(enum.Enum):
    """What an attempt's evidence shows of its task.

    - ``passed``: the evidence is complete and unchanged, the turn completed,
      the answer is one JSON value valid against the captured schema and
      the task's success evidence holds (per task kind).
    - ``failed``: the attempt did not complete, or its answer does not meet
      the success evidence (a wrong answer), or, where the frozen policy
      treats missing semantic evidence as failed, it has no bound assessment.
    - ``unassessed``: an explanation whose citations hold, without a bound
      assessment (the frozen policy keeps it visible, not failed).
    - ``incomplete``: the journal started and has no valid ``attempt.json``.
    - ``not_started``: no attempt of this arm started.
    - ``unverified``: evidence is missing or changed: nothing it shows is trusted.
    """

    PASSED = "passed"
    FAILED = "failed"
    UNASSESSED = "unassessed"
    INCOMPLETE = "incomplete"
    NOT_STARTED = "not_started"
    UNVERIFIED = "unverified"


class Measure(msgspec.Struct, frozen=True, kw_only=True):
    """One metric of one attempt: ``value`` (an exact decimal string) or
    ``None`` with ``unknown``, the reason."""

    metric: str
    value: str | None
    unknown: str | None


class IdentityLink(msgspec.Struct, frozen=True, kw_only=True):
    """One link of the answer schema's identity chain (pair = request =
    capture = invocation), checked on its own.

    ``link``: ``pair`` (the manifest's ``output_schema_digest`` is the
    BLAKE3 of the pair's ``answer.schema.json``), ``request`` (the request
    binds that digest and the pair's schema path), ``capture`` (the
    attempt's captured ``answer.schema.json`` has that digest), or
    ``invocation`` (the invocation gives the provider that captured file:
    its path, digest and ``--output-schema`` argument). ``holds`` and, when
    not, ``problem``."""

    link: Literal["pair", "request", "capture", "invocation"]
    holds: bool
    problem: str | None


class AttemptSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One arm's attempt of one pair, always shown, whatever its evidence.

    Fields:
        arm, attempt_id: ``<pair directory name>/<arm>``.
        state: the status ``attempt.json`` records, ``"incomplete journal"`` or ``"not started"``.
        synthetic: the provider's stream labels itself synthetic (``None`` when nothing was read).
        outcome: :class:`Outcome`; ``reasons``: why (each names its evidence).
        evidence: what is missing or changed in the attempt's evidence
            (empty when it is complete and unchanged).
        schema_identity: the four :class:`IdentityLink`, in chain order (empty when not started).
        ledger_position: the execution's place in the ledger as its
            ``attempt-start.json`` records it; ``started_at``, ``ended_at``.
        credits: the credit estimate (``None`` when not started).
        measures: every metric of :data:`METRICS`, in order.
        assessment: how the explanation's assessment stands (``"accurate"``,
            ``"inaccurate"``, ``"none"``, ``"rejected: …"``), ``None`` for other kinds.
        binding: what an assessment of this attempt must bind (explanations with an answer).
    """

    arm: Arm
    attempt_id: str
    state: str
    synthetic: bool | None
    outcome: Outcome
    reasons: tuple[str, ...]
    evidence: tuple[str, ...]
    schema_identity: tuple[IdentityLink, ...]
    ledger_position: int | None
    started_at: str | None
    ended_at: str | None
    credits: CreditEstimate | None
    measures: tuple[Measure, ...]
    assessment: str | None
    binding: Binding | None


class MetricDifference(msgspec.Struct, frozen=True, kw_only=True):
    """One pair's A − B of one metric: ``value`` (exact decimal) or ``None`` with ``unknown``."""

    metric: str
    value: str | None
    unknown: str | None


class PairSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One task-pair directory.

    Fields:
        directory: its absolute physical path; ``name`` its last component.
        position, task, repeat, order, pilot: the schedule's pair (``None``
            when the manifest cannot be read).
        complete: its evidence is complete and unchanged and both arms'
            journals are complete: it counts toward the frozen pair count.
        problems: what is missing or changed at the pair's level (manifest,
            retained files, frozen inputs), and why it does not count.
        arms: A then B.
        differences: A − B of every metric, in :data:`METRICS` order.
        preferred: the arm the evidence prefers (:func:`preferred`), or
            ``None``; ``preference``: why, in words.
    """

    directory: str
    name: str
    position: int | None
    task: TaskKind | None
    repeat: int | None
    order: tuple[Arm, Arm] | None
    pilot: bool | None
    complete: bool
    problems: tuple[str, ...]
    arms: tuple[AttemptSummary, ...]
    differences: tuple[MetricDifference, ...]
    preferred: Arm | None
    preference: str


class Breakdown(msgspec.Struct, frozen=True, kw_only=True):
    """The differences of one group of pairs, every metric summarized
    (:class:`~eceb_worker.families.paired.differences.MetricSummary`:
    median, minimum, maximum, signs, known/unknown coverage with reasons).
    ``group``: ``"all"``, a task kind, ``"A first"`` or ``"B first"``;
    ``pairs``: how many pairs it holds."""

    group: str
    pairs: int
    metrics: tuple[MetricSummary, ...]


class ScheduleCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The executed order against the frozen schedule.

    Fields:
        executed: every started execution in ledger order (``"pair 1 arm A"``).
        follows_schedule: every execution shown ran at the place the
            schedule gives it (its ledger position is the schedule's
            execution number), once.
        deviations: every way they did not.
        not_executed: the schedule's executions that no input shows started.
        imbalance: A-first against B-first of the pairs shown, per task kind
            and overall (the schedule's 2:1 per task and 5:4 overall when all nine are there).
        by_order: the A-first and the B-first pairs' differences, so that
            carry-over within a pair (a warm cache for the second arm) is visible.
    """

    executed: tuple[str, ...]
    follows_schedule: bool
    deviations: tuple[str, ...]
    not_executed: tuple[str, ...]
    imbalance: tuple[Imbalance, ...]
    by_order: tuple[Breakdown, ...]


class Reexecution(msgspec.Struct, frozen=True, kw_only=True):
    """A frozen check re-executed at the frozen revision for the
    verification outcomes: ``check`` (its id) and ``exit_code``, or
    ``problem`` when it did not run to an exit. Its output is not shown: a
    check's output may vary from run to run (timings), and the summary's
    bytes must not."""

    check: str
    exit_code: int | None
    problem: str | None


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    """The comparison's verdict, or why there is none.

    Fields:
        reached: True only with successful required tasks (every attempt of
            every counted pair passed), complete required delivery (every
            pair's evidence complete, every credit estimate known) and
            exactly the frozen policy's pair count.
        result: with a verdict, which arm used fewer credits by the median
            pair difference (``"task cue (B) used fewer credits"``,
            ``"frozen overview (A) used fewer credits"``, ``"no difference in credits"``).
        basis: what the result rests on, in words (its figures).
        reasons: every reason there is no verdict (empty with one).
        synthetic: the evidence is synthetic: the verdict verifies software handling only.
    """

    reached: bool
    result: str | None
    basis: str | None
    reasons: tuple[str, ...]
    synthetic: bool


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    """``eceb pair summary``'s document (``schema``: :data:`SUMMARY_SCHEMA`).

    Fields:
        label, synthetic: the freeze's (its rates are synthetic) or any
            synthetic attempt, rate file or assessment bundle.
        statement: :data:`SYNTHETIC_STATEMENT` when synthetic, else ``None``.
        credit_label: :data:`~eceb_worker.families.paired.credits.NOT_BILLING`.
        rounding: :data:`ROUNDING`; notes: what the figures mean and do not.
        freeze_digest: the policy every pair is checked against.
        repository: the frozen repository's path and reviewed revision as
            read for the outcomes; ``repository_problems``: why it could not be.
        directories: every input directory's absolute physical path, sorted.
        assessments: every assessment bundle read, by path and BLAKE3;
            ``assessment_notes``: assessments of no attempt among the inputs.
        reexecutions: the checks re-executed (:class:`Reexecution`), by id.
        frozen_pairs: the frozen policy's exact pair count.
        pairs: every pair directory, by position then name.
        overall, per_task: the differences summarized.
        schedule: :class:`ScheduleCheck`.
        verdict: :class:`Verdict`.
    """

    schema: Literal["symgliph.eceb/pair-summary-v0.1"]
    label: str
    synthetic: bool
    statement: str | None
    credit_label: str
    rounding: str
    notes: tuple[str, ...]
    freeze_digest: str
    repository: str
    reviewed_revision: str
    repository_problems: tuple[str, ...]
    directories: tuple[str, ...]
    assessments: tuple[str, ...]
    assessment_notes: tuple[str, ...]
    reexecutions: tuple[Reexecution, ...]
    frozen_pairs: int
    pairs: tuple[PairSummary, ...]
    overall: Breakdown
    per_task: tuple[Breakdown, ...]
    schedule: ScheduleCheck
    verdict: Verdict
