"""Shards detached from the process that holds a job (ECEB-0.1 §5, §8-§14,
§17 on helper processes).

An embedded job (``eceb evaluate``) holds its benchmark, registry and
indexed run in the calling process; its shard tasks refer to them by
position only (:mod:`eceb_worker.pipeline.messages`). To run one on a
helper process, the holder detaches it:

* an evaluation shard becomes a :class:`DetachedEvaluation`, carrying its
  task (:class:`~eceb_worker.pipeline.messages.EvaluateTask`, with the
  job's options), the shard's tasks and the bytes of their records, exactly as this process
  read, checked and indexed them (the run file is neither read again nor
  trusted to be unchanged), the disclosures found in their answers, plus,
  on a helper's first shard, the registry's artifacts the evaluation looks up;
* a re-hash shard that scans for disclosures becomes a
  :class:`DetachedRehash`, carrying, on a helper's first shard, what the
  scan compares the corpus with (:class:`~eceb_worker.families.eceb.disclosure.spec.ScanSpec`:
  the answers and the tasks' policies).

The helper answers with the same answer the holder would have computed, so
the report is the same bytes whichever process ran which shard. A detached
shard carries a run's records or answers, never corpus bytes; it travels
only over a helper's pipe, as MessagePack, never through a broker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.families.eceb.benchmark import Task
from eceb_worker.families.eceb.disclosure import findings_by_task
from eceb_worker.families.eceb.disclosure.spec import ScanSpec
from eceb_worker.families.eceb.run_index import IndexedRun, RunPart, detach_tasks
from eceb_worker.families.eceb.shards import evaluate_tasks_of_run
from eceb_worker.pipeline.messages import EvaluateAnswer, EvaluateTask, RehashTask

__all__ = ["DetachedEvaluation", "DetachedRehash", "detach_evaluation", "evaluate_detached"]


class DetachedEvaluation(msgspec.Struct, frozen=True, kw_only=True):
    """One evaluation shard with what evaluating it reads.

    Fields:
        task: the shard task, as the holder would run it (its shard, the
            job's options, the disclosures found in its tasks' answers).
        task_ids: the shard's task ids, in plan order.
        tasks: the benchmark's tasks among them (a run's task the
            benchmark lacks has none: it yields problems, as in the holder).
        part: the records of the shard's tasks.
        artifacts: the registry's artifacts, on a helper's first shard of
            a stage; ``None``: those of the helper's previous shard.
    """

    task: EvaluateTask
    task_ids: list[str]
    tasks: list[Task]
    part: RunPart
    artifacts: list[Artifact] | None = None

    @property
    def index(self) -> int:
        """The shard's position in its plan."""
        return self.task.shard.index


class DetachedRehash(msgspec.Struct, frozen=True, kw_only=True):
    """A re-hash shard that scans for disclosures, with what it scans for.

    Fields:
        task: the shard task.
        spec: what the scan compares the corpus with, on a helper's first
            shard of the stage; ``None``: the spec lent before.
    """

    task: RehashTask
    spec: ScanSpec | None = None


def detach_evaluation(
    task: EvaluateTask,
    *,
    task_ids: Sequence[str],
    tasks: Mapping[str, Task],
    run: IndexedRun,
    artifacts: list[Artifact] | None = None,
) -> DetachedEvaluation:
    """The detached form of ``task``, whose shard is a range of a held
    job's sorted ``task_ids``, whose benchmark's tasks by id are ``tasks``
    and whose run is ``run``; with the registry's ``artifacts`` when the
    helper has none yet."""
    ids = list(task_ids[task.shard.start : task.shard.end])
    return DetachedEvaluation(
        task=task,
        task_ids=ids,
        tasks=[tasks[t] for t in ids if t in tasks],
        part=detach_tasks(run, ids),
        artifacts=artifacts,
    )


def evaluate_detached(request: DetachedEvaluation, artifacts: Mapping[str, Artifact]) -> EvaluateAnswer:
    """Evaluate a detached shard against the registry's ``artifacts`` by id:
    the answer the holder would give for the same shard."""
    run = request.part.indexed()
    tasks = {t.task_id: t for t in request.tasks}
    task = request.task
    findings = findings_by_task(task.evaluation.disclosure_check, task.disclosures)
    outcomes = evaluate_tasks_of_run(
        request.task_ids, run, tasks, artifacts, findings, uncertainty=task.evaluation.uncertainty
    )
    return EvaluateAnswer(index=request.index, outcomes=outcomes)
