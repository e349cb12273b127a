"""Putting the fake ``codex`` (tests/support/fake_codex.py) on PATH.

:func:`install_fake_codex` writes an executable ``codex`` into a bin
directory: a ``#!/bin/sh`` script that execs this interpreter with
fake_codex.py. Its bytes depend only on the interpreter's and the script's
paths, so they are the same on every call in one checkout (its BLAKE3
identifies the provider in a freeze). :func:`provider_env` is the
environment to run eceb with: PATH with that directory first.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import msgspec
import pytest

from eceb_worker.families.paired.prompts import render_prompt
from eceb_worker.families.paired.schedule import Arm, TaskKind
from eceb_worker.families.paired.specs import Declaration, DiscoveryTask, ExplanationTask, VerificationTask
from tests.support.paths import EXAMPLES

__all__ = [
    "FAKE_CODEX",
    "PAIRED",
    "example_prompt",
    "example_repository",
    "fake_codex_wrapper",
    "install_fake_codex",
    "provider_env",
]

PAIRED = EXAMPLES / "paired"

FAKE_CODEX = Path(__file__).resolve().parent / "fake_codex.py"


def fake_codex_wrapper() -> bytes:
    """The wrapper script's bytes."""
    return (
        "#!/bin/sh\n"
        "# The fake codex of eceb's tests: synthetic usage, not a provider.\n"
        'FAKE_CODEX_ARGV0="$0"\n'
        "export FAKE_CODEX_ARGV0\n"
        f'exec {shlex.quote(sys.executable)} {shlex.quote(str(FAKE_CODEX))} "$@"\n'
    ).encode()


def install_fake_codex(bin_dir: Path) -> Path:
    """Write ``bin_dir/codex`` (mode 0755; ``bin_dir`` is created) and return its path."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / "codex"
    path.write_bytes(fake_codex_wrapper())
    path.chmod(0o755)
    return path


def provider_env(
    bin_dir: Path,
    *,
    scenario: str | None = None,
    log: Path | None = None,
    sleep: float | None = None,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment to run eceb (or the fake directly) with: ``base``
    (default: this process's environment) with the fake codex installed in
    ``bin_dir`` first on PATH, and ``FAKE_CODEX_SCENARIO``,
    ``FAKE_CODEX_LOG``, ``FAKE_CODEX_SLEEP`` set when given (removed when not)."""
    install_fake_codex(bin_dir)
    env = dict(os.environ if base is None else base)
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    for name, value in (("FAKE_CODEX_SCENARIO", scenario), ("FAKE_CODEX_LOG", log), ("FAKE_CODEX_SLEEP", sleep)):
        env.pop(name, None)
        if value is not None:
            env[name] = str(value)
    return env


def example_repository(dest: Path) -> Path:
    """The example's fixture repository made a git repository at ``dest``
    (examples/paired/make-repo.sh); ``dest``. Fails the test, saying what
    to install, when git is missing."""
    if shutil.which("git") is None:
        pytest.fail("the paired example's repository needs git: apt-get install git")
    subprocess.run(["sh", str(PAIRED / "make-repo.sh"), str(dest)], check=True, capture_output=True)
    return dest


def example_prompt(kind: str, arm: Arm, context: bytes | None = None) -> bytes:
    """The prompt eceb renders for the example's ``kind`` task and ``arm``;
    ``context`` defaults to the frozen overview (A) or a small cue (B)."""
    types = {"explanation": ExplanationTask, "discovery": DiscoveryTask, "verification": VerificationTask}
    task = msgspec.json.decode((PAIRED / "tasks" / f"{kind}.json").read_bytes(), type=types[kind])
    declaration = msgspec.json.decode((PAIRED / "repo" / task.declaration).read_bytes(), type=Declaration)
    if context is None:
        context = (PAIRED / "overview.md").read_bytes() if arm is Arm.A else b'{"schema": "repocue/task-cue-1"}\n'
    return render_prompt(
        kind=TaskKind(kind),
        task_id=task.id,
        prompt=task.prompt,
        declaration=task.declaration,
        targets=task.targets,
        checks=[check for check in declaration.checks if check.id in task.checks],
        arm=arm,
        context=context,
    )
