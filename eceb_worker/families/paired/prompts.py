"""What each arm is given: the prompt, and the Codex CLI command line
(task-context-benchmark-reference.md, "Paired inputs and retained
outputs": both arms receive the same task, declaration path, targets,
checks, model, reasoning, speed, read-only setting and answer schema; only
the context differs).

:func:`render_prompt` builds the prompt from the task and the arm's
context; nothing but the ``Context`` section depends on the arm.
:func:`codex_argv` builds the ``codex exec`` command line; the prompt goes
on standard input (``-``). The command line never resumes a conversation
(no ``resume``/``fork``), never lets the CLI choose the model, loads no
user configuration or rules (``--ignore-user-config``, ``--ignore-rules``:
no global skills) and persists no session (``--ephemeral``). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from eceb_worker.families.paired.schedule import Arm, TaskKind
from eceb_worker.families.paired.specs import Check

__all__ = ["codex_argv", "render_prompt"]

CONTEXT_NAMES: Final = {Arm.A: "frozen overview", Arm.B: "task cue (repocue/task-cue-1)"}


def render_prompt(
    *,
    kind: TaskKind,
    task_id: str,
    prompt: str,
    declaration: str,
    targets: Sequence[str],
    checks: Sequence[Check],
    arm: Arm,
    context: bytes,
) -> bytes:
    """The prompt of one arm, UTF-8 bytes.

    Sections, in order: the task's own ``prompt``; ``Task kind:``, ``Task
    id:``, ``Declaration:``; ``Targets:`` (one ``- path`` a line);
    ``Checks:`` (one ``- id: argv joined by spaces (cwd)`` a line; the argv
    itself is exact in the declaration); ``Context (<name>):`` followed by
    the context bytes between ``<<<CONTEXT`` and ``CONTEXT>>>`` lines; the
    closing instruction to answer with one JSON value matching the output
    schema. ``context`` must be UTF-8 (checked when prepared).
    """
    lines = [
        prompt.rstrip("\n"),
        "",
        f"Task kind: {kind.value}",
        f"Task id: {task_id}",
        f"Declaration: {declaration}",
        "Targets:",
        *(f"- {target}" for target in targets),
        "Checks:",
        *(f"- {check.id}: {' '.join(check.argv)} (in {check.cwd})" for check in checks),
        "",
        f"Context ({CONTEXT_NAMES[arm]}):",
        "<<<CONTEXT",
    ]
    head = "\n".join(lines).encode() + b"\n"
    body = context if context.endswith(b"\n") or not context else context + b"\n"
    tail = b"CONTEXT>>>\n\nAnswer with exactly one JSON value that matches the provided output schema.\n"
    return head + body + tail


def codex_argv(
    *,
    executable: str,
    output_schema: str,
    repository: str,
    model: str,
    reasoning_effort: str,
    speed_tier: str,
    sandbox: str,
) -> tuple[str, ...]:
    """The ``codex exec`` command line of one attempt.

    ``executable``: the provider's real path; ``output_schema``: the
    attempt-local captured ``answer.schema.json`` (absolute); ``repository``:
    the repository's absolute path (``-C``). ``speed_tier`` ``"standard"``
    adds nothing, any other value ``-c service_tier="..."``.
    """
    argv = [
        executable,
        "exec",
        "--json",
        "--color",
        "never",
        "--ephemeral",
        "--ignore-user-config",
        "--ignore-rules",
        "--output-schema",
        output_schema,
        "-m",
        model,
        "-c",
        f'model_reasoning_effort="{reasoning_effort}"',
    ]
    if speed_tier != "standard":
        argv += ["-c", f'service_tier="{speed_tier}"']
    argv += ["-s", sandbox, "-C", repository, "-"]
    return tuple(argv)
