"""``eceb pair freeze``: the preflight record of a paired experiment
(task-context-benchmark-reference.md, "Paid experiment preflight
conditions": "Before G3 authorizes the pilot, freeze ...").

:func:`freeze_experiment` reads the benchmark and every file it names, asks
git for the repository's state and the objects at ``HEAD``, identifies the
cue command and the provider executable (the provider is run only as
``EXE --version``), runs the pure checks of
:mod:`eceb_worker.families.paired.preflight`, and, when nothing is wrong,
writes ``EXP/freeze.json`` (:class:`~eceb_worker.families.paired.records.Freeze`).
Every problem of every input is reported together and nothing is written.
Freezing authorizes nothing: that is ``eceb pair authorize``.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path
from typing import Final

import msgspec

from eceb_worker.core.decoding import decode_document
from eceb_worker.core.digests import digest_bytes
from eceb_worker.core.paths import path_problems
from eceb_worker.errors import ExecutionRefused, InputError, OutputError, Problem
from eceb_worker.families.paired import preflight
from eceb_worker.families.paired.benchmark import PairBenchmark, estimate_tokens
from eceb_worker.families.paired.credits import RatesFile
from eceb_worker.families.paired.records import (
    FREEZE_SCHEMA,
    Executable,
    FileDigest,
    Freeze,
    FrozenTask,
    ObservedSupport,
    Repository,
    SourcePin,
)
from eceb_worker.families.paired.schedule import TaskKind
from eceb_worker.families.paired.specs import Declaration, TaskSpec
from eceb_worker.io.files import check_not_an_input, path_inside, read_input
from eceb_worker.io.paired.executables import identify_executable
from eceb_worker.io.paired.git import GitState, git_state, object_at, show_file
from eceb_worker.pipeline.paired.experiment import Experiment, utc_now, write_record
from eceb_worker.settings import read_setting

__all__ = ["freeze_experiment", "refuse_once_started"]

PROVIDER_VARIABLE: Final = "ECEB_PAIR_PROVIDER"
"""The environment variable that overrides the benchmark's provider executable."""


class Frozen(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`freeze_experiment` wrote: the ``freeze`` record, its
    ``digest``, its ``path`` and whether it ``replaced`` an earlier freeze
    (allowed only before authorization)."""

    freeze: Freeze
    digest: str
    path: str
    replaced: bool


def refuse_once_started(experiment: Experiment) -> None:
    """Raise :class:`ExecutionRefused` when ``experiment`` holds an
    authorization, a ledger, any attempt's ``attempt-start.json`` or any
    other entry of a ``task-pair-*/attempts`` directory (an attempt's
    staging directory included): once an attempt may have started, outcomes
    may exist, and nothing is frozen or authorized there again (freeze into
    a new directory). Used by ``eceb pair freeze`` and ``eceb pair authorize``."""
    found = [path for path in (experiment.authorization, experiment.ledger) if os.path.lexists(path)]
    if experiment.root.is_dir():
        found += sorted(experiment.root.glob("task-pair-*/attempts/*/attempt-start.json"))[:1]
        found += sorted(experiment.root.glob("task-pair-*/attempts/*"))[:1]
    if found:
        raise ExecutionRefused(
            f"{experiment.root}: holds {found[0].name} ({found[0]}): executions may have been "
            "authorized or started, so outcomes may exist and nothing is frozen or authorized here again; "
            "freeze into a new directory"
        )


class _Reader:
    """Reads input files, collecting a problem for each one that cannot be read."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def read(self, path: Path) -> bytes | None:
        try:
            return read_input(path)
        except InputError as exc:
            self.problems += exc.problems
            return None

    def digest(self, path: Path, name: str) -> tuple[FileDigest | None, bytes | None]:
        data = self.read(path)
        if data is None:
            return None, None
        return FileDigest(path=name, blake3=digest_bytes(data), size=len(data)), data


def _check_destination(experiment: Experiment, repository: Path, inputs: list[Path]) -> None:
    """Raise :class:`OutputError` unless ``EXP/freeze.json`` can be written:
    EXP (or its parent, when EXP is missing) is a directory, EXP is not
    inside the repository, and freeze.json is none of the inputs."""
    root = experiment.root
    if root.exists() and not root.is_dir():
        raise OutputError(f"{root}: is not a directory")
    if not root.exists() and not root.parent.is_dir():
        raise OutputError(f"{root}: its parent {root.parent} is not a directory (it is not created)")
    if path_inside(root, repository) is not None:
        raise OutputError(f"{root}: lies inside the repository {repository}, which must stay clean")
    check_not_an_input(experiment.freeze, inputs)


def _declaration(
    repository: Path, state: GitState, tasks: dict[TaskKind, tuple[str, TaskSpec]], problems: list[Problem]
) -> tuple[str | None, Declaration | None, FileDigest | None, str | None]:
    """The tracked declaration at HEAD: its path, record, digest and blob id."""
    path, found = preflight.declaration_path_problems(tasks)
    problems += found
    if path is None:
        return None, None, None, None
    name = f"{repository}/{path}"
    pinned = object_at(repository, state.head, path)
    data = show_file(repository, state.head, path)
    if pinned is None or data is None:
        where = "is untracked" if (repository / path).exists() else "does not exist"
        message = f"the declaration {where} at HEAD {state.head}: it must be a file tracked in the repository"
        problems.append(Problem(file=name, message=message))
        return path, None, None, None
    declaration, found = preflight.read_declaration(data, name)
    problems += found
    return path, declaration, FileDigest(path=path, blake3=digest_bytes(data), size=len(data)), pinned[0]


class _Pinned(msgspec.Struct, frozen=True, kw_only=True):
    """What git says of the repository: its state, the declaration (record,
    digest, blob id; ``None`` when it has problems) and the source pins."""

    state: GitState
    declaration: Declaration | None
    digest: FileDigest | None
    blob: str | None
    sources: tuple[SourcePin, ...]


def _repository(
    repository: Path, tasks: dict[TaskKind, tuple[str, TaskSpec]], problems: list[Problem]
) -> _Pinned | None:
    """The repository's checks: a clean tree, the tracked declaration, the
    declared sources and every task's paths at HEAD; problems appended.
    ``None`` when git cannot read the repository at all."""
    if not repository.is_dir():
        problems.append(Problem(file=str(repository), message="the repository is not a directory"))
        return None
    try:
        state = git_state(repository)
    except InputError as exc:
        problems += exc.problems
        return None
    problems += preflight.dirty_problems(str(repository), state.status)
    path, declaration, digest, blob = _declaration(repository, state, tasks, problems)
    objects = {
        name: object_at(repository, state.head, name)
        for name in preflight.repository_paths([task for _, task in tasks.values()], declaration)
        if name == "." or not path_problems(name)
    }
    pins: list[SourcePin] = []
    if declaration is not None:
        pins, found = preflight.source_pins(declaration, objects, f"{repository}/{path}", state.head)
        problems += found
    for file, task in tasks.values():
        problems += preflight.task_problems(file, task, declaration, objects, state.head)
    return _Pinned(state=state, declaration=declaration, digest=digest, blob=blob, sources=tuple(pins))


def _relative(*parts: str) -> str:
    """A benchmark-relative file name, normalized (``tasks/x.schema.json``)."""
    return posixpath.normpath(posixpath.join(*parts))


def freeze_experiment(  # noqa: C901, PLR0915 - the freeze's checks and records in the order the reference gives them
    benchmark_path: Path, repository: Path, into: Path, *, observed_stream: Path | None = None
) -> Frozen:
    """Freeze the experiment of ``benchmark_path`` over the git work tree
    ``repository`` into the experiment directory ``into`` (created when
    missing; its parent must exist). ``observed_stream``: a recorded
    ``codex exec --json`` stream of the frozen provider, bound by digest, whose
    fields make the freeze's observed support
    (:func:`~eceb_worker.families.paired.preflight.observed_support`).

    Raises :class:`ExecutionRefused` when ``into`` holds an authorization, a
    ledger or an attempt start (:func:`refuse_once_started`);
    :class:`OutputError` when ``into`` cannot hold the record or lies inside
    the repository; :class:`InputError` with every problem of every input
    (nothing written): an invalid benchmark, task, declaration or answer
    schema, an unclean tree, an untracked declaration, a missing source or
    target, an unknown check, an overview over the common budget, a cue
    command or provider that cannot be found or run, a pair count that is
    not the schedule's.
    """
    experiment = Experiment(into)
    refuse_once_started(experiment)
    repository = repository.resolve()
    benchmark_file = str(benchmark_path)
    benchmark_data = read_input(benchmark_path)
    benchmark = decode_document(benchmark_data, PairBenchmark, file=benchmark_file)
    base = benchmark_path.resolve().parent
    shown = benchmark_path.parent
    _check_destination(experiment, repository, [])
    reader = _Reader()
    problems = reader.problems
    problems += preflight.control_problems(benchmark, benchmark_file)

    tasks: dict[TaskKind, tuple[str, TaskSpec]] = {}
    frozen_tasks: list[FrozenTask] = []
    inputs = [benchmark_path]
    for kind in TaskKind:
        name = _relative(getattr(benchmark.tasks, kind.value))
        task_file = shown / name
        inputs.append(task_file)
        task_digest, data = reader.digest(base / name, name)
        if data is None or task_digest is None:
            continue
        task, found = preflight.read_task(kind, data, str(task_file))
        problems += found
        if task is None:
            continue
        tasks[kind] = (str(task_file), task)
        schema_name = _relative(posixpath.dirname(name), task.answer_schema)
        inputs.append(shown / schema_name)
        schema_digest, schema = reader.digest(base / schema_name, schema_name)
        if schema is None or schema_digest is None:
            continue
        problems += preflight.answer_schema_problems(schema, str(shown / schema_name))
        frozen_tasks.append(FrozenTask(kind=kind, id=task.id, file=task_digest, answer_schema=schema_digest))

    pinned = _repository(repository, tasks, problems)

    overview_digest, overview = reader.digest(base / benchmark.overview, _relative(benchmark.overview))
    inputs.append(shown / benchmark.overview)
    if overview is not None:
        problems += preflight.budget_problems(
            str(shown / benchmark.overview), len(overview), benchmark.cue.budget_tokens, "the overview"
        )
    criteria, _ = reader.digest(base / benchmark.success.criteria, _relative(benchmark.success.criteria))
    rubric, _ = reader.digest(base / benchmark.success.rubric, _relative(benchmark.success.rubric))
    rates: FileDigest | None = None
    if benchmark.rates is not None:
        rates, rates_data = reader.digest(base / benchmark.rates, _relative(benchmark.rates))
        inputs.append(shown / benchmark.rates)
        if rates_data is not None:
            try:
                decode_document(rates_data, RatesFile, file=str(shown / benchmark.rates))
            except InputError as exc:
                problems += exc.problems
    inputs += [shown / benchmark.success.criteria, shown / benchmark.success.rubric]
    support = ObservedSupport()
    if observed_stream is not None:
        stream_digest, stream = reader.digest(observed_stream, str(observed_stream.resolve()))
        if stream_digest is not None and stream is not None:
            support = preflight.observed_support(stream, stream_digest)
        inputs.append(observed_stream)

    cue = _identify(
        benchmark.cue.argv[0], base, Problem(file=benchmark_file, record="cue", field="argv[0]", message=""), problems
    )
    provider = _provider(benchmark, base, benchmark_file, problems)

    if problems:
        raise InputError(problems)
    assert overview_digest is not None and criteria is not None and rubric is not None
    assert pinned is not None and pinned.declaration is not None and pinned.digest is not None
    assert pinned.blob is not None and cue is not None and provider is not None
    state, declaration = pinned.state, pinned.declaration
    record = Freeze(
        schema=FREEZE_SCHEMA,
        label=benchmark.label,
        synthetic=benchmark.synthetic,
        benchmark=FileDigest(
            path=str(benchmark_path.resolve()), blake3=digest_bytes(benchmark_data), size=len(benchmark_data)
        ),
        repository=Repository(
            path=str(repository),
            reviewed_revision=state.head,
            head=state.head,
            tree=state.tree,
            fingerprint=state.fingerprint,
            clean=state.clean,
        ),
        declaration=pinned.digest,
        declaration_object=pinned.blob,
        sources=pinned.sources,
        checks=declaration.checks,
        tasks=tuple(frozen_tasks),
        overview=overview_digest,
        overview_tokens=estimate_tokens(overview_digest.size),
        cue_command=cue,
        cue_argv=benchmark.cue.argv,
        cue_timeout_s=benchmark.cue.timeout_s,
        cue_budget_tokens=benchmark.cue.budget_tokens,
        provider=provider,
        adapter=benchmark.provider.adapter,
        model=benchmark.provider.model,
        reasoning_effort=benchmark.provider.reasoning_effort,
        speed_tier=benchmark.provider.speed_tier,
        sandbox=benchmark.provider.sandbox,
        timeout_s=benchmark.provider.timeout_s,
        observed_support=support,
        success_criteria=criteria,
        rubric=rubric,
        assessor=benchmark.assessor.identity,
        assessor_independent=benchmark.assessor.independent,
        pairs=benchmark.coverage.pairs,
        evidence_coverage=benchmark.coverage.evidence,
        missing_semantic_evidence=benchmark.coverage.missing_semantic_evidence,
        rates=rates,
        external_evidence=benchmark.external_evidence,
        authorized_executions=benchmark.execution.authorized_executions,
        spending_stop_on=tuple(benchmark.execution.spending_stop.on_outcomes),
        pilot_continuation=benchmark.execution.pilot_continuation,
        frozen_at=utc_now(),
    )
    _check_destination(experiment, repository, inputs)
    replaced = os.path.lexists(experiment.freeze)
    try:
        experiment.root.mkdir(exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{experiment.root}: cannot create: {exc.strerror or exc}") from None
    refuse_once_started(experiment)
    digest = write_record(experiment.freeze, record, replace=True)
    return Frozen(freeze=record, digest=digest, path=str(experiment.freeze), replaced=replaced)


def _identify(
    name: str, base: Path, where: Problem, problems: list[Problem], *, version: bool = False
) -> Executable | None:
    try:
        return identify_executable(name, base, where=where, version=version)
    except InputError as exc:
        problems += exc.problems
        return None


def _provider(benchmark: PairBenchmark, base: Path, file: str, problems: list[Problem]) -> Executable | None:
    """The provider executable: ``ECEB_PAIR_PROVIDER`` when set (a path
    relative to the working directory, or a name on PATH), else the
    benchmark's ``provider.executable``, identified with its ``--version``."""
    override = read_setting("pair_provider")
    if override:
        where = Problem(file=PROVIDER_VARIABLE, message="")
        return _identify(override, Path.cwd(), where, problems, version=True)
    where = Problem(file=file, record="provider", field="executable", message="")
    return _identify(benchmark.provider.executable, base, where, problems, version=True)
