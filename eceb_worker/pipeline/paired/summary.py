"""``eceb pair summary DIR...``: every task-pair directory's evidence
re-read from its bytes and checked, the outcomes and metrics recalculated,
the differences, the schedule and the verdict decided
(task-context-benchmark-reference.md, "Paired inputs and retained
outputs" from "Summary resolves its input directory", "Credit and quality
calculation", "Fixed paid comparison schedule"). Reads only; the document
is :class:`~eceb_worker.families.paired.summary.Summary`.

Each input is a task-pair directory or an experiment directory (its
``task-pair-*`` directories), resolved to its absolute physical path; the
same directory given twice, by a symbolic link or not, is read once. A file
whose real path leaves its pair directory is refused (not read: named as
missing evidence). The policy is the freeze: the experiment directory's
``freeze.json``, or the one the pairs' manifests bind (pairs of different
freezes are refused). Nothing recorded is trusted: every record is
re-decoded (canonical bytes only), every digest recomputed, the provider's
stream re-read, the answer re-checked against the captured schema, the
task's success evidence re-derived from the repository at the frozen
revision (and the verification check re-executed there). What is missing
or changed keeps its attempt visible, names what is missing or changed and
keeps its pair from counting.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eceb_worker.core.digests import digest_bytes
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.paired.binding import binding_problems
from eceb_worker.families.paired.bound_files import BoundFile, SinceBound, bound_file_problems
from eceb_worker.families.paired.credits import RatesFile
from eceb_worker.families.paired.pairs import arm_problems
from eceb_worker.families.paired.records import Costs, Freeze, Manifest
from eceb_worker.families.paired.schedule import Arm
from eceb_worker.families.paired.summary import pair_differences, preferred, summary
from eceb_worker.families.paired.summary_document import (
    AttemptSummary,
    Outcome,
    PairSummary,
    Reexecution,
    Summary,
)
from eceb_worker.pipeline.paired.evidence import (
    PairFiles,
    located_text,
    pair_directories,
    physical_path,
    policy_freeze,
    problem_text,
    read_assessments,
    read_optional,
    read_task,
    writable,
)
from eceb_worker.pipeline.paired.experiment import decode_record
from eceb_worker.pipeline.paired.outcomes import Policy, repository_problems
from eceb_worker.pipeline.paired.summary_attempt import summarize_attempt

__all__ = ["pair_directories", "summarize_pairs"]


def _read_manifest(files: PairFiles, where: str) -> tuple[Manifest | None, bytes | None, list[str]]:
    """The pair's ``manifest.json`` decoded (canonical bytes only), its
    bytes, and why it cannot be (``None``: missing or invalid)."""
    data = files.read("manifest.json")
    if data is None:
        return None, None, ["manifest.json: missing"]
    try:
        return decode_record(data, Manifest, where), data, []
    except InputError as exc:
        return None, data, [f"manifest.json: {problem_text(exc)}"]


def _unreadable(directory: Path, problems: Sequence[str]) -> PairSummary:
    """The summary of a pair whose manifest cannot be read: shown, never counted."""
    return PairSummary(
        directory=str(directory),
        name=directory.name,
        position=None,
        task=None,
        repeat=None,
        order=None,
        pilot=None,
        complete=False,
        problems=tuple(problems),
        arms=(),
        differences=pair_differences(None, None),
        preferred=None,
        preference="the manifest cannot be read",
    )


def _retained_problems(policy: Policy, files: PairFiles, manifest: Manifest, where: str) -> list[str]:
    """What does not hold of the pair directory's contents: the manifest
    against itself, the freeze and the schedule (its problems as record,
    field and message: the manifest's), every file it binds unchanged (each
    named), and no file it does not bind."""
    directory = files.root
    found = arm_problems(manifest, where) + binding_problems(
        manifest, policy.freeze, policy.freeze_digest, str(directory), where
    )
    bound = [
        BoundFile(file=file, location=file.path) for file in (*manifest.files, *(a.context for a in manifest.arms))
    ]
    changed = bound_file_problems(bound, files.seen(entry.location for entry in bound), SinceBound("manifest.json"))
    problems = [located_text(problem) for problem in found] + [str(problem) for problem in changed]
    retained = {file.path for file in manifest.files} | {arm.context.path for arm in manifest.arms}
    attempts = {arm.attempt.rstrip("/") for arm in manifest.arms}
    for entry in files.listing():
        inside = "/".join(entry.split("/", 2)[:2])
        if entry == "manifest.json" or entry in retained or inside in attempts:
            continue
        problems.append(f"{entry}: added to the pair directory (manifest.json does not bind it)")
    return problems


def _not_counted(problems: Sequence[str], arms: Sequence[AttemptSummary]) -> list[str]:
    """Why a pair does not count: its own problems, then each arm's attempt
    that is not verified, complete and started, with its evidence."""
    reasons = list(problems)
    for arm in arms:
        if arm.outcome in (Outcome.UNVERIFIED, Outcome.INCOMPLETE, Outcome.NOT_STARTED):
            told = "; ".join(arm.evidence or arm.reasons)
            reasons.append(f"arm {arm.arm.value} is {arm.outcome.value}" + (f": {told}" if told else ""))
    return reasons


def _pair(policy: Policy, directory: Path) -> PairSummary:
    """The summary of the pair in ``directory``: its manifest, its contents
    and both arms' attempts checked; it counts only when nothing is missing
    or changed and both attempts are verified."""
    files = PairFiles(directory)
    where = str(directory / "manifest.json")
    manifest, data, problems = _read_manifest(files, where)
    if manifest is None or data is None:
        return _unreadable(directory, problems + files.problems)
    manifest_digest = digest_bytes(data)
    problems += _retained_problems(policy, files, manifest, where)
    task = read_task(files, manifest, problems)
    rates = read_optional(files, "rates.json", RatesFile, problems) if policy.freeze.rates is not None else None
    costs = read_optional(files, "costs.json", Costs, problems)
    arms = tuple(
        summarize_attempt(policy, files, manifest, manifest_digest, arm, task, rates, costs)
        for arm in sorted(manifest.arms, key=lambda a: a.arm.value)
    )
    problems = list(dict.fromkeys(problems + files.problems))
    complete = not problems and all(
        arm.outcome not in (Outcome.UNVERIFIED, Outcome.INCOMPLETE, Outcome.NOT_STARTED) for arm in arms
    )
    reasons = _not_counted(problems, arms)
    by_arm = {arm.arm: arm for arm in arms}
    winner, why = preferred(by_arm.get(Arm.A), by_arm.get(Arm.B))
    scheduled = manifest.pair
    return PairSummary(
        directory=str(directory),
        name=directory.name,
        position=scheduled.position,
        task=scheduled.task,
        repeat=scheduled.repeat,
        order=scheduled.order,
        pilot=scheduled.pilot,
        complete=complete,
        problems=tuple(reasons),
        arms=arms,
        differences=pair_differences(by_arm.get(Arm.A), by_arm.get(Arm.B)),
        preferred=winner if complete else None,
        preference=why if complete else "the pair does not count: " + "; ".join(reasons),
    )


def _support(freeze: Freeze) -> str:
    """What the freeze records of the provider's support for the evidence a comparison needs."""
    seen = freeze.observed_support
    frozen = f"usage {seen.usage}, completion {seen.completion}, output {seen.output}"
    if seen.evidence is None or seen.evidence_synthetic:
        return f"Provider support as frozen: {frozen}; no recorded real stream shows it: no actual support is shown."
    return f"Provider support as frozen: {frozen}, from the recorded stream {seen.evidence.blake3}."


def summarize_pairs(
    inputs: Sequence[Path], *, assessments: Sequence[Path] = (), repository: Path | None = None
) -> Summary:
    """The summary of the pairs of ``inputs`` (task-pair or experiment
    directories) with the assessment bundles ``assessments``, the outcomes
    read from ``repository`` (default: the frozen repository's path)
    (module). Raises :class:`InputError` for inputs that are no such
    directories, pairs of different freezes, an unreadable freeze or an
    invalid assessment bundle; everything else is shown in the summary."""
    pairs, experiments = pair_directories(inputs)
    if not pairs:
        where = str(experiments[0]) if experiments else str(inputs[0])
        raise InputError([Problem(file=where, message="holds no task-pair directory: nothing to summarize")])
    freeze, freeze_digest = policy_freeze(pairs, experiments)
    by_attempt, bundles, synthetic_bundle = read_assessments(assessments)
    chosen = physical_path(repository) if repository is not None else Path(freeze.repository.path)
    policy = Policy(
        freeze=freeze,
        freeze_digest=freeze_digest,
        repository=chosen,
        repository_problems=repository_problems(freeze, chosen),
        assessments=by_attempt,
    )
    summarized = [_pair(policy, directory) for directory in pairs]
    attempt_ids = {arm.attempt_id for pair in summarized for arm in pair.arms}
    notes = [
        f"assessment of {attempt}: no such attempt among the inputs"
        for attempt in sorted(by_attempt)
        if attempt not in attempt_ids
    ]
    synthetic = freeze.synthetic or synthetic_bundle or any(arm.synthetic for pair in summarized for arm in pair.arms)
    return writable(
        summary(
            label=freeze.label,
            synthetic=synthetic,
            freeze_digest=freeze_digest,
            repository=str(chosen),
            reviewed_revision=freeze.repository.reviewed_revision,
            repository_problems=policy.repository_problems,
            directories=[str(p) for p in pairs],
            assessments=bundles,
            frozen_pairs=freeze.pairs,
            pairs=summarized,
            assessment_notes=notes,
            support=_support(freeze),
            reexecutions=[
                Reexecution(
                    check=check,
                    exit_code=run.exit_code,
                    problem=run.problem,
                )
                for check, run in policy.reruns.items()
            ],
        )
    )
