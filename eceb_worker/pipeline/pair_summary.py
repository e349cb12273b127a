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
from typing import Any

from eceb_worker.core.digests import digest_bytes
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.paired.assessments import Binding
from eceb_worker.families.paired.binding import binding_problems
from eceb_worker.families.paired.credits import RatesFile
from eceb_worker.families.paired.evidence import (
    identity_chain,
    invocation_problems,
    record_problems,
    request_problems,
    start_problems,
)
from eceb_worker.families.paired.journal import (
    JOURNAL_ORDER,
    Attempt,
    AttemptStart,
    Invocation,
    Request,
    seconds_between,
)
from eceb_worker.families.paired.pairs import ANSWER_SCHEMA_NAME, arm_problems
from eceb_worker.families.paired.records import ArmCommand, Cost, Costs, Freeze, Manifest
from eceb_worker.families.paired.schedule import Arm
from eceb_worker.families.paired.specs import (
    TaskSpec,
)
from eceb_worker.families.paired.status import INCOMPLETE, NOT_STARTED
from eceb_worker.families.paired.summary import measures, pair_differences, preferred, summary
from eceb_worker.families.paired.summary_document import AttemptSummary, Outcome, PairSummary, Reexecution, Summary
from eceb_worker.families.paired.transport import Transport, TransportStatus, read_transport
from eceb_worker.pipeline.experiment import decode_record
from eceb_worker.pipeline.pair_evidence import (
    PairFiles,
    pair_directories,
    physical_path,
    policy_freeze,
    problem_text,
    read_assessments,
    read_attempt,
    read_optional,
    read_task,
    writable,
)
from eceb_worker.pipeline.pair_outcomes import Policy, credit_estimate, judged, repository_problems, usage_reason

__all__ = ["pair_directories", "summarize_pairs"]


def _attempt(
    policy: Policy,
    files: PairFiles,
    manifest: Manifest,
    manifest_digest: str,
    arm: ArmCommand,
    task: TaskSpec | None,
    rates: RatesFile | None,
    costs: Costs | None,
) -> AttemptSummary:
    attempt_id = f"{files.root.name}/{arm.arm.value}"
    cost: Cost | None = None
    if costs is not None:
        cost = costs.maintenance if arm.arm is Arm.A else costs.cue
    read = read_attempt(files, arm, attempt_id)

    def shown(
        state: str,
        outcome: Outcome,
        reasons: Sequence[str],
        *,
        evidence: Sequence[str] = (),
        links: tuple[Any, ...] = (),
        start: AttemptStart | None = None,
        record: Attempt | None = None,
        transport: Transport | None = None,
        incomplete: bool = False,
        assessment: str | None = None,
        binding: Binding | None = None,
    ) -> AttemptSummary:
        started_at = start.started_at if start is not None else None
        credits = credit_estimate(policy, rates, None if incomplete else transport, started_at) if started_at else None
        completed = transport is not None and transport.status is TransportStatus.COMPLETED and not incomplete
        wall = seconds_between(record.started_at, record.ended_at) if record is not None else None
        why_wall = "incomplete journal: no end recorded" if start is not None else "the attempt did not start"
        return AttemptSummary(
            arm=arm.arm,
            attempt_id=attempt_id,
            state=state,
            synthetic=transport.synthetic if transport is not None else None,
            outcome=outcome,
            reasons=tuple(reasons),
            evidence=tuple(evidence),
            schema_identity=links,
            ledger_position=start.ledger_position if start is not None else None,
            started_at=started_at,
            ended_at=record.ended_at if record is not None else None,
            credits=credits,
            measures=measures(
                usage=transport.usage if completed and transport is not None else None,
                why_no_usage=usage_reason(transport, incomplete) if start is not None else "the attempt did not start",
                credits=credits,
                wall_clock=wall,
                why_no_wall_clock=why_wall,
                context_tokens=arm.context_tokens,
                context_cost=cost,
            ),
            assessment=assessment,
            binding=binding,
        )

    if read is None:
        return shown(NOT_STARTED, Outcome.NOT_STARTED, ["the attempt did not start"])
    start = read.record("attempt-start.json", AttemptStart)
    record = read.record("attempt.json", Attempt)
    stream = read.present.get("provider.jsonl")
    transport = read_transport(stream) if stream is not None else None
    pair_schema = files.read(ANSWER_SCHEMA_NAME)
    request = read.record("request.json", Request)
    invocation = read.record("invocation.json", Invocation)
    capture_path = str(files.root / read.prefix / ANSWER_SCHEMA_NAME)
    links = identity_chain(
        manifest,
        digest_bytes(pair_schema) if pair_schema is not None else None,
        request,
        read.digests.get(ANSWER_SCHEMA_NAME),
        invocation,
        capture_path,
    )
    evidence = list(read.evidence)
    evidence += [f"schema identity, {link.link} link: {link.problem}" for link in links if not link.holds]
    if start is None:
        evidence.append("attempt-start.json: missing or invalid: the attempt never reached its commit point")
        return shown(INCOMPLETE, Outcome.UNVERIFIED, evidence, evidence=evidence, links=links, transport=transport)
    evidence += start_problems(
        start, attempt_id=attempt_id, digests=read.digests, fingerprint=policy.freeze.repository.fingerprint
    )
    if request is not None:
        evidence += request_problems(
            request,
            attempt_id=attempt_id,
            freeze=policy.freeze,
            freeze_digest=policy.freeze_digest,
            manifest=manifest,
            manifest_digest=manifest_digest,
            arm=arm,
            digests=read.digests,
        )
    if invocation is not None:
        evidence += invocation_problems(invocation, arm=arm, freeze=policy.freeze, digests=read.digests)
    if "attempt.json" not in read.present:
        missing = [
            name for name in JOURNAL_ORDER[: JOURNAL_ORDER.index("attempt-start.json")] if name not in read.present
        ]
        evidence += [f"{name}: missing" for name in missing]
        reasons = ["incomplete journal: attempt-start.json without attempt.json", *evidence]
        return shown(
            INCOMPLETE,
            Outcome.INCOMPLETE,
            reasons,
            evidence=evidence,
            links=links,
            start=start,
            transport=transport,
            incomplete=True,
        )
    if record is None:
        return shown(
            INCOMPLETE,
            Outcome.UNVERIFIED,
            evidence,
            evidence=evidence,
            links=links,
            start=start,
            transport=transport,
            incomplete=True,
        )
    for name in JOURNAL_ORDER:
        if name not in read.present:
            evidence.append(f"{name}: missing")
    listed = {bound.path: bound for bound in record.files}
    for name in JOURNAL_ORDER[:-1]:
        bound = listed.get(name)
        if bound is None:
            evidence.append(f"{name}: attempt.json does not bind it")
        elif name in read.digests and (read.digests[name], len(read.present[name])) != (bound.blake3, bound.size):
            evidence.append(f"{name}: changed since attempt.json bound it")
    evidence += [
        f"attempt.json files: binds {path}, which no runner writes" for path in listed if path not in JOURNAL_ORDER
    ]
    answer_text = transport.answer if transport is not None else None
    answer_digest = digest_bytes(answer_text.encode("utf-8", "surrogatepass")) if answer_text is not None else None
    evidence += record_problems(record, attempt_id=attempt_id, start=start, transport=transport, answer=answer_digest)
    state = record.status.value
    outcome, reasons, assessment, binding = judged(policy, record, evidence, transport, read, task, answer_text)
    return shown(
        state,
        outcome,
        reasons,
        evidence=evidence,
        links=links,
        start=start,
        record=record,
        transport=transport,
        assessment=assessment,
        binding=binding,
    )


def _pair(policy: Policy, directory: Path) -> PairSummary:
    files = PairFiles(directory)
    where = str(directory / "manifest.json")
    data = files.read("manifest.json")
    problems: list[str] = []
    manifest: Manifest | None = None
    if data is None:
        problems.append("manifest.json: missing")
    else:
        try:
            manifest = decode_record(data, Manifest, where)
        except InputError as exc:
            problems.append(f"manifest.json: {problem_text(exc)}")
    if manifest is None:
        problems += files.problems
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
    assert data is not None
    manifest_digest = digest_bytes(data)
    found = arm_problems(manifest, where) + binding_problems(
        manifest, policy.freeze, policy.freeze_digest, str(directory), where
    )
    problems += [" ".join(part for part in (p.record, p.field, p.message) if part) for p in found]
    retained = {bound.path: bound for bound in manifest.files}
    for bound in (*manifest.files, *(arm.context for arm in manifest.arms)):
        now = files.read(bound.path)
        if now is None:
            problems.append(f"{bound.path}: missing, though manifest.json binds it")
        elif (digest_bytes(now), len(now)) != (bound.blake3, bound.size):
            problems.append(f"{bound.path}: changed since manifest.json bound it")
    attempts = {arm.attempt.rstrip("/") for arm in manifest.arms}
    contexts = {arm.context.path for arm in manifest.arms}
    for entry in files.listing():
        top = entry.split("/", 2)
        inside = "/".join(top[:2])
        if entry == "manifest.json" or entry in retained or entry in contexts or inside in attempts:
            continue
        problems.append(f"{entry}: added to the pair directory (manifest.json does not bind it)")
    task = read_task(files, manifest, problems)
    rates = read_optional(files, "rates.json", RatesFile, problems) if policy.freeze.rates is not None else None
    costs = read_optional(files, "costs.json", Costs, problems)
    arms = tuple(
        _attempt(policy, files, manifest, manifest_digest, arm, task, rates, costs)
        for arm in sorted(manifest.arms, key=lambda a: a.arm.value)
    )
    problems += files.problems
    problems = list(dict.fromkeys(problems))
    complete = not problems and all(
        arm.outcome not in (Outcome.UNVERIFIED, Outcome.INCOMPLETE, Outcome.NOT_STARTED) for arm in arms
    )
    reasons = list(problems)
    for arm in arms:
        if arm.outcome in (Outcome.UNVERIFIED, Outcome.INCOMPLETE, Outcome.NOT_STARTED):
            told = "; ".join(arm.evidence or arm.reasons)
            reasons.append(f"arm {arm.arm.value} is {arm.outcome.value}" + (f": {told}" if told else ""))
    by_arm = {arm.arm: arm for arm in arms}
    winner, why = preferred(by_arm.get(Arm.A), by_arm.get(Arm.B))
    shown = manifest.pair
    return PairSummary(
        directory=str(directory),
        name=directory.name,
        position=shown.position,
        task=shown.task,
        repeat=shown.repeat,
        order=shown.order,
        pilot=shown.pilot,
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
    shown = f"usage {seen.usage}, completion {seen.completion}, output {seen.output}"
    if seen.evidence is None or seen.evidence_synthetic:
        return f"Provider support as frozen: {shown}; no recorded real stream shows it: no actual support is shown."
    return f"Provider support as frozen: {shown}, from the recorded stream {seen.evidence.blake3}."


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
    shown = [_pair(policy, directory) for directory in pairs]
    attempt_ids = {arm.attempt_id for pair in shown for arm in pair.arms}
    notes = [
        f"assessment of {attempt}: no such attempt among the inputs"
        for attempt in sorted(by_attempt)
        if attempt not in attempt_ids
    ]
    synthetic = freeze.synthetic or synthetic_bundle or any(arm.synthetic for pair in shown for arm in pair.arms)
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
            pairs=shown,
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
