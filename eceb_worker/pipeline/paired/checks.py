"""What ``eceb pair run`` checks before anything is written
(task-context-benchmark-reference.md, "Paid experiment preflight
conditions" and "Fixed paid comparison schedule"; layout:
:mod:`eceb_worker.families.paired.records`).

:func:`open_pair` reads a prepared task-pair directory and re-checks the
experiment it belongs to (the directory's parent): the manifest against
itself and against the freeze and the schedule
(:func:`~eceb_worker.families.paired.binding.binding_problems`: the pair
for the directory name's position, every retained file, each arm's
inputs and exact command line rebuilt from the freeze), no symbolic link
among the directory's own entries (:func:`link_problems`: the journals
are written where the directory is), every file of the manifest by digest
and size, the task against the arms' inputs, the
authorization bound to the freeze, the ledger bound to the freeze and to
the authorization's count, the pair's place in the schedule (every arm of
every earlier pair started), the repository (at the frozen HEAD, clean,
with the frozen fingerprint) and the provider executable (at the frozen
real path, with the frozen BLAKE3 and size and ``--version``). Bad or changed
inputs are :class:`~eceb_worker.errors.InputError` (exit 3) with every
problem together; what forbids the execution itself (no authorization, a
pair out of order, a changed repository or provider) is
:class:`~eceb_worker.errors.ExecutionRefused` (exit 9). Nothing is written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from eceb_worker.core.decoding import decode_document
from eceb_worker.core.digests import digest_chunks
from eceb_worker.errors import ExecutionRefused, InputError, Problem
from eceb_worker.families.paired.binding import binding_problems, task_input_problems
from eceb_worker.families.paired.bound_files import BoundFile, SincePrepared
from eceb_worker.families.paired.pairs import arm_problems, cue_problems
from eceb_worker.families.paired.preflight import budget_problems
from eceb_worker.families.paired.records import Authorization, Freeze, Manifest
from eceb_worker.families.paired.schedule import Arm, plan
from eceb_worker.families.paired.specs import TASK_SCHEMAS, Check, TaskSpec
from eceb_worker.io.files import read_input
from eceb_worker.io.paired.executables import ask_version
from eceb_worker.io.paired.git import GitState, git_state
from eceb_worker.io.paired.ledger import Ledger
from eceb_worker.pipeline.paired.experiment import Experiment, check_bound_files, read_record

__all__ = [
    "PairRun",
    "attempt_id_of",
    "check_provider",
    "check_repository",
    "link_problems",
    "open_pair",
    "repository_change",
]

_CHUNK = 1 << 20


@dataclass(kw_only=True)
class PairRun:
    """A task-pair directory checked for running (see :func:`open_pair`).

    Fields: ``experiment`` and ``directory`` (absolute); ``freeze``,
    ``manifest``, ``authorization`` with their digests; ``ledger`` (open:
    the caller closes it); ``task`` (the pair's ``task.json``) and
    ``checks`` (the declaration's checks it names, exact, from the freeze);
    ``repository`` (its state, equal to the frozen one).
    """

    experiment: Experiment
    directory: Path
    freeze: Freeze
    freeze_digest: str
    manifest: Manifest
    manifest_digest: str
    authorization: Authorization
    ledger: Ledger
    task: TaskSpec
    checks: tuple[Check, ...]
    repository: GitState


def attempt_id_of(directory: Path, arm: str) -> str:
    """The id of arm ``arm``'s attempt of the pair in ``directory``:
    ``<directory name>/<arm>`` (a pair directory is never reused, so it is unique)."""
    return f"{directory.name}/{arm}"


def _check_files(directory: Path, manifest: Manifest) -> list[Problem]:
    """Every file the manifest lists (its arms' contexts too) with its digest and size."""
    listed = [(f"files[{i}]", f) for i, f in enumerate(manifest.files)]
    listed += [(f"arms[{i}]", arm.context) for i, arm in enumerate(manifest.arms)]
    bound = [BoundFile(file=file, location=str(directory / file.path), record=record) for record, file in listed]
    _, problems = check_bound_files(bound, SincePrepared(str(directory / "manifest.json")))
    return problems


def _check_manifest(directory: Path, manifest: Manifest, freeze: Freeze, freeze_digest: str) -> list[Problem]:
    """The manifest against itself (:func:`arm_problems`: the arms differ only
    in their context) and against the freeze and the schedule
    (:func:`binding_problems`: what runs is what was frozen)."""
    where = str(directory / "manifest.json")
    return arm_problems(manifest, where) + binding_problems(manifest, freeze, freeze_digest, str(directory), where)


def _read_task(directory: Path, manifest: Manifest, freeze: Freeze) -> tuple[TaskSpec, tuple[Check, ...]]:
    path = directory / "task.json"
    task = decode_document(read_input(path), TASK_SCHEMAS[manifest.pair.task.value], file=str(path))
    if task.id != manifest.task_id:
        raise InputError(
            [Problem(file=str(path), field="id", message=f"is not the manifest's task {manifest.task_id}")]
        )
    by_id = {check.id: check for check in freeze.checks}
    missing = [name for name in task.checks if name not in by_id]
    problems = task_input_problems(manifest, task, str(directory / "manifest.json"))
    if missing:
        message = f"names checks the freeze does not hold: {', '.join(missing)}"
        problems.insert(0, Problem(file=str(path), field="checks", message=message))
    if problems:
        raise InputError(problems)
    return task, tuple(by_id[name] for name in task.checks)


def repository_change(freeze: Freeze) -> tuple[GitState, str | None]:
    """The repository's state, and how it differs from the freeze (``None``
    when it is at the frozen HEAD, clean, with the frozen fingerprint):
    ``"not clean"``, ``"HEAD <id>"`` or ``"changed"``. The one comparison of
    the repository with its freeze, for prepare and run."""
    frozen = freeze.repository
    state = git_state(Path(frozen.path))
    if state.head == frozen.head and state.clean and state.fingerprint == frozen.fingerprint:
        return state, None
    return state, "not clean" if not state.clean else f"HEAD {state.head}" if state.head != frozen.head else "changed"


def check_repository(freeze: Freeze) -> GitState:
    """The repository's state, refused (:class:`ExecutionRefused`) unless it
    is at the frozen HEAD, clean and with the frozen fingerprint."""
    state, change = repository_change(freeze)
    if change is not None:
        raise ExecutionRefused(
            f"the repository {freeze.repository.path} is not as frozen ({change}): "
            "no execution starts on a changed repository"
        )
    return state


def check_provider(freeze: Freeze, manifest: Manifest) -> None:
    """Refuse (:class:`ExecutionRefused`) unless every arm's command line runs
    the provider executable at the frozen real path, its bytes have the
    frozen BLAKE3 and size, it is executable, and its ``--version``, asked
    again (:func:`~eceb_worker.io.paired.executables.ask_version`, the freeze's
    timeout), prints the frozen version: a start is only recorded for the
    frozen provider, one that can be spawned. Called before every attempt's
    start in the ledger (seed: "Paid experiment preflight conditions", the
    provider executable and its version are frozen). The version is asked
    only once the bytes are the frozen ones: a changed executable is never run."""
    frozen = freeze.provider
    for arm in manifest.arms:
        if not arm.argv or arm.argv[0] != frozen.path:
            raise ExecutionRefused(f"arm {arm.arm.value}'s command line does not run the frozen provider {frozen.path}")
    try:
        with Path(frozen.path).open("rb") as stream:
            size, blake3 = digest_chunks(iter(lambda: stream.read(_CHUNK), b""))
    except OSError as exc:
        raise ExecutionRefused(f"the frozen provider {frozen.path} cannot be read: {exc.strerror or exc}") from None
    if (blake3, size) != (frozen.blake3, frozen.size):
        raise ExecutionRefused(f"the provider at {frozen.path} is not the frozen one (BLAKE3 {blake3}, {size} bytes)")
    if not os.access(frozen.path, os.X_OK):
        raise ExecutionRefused(f"the frozen provider {frozen.path} is not executable")
    version, failure = ask_version(Path(frozen.path))
    if version is None:
        raise ExecutionRefused(f"the frozen provider's version cannot be asked again: {failure}")
    if version != frozen.version:
        raise ExecutionRefused(
            f"the provider at {frozen.path} is not the frozen one: --version prints {version!r}, "
            f"the freeze holds {frozen.version!r}"
        )


def _authorization(experiment: Experiment, freeze_digest: str) -> Authorization:
    if not experiment.authorization.exists():
        raise ExecutionRefused(f"not authorized: {experiment.authorization} does not exist")
    authorization, _ = read_record(experiment.authorization, Authorization)
    if authorization.freeze_digest != freeze_digest:
        raise ExecutionRefused(f"not authorized: {experiment.authorization} binds another freeze")
    return authorization


def _check_ledger_binding(
    experiment: Experiment, ledger: Ledger, freeze_digest: str, authorization: Authorization
) -> None:
    """Refuse unless the ledger's binding (its freeze digest and authorized
    execution count) is the freeze's digest and ``authorization.json``'s count."""
    bound, authorized = ledger.binding()
    if bound != freeze_digest:
        raise ExecutionRefused(
            f"the ledger {experiment.ledger} is bound to the freeze {bound}; {experiment.freeze} is {freeze_digest}"
        )
    if authorized != authorization.authorized_executions:
        raise ExecutionRefused(
            f"the ledger {experiment.ledger} holds {authorized} authorized executions, "
            f"{experiment.authorization} authorizes {authorization.authorized_executions}: "
            "nothing runs until they agree"
        )


def _check_contexts(directory: Path, manifest: Manifest, freeze: Freeze) -> list[Problem]:
    """Every arm's context fits the common budget, and arm B's is a task cue
    (``repocue/task-cue-1``) of the pair's task, as prepare checked it: a cue
    replaced by hand, its digests recomputed, is still refused."""
    problems: list[Problem] = []
    for arm in manifest.arms:
        path = directory / arm.context.path
        data = read_input(path)
        problems += budget_problems(str(path), len(data), freeze.cue_budget_tokens, f"arm {arm.arm.value}'s context")
        if arm.arm is Arm.B:
            problems += cue_problems(data, manifest.task_id, str(path))
    return problems


def _check_journals_in_ledger(experiment: Experiment, ledger: Ledger) -> None:
    """Refuse unless every attempt that started on disk (an
    ``attempt-start.json`` in any pair directory of the experiment) is an
    execution the ledger holds: a ledger whose rows were deleted, or one
    restored from before those attempts, would let them run again."""
    held = {entry.attempt_id for entry in ledger.entries()}
    for pair_directory in experiment.pair_directories():
        for start in sorted(pair_directory.glob("attempts/*/attempt-start.json")):
            attempt_id = attempt_id_of(pair_directory, start.parent.name)
            if attempt_id not in held:
                raise ExecutionRefused(
                    f"{start}: the attempt started, and the ledger {experiment.ledger} does not hold it: "
                    "the ledger is not the record of every execution, so nothing more starts"
                )


def _check_order(directory: Path, manifest: Manifest, ledger: Ledger) -> None:
    """Refuse unless no spending stop is recorded, an authorized execution
    remains, every arm of every earlier pair has started and the pair's own
    executions, if any, are of this directory. (The ledger decides again,
    in one transaction, when an attempt starts.)"""
    stops = ledger.stops()
    if stops:
        raise ExecutionRefused(f"spending stopped: {stops[0]}")
    entries = ledger.entries()
    _, authorized = ledger.binding()
    if len(entries) >= authorized:
        raise ExecutionRefused(f"all {authorized} authorized executions have started")
    started = {(entry.pair, entry.arm) for entry in entries}
    position = manifest.pair.position
    for pair in plan().pairs:
        if pair.position >= position:
            break
        for arm in pair.order:
            if (pair.position, arm.value) not in started:
                message = f"arm {arm.value} of pair {pair.position} has not started"
                raise ExecutionRefused(f"pair {position} is not next in the schedule: {message}")
    for entry in entries:
        if entry.pair == position and not entry.attempt_id.startswith(f"{directory.name}/"):
            raise ExecutionRefused(f"pair {position} is run from another directory ({entry.attempt_id})")


LINK: Final = (
    "is a symbolic link: a pair directory's own files and directories are never links "
    "(the journals would be written or read elsewhere)"
)
"""The problem of a symbolic link among a pair directory's own components."""


def link_problems(directory: Path) -> list[Problem]:
    """Every symbolic link among the entries of ``directory`` at any depth
    (never followed, never entered), in path order: each a problem naming
    its path. A pair directory reached through a link is resolved first and
    is not one of its own components."""
    problems = []
    for top, directories, files in os.walk(directory, followlinks=False):
        for name in sorted([*directories, *files]):
            if os.path.islink(os.path.join(top, name)):
                problems.append(Problem(file=os.path.join(top, name), message=LINK))
    return sorted(problems, key=lambda problem: problem.file)


def open_pair(directory: Path) -> PairRun:
    """The pair in ``directory`` checked for running (module). Raises
    :class:`InputError` (every problem of the pair's files together) or
    :class:`ExecutionRefused`; writes nothing."""
    directory = directory.resolve()
    if not directory.name.startswith("task-pair-") or not directory.is_dir():
        raise InputError([Problem(file=str(directory), message="not a task-pair-* directory")])
    if links := link_problems(directory):
        raise InputError(links)
    experiment = Experiment(directory.parent)
    manifest, manifest_digest = read_record(directory / "manifest.json", Manifest)
    freeze, freeze_digest = read_record(experiment.freeze, Freeze)
    problems = _check_manifest(directory, manifest, freeze, freeze_digest)
    problems += _check_files(directory, manifest)
    if not problems:
        problems += _check_contexts(directory, manifest, freeze)
    if problems:
        raise InputError(problems)
    task, checks = _read_task(directory, manifest, freeze)
    authorization = _authorization(experiment, freeze_digest)
    ledger = Ledger.open(experiment.ledger)
    try:
        _check_ledger_binding(experiment, ledger, freeze_digest, authorization)
        _check_journals_in_ledger(experiment, ledger)
        _check_order(directory, manifest, ledger)
        repository = check_repository(freeze)
        check_provider(freeze, manifest)
    except BaseException:
        ledger.close()
        raise
    return PairRun(
        experiment=experiment,
        directory=directory,
        freeze=freeze,
        freeze_digest=freeze_digest,
        manifest=manifest,
        manifest_digest=manifest_digest,
        authorization=authorization,
        ledger=ledger,
        task=task,
        checks=checks,
        repository=repository,
    )
