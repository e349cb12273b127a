"""A prepared task pair, checked without I/O (task-context-benchmark-reference.md,
"Paired inputs and retained outputs": "Both receive the same task,
declaration path, targets, checks, model, reasoning, speed, read-only
setting, and answer schema"; "Unique task-pair-* directories").

- :func:`pair_directory_name`: ``task-pair-NN-KIND-rR-XXXXXXXX``.
- :func:`cue_problems`: a cue's bytes are a ``repocue/task-cue-1`` document of the task.
- :func:`pilot_evidence_digest`: what a continuation approval binds.
- :func:`arm_problems`: a manifest's two arms differ only in their context;
  shared by ``eceb pair prepare`` (before a manifest is written) and
  ``eceb pair run`` (before an attempt starts).
"""

from __future__ import annotations

import re
from typing import Final

from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.digests import digest_bytes
from eceb_worker.core.lenient import decode_lenient, value_defects
from eceb_worker.errors import Problem
from eceb_worker.families.paired.prompts import codex_argv
from eceb_worker.families.paired.records import Manifest
from eceb_worker.families.paired.schedule import Arm, ScheduledPair

__all__ = [
    "ANSWER_SCHEMA_NAME",
    "PAIR_DIRECTORY",
    "arm_problems",
    "cue_problems",
    "option_value",
    "pair_directory_name",
    "pilot_evidence_digest",
]

CUE_SCHEMA: Final = "repocue/task-cue-1"
"""The ``schema`` of arm B's context, a task cue."""
ANSWER_SCHEMA_NAME: Final = "answer.schema.json"
"""The answer schema's name in a pair directory and in each attempt directory."""
PAIR_DIRECTORY: Final = re.compile(r"task-pair-(\d{2})-([a-z]+)-r(\d+)-([0-9a-f]{8})")
"""A task-pair directory name (``fullmatch``): position, task kind, repeat, random token."""


def pair_directory_name(pair: ScheduledPair, token: str) -> str:
    """``task-pair-NN-KIND-rR-XXXXXXXX`` for schedule ``pair`` (``NN`` its
    2-digit position, ``R`` its repeat) and ``token`` (8 hex digits, random:
    a directory is never reused). Raises ``ValueError`` for another token."""
    if not re.fullmatch(r"[0-9a-f]{8}", token):
        raise ValueError("a pair directory token is 8 lowercase hex digits")
    return f"task-pair-{pair.position:02d}-{pair.task.value}-r{pair.repeat}-{token}"


def cue_problems(data: bytes, task_id: str, file: str) -> list[Problem]:
    """Every problem of a cue's bytes (``file`` names its command): it must
    be UTF-8 JSON, an object with ``schema`` :data:`CUE_SCHEMA` and
    ``task`` equal to ``task_id``. (Its size is checked against the common
    budget by :func:`~eceb_worker.families.paired.preflight.budget_problems`.)"""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [Problem(file=file, message=f"the cue is not UTF-8 (byte {exc.start})")]
    value, error = decode_lenient(data)  # any nesting depth, without recursion
    if error:
        return [Problem(file=file, message=f"the cue is not a JSON document: {error}")]
    defects, _cut = value_defects(value)
    if defects:
        return [Problem(file=file, message=f"the cue is not a JSON document eceb accepts: {defects[0][1]}")]
    if not isinstance(value, dict):
        return [Problem(file=file, message="the cue is not a JSON object")]
    problems = []
    if value.get("schema") != CUE_SCHEMA:
        message = f"the cue's schema is {value.get('schema')!r}, not {CUE_SCHEMA!r}"
        problems.append(Problem(file=file, field="schema", message=message))
    if value.get("task") != task_id:
        message = f"the cue is for the task {value.get('task')!r}, not {task_id!r}"
        problems.append(Problem(file=file, field="task", message=message))
    return problems


def option_value(argv: tuple[str, ...], flag: str) -> str | None:
    """The value after the first ``flag`` in ``argv``, or ``None``."""
    for index, value in enumerate(argv[:-1]):
        if value == flag:
            return argv[index + 1]
    return None


def arm_problems(manifest: Manifest, file: str) -> list[Problem]:  # noqa: C901 - one check per way the arms may differ but for their context
    """Every way ``manifest``'s two arms are not the same but for their
    context (``file``: the manifest's name): their order must be the
    schedule's, their :class:`~eceb_worker.families.paired.records.ArmInputs`
    equal and bound to the manifest's task and answer schema, each command
    line exactly :func:`~eceb_worker.families.paired.prompts.codex_argv` of
    those inputs with ``--output-schema`` the arm's own attempt-local
    ``answer.schema.json``, and the two command lines equal but for that
    path. Arm A's context is the overview (no cue command), arm B's a cue
    (its command recorded). ``[]`` when the pair is sound."""
    first, second = manifest.arms
    problems: list[Problem] = []

    def problem(record: str, field: str, message: str) -> None:
        problems.append(Problem(file=file, record=record, field=field, message=message))

    if (first.arm, second.arm) != manifest.pair.order:
        order = "/".join(arm.value for arm in manifest.pair.order)
        problem("arms", "", f"the arms are not in the schedule's order {order}")
    if first.inputs != second.inputs:
        differing = [
            name
            for name in first.inputs.__struct_fields__
            if getattr(first.inputs, name) != getattr(second.inputs, name)
        ]
        problem("arms[1]", "inputs", f"differs from arm {first.arm.value} in {', '.join(differing)}")
    stripped: list[tuple[str, ...]] = []
    for index, arm in enumerate(manifest.arms):
        record = f"arms[{index}]"
        if arm.inputs.task_id != manifest.task_id:
            problem(record, "inputs.task_id", f"{arm.inputs.task_id!r} is not the pair's task {manifest.task_id!r}")
        if arm.inputs.output_schema_digest != manifest.output_schema_digest:
            problem(record, "inputs.output_schema_digest", "is not the pair's output_schema_digest")
        if arm.inputs.sandbox != "read-only":
            problem(record, "inputs.sandbox", f"{arm.inputs.sandbox!r} is not read-only")
        if arm.attempt != f"attempts/{arm.arm.value}":
            problem(record, "attempt", f"{arm.attempt!r} is not attempts/{arm.arm.value}")
        if (arm.cue_command is None) != (arm.arm is Arm.A):
            expected = "the overview: no cue command" if arm.arm is Arm.A else "a cue: its command recorded"
            problem(record, "cue_command", f"arm {arm.arm.value}'s context is {expected}")
        schema = option_value(arm.argv, "--output-schema")
        repository = option_value(arm.argv, "-C")
        if schema is None or repository is None or not arm.argv:
            problem(record, "argv", "lacks --output-schema or -C")
            continue
        if not schema.endswith(f"/{arm.attempt}/{ANSWER_SCHEMA_NAME}"):
            problem(record, "argv", f"--output-schema {schema!r} is not the arm's {arm.attempt}/{ANSWER_SCHEMA_NAME}")
        expected_argv = codex_argv(
            executable=arm.argv[0],
            output_schema=schema,
            repository=repository,
            model=arm.inputs.model,
            reasoning_effort=arm.inputs.reasoning_effort,
            speed_tier=arm.inputs.speed_tier,
            sandbox=arm.inputs.sandbox,
        )
        if arm.argv != expected_argv:
            problem(record, "argv", "is not the adapter's command line for the arm's inputs")
        pair_directory = schema[: -len(f"/{arm.attempt}/{ANSWER_SCHEMA_NAME}")]
        stripped.append(tuple(pair_directory if value == schema else value for value in arm.argv))
    if len(stripped) == 2 and stripped[0] != stripped[1]:
        problem("arms[1]", "argv", f"differs from arm {first.arm.value}'s command line beyond its attempt directory")
    return problems


def pilot_evidence_digest(manifest: str, first: str, second: str) -> str:
    """BLAKE3 (64 hex) of the canonical JSON list ``[manifest, first,
    second]``: the pilot pair's manifest digest and the digests of the
    ``attempt.json`` of the arm that ran first and of the one that ran
    second. What a continuation approval binds (the seed: "Continuation
    requires explicit approval"); read from disk by
    :func:`eceb_worker.pipeline.paired.approvals.pilot_evidence`."""
    return digest_bytes(canonical_json([manifest, first, second]))
