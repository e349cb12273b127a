"""Every command of ``eceb`` and ``eceb-dist`` keeps the conventions of
eceb_cli/conventions.py: ``-q``/``-v``, its exit codes in ``--help``, and
exit codes declared beside every command (``conventions.exits``)."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from eceb_cli import conventions, exit_codes
from eceb_cli.dist import main as dist_main
from eceb_cli.main import main as eceb_main


def leaves(group: click.Group, path: str, parent: click.Context | None = None) -> Iterator[tuple[str, click.Command]]:
    # The group's own context settings, as click's make_context gives them: a
    # context without them would cache a help option lacking ``-h`` on the group.
    ctx = click.Context(group, info_name=path.rsplit(" ", 1)[-1], parent=parent, **group.context_settings)
    assert ctx.command_path == path
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, f"{path} {name}"
        if isinstance(command, click.Group):
            yield from leaves(command, f"{path} {name}", ctx)
        else:
            yield f"{path} {name}", command


def every_command() -> list[tuple[str, click.Command]]:
    return [*leaves(eceb_main, "eceb"), *leaves(dist_main, "eceb-dist")]


COMMANDS = every_command()
DECLARED = {
    path: declared.codes for root in (eceb_main, dist_main) for path, declared in conventions.gather_exits(root).items()
}


def test_every_command_declares_its_exit_codes() -> None:
    assert {path for path, _ in COMMANDS} == set(DECLARED)


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=[path for path, _ in COMMANDS])
def test_every_command_has_quiet_verbose_and_lists_its_exit_codes(path: str, command: click.Command) -> None:
    options = {opt for param in command.params for opt in param.opts}
    assert {"-q", "--quiet", "-v", "--verbose"} <= options, path
    root = eceb_main if path.startswith("eceb ") else dist_main
    result = CliRunner().invoke(root, [*path.split(" ")[1:], "--help"])
    assert result.exit_code == 0, result.output
    listed = " ".join(result.output.split()).split("Exit codes: ", 1)[1]
    for code in DECLARED[path]:
        assert f"{code} " in listed, (path, code)
    for code in set(exit_codes.SHORT) - set(DECLARED[path]):
        assert f" {code} " not in f" {listed}", (path, code)


def test_every_listed_code_is_a_documented_one() -> None:
    documented = {value for name, value in vars(exit_codes).items() if name.isupper() and isinstance(value, int)}
    assert set(exit_codes.SHORT) == documented
    for path, codes in DECLARED.items():
        assert set(codes) <= documented, path
        assert exit_codes.OK in codes and exit_codes.USAGE in codes and exit_codes.INTERNAL in codes, path


def test_a_stop_is_worded_alike_whatever_the_signal() -> None:
    import signal

    lines = {signal.SIGINT: conventions.stopped_line(signal.SIGINT)}
    lines[signal.SIGTERM] = conventions.stopped_line(signal.SIGTERM)
    lines[signal.SIGHUP] = conventions.stopped_line(signal.SIGHUP)
    assert lines[signal.SIGINT] == "interrupted (Ctrl-C): stopped; no partial output was left"
    tails = {line.split(":", 1)[1] for line in lines.values()}
    assert tails == {" stopped; no partial output was left"}


def test_quiet_and_verbose_set_the_level_for_one_command_line_only() -> None:
    runner = CliRunner()
    quiet = runner.invoke(eceb_main, ["pair", "plan", "-q"])
    assert quiet.exit_code == 0
    normal = runner.invoke(eceb_main, ["pair", "plan"])
    assert normal.exit_code == 0
    assert len(quiet.output.splitlines()) < len(normal.output.splitlines())
    assert not conventions.is_quiet()


def test_the_verbosity_is_kept_on_the_click_context() -> None:
    assert not conventions.is_quiet() and not conventions.is_verbose()  # outside a command line: normal
    with (
        click.Context(eceb_main, **eceb_main.context_settings) as root,
        click.Context(click.Command("leaf"), parent=root) as leaf,
    ):
        conventions.verbosity_of(leaf).level = 1
        assert conventions.verbosity_of(root).level == 1  # a command and its groups share it
        assert conventions.is_verbose() and not conventions.is_quiet()
    assert not conventions.is_verbose()


def test_eceb_errors_are_reported_once_by_the_root_group(capsys: pytest.CaptureFixture[str]) -> None:
    from eceb_cli import console
    from eceb_worker.errors import OutputError, StorageError

    def fails(error: Exception) -> None:
        raise error

    for error, line, code in (
        (StorageError("no bucket"), "error: storage: no bucket\n", exit_codes.STORAGE),
        (OutputError("out: read-only"), "error: output: out: read-only\n", exit_codes.OUTPUT),
        (ValueError("oops"), "internal error: ValueError: oops (please report this)\n", exit_codes.INTERNAL),
    ):
        with pytest.raises(SystemExit) as exited:
            console.run_reported(lambda error=error: fails(error))  # type: ignore[misc]
        assert exited.value.code == code
        assert capsys.readouterr().err == line
    with pytest.raises(click.UsageError):  # click's own pass through
        console.run_reported(lambda: fails(click.UsageError("bad")))


def test_a_group_gives_its_commands_a_meaning_of_a_code_and_gathers_their_codes() -> None:
    @conventions.exit_meanings({exit_codes.STORAGE: "storage or cluster unavailable"})
    @click.group("root", cls=conventions.ConventionalGroup)
    def root() -> None:
        """A root."""

    @conventions.exits(exit_codes.STORAGE, exit_codes.TASKS_FAILED, meanings={exit_codes.TASKS_FAILED: "not ready"})
    @root.command()
    def one() -> None:
        """One."""

    @conventions.exits(exit_codes.REGRESSION, stops=False)
    @root.command()
    def two() -> None:
        """Two."""

    runner = CliRunner()
    one_help = " ".join(runner.invoke(root, ["one", "--help"]).output.split())
    assert "1 not ready" in one_help and "5 storage or cluster unavailable" in one_help
    assert "130 interrupted" in one_help
    two_help = " ".join(runner.invoke(root, ["two", "--help"]).output.split())
    assert two_help.endswith("Exit codes: 0 success, 2 usage error, 10 regression, 70 internal error.")
    group_help = " ".join(runner.invoke(root, ["--help"]).output.split())
    assert "5 storage unavailable, 10 regression" in group_help and "1 failing tasks or no verdict" in group_help
    assert {path: declared.codes for path, declared in conventions.gather_exits(root).items()} == {
        "root one": (0, 1, 2, 5, 70, 129, 130, 143),
        "root two": (0, 2, 10, 70),
    }


def test_eceb_dist_meaning_of_5_is_its_root_groups() -> None:
    dist = " ".join(CliRunner().invoke(dist_main, ["jobs", "--help"]).output.split())
    eceb = " ".join(CliRunner().invoke(eceb_main, ["render", "--help"]).output.split())
    assert "5 storage or cluster unavailable" in dist
    assert "5 storage unavailable" in eceb


def test_exits_is_declared_on_commands_with_known_codes_only() -> None:
    with pytest.raises(TypeError):
        conventions.exits(exit_codes.OK)(click.Group("group"))
    with pytest.raises(TypeError):
        conventions.exits(13)
    with pytest.raises(TypeError):
        conventions.exit_meanings({exit_codes.STORAGE: "x"})(click.Command("command"))
