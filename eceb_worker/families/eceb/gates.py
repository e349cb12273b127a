"""The gates of ECEB-0.1 (§11, §13, §14) and the task-level checks (§10,
§12), each a named rule function in one table, :data:`GATES`: a gate's
name, its place in the report and its rule live there and nowhere else.

A group gate sees one task/strategy/budget group (:class:`Group`) and
returns every failure of it, ``(repetition, message)``; a task check sees
the evaluated task (:class:`TaskView`) and returns its assertions.
:func:`evaluate_group` checks every group gate on every observation of a
group and collects every failure; it never stops at the first.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Final

import msgspec

from eceb_worker.core.arithmetic import floor_mean, ratio_bps
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.families.eceb.benchmark import Task, query_digest
from eceb_worker.families.eceb.run import Configuration, FactorialExperiment, Observation
from eceb_worker.families.eceb.verdicts import Assertion, GateName, GroupResult

__all__ = [
    "GATES",
    "GATE_ORDER",
    "Group",
    "GroupGate",
    "TaskCheck",
    "TaskView",
    "evaluate_group",
    "normalize_text",
    "task_assertions",
]

Failure = tuple[int | None, str]
"""One failure of a group gate: the failing repetition (``None`` for the
group as a whole) and what failed, with the numbers involved."""


def normalize_text(text: str) -> str:
    """Text as answer terms are matched: Unicode NFKC, then case folding.

    ASCII text takes a shortcut with the same result (NFKC leaves it as it
    is, and case folding of ASCII is lower-casing).
    """
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", text).casefold()


Selection = tuple[str, str]
"""An artifact placed in the context: ``(artifact_id, observed digest)``."""


class Group:
    """One task/strategy/budget group as its gates see it (ECEB-0.1 §11).

    Attributes:
        task, strategy, budget: the group (``budget`` None: no budget gate).
        observations: its observations, in repetition order.
        threshold_milli: the quality floor τ (§10) its observations must reach.
        artifacts: the registry by artifact id.
        required: each required artifact's current digest, by id (sorted).
        selections: each observation's selected artifacts.
        covered: for each observation, how many required artifacts it
            selected with their current digest.
    """

    def __init__(
        self,
        task: Task,
        strategy: str,
        budget: int | None,
        observations: Sequence[Observation],
        threshold_milli: int,
        artifacts: Mapping[str, Artifact],
    ) -> None:
        self.task = task
        self.strategy = strategy
        self.budget = budget
        self.observations = sorted(observations, key=lambda o: o.repetition)
        self.threshold_milli = threshold_milli
        self.artifacts = artifacts
        self.required = {a: artifacts[a].source_digest for a in sorted(task.required_artifacts)}
        self.selections = [
            {(s.artifact_id, s.observed_digest) for s in o.selected_artifacts} for o in self.observations
        ]
        pairs = set(self.required.items())
        self.covered = [len(pairs & selected) for selected in self.selections]
        self._verdicts: dict[Selection, tuple[str | None, str | None]] = {}

    def verdict(self, selection: Selection) -> tuple[str | None, str | None]:
        """The provenance failure and the policy violation (messages, or
        None) of one selection (ECEB-0.1 §6, §14); judged once per group.
        A required artifact's digest is judged by the coverage check instead."""
        found = self._verdicts.get(selection)
        if found is None:
            found = self._verdicts[selection] = self._judge(selection)
        return found

    def _judge(self, selection: Selection) -> tuple[str | None, str | None]:
        artifact_id, observed = selection
        artifact = self.artifacts.get(artifact_id)
        reasons = []
        provenance = None
        if artifact is None:
            reasons.append("unknown artifact")
            provenance = f"selected artifact {artifact_id!r} is not in the registry"
        else:
            if artifact.classification not in self.task.allowed_classifications:
                reasons.append(f"classification {artifact.classification} not allowed")
            if artifact_id not in self.required and observed != artifact.source_digest:
                provenance = f"selected artifact {artifact_id!r} has stale digest {observed}"
        if artifact_id in self.task.denied_artifacts:
            reasons.append("denied for this task")
        policy = f"selected {artifact_id!r}: {'; '.join(reasons)}" if reasons else None
        return provenance, policy


def _repetitions(group: Group) -> list[Failure]:
    """§13: every group needs ``required_repetitions`` observations."""
    count, required = len(group.observations), group.task.required_repetitions
    return [(None, f"{count} of {required} required repetitions observed")] if count < required else []


def _budget(group: Group) -> list[Failure]:
    """§11.1: the prompt (provider-reported input tokens) fits the declared budget."""
    budget = group.budget
    if budget is None:
        return []
    return [
        (o.repetition, f"prompt of {o.input_tokens} tokens exceeds the budget of {budget}")
        for o in group.observations
        if o.input_tokens > budget
    ]


def _quality(group: Group) -> list[Failure]:
    """§11.2: every repetition's quality reaches the floor τ."""
    floor = group.threshold_milli
    return [
        (o.repetition, f"quality {o.quality_milli} is below the floor {floor}")
        for o in group.observations
        if o.quality_milli < floor
    ]


def _answer_terms(group: Group) -> list[Failure]:
    """§11.3: every answer holds every required term (NFKC, case folded)."""
    terms = [(term, normalize_text(term)) for term in sorted(group.task.required_answer_terms)]
    if not terms:
        return []
    failures: list[Failure] = []
    for o in group.observations:
        answer = normalize_text(o.answer)
        missing = [term for term, folded in terms if folded not in answer]
        if missing:
            failures.append((o.repetition, f"answer lacks {', '.join(map(repr, missing))}"))
    return failures


def _provenance(group: Group) -> list[Failure]:
    """§11.4: every required artifact selected with its current digest, and
    every selected artifact known to the registry with its current digest."""
    failures: list[Failure] = []
    required = group.required
    for o, selected, covered in zip(group.observations, group.selections, group.covered, strict=True):
        if covered != len(required):
            observed_of = dict(selected)
            for artifact_id, digest in required.items():
                observed = observed_of.get(artifact_id)
                if observed is None:
                    failures.append((o.repetition, f"required artifact {artifact_id!r} not selected"))
                elif observed != digest:
                    failures.append(
                        (o.repetition, f"required artifact {artifact_id!r} selected with stale digest {observed}")
                    )
        failures.extend((o.repetition, p) for p, _ in map(group.verdict, selected) if p is not None)
    return failures


def _policy(group: Group) -> list[Failure]:
    """§6, §11.5: no selected artifact of a classification the task does not
    allow, denied for the task, or unknown to the registry."""
    return [
        (o.repetition, violation)
        for o, selected in zip(group.observations, group.selections, strict=True)
        for _, violation in map(group.verdict, selected)
        if violation is not None
    ]


def _repeatability(group: Group) -> list[Failure]:
    """§11.6: every repetition has the same context digest."""
    digests = [o.context_digest for o in group.observations]
    if len(set(digests)) < 2:
        return []
    first = digests[0]
    differing = [o.repetition for o in group.observations if o.context_digest != first]
    return [
        (
            None,
            f"context digests differ: repetition(s) {', '.join(map(str, differing))} differ from "
            f"repetition {group.observations[0].repetition} ({len(set(digests))} distinct digests)",
        )
    ]


class TaskView(msgspec.Struct, frozen=True, kw_only=True):
    """One task after its groups were evaluated, as the task checks see it.

    Fields:
        task: the benchmark's task.
        observations: every observation of the task.
        strategies: the (strategy, budget) groups that have observations.
        baseline: the ``full_permitted_context`` group's result, if it has observations.
        candidate: the first ladder budget's group that passes, if any.
        configurations: the run's configurations by id.
        factorial: the run's factorial declaration.
    """

    task: Task
    observations: Sequence[Observation]
    strategies: Collection[tuple[str, int | None]]
    baseline: GroupResult | None
    candidate: GroupResult | None
    configurations: Mapping[str, Configuration]
    factorial: FactorialExperiment | None


def _baseline_missing(view: TaskView) -> list[Assertion]:
    """§10: the full permitted-context baseline is required."""
    if view.baseline is not None:
        return []
    return [Assertion(gate="baseline_missing", message="no full_permitted_context observation")]


def _baseline_zero_tokens(view: TaskView) -> list[Assertion]:
    """§12: savings are undefined over a zero-token baseline."""
    if view.baseline is None or view.baseline.prompt_tokens != 0:
        return []
    return [
        Assertion(
            gate="baseline_zero_tokens",
            strategy="full_permitted_context",
            message="the baseline has zero prompt tokens: savings are undefined",
        )
    ]


def _compiled_missing(view: TaskView) -> list[Assertion]:
    """§10: the compiled strategy must be observed at some budget."""
    if any(strategy == "compiled" for strategy, _ in view.strategies):
        return []
    return [Assertion(gate="compiled_missing", message="no compiled observation at any budget")]


_COMPARED: Final = ("model", "judge", "tokenizer", "decoding", "pricing")


def _comparability(view: TaskView) -> list[Assertion]:
    """§7: strategies are compared under the same model, judge, tokenizer,
    decoding, pricing and task text, unless a factorial experiment declares
    the factor."""
    declared = set(view.factorial.factors) if view.factorial else set()
    failures: list[Assertion] = []
    used = sorted({obs.configuration_id for obs in view.observations})
    for factor in _COMPARED:
        if factor in declared:
            continue
        values = {msgspec.json.encode(getattr(view.configurations[cid], factor)) for cid in used}
        if len(values) > 1:
            failures.append(
                Assertion(
                    gate="comparability",
                    message=f"{factor} differs between configurations {', '.join(used)} "
                    "and no factorial experiment declares it",
                )
            )
    if "task_text" not in declared:
        expected = query_digest(view.task.query)
        strategies = sorted({obs.strategy for obs in view.observations if obs.query_digest != expected})
        if strategies:
            failures.append(
                Assertion(
                    gate="comparability",
                    message=f"{', '.join(strategies)} used a query other than the benchmark's task text",
                )
            )
    return failures


def _no_viable_budget(view: TaskView) -> list[Assertion]:
    """§10: some ladder budget must pass every gate (the minimum viable budget)."""
    if view.candidate is not None:
        return []
    ladder = list(view.task.budget_ladder)
    return [Assertion(gate="no_viable_budget", message=f"no budget of {ladder} passes every gate")]


class GroupGate(msgspec.Struct, frozen=True):
    """A gate checked on every group: its name, its place in the report
    (``order``), the section it implements and its rule."""

    name: GateName
    order: int
    section: str
    rule: Callable[[Group], list[Failure]]


class TaskCheck(msgspec.Struct, frozen=True):
    """A check of the task as a whole: its name, its place in the report
    (``order``), the section it implements and its rule."""

    name: GateName
    order: int
    section: str
    rule: Callable[[TaskView], list[Assertion]]


GATES: Final[tuple[GroupGate | TaskCheck, ...]] = (
    TaskCheck("baseline_missing", 0, "§10", _baseline_missing),
    TaskCheck("compiled_missing", 0, "§10", _compiled_missing),
    TaskCheck("comparability", 0, "§7", _comparability),
    TaskCheck("baseline_zero_tokens", 0, "§12", _baseline_zero_tokens),
    GroupGate("repetitions", 1, "§13", _repetitions),
    GroupGate("budget", 2, "§11.1", _budget),
    GroupGate("quality", 3, "§11.2", _quality),
    GroupGate("answer_terms", 4, "§11.3", _answer_terms),
    GroupGate("provenance", 5, "§11.4", _provenance),
    GroupGate("policy", 6, "§11.5", _policy),
    GroupGate("repeatability", 7, "§11.6", _repeatability),
    TaskCheck("no_viable_budget", 8, "§10", _no_viable_budget),
)
"""Every gate and task-level check, in report order: task-level checks
first, then §11's gates by number, then the ladder's verdict."""

GATE_ORDER: Final[dict[str, int]] = {gate.name: gate.order for gate in GATES}
"""Report order of assertions, by gate name."""

_GROUP_GATES: Final = tuple(gate for gate in GATES if isinstance(gate, GroupGate))
_TASK_CHECKS: Final = tuple(gate for gate in GATES if isinstance(gate, TaskCheck))


def evaluate_group(
    task: Task,
    strategy: str,
    budget: int | None,
    observations: Sequence[Observation],
    *,
    threshold_milli: int,
    artifacts: Mapping[str, Artifact],
    auxiliary_cost_micro_usd: int = 0,
) -> tuple[GroupResult, list[Assertion]]:
    """Evaluate every group gate of :data:`GATES` on one group (ECEB-0.1 §11).

    ``threshold_milli`` is the dynamic quality floor τ (§10); ``budget`` the
    declared token budget (``None``: no budget gate); ``artifacts`` the
    registry by artifact id. Returns the group's measurements and every
    failed assertion, gate by gate.
    """
    group = Group(task, strategy, budget, observations, threshold_milli, artifacts)
    failures = [
        Assertion(gate=gate.name, strategy=strategy, budget=budget, repetition=repetition, message=message)
        for gate in _GROUP_GATES
        for repetition, message in gate.rule(group)
    ]
    ordered = group.observations
    count = len(ordered)
    costs = [obs.input_cost_micro_usd + obs.output_cost_micro_usd for obs in ordered]
    qualities = [obs.quality_milli for obs in ordered]
    covered = group.covered
    result = GroupResult(
        strategy=strategy,
        budget=budget,
        observations=count,
        passed=not failures,
        prompt_tokens=floor_mean([obs.input_tokens for obs in ordered]) if ordered else None,
        cost_micro_usd=(sum(costs) + auxiliary_cost_micro_usd) // count if ordered else None,
        auxiliary_cost_micro_usd=auxiliary_cost_micro_usd,
        quality_milli=floor_mean(qualities) if ordered else None,
        minimum_quality_milli=min(qualities) if ordered else None,
        latency_ms=floor_mean([obs.latency_ms for obs in ordered]) if ordered else None,
        provenance_coverage_bps=min(ratio_bps(c, len(group.required)) for c in covered) if covered else None,
        policy_violations=sum(1 for failure in failures if failure.gate == "policy"),
        repeatable=None if not ordered else len({obs.context_digest for obs in ordered}) == 1,
    )
    return result, failures


def task_assertions(view: TaskView) -> list[Assertion]:
    """Every assertion of the task checks of :data:`GATES` on ``view``."""
    return [assertion for check in _TASK_CHECKS for assertion in check.rule(view)]
