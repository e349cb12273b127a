"""The README's walkthrough of the paired benchmark, run as written (its
paths moved under a temporary directory): every command exits as its
comment says, and the journals it points at are there."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

pytestmark = pytest.mark.integration


def walkthrough() -> list[str]:
    """The command lines of the README's walkthrough block, the install line left out."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("### Walkthrough: the pilot pair") :]
    start = section.index("```sh\n") + len("```sh\n")
    block = section[start : section.index("\n```", start)]
    return [line for line in block.splitlines() if line.strip() and not line.startswith("python3 -m venv")]


def test_the_readme_walkthrough_runs_the_pilot_is_refused_the_second_pair_then_approves_it(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ECEB_", "FAKE_CODEX"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    lines = walkthrough()
    assert any(line.startswith("eceb pair run") for line in lines)
    for line in lines:
        command = line.replace("/tmp/", f"{tmp_path}/")
        wanted = re.search(r"exit (\d+)", command.partition("#")[2])
        done = subprocess.run(
            ["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=300
        )
        assert done.returncode == (int(wanted.group(1)) if wanted else 0), (line, done.stdout, done.stderr)
        if line.startswith("export "):
            name, _, value = command.removeprefix("export ").partition("=")
            value = value.split("#")[0].strip().strip('"').replace("$PWD", str(REPO)).replace("$PATH", env["PATH"])
            env[name] = value
    pilot = next((tmp_path / "exp").glob("task-pair-01-*"))
    for arm in ("A", "B"):
        assert (pilot / "attempts" / arm / "attempt.json").is_file()
    status = subprocess.run(
        ["eceb", "pair", "status", str(tmp_path / "exp")], env=env, capture_output=True, text=True, check=True
    )
    assert "executions: 4 started of 18 authorized, 14 remaining" in status.stdout
    assert "continuation after the pilot: approved" in status.stdout
