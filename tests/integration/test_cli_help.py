"""``--help`` lists a command's exit codes however the program is started:
the installed script or ``python -m``, again and again in one process."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from eceb_cli.dist import main as dist_main
from eceb_cli.main import main as eceb_main


@pytest.mark.parametrize(
    "command",
    [["eceb_cli", "evaluate"], ["eceb_cli", "corpus", "verify"], ["eceb_cli.dist", "status"], ["eceb_cli", "compare"]],
)
def test_python_dash_m_help_lists_the_exit_codes(command: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", *command, "--help"], capture_output=True, text=True, check=True)
    assert "Exit codes: 0 success" in " ".join(done.stdout.split())


def test_help_lists_the_exit_codes_every_time_in_one_process() -> None:
    runner = CliRunner()
    for _ in range(2):
        for root, args in ((eceb_main, ["evaluate", "--help"]), (dist_main, ["wait", "--help"])):
            result = runner.invoke(root, args, prog_name="anything")
            assert "Exit codes: 0 success" in " ".join(result.output.split()), result.output
