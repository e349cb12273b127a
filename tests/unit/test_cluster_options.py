"""The cluster options of ``eceb-dist`` (``--broker-url``,
``--result-backend``, ``--endpoint-url``) are kept on the command line's
click context (:class:`eceb_cli.cluster_commands.ClusterOptions`), not
passed to the commands."""

from __future__ import annotations

import inspect

import click
import pytest
from click.testing import CliRunner, Result

from eceb_cli.cluster_commands import ClusterOptions, cluster_options, current_cluster_options
from eceb_cli.dist import main as dist_main

CLUSTER_PARAMETERS = ("broker_url", "result_backend", "endpoint_url")


def _cluster_commands() -> list[tuple[str, click.Command]]:
    ctx = click.Context(dist_main, info_name="eceb-dist", **dist_main.context_settings)
    found = []
    for name in dist_main.list_commands(ctx):
        command = dist_main.get_command(ctx, name)
        assert command is not None
        if any(param.name == "broker_url" for param in command.params):
            found.append((name, command))
    return found


COMMANDS = _cluster_commands()


def test_every_command_reaching_the_cluster_has_the_options() -> None:
    assert {name for name, _ in COMMANDS} == {
        "cancel",
        "jobs",
        "nightly",
        "probe",
        "register",
        "result",
        "run",
        "status",
        "submit",
        "verify",
        "wait",
        "worker",
    }


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[name for name, _ in COMMANDS])
def test_the_options_are_kept_not_passed(name: str, command: click.Command) -> None:
    kept = {param.name: param for param in command.params if param.name in CLUSTER_PARAMETERS}
    assert set(kept) == set(CLUSTER_PARAMETERS), name
    assert not any(param.expose_value for param in kept.values()), name
    assert command.callback is not None
    signature = inspect.signature(inspect.unwrap(command.callback))
    assert not set(CLUSTER_PARAMETERS) & set(signature.parameters), name


def _seen(*arguments: str) -> tuple[Result, list[ClusterOptions]]:
    seen: list[ClusterOptions] = []

    @click.command()
    @cluster_options
    def command() -> None:
        seen.append(current_cluster_options())

    return CliRunner().invoke(command, list(arguments)), seen


def test_the_given_options_are_the_command_lines() -> None:
    result, seen = _seen(
        "--endpoint-url", "http://127.0.0.1:9000", "--broker-url", "redis://127.0.0.1:6379/1", "--result-backend",
        "redis://127.0.0.1:6379/2",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert seen == [ClusterOptions("redis://127.0.0.1:6379/1", "redis://127.0.0.1:6379/2", "http://127.0.0.1:9000")]


def test_options_not_given_are_none() -> None:
    result, seen = _seen()
    assert result.exit_code == 0, result.output
    assert seen == [ClusterOptions()]


def test_a_password_is_still_refused_without_running_the_command() -> None:
    result, seen = _seen("--result-backend", "redis://:s3cret@127.0.0.1:6379/0")
    assert result.exit_code == 2
    assert "ECEB_RESULT_BACKEND" in result.output and "s3cret" not in result.output
    assert seen == []


def test_outside_a_command_line_none_is_given() -> None:
    assert current_cluster_options() == ClusterOptions()
