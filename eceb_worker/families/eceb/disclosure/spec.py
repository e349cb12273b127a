"""What a disclosure scan compares the corpus with (ECEB-0.1 §1, §17): the
answers to check, which tasks gave each, and what each task may see.

A task may not see an artifact it denies, nor an artifact of a
classification outside its allow-list (§6, §14); it may see every other.
Only the answers of tasks that may not see something are checked.
:func:`scan_spec` derives the spec from a benchmark and a run, the same in
every process (a worker builds its own from the run it reads; a helper
process is lent the holder's).
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from eceb_worker.corpus.artifacts import CLASSIFICATIONS
from eceb_worker.families.eceb.benchmark import Benchmark, Task
from eceb_worker.families.eceb.disclosure.check import DISCLOSURE_OFF, DisclosureCheck
from eceb_worker.families.eceb.run_index import IndexedRun, task_answers

__all__ = ["ScanSpec", "TaskPolicy", "scan_spec", "scanned_check"]


class TaskPolicy(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What one task may see (ECEB-0.1 §6).

    Fields:
        task_id: the task.
        allowed: the classifications it may see.
        denied: the artifact ids it may not see, sorted.
    """

    task_id: str
    allowed: tuple[str, ...]
    denied: tuple[str, ...] = ()

    @classmethod
    def of(cls, task: Task) -> TaskPolicy:
        """The policy of ``task``."""
        return cls(
            task_id=task.task_id,
            allowed=tuple(sorted(set(task.allowed_classifications))),
            denied=tuple(sorted(set(task.denied_artifacts))),
        )

    @property
    def restricts(self) -> bool:
        """The task may not see something (a denied artifact, or a classification)."""
        return bool(self.denied) or len(self.allowed) < len(CLASSIFICATIONS)

    def may_see(self, artifact_id: str, classification: str) -> bool:
        """The task may see this artifact."""
        return classification in self.allowed and artifact_id not in self.denied


class ScanSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The answers a disclosure scan checks (ECEB-0.1 §17).

    Fields:
        n: the fewest consecutive tokens that disclose (N).
        tasks: the policies of the tasks checked, by task id.
        answers: their distinct answers, sorted.
        answer_tasks: for each answer, the positions in ``tasks`` of the
            tasks that gave it.
        secrets: the benchmark's marked secret spans, ``(artifact_id, start, end)``, sorted.
    """

    n: int
    tasks: tuple[TaskPolicy, ...]
    answers: tuple[str, ...]
    answer_tasks: tuple[tuple[int, ...], ...]
    secrets: tuple[tuple[str, int, int], ...] = ()


def scan_spec(benchmark: Benchmark, run: IndexedRun, n: int, task_ids: Iterable[str] | None = None) -> ScanSpec | None:
    """The spec of a disclosure scan of ``run``'s answers against
    ``benchmark``'s policies with N = ``n``: the tasks (of ``task_ids``,
    every task by default) that have observations and may not see
    something; None when there are none (nothing to scan)."""
    wanted = set(run.observations) if task_ids is None else set(task_ids) & set(run.observations)
    policies = [TaskPolicy.of(t) for t in sorted(benchmark.tasks, key=lambda t: t.task_id) if t.task_id in wanted]
    policies = [p for p in policies if p.restricts]
    if not policies:
        return None
    by_answer: dict[str, set[int]] = {}
    for position, policy in enumerate(policies):
        for answer in task_answers(run, policy.task_id):
            by_answer.setdefault(answer, set()).add(position)
    answers = sorted(by_answer)
    return ScanSpec(
        n=n,
        tasks=tuple(policies),
        answers=tuple(answers),
        answer_tasks=tuple(tuple(sorted(by_answer[a])) for a in answers),
        secrets=tuple(sorted({(s.artifact_id, s.start, s.end) for s in benchmark.secret_spans})),
    )


def scanned_check(check: DisclosureCheck, tasks: Iterable[Task]) -> DisclosureCheck:
    """The disclosure check a job's re-hash runs: ``check``, when some of
    ``tasks`` may not see something; else off (there is nothing to scan for)."""
    if check.enabled and any(TaskPolicy.of(task).restricts for task in tasks):
        return check
    return DISCLOSURE_OFF
