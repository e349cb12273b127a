"""The local checks of a paired experiment's preflight
(task-context-benchmark-reference.md, "Paid experiment preflight
conditions" and "Original task specifications"): every cross-reference
problem of the benchmark, its three task specifications, the tracked
declaration, the answer schemas, the common cue budget and the execution
controls, found together.

Pure: the shell (:mod:`eceb_worker.pipeline.paired.freeze`) reads the files
and asks git, then passes bytes and git facts here. Every function returns
:class:`~eceb_worker.errors.Problem` lists (file, record, field, message);
none raises for a bad input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Literal

from eceb_worker.core.decoding import decode_document
from eceb_worker.core.paths import path_problems
from eceb_worker.core.urls import redact_text
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.paired.answer_schema import strict_schema_problems, usable_schema_problems
from eceb_worker.families.paired.benchmark import PairBenchmark, estimate_tokens
from eceb_worker.families.paired.records import FileDigest, ObservedSupport, SourcePin
from eceb_worker.families.paired.schedule import TaskKind, plan
from eceb_worker.families.paired.specs import TASK_SCHEMAS, Declaration, DiscoveryTask, TaskSpec, VerificationTask
from eceb_worker.families.paired.transport import TransportStatus, read_transport

__all__ = [
    "answer_schema_problems",
    "budget_problems",
    "control_problems",
    "declaration_path_problems",
    "dirty_problems",
    "observed_support",
    "read_declaration",
    "read_task",
    "repository_paths",
    "source_pins",
    "task_problems",
]

GitObject = tuple[str, str]
"""A git object found at the reviewed revision: ``(object id, "blob" | "tree")``."""


def read_task(kind: TaskKind, data: bytes, file: str) -> tuple[TaskSpec | None, list[Problem]]:
    """The task specification of ``kind`` decoded from ``data`` (the task
    file ``file``), or ``None`` and every problem of it (the seed's
    "Original task specifications")."""
    try:
        return decode_document(data, TASK_SCHEMAS[kind.value], file=file), []
    except InputError as exc:
        return None, exc.problems


def read_declaration(data: bytes, file: str) -> tuple[Declaration | None, list[Problem]]:
    """The declaration decoded from ``data`` (its bytes at the reviewed
    revision), or ``None`` and every problem; each source and check
    directory must be a portable repository path, and check ids distinct."""
    try:
        declaration = decode_document(data, Declaration, file=file)
    except InputError as exc:
        return None, exc.problems
    problems = _path_problems(file, "", "sources", declaration.sources)
    for index, check in enumerate(declaration.checks):
        if check.cwd != ".":
            problems += _path_problems(file, f"checks[{index}]", "cwd", [check.cwd])
    seen: set[str] = set()
    for index, check in enumerate(declaration.checks):
        if check.id in seen:
            problems.append(Problem(file=file, record=f"checks[{index}]", field="id", message=f"repeats {check.id!r}"))
        seen.add(check.id)
    return declaration, problems


def _path_problems(file: str, record: str, field: str, paths: Iterable[str]) -> list[Problem]:
    found = []
    for index, path in enumerate(paths):
        for reason in path_problems(path):
            where = f"{field}[{index}]" if field in ("sources", "targets", "paths") else field
            found.append(Problem(file=file, record=record, field=where, message=f"{path!r} {reason}"))
    return found


def answer_schema_problems(data: bytes, file: str) -> list[Problem]:
    """Every problem of an answer schema file: not JSON a schema can be
    (:func:`~eceb_worker.families.paired.answer_schema.usable_schema_problems`:
    nesting, repeated keys, the metaschema, unresolvable references), or not
    meeting the provider's strict-schema rule
    (:func:`~eceb_worker.families.paired.answer_schema.strict_schema_problems`,
    each named by its JSON pointer)."""
    value, problems = usable_schema_problems(data, file)
    if value is None:
        return problems
    return problems + strict_schema_problems(value, file)


_STATUS_WORDS = {"??": "untracked", "!!": "ignored", "?H": "hidden from git status (assume-unchanged or skip-worktree)"}


def dirty_problems(repository: str, status: bytes) -> list[Problem]:
    """One problem naming everything that makes the work tree unclean, from
    ``git status --porcelain=v1 -z --untracked-files=all --ignored``
    (``status``); ``[]`` when it is empty. Each entry is named ``untracked``,
    ``ignored`` or ``changed (XY)`` with git's two status letters."""
    if not status:
        return []
    entries: list[str] = []
    fields = status.split(b"\0")
    index = 0
    while index < len(fields):
        entry = fields[index]
        index += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2].decode("ascii", "replace"), entry[3:].decode("utf-8", "backslashreplace")
        if "R" in code or "C" in code:
            index += 1  # the source path of a rename or copy follows
        entries.append(f"{path} ({_STATUS_WORDS.get(code, f'changed, {code.strip()}')})")
    listed = "; ".join(entries[:20]) + (f"; and {len(entries) - 20} more" if len(entries) > 20 else "")
    return [
        Problem(
            file=repository,
            message=f"the work tree is not clean (commit, remove or stash before freezing): {listed}",
        )
    ]


def declaration_path_problems(
    tasks: Mapping[TaskKind, tuple[str, TaskSpec]],
) -> tuple[str | None, list[Problem]]:
    """The one declaration path every task names, or ``None`` and the
    problems: a path that is not portable, or tasks naming different
    declarations (the seed: the examples use the tracked declaration)."""
    problems: list[Problem] = []
    paths = {task.declaration for _, task in tasks.values()}
    for file, task in tasks.values():
        problems += _path_problems(file, "", "declaration", [task.declaration])
    if len(paths) > 1:
        first_file, first = next(iter(tasks.values()))
        for file, task in tasks.values():
            if task.declaration != first.declaration:
                problems.append(
                    Problem(
                        file=file,
                        field="declaration",
                        message=f"{task.declaration!r} is not the declaration {first.declaration!r} "
                        f"of {first_file}: every task names the same declaration",
                    )
                )
    if problems or not paths:
        return None, problems
    return paths.pop(), []


def repository_paths(tasks: Iterable[TaskSpec], declaration: Declaration | None) -> list[str]:
    """Every repository path the checks look up at the reviewed revision:
    the declared sources, each check's directory, every task's targets and
    a discovery task's selector paths, distinct, in that order."""
    paths: list[str] = []
    if declaration is not None:
        paths += declaration.sources
        paths += [check.cwd for check in declaration.checks]
    for task in tasks:
        paths += task.targets
        if isinstance(task, DiscoveryTask):
            paths += task.selector.paths
    return list(dict.fromkeys(paths))


def source_pins(
    declaration: Declaration, objects: Mapping[str, GitObject | None], file: str, revision: str
) -> tuple[list[SourcePin], list[Problem]]:
    """The declared sources pinned by their git objects at ``revision``
    (``objects``: what each repository path is there), and a problem for
    each source or check directory that is not in that commit."""
    pins: list[SourcePin] = []
    problems: list[Problem] = []
    for index, source in enumerate(declaration.sources):
        found = objects.get(source)
        if found is None:
            message = f"{source!r} is not in the commit {revision}"
            problems.append(Problem(file=file, field=f"sources[{index}]", message=message))
            continue
        object_id, kind = found
        pins.append(SourcePin(path=source, object=object_id, type="tree" if kind == "tree" else "blob"))
    for index, check in enumerate(declaration.checks):
        found = objects.get(check.cwd)
        if found is None or found[1] != "tree":
            message = f"{check.cwd!r} is not a directory in the commit {revision}"
            problems.append(Problem(file=file, record=f"checks[{index}]", field="cwd", message=message))
    return pins, problems


def task_problems(
    file: str,
    task: TaskSpec,
    declaration: Declaration | None,
    objects: Mapping[str, GitObject | None],
    revision: str,
) -> list[Problem]:
    """Every cross-reference problem of one task: a target that is not a
    portable path or not in the commit ``revision``, a check unknown to the
    declaration, a verification task's ``check`` missing from its
    ``checks``; for a discovery task, a selector path that is not in the
    commit or a selector pattern that is not a regular expression."""
    problems = _path_problems(file, "", "targets", task.targets)
    for index, target in enumerate(task.targets):
        if not path_problems(target) and objects.get(target) is None:
            message = f"{target!r} is not in the commit {revision}"
            problems.append(Problem(file=file, field=f"targets[{index}]", message=message))
    known = {check.id for check in declaration.checks} if declaration is not None else None
    for index, check_id in enumerate(task.checks):
        if known is not None and check_id not in known:
            message = f"{check_id!r} is not a check of the declaration {task.declaration}"
            problems.append(Problem(file=file, field=f"checks[{index}]", message=message))
    if isinstance(task, VerificationTask) and task.check not in task.checks:
        message = f"{task.check!r} is not listed in the task's checks"
        problems.append(Problem(file=file, field="check", message=message))
    if isinstance(task, DiscoveryTask):
        problems += _path_problems(file, "selector", "paths", task.selector.paths)
        for index, path in enumerate(task.selector.paths):
            if not path_problems(path) and objects.get(path) is None:
                message = f"{path!r} is not in the commit {revision}"
                problems.append(Problem(file=file, record="selector", field=f"paths[{index}]", message=message))
        try:
            re.compile(task.selector.pattern)
        except re.error as exc:
            message = f"not a regular expression: {exc}"
            problems.append(Problem(file=file, record="selector", field="pattern", message=message))
    return problems


def budget_problems(file: str, size: int, budget: int, what: str) -> list[Problem]:
    """A problem when a context of ``size`` bytes (``what``: "the overview",
    "the cue") estimates more tokens than the common ``budget``
    (:func:`~eceb_worker.families.paired.benchmark.estimate_tokens`)."""
    tokens = estimate_tokens(size)
    if tokens <= budget:
        return []
    message = (
        f"{what} estimates {tokens} tokens ({size} bytes / 4, rounded up), "
        f"over the common cue budget of {budget} tokens"
    )
    return [Problem(file=file, message=message)]


def control_problems(benchmark: PairBenchmark, file: str) -> list[Problem]:
    """Problems of the coverage and execution controls against the fixed
    schedule (:func:`~eceb_worker.families.paired.schedule.plan`): the exact
    pair count must be the schedule's, and the authorized execution count
    at most its executions; the external evidence location holds no
    credential (it is copied into every record)."""
    schedule = plan()
    problems: list[Problem] = []
    if benchmark.coverage.pairs != schedule.pair_count:
        message = f"{benchmark.coverage.pairs} is not the schedule's exact pair count {schedule.pair_count}"
        problems.append(Problem(file=file, record="coverage", field="pairs", message=message))
    if benchmark.execution.authorized_executions > schedule.execution_count:
        message = (
            f"{benchmark.execution.authorized_executions} exceeds the schedule's {schedule.execution_count} executions"
        )
        problems.append(Problem(file=file, record="execution", field="authorized_executions", message=message))
    if (shown := redact_text(benchmark.external_evidence)) != benchmark.external_evidence:
        message = f"holds a credential ({shown}): name the location; credentials come from the environment"
        problems.append(Problem(file=file, field="external_evidence", message=message))
    return problems


def observed_support(stream: bytes, evidence: FileDigest) -> ObservedSupport:
    """What a recorded ``codex exec --json`` stream of the frozen provider
    (``stream``, its bytes; ``evidence``, its digest) shows it supports
    ("Paid experiment preflight conditions": observed support for required
    usage, completion and output fields): ``completion`` when its single
    turn completed, ``usage`` when that turn's usage has every counter
    (the reasoning count may be missing), ``output`` when it ends with an
    agent message. A synthetic stream (thread id ``synthetic-...``) shows
    nothing: every field stays ``unobserved``."""
    transport = read_transport(stream)
    if transport.synthetic:
        return ObservedSupport(evidence=evidence, evidence_synthetic=True)

    def seen(shown: bool) -> Literal["observed", "unobserved"]:
        return "observed" if shown else "unobserved"

    completed = transport.status is TransportStatus.COMPLETED
    return ObservedSupport(
        usage=seen(completed and transport.usage is not None and not transport.usage.missing),
        completion=seen(completed),
        output=seen(transport.answer is not None),
        evidence=evidence,
    )
