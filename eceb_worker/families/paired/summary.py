"""The summary of a paired experiment: what its evidence supports, and
nothing more (task-context-benchmark-reference.md, "Paired inputs and
retained outputs" from "Summary resolves its input directory", "Credit and
quality calculation" and "Fixed paid comparison schedule").

The functions below assemble ``eceb pair summary``'s document
(:mod:`eceb_worker.families.paired.summary_document`) from the attempts the pipeline
(:mod:`eceb_worker.pipeline.paired.summary`) read and checked:

- :func:`measures` gives an attempt's metrics (:data:`METRICS`), each known
  or unknown with its reason: partial usage is never a total;
- :func:`pair_differences` gives a pair's A − B of every metric, and
  :func:`preferred` the arm its evidence prefers: success first, so a
  cheaper wrong answer never wins;
- :func:`~eceb_worker.families.paired.coverage.breakdown` summarizes the differences of a group of pairs
  (median, minimum, maximum, signs, coverage: descriptive values only)
  over every started pair, counted or not
  (:func:`~eceb_worker.families.paired.coverage.coverage`);
- :func:`schedule_check` compares the executed order with the frozen
  schedule and shows the order imbalance and the A-first / B-first
  breakdown of each metric;
- :func:`verdict` decides whether a verdict can be given at all, listing
  every reason when not;
- :func:`summary` puts it together, in an order that does not depend on
  the order the directories were given or listed in.

Every figure is an exact decimal string (integers, or exact rationals
written out in full: no float, no rounding). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from eceb_worker.families.paired.coverage import breakdown, has_started
from eceb_worker.families.paired.credits import NOT_BILLING, CreditEstimate, exact_decimal
from eceb_worker.families.paired.differences import difference as difference_of
from eceb_worker.families.paired.records import Cost
from eceb_worker.families.paired.schedule import Arm, Imbalance, TaskKind, imbalance_of, plan
from eceb_worker.families.paired.summary_document import (
    CREDITS,
    DESCRIPTIVE,
    DIFFERENCES,
    METRICS,
    ROUNDING,
    SUMMARY_SCHEMA,
    SYNTHETIC_STATEMENT,
    AttemptSummary,
    Breakdown,
    Measure,
    MetricDifference,
    Outcome,
    PairSummary,
    Reexecution,
    ScheduleCheck,
    Summary,
    Verdict,
)
from eceb_worker.families.paired.transport import COUNTERS, Usage

__all__ = [
    "measures",
    "pair_differences",
    "preferred",
    "schedule_check",
    "summary",
    "verdict",
]


# --- an attempt's metrics


def _known(metric: str, value: Fraction | int | None, why: str) -> Measure:
    if value is None:
        return Measure(metric=metric, value=None, unknown=why)
    return Measure(metric=metric, value=exact_decimal(Fraction(value)), unknown=None)


def _counter(usage: Usage | None, name: str, why_no_usage: str) -> tuple[int | None, str]:
    """The counter ``name`` of ``usage`` if usable, else ``None`` and why
    (``<cause>: <reason>`` for a counter missing, no count or past the range)."""
    if usage is None:
        return None, why_no_usage
    if name == "reasoning_output_tokens" and usage.reasoning_output_tokens is None and name not in usage.not_counts:
        return None, "the completed turn reported no reasoning count"
    why = usage.unknown(name)
    if why is not None:
        return None, f"{why[0]}: {why[1]}"
    return usage.count(name), ""


def measures(
    *,
    usage: Usage | None,
    why_no_usage: str,
    credits: CreditEstimate | None,
    wall_clock: Fraction | None,
    why_no_wall_clock: str,
    context_tokens: int | None,
    context_cost: Cost | None,
) -> tuple[Measure, ...]:
    """An attempt's :data:`METRICS`, in order.

    ``usage``: the completed turn's usage, or ``None`` (``why_no_usage``
    says why: an incomplete turn's partial usage is never a total);
    ``credits``: its estimate (unknown with the estimate's reason);
    ``wall_clock``: seconds, or ``None`` (``why_no_wall_clock``);
    ``context_tokens``: the arm's context estimate; ``context_cost``: the
    arm's cost from ``costs.json`` (``None`` when it cannot be read). A
    usage whose cached input exceeds its input has no uncached input. A
    counter the usage lacks or reports as no count (``missing_counters``),
    or past :data:`~eceb_worker.families.paired.transport.COUNTER_MAX`
    (``overflow``), is unknown with that cause, and so is every metric that
    needs it; the others stay known."""
    counted = {name: _counter(usage, name, why_no_usage) for name in COUNTERS}
    (input_tokens, why_input), (cached, why_cached) = counted["input_tokens"], counted["cached_input_tokens"]
    uncached: int | None = None
    why_uncached = "; ".join(
        dict.fromkeys(why for _, why in (counted["input_tokens"], counted["cached_input_tokens"]) if why)
    )
    if input_tokens is not None and cached is not None:
        if cached <= input_tokens:
            uncached = input_tokens - cached
        else:
            why_uncached = "cached input exceeds input: not a subset"
    credit = Fraction(credits.credits) if credits is not None and credits.credits is not None else None
    why_credit = (credits.reason or "no estimate") if credits is not None else why_no_usage
    cost = context_cost.tokens if context_cost is not None and context_cost.known else None
    why_cost = context_cost.basis if context_cost is not None else "costs.json cannot be read"
    return (
        _known("input_tokens", input_tokens, why_input),
        _known("cached_input_tokens", cached, why_cached),
        _known("uncached_input_tokens", uncached, why_uncached),
        _known("output_tokens", *counted["output_tokens"]),
        _known("reasoning_output_tokens", *counted["reasoning_output_tokens"]),
        _known(CREDITS, credit, why_credit),
        _known("wall_clock_seconds", wall_clock, why_no_wall_clock),
        _known("cue_estimate_tokens", context_tokens, "the manifest cannot be read"),
        _known("context_cost_tokens", cost, why_cost),
    )


# --- one pair


def _value(attempt: AttemptSummary, metric: str) -> tuple[Fraction | None, str]:
    found = next((m for m in attempt.measures if m.metric == metric), None)
    if found is None or found.value is None:
        why = found.unknown if found is not None and found.unknown else "no value"
        return None, f"arm {attempt.arm.value}: {why}"
    return Fraction(found.value), ""


def pair_differences(a: AttemptSummary | None, b: AttemptSummary | None) -> tuple[MetricDifference, ...]:
    """A − B of every metric of :data:`METRICS`; unknown, with both arms'
    reasons, when either side is (a missing arm included)."""
    shown = []
    for metric in METRICS:
        first, why_a = _value(a, metric) if a is not None else (None, "arm A: no attempt")
        second, why_b = _value(b, metric) if b is not None else (None, "arm B: no attempt")
        why = "; ".join(part for part in (why_a, why_b) if part)
        found = difference_of(0, first, second, why)
        shown.append(MetricDifference(metric=metric, value=found.value, unknown=found.unknown))
    return tuple(shown)


def preferred(a: AttemptSummary | None, b: AttemptSummary | None) -> tuple[Arm | None, str]:
    """The arm a pair's evidence prefers, and why. Success decides first:
    an arm that passed beats one that did not, whatever either cost (a
    cheaper wrong answer never wins). With both passed, the one with fewer
    credits (both estimates known and different); otherwise none."""
    if a is None or b is None:
        return None, "the pair lacks an arm's attempt"
    passed_a, passed_b = a.outcome is Outcome.PASSED, b.outcome is Outcome.PASSED
    if passed_a != passed_b:
        winner, loser = (a, b) if passed_a else (b, a)
        return winner.arm, f"only arm {winner.arm.value} passed (arm {loser.arm.value}: {loser.outcome.value})"
    if not passed_a:
        return None, f"neither arm passed (A: {a.outcome.value}, B: {b.outcome.value})"
    credit_a, _ = _value(a, CREDITS)
    credit_b, _ = _value(b, CREDITS)
    if credit_a is None or credit_b is None:
        return None, "both passed; a credit estimate is unavailable"
    if credit_a == credit_b:
        return None, "both passed with equal credit estimates"
    cheaper = Arm.A if credit_a < credit_b else Arm.B
    return cheaper, f"both passed; arm {cheaper.value} used fewer credits"


# --- groups of pairs


def _imbalance(task: TaskKind | None, pairs: Sequence[PairSummary]) -> Imbalance:
    orders = [pair.order for pair in pairs if pair.order is not None and (task is None or pair.task is task)]
    return imbalance_of(task, orders)


def schedule_check(pairs: Sequence[PairSummary]) -> ScheduleCheck:
    """The executed order of ``pairs``' attempts (by ledger position)
    against the frozen schedule's executions, the order imbalance of the
    pairs shown and their A-first / B-first breakdowns (module)."""
    started = sorted(
        (arm.ledger_position, pair.position, arm.arm, pair.name)
        for pair in pairs
        for arm in pair.arms
        if arm.ledger_position is not None and pair.position is not None
    )
    executed = tuple(f"pair {position} arm {arm.value}" for _, position, arm, _ in started)
    number = {(e.pair, e.arm): e.position for e in plan().executions}
    deviations = []
    seen: dict[tuple[int, Arm], str] = {}
    for ledger, position, arm, name in started:
        shown = f"pair {position} arm {arm.value}"
        wanted = number.get((position, arm))
        if (position, arm) in seen:
            deviations.append(f"{shown} ran again in {name} (ledger position {ledger}), after {seen[(position, arm)]}")
            continue
        seen[(position, arm)] = name
        if wanted is None:
            deviations.append(f"{shown} is not in the schedule")
        elif ledger != wanted:
            deviations.append(f"{shown} ran as execution {ledger}; the schedule's is execution {wanted}")
    by_time = sorted(
        (arm.started_at, arm.ledger_position)
        for pair in pairs
        for arm in pair.arms
        if arm.ledger_position is not None and arm.started_at is not None and pair.position is not None
    )
    if [ledger for _, ledger in by_time] != sorted(ledger for _, ledger in by_time):
        deviations.append("the ledger positions are not in the order the attempts started (started_at)")
    missing = tuple(
        f"pair {e.pair} arm {e.arm.value} (execution {e.position})"
        for e in plan().executions
        if (e.pair, e.arm) not in seen
    )
    counted = [pair for pair in pairs if pair.complete]
    imbalance = (*(_imbalance(task, counted) for task in TaskKind), _imbalance(None, counted))
    covered = [pair for pair in pairs if has_started(pair)]
    by_order = (
        breakdown("A first", [p for p in covered if p.order is not None and p.order[0] is Arm.A]),
        breakdown("B first", [p for p in covered if p.order is not None and p.order[0] is Arm.B]),
    )
    return ScheduleCheck(
        executed=executed,
        follows_schedule=not deviations,
        deviations=tuple(deviations),
        not_executed=missing,
        imbalance=imbalance,
        by_order=by_order,
    )


# --- the verdict


def verdict(  # noqa: C901 - every reason a verdict cannot be given, listed together
    pairs: Sequence[PairSummary],
    frozen_pairs: int,
    overall: Breakdown,
    *,
    problems: Sequence[str],
    synthetic: bool,
) -> Verdict:
    """The verdict of the counted pairs, or every reason there is none
    (module). ``problems``: what prevents a complete comparison beyond the
    pairs themselves (the repository, the inputs)."""
    reasons = list(problems)
    complete = [pair for pair in pairs if pair.complete]
    for pair in pairs:
        if not pair.complete:
            shown = pair.position if pair.position is not None else pair.name
            why = "; ".join(pair.problems) or "its evidence is incomplete"
            reasons.append(f"pair {shown} ({pair.name}) does not count: {why}")
    by_position: dict[int, list[PairSummary]] = {}
    for pair in complete:
        by_position.setdefault(pair.position or 0, []).append(pair)
    for position, found in sorted(by_position.items()):
        if len(found) > 1:
            names = ", ".join(sorted(p.name for p in found))
            reasons.append(
                f"pair {position} was run in {len(found)} directories ({names}): which one counts is not stated"
            )
    if len(by_position) != frozen_pairs:
        reasons.append(f"{len(by_position)} complete pairs; the frozen policy needs exactly {frozen_pairs}")
    for pair in complete:
        for arm in pair.arms:
            if arm.outcome is not Outcome.PASSED:
                why = "; ".join(arm.reasons) or arm.outcome.value
                reasons.append(f"pair {pair.position} arm {arm.arm.value} did not succeed ({arm.outcome.value}): {why}")
    credits = next(m for m in overall.metrics if m.metric == CREDITS)
    if credits.unknown:
        reasons.append(f"{credits.unknown} credit differences are unknown: " + "; ".join(credits.unknown_reasons))
    if reasons or credits.median is None:
        if not reasons:
            reasons.append("no credit difference is known")
        return Verdict(reached=False, result=None, basis=None, reasons=tuple(reasons), synthetic=synthetic)
    median = Fraction(credits.median)
    result = (
        "task cue (B) used fewer credits"
        if median > 0
        else "frozen overview (A) used fewer credits"
        if median < 0
        else "no difference in credits"
    )
    basis = (
        f"every attempt of all {frozen_pairs} pairs passed; median credit difference A − B {credits.median} "
        f"(minimum {credits.minimum}, maximum {credits.maximum}; {credits.positive} positive, "
        f"{credits.negative} negative, {credits.zero} zero); {NOT_BILLING}"
    )
    return Verdict(reached=True, result=result, basis=basis, reasons=(), synthetic=synthetic)


def summary(
    *,
    label: str,
    synthetic: bool,
    freeze_digest: str,
    repository: str,
    reviewed_revision: str,
    repository_problems: Sequence[str],
    directories: Sequence[str],
    assessments: Sequence[str],
    frozen_pairs: int,
    pairs: Sequence[PairSummary],
    problems: Sequence[str] = (),
    assessment_notes: Sequence[str] = (),
    reexecutions: Sequence[Reexecution] = (),
    support: str = "",
) -> Summary:
    """The summary document of ``pairs`` (module): sorted by position then
    name then directory, the differences of every started pair summarized
    overall and per task (:func:`breakdown`),
    the schedule checked, the verdict decided. The result does not depend
    on the order of ``pairs``, ``directories`` or ``assessments``."""
    ordered = tuple(sorted(pairs, key=lambda p: (p.position or 0, p.name, p.directory)))
    covered = [pair for pair in ordered if has_started(pair)]
    overall = breakdown("all", covered)
    per_task = tuple(breakdown(task.value, [p for p in covered if p.task is task]) for task in TaskKind)
    schedule = schedule_check(ordered)
    deviations = [f"the executed order deviates from the frozen schedule: {d}" for d in schedule.deviations]
    decided = verdict(
        ordered, frozen_pairs, overall, problems=[*repository_problems, *problems, *deviations], synthetic=synthetic
    )
    return Summary(
        schema=SUMMARY_SCHEMA,
        label=label,
        synthetic=synthetic,
        statement=SYNTHETIC_STATEMENT if synthetic else None,
        credit_label=NOT_BILLING,
        rounding=ROUNDING,
        notes=(
            DIFFERENCES,
            DESCRIPTIVE,
            "Wrong and incomplete attempts remain visible with their metrics.",
            *((support,) if support else ()),
        ),
        freeze_digest=freeze_digest,
        repository=repository,
        reviewed_revision=reviewed_revision,
        repository_problems=tuple(repository_problems),
        directories=tuple(sorted(set(directories))),
        assessments=tuple(sorted(set(assessments))),
        assessment_notes=tuple(sorted(set(assessment_notes))),
        reexecutions=tuple(sorted(reexecutions, key=lambda r: r.check)),
        frozen_pairs=frozen_pairs,
        pairs=ordered,
        overall=overall,
        per_task=per_task,
        schedule=schedule,
        verdict=decided,
    )
