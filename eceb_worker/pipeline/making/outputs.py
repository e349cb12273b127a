"""What a made run writes, whoever made it (``eceb run`` from its journal,
``eceb-dist run`` from its shards' partials): the transcripts and the
judgments (JSON Lines, one line per call or judgment, in plan order) and
the run (ECEB-0.1 §7, §8), each from a stream of the plan's executions with
what was made of them, one execution in memory at a time. The same
executions give the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import msgspec

from eceb_worker.core.canonical import canonical_json
from eceb_worker.families.eceb.making.assemble import MadeExecution, PossibleCost, StreamedRun
from eceb_worker.families.eceb.making.journal import Journal
from eceb_worker.families.eceb.making.plan import Execution
from eceb_worker.families.eceb.making.profile import RunProfile
from eceb_worker.families.eceb.run import BenchmarkReference

__all__ = ["judgment_lines", "made_run", "possible_costs", "transcript_lines"]


def possible_costs(journal: Journal, plan: Callable[[], Iterator[Execution]]) -> list[PossibleCost]:
    """Spend of every attempt that is no observation's own cost (failed,
    retried, of unknown outcome: :meth:`Journal.attempts_not_ok`), placed
    at its execution (one pass over ``plan()`` when there are any)."""
    attempts = journal.attempts_not_ok()
    wanted = {attempt.call_id.rpartition(":")[0] for attempt in attempts}
    by_id = {e.execution_id: e for e in plan() if e.execution_id in wanted} if wanted else {}
    costs: list[PossibleCost] = []
    for attempt in attempts:
        execution_id, _, call = attempt.call_id.rpartition(":")
        execution = by_id.get(execution_id)
        if execution is None or call not in ("answer", "judge"):
            continue
        if attempt.cost_micro_usd:
            costs.append(
                PossibleCost(
                    execution=execution, call=call, micro_usd=attempt.cost_micro_usd, reason=attempt.detail, upper=False
                )
            )
        elif attempt.maybe_billed and attempt.upper_micro_usd:
            reason = f"attempt {attempt.attempt}: {attempt.detail or 'outcome unknown'}"
            costs.append(
                PossibleCost(
                    execution=execution, call=call, micro_usd=attempt.upper_micro_usd, reason=reason, upper=True
                )
            )
    return costs


def _where(e: Execution) -> dict[str, object]:
    return {
        "execution_id": e.execution_id,
        "task_id": e.task_id,
        "strategy": e.strategy,
        "budget": e.budget,
        "repetition": e.repetition,
    }


def transcript_lines(made: Iterable[MadeExecution]) -> Iterator[bytes]:
    """The transcripts: each provider call's request and response bodies as
    sent and received (a command judge's has none), one canonical JSON line
    per call, in plan order."""
    for item in made:
        where = _where(item.execution)
        for kind, record in (("answer", item.answer), ("judge", item.judgment)):
            if record is not None and record.request_body != msgspec.Raw(b"null"):
                line = {**where, "call": kind, "request": record.request_body, "response": record.response_body}
                yield canonical_json(line) + b"\n"


def judgment_lines(made: Iterable[MadeExecution]) -> Iterator[bytes]:
    """The judgments: each execution judged, its score, rationale, judge
    prompt and raw judgment, one canonical JSON line each, in plan order."""
    for item in made:
        if item.judgment is None:
            continue
        j = item.judgment
        line = {
            **_where(item.execution),
            "quality_milli": j.quality_milli,
            "rationale": j.rationale,
            "judge_prompt": j.judge_prompt,
            "raw_judgment": j.raw_judgment,
        }
        yield canonical_json(line) + b"\n"


def made_run(
    profile: RunProfile,
    *,
    benchmark: BenchmarkReference,
    corpus_root: str,
    made: Callable[[], Iterable[MadeExecution]],
    possible_costs: Iterable[PossibleCost],
) -> StreamedRun:
    """The run file of ``made()`` (the plan's executions in plan order, the
    same each call) as a :class:`StreamedRun`."""
    return StreamedRun(profile, benchmark=benchmark, corpus_root=corpus_root, made=made, possible_costs=possible_costs)
