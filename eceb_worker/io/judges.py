"""The command judge of ``eceb run``: a program that scores one answer
deterministically (ECEB-0.1 §9; the profile's ``judge`` of kind ``command``).

It is started once per answer in the profile's directory, reads one JSON
object on standard input (:func:`~eceb_worker.families.eceb.making.judging.command_judge_input`)
and prints a score 0..1000 on its first line. Its standard error is
discarded (it may quote the answer). A program that cannot be started
fails the run (fatal); one that exits non-zero, prints no score or outlasts
its timeout fails that judgment (final; a timeout is transient).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Final

from eceb_worker.errors import ProviderError
from eceb_worker.families.eceb.benchmark import Task
from eceb_worker.families.eceb.making.judging import NotAJudgment, command_judge_input, parse_command_score
from eceb_worker.families.eceb.making.profile import CommandJudge

__all__ = ["MAX_OUTPUT_BYTES", "CommandJudgeRunner"]

_PARTY: Final = "command judge"
MAX_OUTPUT_BYTES: Final = 64 * 1024
"""The most a command judge may print: a score is one short line."""


class CommandJudgeRunner:
    """Runs the profile's command judge (see the module) from ``base_dir``."""

    def __init__(self, spec: CommandJudge, *, base_dir: Path) -> None:
        self.spec = spec
        self._cwd = base_dir

    def score(self, task: Task, answer: str) -> tuple[int, bytes, bytes]:
        """``(quality_milli, input, output)``: the score, the bytes the
        program read and the bytes it printed (at most
        :data:`MAX_OUTPUT_BYTES`: a program printing more is stopped).
        Raises :class:`ProviderError`."""
        data = command_judge_input(task, answer)
        program = self.spec.command[0]
        try:
            process = subprocess.Popen(  # the profile's own program, no shell
                list(self.spec.command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=self._cwd,
                start_new_session=True,
            )
        except OSError as exc:
            message = f"{_PARTY} {program!r} cannot be started ({exc.strerror or type(exc).__name__})"
            raise ProviderError(message, party=_PARTY, transient=False, fatal=True) from None
        output, problem = _exchange(process, data, self.spec.timeout_s)
        if problem:
            raise ProviderError(
                f"{_PARTY} {program!r} {problem}", party=_PARTY, transient=problem.startswith("did not")
            )
        if process.returncode != 0:
            message = f"{_PARTY} {program!r} exited with status {process.returncode}"
            raise ProviderError(message, party=_PARTY, transient=False)
        try:
            return parse_command_score(output), data, output
        except NotAJudgment as exc:
            raise ProviderError(f"{_PARTY} {program!r}: {exc}", party=_PARTY, transient=False) from None


def _exchange(process: subprocess.Popen[bytes], data: bytes, timeout_s: float) -> tuple[bytes, str]:
    """Write ``data`` to the process, read what it prints (bounded) until it
    exits; ``(output, "")``, or ``(output, what went wrong)`` after killing
    its process group (it printed too much, or outlasted ``timeout_s``)."""
    assert process.stdin is not None and process.stdout is not None
    deadline = time.monotonic() + timeout_s
    writer = threading.Thread(target=_feed, args=(process.stdin, data), daemon=True)
    writer.start()
    output = bytearray()
    problem = ""
    fd = process.stdout.fileno()
    while True:
        left = deadline - time.monotonic()
        ready = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
        if not ready:
            problem = f"did not answer within {timeout_s} s"
            break
        chunk = os.read(fd, 64 * 1024)
        if not chunk:
            break
        output += chunk
        if len(output) > MAX_OUTPUT_BYTES:
            problem = f"printed more than {MAX_OUTPUT_BYTES} bytes"
            break
    if problem:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
    process.stdout.close()
    try:
        process.wait(timeout=max(deadline - time.monotonic(), 1.0))
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        problem = problem or f"did not answer within {timeout_s} s"
    writer.join(timeout=1.0)
    return bytes(output), problem


def _feed(stdin: IO[bytes], data: bytes) -> None:
    """Write the judge's input and close its standard input (it may not read it all)."""
    with contextlib.suppress(OSError, ValueError):
        stdin.write(data)
    with contextlib.suppress(OSError, ValueError):
        stdin.close()
