"""A frozen check command re-executed at the frozen revision
(task-context-benchmark-reference.md, "Original task specifications":
required verification is the frozen command, its complete actual output
and its matching exit; "Local verification boundary": verification
fixtures execute the declared check).

:func:`reexecute` exports the commit into a fresh temporary directory
(:func:`~eceb_worker.io.paired.git.export_revision`: the repository is not
touched), runs the check's argument vector there without a shell, in the
check's ``cwd``, with standard input closed and standard error merged
into standard output (as a coding agent's recorded command output is),
and removes the directory. A check that cannot start or outlives its
timeout is a :class:`CheckRun` with a ``problem``, never an exception.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from pathlib import Path

import msgspec

from eceb_worker.errors import InputError
from eceb_worker.families.paired.specs import Check
from eceb_worker.io.paired.git import export_revision

__all__ = ["CheckRun", "reexecute"]


class CheckRun(msgspec.Struct, frozen=True, kw_only=True):
    """One re-execution: ``output`` (standard output and error together,
    UTF-8 with invalid bytes replaced) and ``exit_code``, or ``problem``
    when it did not run to an exit (``exit_code`` then ``None``)."""

    output: str
    exit_code: int | None
    problem: str | None


def reexecute(repository: Path, revision: str, check: Check, timeout_s: int) -> CheckRun:
    """Run ``check`` on the files of commit ``revision`` of ``repository``
    (module). ``timeout_s``: seconds before the check's process group is killed."""
    with tempfile.TemporaryDirectory(prefix="eceb-check-") as scratch:
        root = Path(scratch) / "tree"
        root.mkdir()
        try:
            export_revision(repository, revision, root)
        except InputError as exc:
            return CheckRun(output="", exit_code=None, problem=f"the frozen revision cannot be exported: {exc}")
        cwd = root / check.cwd
        try:
            process = subprocess.Popen(
                list(check.argv),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            return CheckRun(output="", exit_code=None, problem=f"{check.argv[0]} cannot be run: {exc.strerror or exc}")
        try:
            out, _ = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            return CheckRun(output="", exit_code=None, problem=f"the check ran past {timeout_s} s and was stopped")
        finally:
            if process.poll() is None:  # interrupted while waiting: leave nothing running
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    if process.returncode < 0:
        problem = f"the check was ended by signal {-process.returncode}"
        return CheckRun(output=out.decode("utf-8", "replace"), exit_code=None, problem=problem)
    return CheckRun(output=out.decode("utf-8", "replace"), exit_code=process.returncode, problem=None)
