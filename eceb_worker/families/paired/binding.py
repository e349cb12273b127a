"""A prepared pair's manifest checked against its freeze and the schedule,
without I/O (task-context-benchmark-reference.md, "Paid experiment
preflight conditions": what is frozen is what runs; "Fixed paid comparison
schedule"; "Paired inputs and retained outputs": "Both receive the same
task, declaration path, targets, checks, model, reasoning, speed, read-only
setting, and answer schema").

:func:`~eceb_worker.families.paired.pairs.arm_problems` checks that a
manifest's two arms agree with each other; a manifest changed by hand and
written again canonically can agree with itself and still not be the
frozen experiment. :func:`binding_problems` checks it against the freeze:
the schedule's pair for the directory name's position, the frozen task and
answer schema, every retained file bound where the freeze binds it, and
each arm's command line rebuilt from the freeze. :func:`task_input_problems`
checks the arms' inputs against the pair's task once that is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from eceb_worker.errors import Problem
from eceb_worker.families.paired.benchmark import estimate_tokens
from eceb_worker.families.paired.pairs import ANSWER_SCHEMA_NAME, PAIR_DIRECTORY
from eceb_worker.families.paired.prompts import codex_argv
from eceb_worker.families.paired.records import Freeze, FrozenTask, Manifest, position_of
from eceb_worker.families.paired.schedule import Arm, ScheduledPair, pair_at
from eceb_worker.families.paired.specs import TaskSpec

__all__ = ["binding_problems", "task_input_problems"]

RETAINED_FILES: Final = (
    "benchmark.json",
    "freeze.json",
    "task.json",
    ANSWER_SCHEMA_NAME,
    "costs.json",
    "arms/A/context",
    "arms/B/context",
)
"""The files every prepared pair retains (``rates.json`` too when the freeze has rates)."""


def retained_files(freeze: Freeze) -> tuple[str, ...]:
    """The paths, relative to the pair directory, that a pair prepared under
    ``freeze`` retains and its manifest's ``files`` must list."""
    return (*RETAINED_FILES, "rates.json") if freeze.rates is not None else RETAINED_FILES


def _frozen_digests(freeze: Freeze, freeze_digest: str, task: FrozenTask | None) -> dict[str, tuple[str, int | None]]:
    """What the freeze binds of the retained files: path -> (BLAKE3, size or ``None`` when unbound)."""
    bound: dict[str, tuple[str, int | None]] = {
        "benchmark.json": (freeze.benchmark.blake3, freeze.benchmark.size),
        "freeze.json": (freeze_digest, None),
        "arms/A/context": (freeze.overview.blake3, freeze.overview.size),
    }
    if task is not None:
        bound["task.json"] = (task.file.blake3, task.file.size)
        bound[ANSWER_SCHEMA_NAME] = (task.answer_schema.blake3, task.answer_schema.size)
    if freeze.rates is not None:
        bound["rates.json"] = (freeze.rates.blake3, freeze.rates.size)
    return bound


def _position_problems(
    manifest: Manifest, name: str, directory: str, file: str
) -> tuple[list[Problem], ScheduledPair | None]:
    """The schedule's pair for the directory name's position, and how the manifest's ``pair`` differs from it."""
    match = PAIR_DIRECTORY.fullmatch(name)
    scheduled = None
    if match is not None:
        position = int(match.group(1))
        scheduled = pair_at(position)
    if (
        match is None
        or scheduled is None
        or (match.group(2), int(match.group(3))) != (scheduled.task.value, scheduled.repeat)
    ):
        message = "is not named task-pair-NN-KIND-rR-XXXXXXXX after a pair of the fixed schedule"
        return [Problem(file=directory, message=message)], None
    expected = position_of(scheduled)
    problems = []
    for field in expected.__struct_fields__:
        shown, wanted = getattr(manifest.pair, field), getattr(expected, field)
        if shown != wanted:
            message = (
                f"is {_shown(shown)}; the schedule's pair {scheduled.position} (the directory's) has {_shown(wanted)}"
            )
            problems.append(Problem(file=file, record="pair", field=field, message=message))
    return problems, scheduled


def _shown(value: object) -> str:
    """A field's value as a message shows it: an enum by its value, an arm order as ``A/B``."""
    if isinstance(value, tuple):
        return "/".join(_shown(item) for item in value)
    return str(getattr(value, "value", repr(value)))


def _file_problems(
    manifest: Manifest, freeze: Freeze, freeze_digest: str, task: FrozenTask | None, file: str
) -> list[Problem]:
    """The manifest's ``files``: every retained file listed once, each equal to the freeze where it binds it."""
    problems = []
    listed: dict[str, int] = {}
    for index, entry in enumerate(manifest.files):
        if entry.path in listed:
            problems.append(
                Problem(file=file, record=f"files[{index}]", field="path", message=f"lists {entry.path} twice")
            )
        listed.setdefault(entry.path, index)
    bound = _frozen_digests(freeze, freeze_digest, task)
    for path in retained_files(freeze):
        if path not in listed:
            message = f"does not list {path}, which every pair prepared under this freeze retains"
            problems.append(Problem(file=file, record="files", message=message))
            continue
        record = f"files[{listed[path]}]"
        entry = manifest.files[listed[path]]
        if path in bound:
            blake3, size = bound[path]
            if entry.blake3 != blake3 or (size is not None and entry.size != size):
                wanted = f"BLAKE3 {blake3}" + (f", {size} bytes" if size is not None else "")
                message = f"binds {path} as BLAKE3 {entry.blake3}, {entry.size} bytes; the freeze binds {wanted}"
                problems.append(Problem(file=file, record=record, field="blake3", message=message))
    return problems


def _arm_problems(  # noqa: C901 - one check per field two arms must share, named each
    manifest: Manifest,
    freeze: Freeze,
    task: FrozenTask | None,
    scheduled: ScheduledPair | None,
    directory: str,
    file: str,
) -> list[Problem]:
    """Each arm against the freeze: its place, its settings, its context and its exact command line."""
    problems = []
    listed = {entry.path: entry for entry in manifest.files}

    def problem(record: str, field: str, message: str) -> None:
        problems.append(Problem(file=file, record=record, field=field, message=message))

    for index, arm in enumerate(manifest.arms):
        record = f"arms[{index}]"
        if scheduled is not None and arm.arm is not scheduled.order[index]:
            problem(record, "arm", f"is {arm.arm.value}; the schedule runs arm {scheduled.order[index].value} here")
        inputs = arm.inputs
        settings = ("model", "reasoning_effort", "speed_tier", "sandbox")
        for name in settings:
            if getattr(inputs, name) != getattr(freeze, name):
                shown, frozen = getattr(inputs, name), getattr(freeze, name)
                problem(record, f"inputs.{name}", f"is {shown!r}; the freeze has {frozen!r}")
        if task is not None:
            if inputs.task_id != task.id:
                problem(
                    record,
                    "inputs.task_id",
                    f"is {inputs.task_id!r}; the freeze's {task.kind.value} task is {task.id!r}",
                )
            if inputs.output_schema_digest != task.answer_schema.blake3:
                problem(record, "inputs.output_schema_digest", "is not the frozen answer schema's BLAKE3")
        context = f"arms/{arm.arm.value}/context"
        if arm.context.path != context or listed.get(context) != arm.context:
            problem(record, "context", f"is not {context} as the manifest's files bind it")
        if arm.arm is Arm.A and (arm.context.blake3, arm.context.size) != (
            freeze.overview.blake3,
            freeze.overview.size,
        ):
            problem(record, "context", "is not the frozen overview")
        if arm.context_tokens != estimate_tokens(arm.context.size):
            problem(record, "context_tokens", f"is not the estimate of a {arm.context.size}-byte context")
        cue = freeze.cue_command if arm.arm is Arm.B else None
        if arm.cue_command != cue:
            problem(record, "cue_command", "is not the frozen cue command" if cue else "is given for the overview")
        expected = codex_argv(
            executable=freeze.provider.path,
            output_schema=f"{directory}/attempts/{arm.arm.value}/{ANSWER_SCHEMA_NAME}",
            repository=freeze.repository.path,
            model=freeze.model,
            reasoning_effort=freeze.reasoning_effort,
            speed_tier=freeze.speed_tier,
            sandbox=freeze.sandbox,
        )
        if arm.argv != expected:
            differing = _first_difference(arm.argv, expected)
            message = f"is not the command line the freeze gives this arm ({differing})"
            problem(record, "argv", message)
    return problems


def _first_difference(given: Sequence[str], expected: Sequence[str]) -> str:
    for index, (shown, wanted) in enumerate(zip(given, expected, strict=False)):
        if shown != wanted:
            return f"argument {index} is {shown!r}, not {wanted!r}"
    return f"{len(given)} arguments, not {len(expected)}"


def binding_problems(
    manifest: Manifest, freeze: Freeze, freeze_digest: str, directory: str, file: str
) -> list[Problem]:
    """Every way ``manifest`` (named ``file``) of the pair directory
    ``directory`` (its absolute path; its last component the directory's
    name) is not what the freeze (``freeze``, its digest ``freeze_digest``)
    and the schedule make of that pair:

    - ``freeze_digest``, ``label`` and ``synthetic`` are the freeze's;
    - ``pair`` is the schedule's pair (:func:`~eceb_worker.families.paired.schedule.plan`)
      for the position in the directory's name, whose task kind and repeat
      the name also gives (a name of no scheduled pair is a problem of ``directory``);
    - ``task_id`` and ``output_schema_digest`` are the frozen task's id and
      answer schema's BLAKE3; ``answer_schema`` is ``answer.schema.json``;
    - ``files`` lists every file of :func:`retained_files` once, each equal
      (BLAKE3 and size) to what the freeze binds: the benchmark, the freeze
      itself (its digest), the task file, its answer schema, the rates, and
      the overview as ``arms/A/context``;
    - each arm is the schedule's arm for its place, with the freeze's model,
      reasoning effort, speed tier and sandbox, the frozen task and answer
      schema, its context ``arms/<arm>/context`` as ``files`` binds it (arm
      A's the frozen overview), ``context_tokens`` its estimate, arm B's cue
      command the frozen one and arm A none, and ``argv`` exactly
      :func:`~eceb_worker.families.paired.prompts.codex_argv` of the freeze:
      the provider's real path, ``-C`` the frozen repository and
      ``--output-schema`` ``<directory>/attempts/<arm>/answer.schema.json``.

    ``[]`` when the manifest is bound; raises nothing. Pure. Seed: "Paid
    experiment preflight conditions" (what is frozen is what runs) and
    "Fixed paid comparison schedule"."""
    name = directory.rsplit("/", 1)[-1]
    problems = []
    if manifest.freeze_digest != freeze_digest:
        message = f"binds the freeze {manifest.freeze_digest}; the experiment's freeze.json is {freeze_digest}"
        problems.append(Problem(file=file, field="freeze_digest", message=message))
    for field in ("label", "synthetic"):
        if getattr(manifest, field) != getattr(freeze, field):
            message = f"is {getattr(manifest, field)!r}; the freeze has {getattr(freeze, field)!r}"
            problems.append(Problem(file=file, field=field, message=message))
    position, scheduled = _position_problems(manifest, name, directory, file)
    problems += position
    task = None
    if scheduled is not None:
        task = next((frozen for frozen in freeze.tasks if frozen.kind is scheduled.task), None)
        if task is None:
            message = f"the freeze holds no {scheduled.task.value} task"
            problems.append(Problem(file=file, record="pair", field="task", message=message))
    if task is not None:
        if manifest.task_id != task.id:
            message = f"is {manifest.task_id!r}; the freeze's {task.kind.value} task is {task.id!r}"
            problems.append(Problem(file=file, field="task_id", message=message))
        if manifest.output_schema_digest != task.answer_schema.blake3:
            message = f"is not the frozen answer schema's BLAKE3 {task.answer_schema.blake3}"
            problems.append(Problem(file=file, field="output_schema_digest", message=message))
    if manifest.answer_schema != ANSWER_SCHEMA_NAME:
        message = f"is {manifest.answer_schema!r}, not {ANSWER_SCHEMA_NAME!r}"
        problems.append(Problem(file=file, field="answer_schema", message=message))
    problems += _file_problems(manifest, freeze, freeze_digest, task, file)
    problems += _arm_problems(manifest, freeze, task, scheduled, directory, file)
    return problems


def task_input_problems(manifest: Manifest, task: TaskSpec, file: str) -> list[Problem]:
    """Every way an arm's inputs of ``manifest`` (named ``file``) are not
    the pair's task ``task`` (its ``task.json``, bound by the freeze): its
    id, declaration path, targets and checks. ``[]`` when they are; raises
    nothing. Pure. Seed: "Paired inputs and retained outputs" (both arms
    receive the same task, declaration path, targets and checks)."""
    expected = {"task_id": task.id, "declaration": task.declaration, "targets": task.targets, "checks": task.checks}
    problems = []
    for index, arm in enumerate(manifest.arms):
        for field, wanted in expected.items():
            shown = getattr(arm.inputs, field)
            if shown != wanted:
                message = f"is {shown!r}; the pair's task.json has {wanted!r}"
                problems.append(Problem(file=file, record=f"arms[{index}]", field=f"inputs.{field}", message=message))
    return problems
