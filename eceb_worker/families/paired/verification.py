"""The success evidence of a verification task: the frozen command, its
complete actual output and the matching exit code
(task-context-benchmark-reference.md, "Original task specifications").

The frozen command's text is its argument vector joined by single spaces,
as the prompt shows it (:func:`frozen_command`). :func:`executions_of`
finds the provider's recorded command executions of it: the command
itself, or a shell running exactly it (``bash -lc '<command>'``, as Codex
CLI records what it runs; ``sh -c``, ``zsh -lc`` and the like).
:func:`verification_problems` compares an answer (``{"command", "output",
"exit_code"}``) with the last such execution: the command byte for byte,
the output complete and exact, the exit code equal. Pure.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any, Final

from eceb_worker.families.paired.transport import Command

__all__ = ["executions_of", "frozen_command", "verification_problems"]

_SHELLS: Final = frozenset({"bash", "sh", "zsh", "dash"})
_RUN_FLAGS: Final = frozenset({"-c", "-lc", "-ic", "-cl"})


def frozen_command(argv: Sequence[str]) -> str:
    """The frozen command's text: ``argv`` joined by single spaces."""
    return " ".join(argv)


def _runs(recorded: str, command: str) -> bool:
    """True when the recorded command line is ``command``, or a shell running exactly it."""
    if recorded == command:
        return True
    try:
        words = shlex.split(recorded)
    except ValueError:
        return False
    return len(words) == 3 and words[0].rsplit("/", 1)[-1] in _SHELLS and words[1] in _RUN_FLAGS and words[2] == command


def executions_of(argv: Sequence[str], commands: Sequence[Command]) -> list[Command]:
    """The recorded executions of the frozen command that completed with an
    exit code, in the order they ran."""
    command = frozen_command(argv)
    return [c for c in commands if c.exit_code is not None and _runs(c.command, command)]


def verification_problems(answer: Any, argv: Sequence[str], commands: Sequence[Command]) -> tuple[str, ...]:
    """Why ``answer`` (decoded) does not state the frozen command ``argv``
    byte for byte with the complete output and the exit code of its last
    recorded execution; empty when it does. Without a recorded execution of
    the frozen command (the agent ran another command, or none) the answer
    cannot pass, whatever it says."""
    if not isinstance(answer, dict):
        return ("the answer is not an object with command, output and exit_code",)
    command, output, exit_code = answer.get("command"), answer.get("output"), answer.get("exit_code")
    problems = []
    frozen = frozen_command(argv)
    if command != frozen:
        problems.append(f"the answer's command {command!r} is not the frozen command {frozen!r}")
    ran = executions_of(argv, commands)
    if not ran:
        others = sorted({c.command for c in commands})
        shown = f" (it ran: {', '.join(repr(c) for c in others)})" if others else " (it ran no command)"
        return (*problems, f"the provider recorded no execution of the frozen command{shown}")
    last = ran[-1]
    if output != last.aggregated_output:
        problems.append("the answer's output is not the complete output the provider recorded")
    if type(exit_code) is not int or exit_code != last.exit_code:
        problems.append(f"the answer's exit code {exit_code!r} is not the recorded {last.exit_code}")
    return tuple(problems)
