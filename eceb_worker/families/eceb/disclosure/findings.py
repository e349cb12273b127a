"""Partial results of the disclosure scan and their reduce (ECEB-0.1 §1, §17).

A re-hash shard that scans its artifacts answers, besides its
verification, a :class:`DisclosurePartial`: ids, offsets and counts only,
never text. It holds

* *finding groups*: for one task's answer, the occurrences of one run text
  (a sequence of windows) in artifacts the task may not see, or of marked
  secrets; each group lists its first :data:`~.check.LISTED_FINDINGS`
  occurrences in answer order and counts them all;
* *window holders*: for each window found anywhere, which artifacts hold
  it (the classifications of those no task denies; the ids of those some
  task denies), so that the reduce can tell, for any task, whether the
  window also occurs in an artifact the task may see.

:func:`reduce_disclosures` folds the partials of every shard, in any order,
into each answer's findings: an overlap group every window of which also
occurs in an artifact its task may see is not a disclosure (the text is
permitted to that task); the rest are merged, their first findings listed
and every one counted. Groups, holders and counts merge associatively, so
the result does not depend on the shard size or the order of the shards.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping

import msgspec

from eceb_worker.families.eceb.benchmark import Task
from eceb_worker.families.eceb.disclosure.check import LISTED_FINDINGS, AnswerFindings, DisclosureHit
from eceb_worker.families.eceb.disclosure.spec import TaskPolicy

__all__ = [
    "DisclosurePartial",
    "FindingGroup",
    "WindowHolders",
    "findings_of_tasks",
    "reduce_disclosures",
    "shard_findings",
]


class FindingGroup(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """The occurrences of one disclosed text in one task's answer.

    Fields:
        task_id: the task.
        answer: the answer's key (:func:`~.check.answer_key`).
        windows: the window ids of the run's text (``()`` for a group of
            marked secrets, which no permitted text excuses).
        hits: its first occurrences, in answer order (at most
            :data:`~.check.LISTED_FINDINGS`).
        count: how many occurrences in all.
    """

    task_id: str
    answer: str
    windows: tuple[int, ...]
    hits: tuple[DisclosureHit, ...]
    count: int

    @property
    def key(self) -> tuple[str, str, tuple[int, ...]]:
        """What groups of the same text share."""
        return (self.task_id, self.answer, self.windows)


class WindowHolders(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """Which artifacts hold one window.

    Fields:
        window: the window id.
        classifications: the classifications of holders that no task denies.
        denied: ``(artifact_id, classification)`` of holders some task denies.
    """

    window: int
    classifications: tuple[str, ...] = ()
    denied: tuple[tuple[str, str], ...] = ()


class DisclosurePartial(msgspec.Struct, frozen=True, kw_only=True):
    """One shard's disclosure scan (see the module's docstring).

    Fields:
        groups: its finding groups, sorted by key.
        holders: the holders of every window its artifacts hold, by window.
    """

    groups: tuple[FindingGroup, ...] = ()
    holders: tuple[WindowHolders, ...] = ()


def _first(hits: Iterable[DisclosureHit]) -> tuple[DisclosureHit, ...]:
    """The first :data:`~.check.LISTED_FINDINGS` of ``hits``, in answer order, each once."""
    return tuple(heapq.nsmallest(LISTED_FINDINGS, set(hits), key=lambda h: h.order))


def merge_groups(groups: Iterable[FindingGroup]) -> list[FindingGroup]:
    """Groups of the same key merged (their first occurrences and their
    counts), sorted by key."""
    merged: dict[tuple[str, str, tuple[int, ...]], FindingGroup] = {}
    for group in groups:
        known = merged.get(group.key)
        if known is None:
            merged[group.key] = group
        else:
            merged[group.key] = msgspec.structs.replace(
                known, hits=_first((*known.hits, *group.hits)), count=known.count + group.count
            )
    return [merged[key] for key in sorted(merged)]


class _Holders:
    """Every shard's window holders, merged."""

    def __init__(self) -> None:
        self.classifications: dict[int, set[str]] = {}
        self.denied: dict[int, set[tuple[str, str]]] = {}

    def add(self, holders: WindowHolders) -> None:
        if holders.classifications:
            self.classifications.setdefault(holders.window, set()).update(holders.classifications)
        if holders.denied:
            self.denied.setdefault(holders.window, set()).update(holders.denied)

    def permitted(self, window: int, policy: TaskPolicy) -> bool:
        """Some artifact ``policy``'s task may see holds ``window``."""
        if any(c in policy.allowed for c in self.classifications.get(window, ())):
            return True
        return any(policy.may_see(a, c) for a, c in self.denied.get(window, ()))


def reduce_disclosures(
    partials: Iterable[DisclosurePartial], policies: Mapping[str, TaskPolicy]
) -> list[AnswerFindings]:
    """Every answer's findings from the partials of every shard (in any
    order): its groups that are disclosures for its task (``policies`` by
    task id), merged; sorted by task id and answer key."""
    holders = _Holders()
    groups: list[FindingGroup] = []
    for partial in partials:
        for held in partial.holders:
            holders.add(held)
        groups.extend(partial.groups)
    by_answer: dict[tuple[str, str], list[FindingGroup]] = {}
    for group in merge_groups(groups):
        policy = policies.get(group.task_id)
        if policy is None:
            continue
        if group.windows and all(holders.permitted(w, policy) for w in set(group.windows)):
            continue  # every window of the text is in an artifact the task may see
        by_answer.setdefault((group.task_id, group.answer), []).append(group)
    findings = []
    for (task_id, answer), kept in sorted(by_answer.items()):
        hits = _first(h for g in kept for h in g.hits)
        total = sum(g.count for g in kept)
        findings.append(AnswerFindings(task_id=task_id, answer=answer, hits=hits, more=total - len(hits)))
    return findings


def findings_of_tasks(partials: Iterable[DisclosurePartial], tasks: Iterable[Task]) -> dict[str, list[AnswerFindings]]:
    """:func:`reduce_disclosures` of ``partials`` against ``tasks``' policies, by task id."""
    by_task: dict[str, list[AnswerFindings]] = {}
    for findings in reduce_disclosures(partials, {task.task_id: TaskPolicy.of(task) for task in tasks}):
        by_task.setdefault(findings.task_id, []).append(findings)
    return by_task


def shard_findings(by_task: Mapping[str, list[AnswerFindings]], task_ids: Iterable[str]) -> tuple[AnswerFindings, ...]:
    """The findings of ``task_ids``' answers (an evaluation shard's), in task order."""
    return tuple(f for task_id in task_ids for f in by_task.get(task_id, ()))
