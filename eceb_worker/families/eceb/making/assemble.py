"""The run made from the journal (ECEB-0.1 §7, §8): observations in plan
order, auxiliary costs for everything paid that is not an observation's own
cost, and one configuration. The same journal gives the same bytes.

:func:`assemble_run` holds the run; :class:`StreamedRun` gives the same
bytes as :func:`encode_run` of it while holding one execution at a time, so
that writing a run takes the same memory whatever the plan's size.

What becomes an auxiliary cost (ECEB-0.1 §8: nothing silently disappears):
every judgment's cost (kind ``other``, "judge ..."), an answer that was paid
for but has no judgment (``other``), and the upper bound of every attempt
that failed after the provider may have billed it, or whose outcome is
unknown (``retry``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from typing import Final

import msgspec

from eceb_worker.families.eceb.making.plan import Execution
from eceb_worker.families.eceb.making.profile import LlmJudge, RunProfile
from eceb_worker.families.eceb.making.records import AnswerRecord, JudgeRecord
from eceb_worker.families.eceb.run import (
    AuxiliaryCost,
    BenchmarkReference,
    Configuration,
    JudgeProfile,
    ModelIdentity,
    Observation,
    Run,
)

__all__ = ["MadeExecution", "PossibleCost", "StreamedRun", "assemble_run", "encode_run"]


class MadeExecution(msgspec.Struct, frozen=True, kw_only=True):
    """One execution of the plan with what the journal holds of it."""

    execution: Execution
    answer: AnswerRecord | None = None
    judgment: JudgeRecord | None = None


class PossibleCost(msgspec.Struct, frozen=True, kw_only=True):
    """Spend of an attempt that gave no observation's cost: its execution,
    the call (``answer`` or ``judge``), the cost (known, or the attempt's
    upper bound when the provider may have billed it without an answer:
    ``upper``), and what happened (``reason``, no prompt text)."""

    execution: Execution
    call: str
    micro_usd: int
    reason: str
    upper: bool


def _observation(made: MadeExecution, configuration_id: str) -> Observation | None:
    answer, judgment, execution = made.answer, made.judgment, made.execution
    if answer is None or judgment is None:
        return None
    return Observation(
        task_id=execution.task_id,
        strategy=execution.strategy,
        budget=execution.budget,
        repetition=execution.repetition,
        configuration_id=configuration_id,
        query_digest=answer.query_digest,
        input_tokens=answer.usage.input_tokens,
        cached_input_tokens=answer.usage.cached_input_tokens,
        output_tokens=answer.usage.output_tokens,
        local_prompt_tokens=answer.local_prompt_tokens,
        input_cost_micro_usd=answer.input_cost_micro_usd,
        output_cost_micro_usd=answer.output_cost_micro_usd,
        latency_ms=answer.latency_ms,
        quality_milli=judgment.quality_milli,
        answer=answer.answer,
        selected_artifacts=answer.selected_artifacts,
        context_digest=answer.context_digest,
    )


def _auxiliary(execution: Execution, kind: str, micro_usd: int, description: str) -> AuxiliaryCost:
    return AuxiliaryCost(
        task_id=execution.task_id,
        strategy=execution.strategy,
        budget=execution.budget,
        repetition=execution.repetition,
        kind=kind,  # type: ignore[arg-type]
        description=description,
        cost_micro_usd=micro_usd,
    )


def _made_costs(made: MadeExecution, judge_profile: str) -> Iterator[AuxiliaryCost]:
    if made.judgment is not None and made.judgment.cost_micro_usd:
        yield _auxiliary(made.execution, "other", made.judgment.cost_micro_usd, f"judge {judge_profile}")
    if made.answer is not None and made.judgment is None:
        paid = made.answer.input_cost_micro_usd + made.answer.output_cost_micro_usd
        yield _auxiliary(made.execution, "other", paid, "an answer paid for but not judged")


def _configuration(profile: RunProfile, model_revision: str, judge_revision: str) -> Configuration:
    judge = profile.judge
    if isinstance(judge, LlmJudge):
        judge_model = ModelIdentity(provider=judge.model.provider, name=judge.model.name, revision=judge_revision)
        judge_profile = JudgeProfile(
            profile=judge.profile, model=judge_model, rubric_digest=judge.rubric_digest, human_review=judge.human_review
        )
    else:
        judge_model = ModelIdentity(provider="command", name=judge.command[0], revision=judge.revision)
        judge_profile = JudgeProfile(profile=judge.profile, model=judge_model)
    return Configuration(
        configuration_id=profile.configuration_id,
        model=ModelIdentity(provider=profile.model.provider, name=profile.model.name, revision=model_revision),
        judge=judge_profile,
        tokenizer=profile.tokenizer,
        decoding=profile.decoding,
        pricing=profile.pricing,
    )


_PlacedCost = tuple[int, AuxiliaryCost]
"""An auxiliary cost and its execution's place in the plan."""


def _cost_order(pair: _PlacedCost) -> tuple[int, str, str, int]:
    """The order of a run's auxiliary costs: plan order, then kind, description, amount."""
    return pair[0], pair[1].kind, pair[1].description, pair[1].cost_micro_usd


def _possible(possible_costs: Iterable[PossibleCost]) -> list[_PlacedCost]:
    placed: list[_PlacedCost] = []
    for possible in possible_costs:
        kind, bound = ("retry", " (upper bound)") if possible.upper else ("other", "")
        cost = _auxiliary(possible.execution, kind, possible.micro_usd, f"{possible.call}: {possible.reason}{bound}")
        placed.append((possible.execution.position, cost))
    return placed


def _revisions(made: Iterable[MadeExecution]) -> tuple[str, str]:
    """The first model and judge revisions the plan's order meets (``""`` when none)."""
    model_revision = judge_revision = ""
    for item in made:
        if item.answer is not None and not model_revision:
            model_revision = item.answer.model_revision
        if item.judgment is not None and not judge_revision:
            judge_revision = item.judgment.model_revision
        if model_revision and judge_revision:
            break
    return model_revision, judge_revision


def _run(
    profile: RunProfile,
    benchmark: BenchmarkReference,
    corpus_root: str,
    revisions: tuple[str, str],
    observations: tuple[Observation, ...] = (),
    auxiliary_costs: tuple[AuxiliaryCost, ...] = (),
) -> Run:
    return Run(
        schema="symgliph.eceb/run-v0.1",
        run_id=profile.run_id,
        claim_class=profile.claim_class,
        non_empirical=profile.non_empirical,
        benchmark=benchmark,
        corpus_root=corpus_root,
        configurations=(_configuration(profile, *revisions),),
        observations=observations,
        auxiliary_costs=auxiliary_costs,
    )


def assemble_run(
    profile: RunProfile,
    *,
    benchmark: BenchmarkReference,
    corpus_root: str,
    made: Iterable[MadeExecution],
    possible_costs: Iterable[PossibleCost] = (),
) -> Run:
    """The run (see the module): ``made`` in plan order; a configuration
    whose model and judge revisions are the first ones the plan's order met."""
    items = list(made)
    observations = [o for o in (_observation(item, profile.configuration_id) for item in items) if o is not None]
    auxiliary = [(item.execution.position, cost) for item in items for cost in _made_costs(item, profile.judge.profile)]
    auxiliary.extend(_possible(possible_costs))
    auxiliary.sort(key=_cost_order)
    costs = tuple(cost for _, cost in auxiliary)
    return _run(profile, benchmark, corpus_root, _revisions(items), tuple(observations), costs)


def encode_run(run: Run) -> bytes:
    """The run file's bytes: JSON, two-space indented, fields in declaration order, a final newline."""
    return msgspec.json.format(msgspec.json.encode(run), indent=2) + b"\n"


_LISTS_LAST: Final = b'  "observations": [],\n  "auxiliary_costs": []\n}\n'
"""How :func:`encode_run` ends a run without observations or auxiliary costs."""
_ITEM_INDENT: Final = b"    "
"""An item of one of the run's lists is indented twice (JSON strings hold no newline: each is escaped)."""


def _json_list(items: Iterable[msgspec.Struct]) -> Iterator[bytes]:
    """A list of the run as :func:`encode_run` writes it, item by item."""
    empty = True
    for item in items:
        formatted = msgspec.json.format(msgspec.json.encode(item), indent=2)
        yield (b"[\n" if empty else b",\n") + _ITEM_INDENT + formatted.replace(b"\n", b"\n" + _ITEM_INDENT)
        empty = False
    yield b"[]" if empty else b"\n  ]"


class StreamedRun:
    """The bytes :func:`encode_run` gives of :func:`assemble_run` of the same
    arguments, made one execution at a time (:meth:`chunks`).

    ``made`` gives the plan's executions in plan order, the same each time it
    is called: once for the revisions (up to the first execution judged),
    once for the observations and once for the auxiliary costs. Only the
    possible costs (failed or unknown attempts) are held. After
    :meth:`chunks` is exhausted, :attr:`observations` is the run's number of
    observations.
    """

    def __init__(
        self,
        profile: RunProfile,
        *,
        benchmark: BenchmarkReference,
        corpus_root: str,
        made: Callable[[], Iterable[MadeExecution]],
        possible_costs: Iterable[PossibleCost] = (),
    ) -> None:
        self._profile = profile
        self._benchmark = benchmark
        self._corpus_root = corpus_root
        self._made = made
        self._possible = sorted(_possible(possible_costs), key=_cost_order)
        self.observations = 0

    def chunks(self) -> Iterator[bytes]:
        """The run file's bytes, in pieces (see the class)."""
        self.observations = 0
        revisions = _revisions(self._made())
        empty = encode_run(_run(self._profile, self._benchmark, self._corpus_root, revisions))
        if not empty.endswith(_LISTS_LAST):  # pragma: no cover - the layout of encode_run, pinned by its tests
            raise AssertionError("the run's lists are not where encode_run puts them")
        yield empty[: -len(_LISTS_LAST)] + b'  "observations": '
        yield from _json_list(self._observations())
        yield b',\n  "auxiliary_costs": '
        yield from _json_list(cost for _, cost in heapq.merge(self._made_costs(), self._possible, key=_cost_order))
        yield b"\n}\n"

    def _observations(self) -> Iterator[Observation]:
        for item in self._made():
            observation = _observation(item, self._profile.configuration_id)
            if observation is not None:
                self.observations += 1
                yield observation

    def _made_costs(self) -> Iterator[_PlacedCost]:
        """The costs of the made executions, in plan order: at most one an execution, so in :func:`_cost_order`."""
        judge_profile = self._profile.judge.profile
        for item in self._made():
            for cost in _made_costs(item, judge_profile):
                yield item.execution.position, cost
