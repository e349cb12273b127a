"""Evaluation shards detached from the process that holds a job (ECEB-0.1
§8-§14 on helper processes).

An embedded job (``eceb evaluate``) holds its benchmark, registry and
indexed run in the calling process; its evaluation shard tasks refer to
them by position only (:class:`~eceb_worker.pipeline.messages.EvaluateTask`).
To run one on a helper process, the holder detaches it: a
:class:`DetachedEvaluation` carries the shard's tasks and the bytes of
their records, exactly as this process read, checked and indexed them
(the run file is neither read again nor trusted to be unchanged), plus,
on a helper's first shard, the registry's artifacts the evaluation looks
up. The helper answers with the same
:class:`~eceb_worker.pipeline.messages.EvaluateAnswer` the holder would
have computed, so the report is the same bytes whichever process ran
which shard.

A detached shard carries a run's records, never corpus bytes; it travels
only over a helper's pipe, as MessagePack, never through a broker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.families.eceb.benchmark import SecretSpan, Task
from eceb_worker.families.eceb.disclosure import DISCLOSURE_OFF, DisclosureCheck
from eceb_worker.families.eceb.planning import EvaluationShard
from eceb_worker.families.eceb.run_index import IndexedRun, RunPart, detach_tasks
from eceb_worker.families.eceb.shards import evaluate_tasks_of_run
from eceb_worker.families.eceb.uncertainty import UncertaintyMode
from eceb_worker.pipeline.messages import CheckedRegistry, Count, EvaluateAnswer

__all__ = ["DetachedEvaluation", "detach_evaluation", "evaluate_detached"]


class DetachedEvaluation(msgspec.Struct, frozen=True, kw_only=True):
    """One evaluation shard with what evaluating it reads.

    Fields:
        index: the shard's position in its plan.
        task_ids: the shard's task ids, in plan order.
        tasks: the benchmark's tasks among them (a run's task the
            benchmark lacks has none: it yields problems, as in the holder).
        part: the records of the shard's tasks.
        artifacts: the registry's artifacts, on a helper's first shard of
            a stage; ``None``: those of the helper's previous shard.
        corpus, disclosure_check, secret_spans, registry: what the
            disclosure check reads (the corpus by reference, never its
            bytes), as the holder's shard task has them.
        uncertainty: the job's (ECEB-0.1 §16).
    """

    index: Count
    task_ids: list[str]
    tasks: list[Task]
    part: RunPart
    artifacts: list[Artifact] | None = None
    corpus: StorageSpec | None = None
    disclosure_check: DisclosureCheck = DISCLOSURE_OFF
    secret_spans: tuple[SecretSpan, ...] = ()
    registry: CheckedRegistry | None = None
    uncertainty: UncertaintyMode = "bootstrap"


def detach_evaluation(
    shard: EvaluationShard,
    *,
    task_ids: Sequence[str],
    tasks: Mapping[str, Task],
    run: IndexedRun,
    artifacts: list[Artifact] | None = None,
    corpus: StorageSpec | None = None,
    disclosure_check: DisclosureCheck = DISCLOSURE_OFF,
    secret_spans: tuple[SecretSpan, ...] = (),
    registry: CheckedRegistry | None = None,
    uncertainty: UncertaintyMode = "bootstrap",
) -> DetachedEvaluation:
    """The detached form of ``shard``, a range of a held job's sorted
    ``task_ids``, whose benchmark's tasks by id are ``tasks`` and whose run
    is ``run``; with the registry's ``artifacts`` when the helper has none
    yet, and what the disclosure check reads; ``uncertainty`` the job's."""
    ids = list(task_ids[shard.start : shard.end])
    return DetachedEvaluation(
        index=shard.index,
        task_ids=ids,
        tasks=[tasks[t] for t in ids if t in tasks],
        part=detach_tasks(run, ids),
        artifacts=artifacts,
        corpus=corpus,
        disclosure_check=disclosure_check,
        secret_spans=secret_spans,
        registry=registry,
        uncertainty=uncertainty,
    )


def evaluate_detached(request: DetachedEvaluation, artifacts: Mapping[str, Artifact]) -> EvaluateAnswer:
    """Evaluate a detached shard against the registry's ``artifacts`` by id:
    the answer the holder would give for the same shard."""
    from eceb_worker.pipeline.restricted import restricted_texts

    run = request.part.indexed()
    tasks = {t.task_id: t for t in request.tasks}
    restricted = None
    if request.registry is not None:
        restricted = restricted_texts(request.corpus, request.disclosure_check, request.secret_spans, request.registry)
    outcomes = evaluate_tasks_of_run(
        request.task_ids, run, tasks, artifacts, restricted, uncertainty=request.uncertainty
    )
    return EvaluateAnswer(index=request.index, outcomes=outcomes)
