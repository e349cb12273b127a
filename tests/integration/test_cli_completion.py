"""Shell completion as the README documents it: click's completion
scripts for bash, zsh and fish, and completions of subcommands and options
(the lazily imported subcommands included)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _installed(program: str) -> str:
    """The console script installed beside this interpreter (pip install -e .)."""
    executable = Path(sys.executable).with_name(program)
    assert executable.exists(), f"{program} is not installed beside {sys.executable}: pip install -e ."
    return str(executable)


def _complete(program: str, words: str, cword: int, shell: str = "bash") -> str:
    variable = f"_{program.upper().replace('-', '_')}_COMPLETE"
    executable = _installed(program)
    env = {**os.environ, variable: f"{shell}_complete", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    return subprocess.run([executable], env=env, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
@pytest.mark.parametrize("program", ["eceb", "eceb-dist"])
def test_each_shell_gets_a_completion_script(program: str, shell: str) -> None:
    variable = f"_{program.upper().replace('-', '_')}_COMPLETE"
    executable = _installed(program)
    script = subprocess.run(
        [executable], env={**os.environ, variable: f"{shell}_source"}, capture_output=True, text=True, check=True
    ).stdout
    assert variable in script and "complete" in script


def test_subcommands_and_options_complete() -> None:
    assert "plain,evaluate" in _complete("eceb", "eceb ev", 1).splitlines()
    assert "plain,--json" in _complete("eceb", "eceb corpus verify --j", 3).splitlines()
    assert "plain,status" in _complete("eceb-dist", "eceb-dist st", 1).splitlines()
    assert "plain,--quiet" in _complete("eceb", "eceb evaluate --qu", 2).splitlines()
