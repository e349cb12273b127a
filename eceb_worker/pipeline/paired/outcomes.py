"""An attempt's outcome decided from its evidence for ``eceb pair
summary`` (task-context-benchmark-reference.md, "Original task
specifications": the success evidence of each task kind; "Paired inputs
and retained outputs": bound assessments). The repository at the frozen
revision is read (and the verification check re-executed there) once per
summary, through :class:`Policy`. Reads only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from eceb_worker.core.digests import digest_bytes
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.paired.assessments import Assessment, Binding, OriginalReference
from eceb_worker.families.paired.assessments import binding_problems as assessment_problems
from eceb_worker.families.paired.credits import CreditEstimate, RatesFile, estimate, select_rate
from eceb_worker.families.paired.discovery import Derived, derive, discovery_problems, selected
from eceb_worker.families.paired.explanation import citation_problems, cited_paths
from eceb_worker.families.paired.journal import Attempt, AttemptStatus
from eceb_worker.families.paired.outcome import answer_problems
from eceb_worker.families.paired.pairs import ANSWER_SCHEMA_NAME
from eceb_worker.families.paired.records import Freeze
from eceb_worker.families.paired.specs import (
    DiscoveryTask,
    ExplanationTask,
    TaskSpec,
    VerificationTask,
)
from eceb_worker.families.paired.summary_document import Outcome
from eceb_worker.families.paired.transport import Transport, TransportStatus
from eceb_worker.families.paired.verification import verification_problems
from eceb_worker.io.paired.checks import CheckRun, reexecute
from eceb_worker.io.paired.git import files_at, object_at, revision_tree, show_file
from eceb_worker.pipeline.paired.evidence import AttemptFiles, problem_text

__all__ = ["credit_estimate", "usage_reason", "Policy", "judged", "repository_problems"]


@dataclass
class Policy:
    """What every pair is checked against: the freeze, the repository at the
    frozen revision (read once), the assessments, re-executed checks."""

    freeze: Freeze
    freeze_digest: str
    repository: Path
    repository_problems: list[str]
    assessments: dict[str, list[Assessment]]
    used_assessments: set[str] = field(default_factory=set)
    _derived: dict[str, Derived | str] = field(default_factory=dict)
    reruns: dict[str, CheckRun] = field(default_factory=dict)
    _files: dict[str, bytes | None] = field(default_factory=dict)
    _references: dict[str, tuple[OriginalReference, ...] | str] = field(default_factory=dict)

    @property
    def revision(self) -> str:
        """The frozen (reviewed) revision."""
        return self.freeze.repository.reviewed_revision

    def file(self, path: str) -> bytes | None:
        """The bytes of file ``path`` at the frozen revision, or ``None`` when it is no file there."""
        if path not in self._files:
            try:
                self._files[path] = show_file(self.repository, self.revision, path)
            except InputError:
                self._files[path] = None
        return self._files[path]

    def derived(self, task: DiscoveryTask) -> Derived | str:
        """What ``task``'s selector derives at the frozen revision, or why it cannot be derived."""
        if task.id not in self._derived:
            try:
                paths = selected(task.selector, files_at(self.repository, self.revision))
                found = {path: self.file(path) for path in paths}
                self._derived[task.id] = derive(task.selector, {p: d for p, d in found.items() if d is not None})
            except InputError as exc:
                self._derived[task.id] = f"the frozen revision cannot be read: {problem_text(exc)}"
            except Exception as exc:  # re.error and friends: a pattern that cannot be compiled
                self._derived[task.id] = f"the selector cannot be applied: {type(exc).__name__}: {exc}"
        return self._derived[task.id]

    def rerun(self, check_id: str) -> CheckRun:
        """The frozen check ``check_id`` re-executed at the frozen revision (once per summary)."""
        if check_id not in self.reruns:
            check = next((c for c in self.freeze.checks if c.id == check_id), None)
            if check is None:
                self.reruns[check_id] = CheckRun(
                    output="", exit_code=None, problem=f"the freeze holds no check {check_id}"
                )
            else:
                self.reruns[check_id] = reexecute(self.repository, self.revision, check, self.freeze.timeout_s)
        return self.reruns[check_id]

    def references(self, task: TaskSpec) -> tuple[OriginalReference, ...] | str:
        """``task``'s targets with their git object ids at the frozen revision, or why not."""
        if task.id not in self._references:
            try:
                found = []
                for target in task.targets:
                    located = object_at(self.repository, self.revision, target)
                    if located is None:
                        raise InputError([Problem(file=target, message="not in the frozen revision")])
                    found.append(OriginalReference(path=target, object=located[0]))
                self._references[task.id] = tuple(sorted(found))
            except InputError as exc:
                self._references[task.id] = (
                    f"the task's targets cannot be read at the frozen revision: {problem_text(exc)}"
                )
        return self._references[task.id]


def repository_problems(freeze: Freeze, repository: Path) -> list[str]:
    """Why ``repository`` cannot give the frozen revision (no such commit, another tree); ``[]`` when it can."""
    try:
        tree = revision_tree(repository, freeze.repository.reviewed_revision)
    except InputError as exc:
        return [f"repository {repository}: {problem_text(exc)}: no outcome can be checked"]
    if tree is None:
        return [f"repository {repository}: holds no commit {freeze.repository.reviewed_revision}, the frozen revision"]
    if tree != freeze.repository.tree:
        return [
            f"repository {repository}: the frozen revision's tree is {tree}, the freeze binds {freeze.repository.tree}"
        ]
    return []


Decided = tuple[Outcome, list[str], str | None, Binding | None]
"""An outcome, its reasons, the assessment's state and binding (explanations)."""


def _discovery(policy: Policy, task: DiscoveryTask, answer: Any) -> Decided:
    derived = policy.derived(task)
    if isinstance(derived, str):
        return Outcome.UNVERIFIED, [derived], None, None
    problems = list(discovery_problems(answer, derived))
    return (Outcome.FAILED if problems else Outcome.PASSED), problems, None, None


def _verification(policy: Policy, task: VerificationTask, answer: Any, transport: Transport) -> Decided:
    check = next((c for c in policy.freeze.checks if c.id == task.check), None)
    if check is None:
        return Outcome.UNVERIFIED, [f"the freeze holds no check {task.check}"], None, None
    problems = list(verification_problems(answer, check.argv, transport.commands))
    run = policy.rerun(task.check)
    if run.problem is not None:
        return Outcome.UNVERIFIED, [*problems, f"re-execution of {task.check}: {run.problem}"], None, None
    stated = answer.get("exit_code") if isinstance(answer, dict) else None
    if stated != run.exit_code:
        problems.append(
            f"re-executed at the frozen revision, {task.check} exits {run.exit_code}; the answer states {stated!r}"
        )
    return (Outcome.FAILED if problems else Outcome.PASSED), problems, None, None


def _explanation(
    policy: Policy, task: ExplanationTask, answer: Any, attempt_id: str, answer_digest: str | None
) -> Decided:
    cited = {path: policy.file(path) for path in cited_paths(answer)}
    problems = list(citation_problems(answer, cited, task.min_claims))
    if problems:
        return Outcome.FAILED, problems, None, None
    references = policy.references(task)
    if isinstance(references, str):
        return Outcome.UNVERIFIED, [references], None, None
    binding = Binding(
        task=task.id,
        policy=policy.freeze_digest,
        attempt=attempt_id,
        answer=answer_digest,
        fingerprint=policy.freeze.repository.fingerprint,
        assessor=policy.freeze.assessor,
        rubric=policy.freeze.rubric.blake3,
        references=references,
    )
    return (*_assessed(policy, binding), binding)


def task_outcome(
    policy: Policy, task: TaskSpec, answer: Any, attempt_id: str, answer_digest: str | None, transport: Transport
) -> Decided:
    """The outcome of a completed attempt's valid answer (decoded), by task kind."""
    if policy.repository_problems:
        return Outcome.UNVERIFIED, [*policy.repository_problems], None, None
    if isinstance(task, DiscoveryTask):
        return _discovery(policy, task, answer)
    if isinstance(task, VerificationTask):
        return _verification(policy, task, answer, transport)
    return _explanation(policy, task, answer, attempt_id, answer_digest)


def _assessed(policy: Policy, binding: Binding) -> tuple[Outcome, list[str], str]:
    found = policy.assessments.get(binding.attempt, [])
    if found:
        policy.used_assessments.add(binding.attempt)
    bound = []
    rejected = []
    for assessment in found:
        problems = assessment_problems(assessment, binding)
        (rejected.append("; ".join(problems)) if problems else bound.append(assessment))
    missing = Outcome.FAILED if policy.freeze.missing_semantic_evidence == "failed" else Outcome.UNASSESSED
    treatment = "counted as failed, as the frozen policy says" if missing is Outcome.FAILED else "unassessed"
    bound = list(dict.fromkeys(bound))  # the same assessment twice is one
    if len(bound) > 1:
        return (
            missing,
            [f"{len(bound)} bound assessments of this attempt: which one holds is not stated ({treatment})"],
            "ambiguous",
        )
    if bound:
        if bound[0].accurate:
            return Outcome.PASSED, [], "accurate"
        return Outcome.FAILED, ["the bound assessment judges the claims not accurate"], "inaccurate"
    if rejected:
        reasons = [f"assessment rejected: {why}" for why in rejected]
        return missing, [*reasons, f"no bound assessment ({treatment})"], "rejected: " + " | ".join(rejected)
    return missing, [f"no bound assessment ({treatment})"], "none"


def judged(
    policy: Policy,
    record: Attempt,
    evidence: list[str],
    transport: Transport | None,
    read: AttemptFiles,
    task: TaskSpec | None,
    answer_text: str | None,
) -> Decided:
    """The outcome of an attempt with a valid ``attempt.json``: unverified
    with evidence problems, failed when it did not complete or its answer is
    not valid against the captured schema, else by task kind."""
    if evidence:
        return Outcome.UNVERIFIED, evidence, None, None
    if record.status is not AttemptStatus.COMPLETED:
        return Outcome.FAILED, [f"the attempt ended {record.status.value}", *record.problems], None, None
    if transport is None or transport.status is not TransportStatus.COMPLETED or answer_text is None:
        return (
            Outcome.UNVERIFIED,
            ["attempt.json says completed; provider.jsonl holds no answer of a completed turn"],
            None,
            None,
        )
    problems = answer_problems(answer_text, read.present.get(ANSWER_SCHEMA_NAME, b""))
    if problems:
        return Outcome.FAILED, list(problems), None, None
    if task is None:
        return Outcome.UNVERIFIED, ["task.json cannot be read"], None, None
    answer = msgspec.json.decode(answer_text.encode("utf-8", "surrogatepass"))
    digest = digest_bytes(answer_text.encode("utf-8", "surrogatepass"))
    return task_outcome(policy, task, answer, read.attempt_id, digest, transport)


def usage_reason(transport: Transport | None, incomplete: bool) -> str:
    """Why an attempt has no usage total, in words."""
    if incomplete:
        return "incomplete journal: any usage seen is partial, never a total"
    if transport is None:
        return "no provider stream"
    if transport.status is not TransportStatus.COMPLETED:
        return f"the turn did not complete ({transport.status.value}): partial usage is never a total"
    return "the completed turn reported no usage counters"


def credit_estimate(
    policy: Policy, rates: RatesFile | None, transport: Transport | None, started_at: str
) -> CreditEstimate:
    """The credit estimate of an attempt started at ``started_at`` from the rate snapshot that applies."""
    rate, ambiguous = select_rate(rates, policy.freeze.model, policy.freeze.speed_tier, started_at[:10])
    completed = transport is not None and transport.status is TransportStatus.COMPLETED
    return estimate(
        transport.usage if transport is not None else None,
        completed=completed,
        rate=rate,
        model=policy.freeze.model,
        speed_tier=policy.freeze.speed_tier,
        started_on=started_at[:10],
        ambiguous=ambiguous,
    )
