"""A verification answer passes only with the frozen command byte for byte,
its complete actual output and the matching exit code
(task-context-benchmark-reference.md, "Original task specifications")."""

from __future__ import annotations

import pytest

from eceb_worker.families.paired.transport import Command
from eceb_worker.families.paired.verification import executions_of, frozen_command, verification_problems

pytestmark = pytest.mark.unit

ARGV = ("go", "test", "-count=1", "./...")
OUTPUT = "ok  \texample.com/greet/greet\t0.002s\n"


def ran(command: str, output: str = OUTPUT, exit_code: int | None = 0) -> Command:
    return Command(command=command, aggregated_output=output, exit_code=exit_code, status="completed")


def answer(**changes: object) -> dict[str, object]:
    return {"command": "go test -count=1 ./...", "output": OUTPUT, "exit_code": 0, **changes}


def test_the_frozen_command_is_its_argv_joined_by_spaces() -> None:
    assert frozen_command(ARGV) == "go test -count=1 ./..."


@pytest.mark.parametrize(
    "recorded",
    [
        "go test -count=1 ./...",
        "bash -lc 'go test -count=1 ./...'",
        "/bin/bash -lc 'go test -count=1 ./...'",
        "sh -c 'go test -count=1 ./...'",
    ],
)
def test_the_command_itself_or_a_shell_running_exactly_it_is_an_execution_of_it(recorded: str) -> None:
    assert verification_problems(answer(), ARGV, [ran(recorded)]) == ()


def test_another_command_is_no_execution_of_it() -> None:
    others = [ran("go test ./..."), ran("bash -lc 'go test -count=1 ./... && true'"), ran("bash -lc 'unbalanced")]
    assert executions_of(ARGV, others) == []
    problems = verification_problems(answer(), ARGV, others)
    assert problems[-1].startswith("the provider recorded no execution of the frozen command (it ran: ")
    assert verification_problems(answer(), ARGV, []) == (
        "the provider recorded no execution of the frozen command (it ran no command)",
    )


def test_the_command_output_and_exit_code_must_each_match() -> None:
    recorded = [ran("bash -lc 'go test -count=1 ./...'")]
    assert verification_problems(answer(command="go test ./..."), ARGV, recorded) == (
        "the answer's command 'go test ./...' is not the frozen command 'go test -count=1 ./...'",
    )
    assert verification_problems(answer(output=OUTPUT.strip()), ARGV, recorded) == (
        "the answer's output is not the complete output the provider recorded",
    )
    assert verification_problems(answer(exit_code=1), ARGV, recorded) == (
        "the answer's exit code 1 is not the recorded 0",
    )
    assert verification_problems(answer(exit_code=True), ARGV, recorded) != ()
    assert verification_problems([], ARGV, recorded) != ()


def test_the_last_execution_is_the_one_the_answer_must_state() -> None:
    recorded = [ran("go test -count=1 ./...", "FAIL\n", 1), ran("go test -count=1 ./...")]
    assert verification_problems(answer(), ARGV, recorded) == ()
    assert verification_problems(answer(output="FAIL\n", exit_code=1), ARGV, recorded) != ()
    unfinished = [ran("go test -count=1 ./...", exit_code=None)]
    assert executions_of(ARGV, unfinished) == []
