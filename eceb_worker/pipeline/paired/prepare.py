"""``eceb pair prepare``: one task-pair directory of a frozen experiment
(task-context-benchmark-reference.md, "Paired inputs and retained outputs":
"Each invocation prepares both actual CLI paths"; "Unique task-pair-*
directories retain benchmark.json, answer schema, optional rates,
maintenance/cue costs, manifest.json"; "The pair records
output_schema_digest from the actual answer.schema.json bytes before
attempts").

:func:`prepare_pair` re-checks every frozen input against the freeze's
digests, the repository against its frozen ``HEAD`` and fingerprint, the
cue command and the provider against their frozen identities; runs the
cue command (never the provider) in the repository; checks the cue
(:func:`~eceb_worker.families.paired.pairs.cue_problems`, the common
budget) and that the repository is unchanged by it; then writes the pair
into a hidden temporary directory and renames it into place under its
unique ``task-pair-NN-KIND-rR-XXXXXXXX`` name (never replacing anything),
so that no half-prepared pair is ever visible. Nothing paid runs.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path
from typing import Final

import msgspec

from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.digests import digest_bytes
from eceb_worker.errors import ExecutionRefused, InputError, OutputError, Problem
from eceb_worker.families.paired.benchmark import estimate_tokens
from eceb_worker.families.paired.bound_files import (
    BoundFile,
    Seen,
    SinceFrozen,
    SinceFrozenExecutable,
    bound_file_problems,
)
from eceb_worker.families.paired.pairs import ANSWER_SCHEMA_NAME, arm_problems, cue_problems, pair_directory_name
from eceb_worker.families.paired.preflight import budget_problems, read_task
from eceb_worker.families.paired.prompts import codex_argv
from eceb_worker.families.paired.records import (
    COSTS_SCHEMA,
    MANIFEST_SCHEMA,
    ArmCommand,
    ArmInputs,
    Cost,
    Costs,
    Executable,
    FileDigest,
    Freeze,
    Manifest,
    position_of,
)
from eceb_worker.families.paired.schedule import Arm, ScheduledPair, plan
from eceb_worker.io.bundles import write_new_directory
from eceb_worker.io.files import read_input
from eceb_worker.io.paired.executables import identify_executable
from eceb_worker.io.paired.ledger import Ledger
from eceb_worker.pipeline.paired.checks import repository_change
from eceb_worker.pipeline.paired.experiment import Experiment, check_bound_files, read_record, utc_now

__all__ = ["Prepared", "prepare_pair"]

COSTS: Final = Costs(
    schema=COSTS_SCHEMA,
    maintenance=Cost(
        known=False,
        tokens=None,
        basis="unknown: no cost of writing or maintaining the frozen overview is recorded",
    ),
    cue=Cost(
        known=False,
        tokens=None,
        basis="unknown: the declared cue command ran locally and what it spent (tokens or other charges) "
        "is not measured",
    ),
)
"""``costs.json`` of every pair: nothing measures either cost, so both are unknown."""


class Prepared(msgspec.Struct, frozen=True, kw_only=True):
    """A prepared pair: its ``directory`` (absolute), its ``manifest`` and
    the manifest's ``digest``."""

    directory: str
    manifest: Manifest
    digest: str


def default_position(experiment: Experiment) -> int:
    """The first schedule position none of whose executions has started in
    the ledger (1 when there is no ledger). Raises :class:`ExecutionRefused`
    when every pair has started."""
    started: set[int] = set()
    if experiment.ledger.is_file():
        ledger = Ledger.open(experiment.ledger)
        try:
            started = {entry.pair for entry in ledger.entries()}
        finally:
            ledger.close()
    for pair in plan().pairs:
        if pair.position not in started:
            return pair.position
    raise ExecutionRefused("every pair of the schedule has started: there is no pair left to prepare")


def verified_bytes(path: Path, frozen: FileDigest, problems: list[Problem]) -> bytes | None:
    """The bytes of ``path``, or ``None`` with a problem appended when it
    cannot be read or differs from ``frozen`` (digest or size): a file
    changed since the freeze is never used."""
    data, found = check_bound_files([BoundFile(file=frozen, location=str(path))], SinceFrozen())
    problems += found
    return None if found else data[str(path)]


def executable_problems(executable: Executable, role: str) -> list[Problem]:
    """The problems of the frozen ``executable`` (``role``: which one, e.g.
    ``provider``) as it is now on disk, worded by
    :class:`~eceb_worker.families.paired.bound_files.SinceFrozenExecutable`:
    the reading's own problems when it cannot be read, one problem when its
    BLAKE3 is not the frozen one (the digest only: its size is not
    compared). Raises nothing."""
    location = str(Path(executable.path))
    frozen = FileDigest(path=executable.path, blake3=executable.blake3, size=executable.size)
    seen: dict[str, Seen] = {}
    why: dict[str, list[Problem]] = {}
    try:
        seen[location] = Seen(blake3=digest_bytes(read_input(Path(location))))
    except InputError as exc:
        why[location] = exc.problems
    return bound_file_problems([BoundFile(file=frozen, location=location)], seen, SinceFrozenExecutable(role), why=why)


class _Inputs(msgspec.Struct, frozen=True, kw_only=True):
    benchmark: bytes
    task: bytes
    task_path: str
    schema: bytes
    overview: bytes
    rates: bytes | None


def _frozen_inputs(freeze: Freeze, pair: ScheduledPair) -> _Inputs:
    """Every frozen file the pair retains, re-checked; InputError naming each changed one."""
    problems: list[Problem] = []
    benchmark_path = Path(freeze.benchmark.path)
    base = benchmark_path.parent
    benchmark = verified_bytes(benchmark_path, freeze.benchmark, problems)
    frozen_task = next((task for task in freeze.tasks if task.kind is pair.task), None)
    if frozen_task is None:
        message = f"freezes no {pair.task.value} task"
        raise InputError([Problem(file=freeze.benchmark.path, field="tasks", message=message)])
    task = verified_bytes(base / frozen_task.file.path, frozen_task.file, problems)
    schema = verified_bytes(base / frozen_task.answer_schema.path, frozen_task.answer_schema, problems)
    overview = verified_bytes(base / freeze.overview.path, freeze.overview, problems)
    rates = verified_bytes(base / freeze.rates.path, freeze.rates, problems) if freeze.rates else None
    problems += executable_problems(freeze.provider, "provider")
    if problems:
        raise InputError(problems)
    assert benchmark is not None and task is not None and schema is not None and overview is not None
    return _Inputs(
        benchmark=benchmark,
        task=task,
        task_path=str(base / frozen_task.file.path),
        schema=schema,
        overview=overview,
        rates=rates,
    )


def _check_repository(freeze: Freeze, after: str = "") -> None:
    """InputError unless the repository is as frozen (:func:`repository_change`)."""
    state, change = repository_change(freeze)
    if change is None:
        return
    what = f"changed {after}" if after else f"is not as frozen ({change})"
    message = (
        f"the repository {what}: HEAD {state.head}, fingerprint {state.fingerprint}; frozen HEAD "
        f"{freeze.repository.head}, fingerprint {freeze.repository.fingerprint}"
    )
    raise InputError([Problem(file=freeze.repository.path, message=message)])


def _run_cue(freeze: Freeze, task_path: str, task_id: str) -> bytes:
    """Run the frozen cue command in the repository; its standard output,
    checked (identity, exit, timeout, ``repocue/task-cue-1``, the budget)."""
    base = Path(freeze.benchmark.path).parent
    name = f"cue command {' '.join(freeze.cue_argv)}"
    where = Problem(file=name, message="")
    identity = identify_executable(freeze.cue_argv[0], base, where=where)
    if identity != freeze.cue_command:
        message = (
            f"is not the frozen cue command (now {identity.path}, BLAKE3 {identity.blake3}; "
            f"frozen {freeze.cue_command.path}, BLAKE3 {freeze.cue_command.blake3})"
        )
        raise InputError([Problem(file=name, message=message)])
    env = {**os.environ, "ECEB_TASK": task_path, "ECEB_DECLARATION": freeze.declaration.path}
    try:
        done = subprocess.run(
            [identity.path, *freeze.cue_argv[1:]],
            cwd=freeze.repository.path,
            env=env,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=freeze.cue_timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise InputError([Problem(file=name, message=f"did not finish within {freeze.cue_timeout_s} s")]) from None
    except OSError as exc:
        raise InputError([Problem(file=name, message=f"cannot run: {exc.strerror or exc}")]) from None
    _check_repository(freeze, after="while the cue command ran: a cue command must not change it")
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        tail = f": {detail[-1]}" if detail else ""
        raise InputError([Problem(file=name, message=f"failed with exit code {done.returncode}{tail}")])
    problems = cue_problems(done.stdout, task_id, name)
    problems += budget_problems(name, len(done.stdout), freeze.cue_budget_tokens, "the cue")
    if problems:
        raise InputError(problems)
    return done.stdout


def prepare_pair(root: Path, position: int | None = None, *, again: bool = False) -> Prepared:
    """Prepare schedule pair ``position`` (default :func:`default_position`)
    of the experiment at ``root``: see the module. Raises
    :class:`InputError` (a record or frozen input changed, the repository
    not as frozen, a failing cue command, a cue that is not a task cue of
    the task or over the common budget), :class:`OutputError` (the
    directory cannot be written, or the pair already has a directory and
    ``again`` is false: a second one is made only when asked),
    :class:`ExecutionRefused` (no pair left)."""
    experiment = Experiment(root)
    freeze, freeze_digest = read_record(experiment.freeze, Freeze)
    pairs = plan().pairs
    if position is not None and not 1 <= position <= len(pairs):
        raise InputError(
            [Problem(file=str(root), message=f"there is no pair {position}: the schedule has {len(pairs)}")]
        )
    pair = pairs[(position or default_position(experiment)) - 1]
    prefix = f"task-pair-{pair.position:02d}-"
    earlier = [path.name for path in experiment.pair_directories() if path.name.startswith(prefix)]
    if earlier and not again:
        raise OutputError(
            f"pair {pair.position} is already prepared in {root / earlier[0]}: run that directory, "
            "or prepare another one for the same pair with --again"
        )
    inputs = _frozen_inputs(freeze, pair)
    _check_repository(freeze)
    task, problems = read_task(pair.task, inputs.task, inputs.task_path)
    if task is None:
        raise InputError(problems)
    cue = _run_cue(freeze, inputs.task_path, task.id)
    freeze_bytes = read_input(experiment.freeze)
    if digest_bytes(freeze_bytes) != freeze_digest:
        raise InputError([Problem(file=str(experiment.freeze), message="changed while the pair was prepared")])

    name = pair_directory_name(pair, secrets.token_hex(4))
    final = experiment.root / name
    temporary = experiment.root / f".{name}.preparing"
    files: dict[str, bytes] = {
        "benchmark.json": inputs.benchmark,
        "freeze.json": freeze_bytes,
        "task.json": inputs.task,
        ANSWER_SCHEMA_NAME: inputs.schema,
    }
    if inputs.rates is not None:
        files["rates.json"] = inputs.rates
    files["costs.json"] = canonical_json(COSTS)
    contexts = {Arm.A: inputs.overview, Arm.B: cue}
    for arm, context in contexts.items():
        files[f"arms/{arm.value}/context"] = context
    digests = {path: FileDigest(path=path, blake3=digest_bytes(data), size=len(data)) for path, data in files.items()}
    shared = ArmInputs(
        task_id=task.id,
        declaration=task.declaration,
        targets=task.targets,
        checks=task.checks,
        model=freeze.model,
        reasoning_effort=freeze.reasoning_effort,
        speed_tier=freeze.speed_tier,
        sandbox=freeze.sandbox,
        output_schema_digest=digests[ANSWER_SCHEMA_NAME].blake3,
    )
    arms = tuple(
        ArmCommand(
            arm=arm,
            inputs=shared,
            context=digests[f"arms/{arm.value}/context"],
            context_tokens=estimate_tokens(len(contexts[arm])),
            cue_command=freeze.cue_command if arm is Arm.B else None,
            argv=codex_argv(
                executable=freeze.provider.path,
                output_schema=str(final / "attempts" / arm.value / ANSWER_SCHEMA_NAME),
                repository=freeze.repository.path,
                model=freeze.model,
                reasoning_effort=freeze.reasoning_effort,
                speed_tier=freeze.speed_tier,
                sandbox=freeze.sandbox,
            ),
            attempt=f"attempts/{arm.value}",
        )
        for arm in pair.order
    )
    manifest = Manifest(
        schema=MANIFEST_SCHEMA,
        label=freeze.label,
        synthetic=freeze.synthetic,
        freeze_digest=freeze_digest,
        pair=position_of(pair),
        task_id=task.id,
        output_schema_digest=digests[ANSWER_SCHEMA_NAME].blake3,
        answer_schema=ANSWER_SCHEMA_NAME,
        files=tuple(digests.values()),
        arms=(arms[0], arms[1]),
        prepared_at=utc_now(),
    )
    if problems := arm_problems(manifest, str(final / "manifest.json")):
        raise AssertionError(f"a prepared manifest fails its own check: {problems}")
    files["manifest.json"] = canonical_json(manifest)
    write_new_directory(final, files.items(), temporary=temporary, what="the pair")
    return Prepared(directory=str(final), manifest=manifest, digest=digest_bytes(files["manifest.json"]))
