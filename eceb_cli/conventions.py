"""The conventions every ``eceb`` and ``eceb-dist`` command keeps, applied
in one place as a command is resolved (:class:`ConventionalGroup`):

- ``-q``/``--quiet`` prints only what the command exists to print (the
  verdict, the id, the document) and its errors: no progress bar, no
  informational line (:func:`info`);
- ``-v``/``--verbose`` adds detail lines (:func:`detail`) and the traceback
  of an internal error;
- ``--help`` ends with the command's exit codes, declared beside the
  command (:func:`exits`, their meanings in :mod:`eceb_cli.exit_codes`);
  a group's with every code its commands declare;
- a stop by signal is worded the same way whatever the signal
  (:func:`stopped_line`): Ctrl-C, SIGTERM and SIGHUP.
"""

from __future__ import annotations

import inspect
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import click

from eceb_cli import exit_codes

__all__ = [
    "ConventionalGroup",
    "Stopped",
    "adopt",
    "command_path",
    "detail",
    "exit_meanings",
    "exits",
    "gather_exits",
    "info",
    "is_quiet",
    "is_verbose",
    "say",
    "stopped_line",
    "verbosity_of",
]

_ALWAYS: Final = (exit_codes.OK, exit_codes.USAGE, exit_codes.INTERNAL)
"""What any command can end with: success, a usage error, a bug."""
_STOPS: Final = (exit_codes.HANGUP, exit_codes.INTERRUPTED, exit_codes.TERMINATED)
"""What a command stopped by a signal ends with (SIGHUP, Ctrl-C, SIGTERM)."""


@dataclass(frozen=True)
class Exits:
    """The exit codes one command declares (:func:`exits`): ``codes``, in
    ascending order, those every command ends with included; ``meanings``,
    the codes it gives a meaning of its own (``{1: "no verdict"}``)."""

    codes: tuple[int, ...]
    meanings: Mapping[int, str]


_DECLARED: Final[dict[click.Command, Exits]] = {}
"""Each command's declaration (:func:`exits`)."""
_GROUP_MEANINGS: Final[dict[click.Command, Mapping[int, str]]] = {}
"""The meanings a group gives codes for all its commands (:func:`exit_meanings`)."""

CommandT = TypeVar("CommandT", bound=click.Command)


def exits(*codes: int, meanings: Mapping[int, str] | None = None, stops: bool = True) -> Callable[[CommandT], CommandT]:
    """Declare, beside a command's definition (placed above its
    ``@click.command()``), the exit codes it can end with (README, "Exit
    codes"): ``codes``, plus 0, 2 and 70, which any command can end with,
    plus 129, 130 and 143 (a stop by signal) unless ``stops`` is false;
    ``meanings`` are the codes it gives a meaning of its own, over
    :data:`eceb_cli.exit_codes.SHORT`. Its ``--help`` ends with them
    (:func:`adopt`), and its groups' ``--help`` gathers them. Raises
    ``TypeError`` on a group (a group lists its commands' codes) or a code
    not in :mod:`eceb_cli.exit_codes`."""
    unknown = sorted({*codes, *(meanings or {})} - set(exit_codes.SHORT))
    if unknown:
        raise TypeError(f"not exit codes of eceb_cli.exit_codes: {unknown}")
    declared = Exits(tuple(sorted({*_ALWAYS, *(_STOPS if stops else ()), *codes})), dict(meanings or {}))

    def declare(command: CommandT) -> CommandT:
        if isinstance(command, click.Group) or not isinstance(command, click.Command):
            raise TypeError(f"exits() declares the codes of a command, not of {command!r}")
        _DECLARED[command] = declared
        return command

    return declare


def exit_meanings(meanings: Mapping[int, str]) -> Callable[[CommandT], CommandT]:
    """Give codes a meaning of their own in the ``--help`` of every command
    under a group (placed above its ``@click.group()``): ``eceb-dist``'s 5
    is "storage or cluster unavailable". A command's own meanings
    (:func:`exits`) come before its group's. Raises ``TypeError`` on a
    command that is not a group."""

    def declare(group: CommandT) -> CommandT:
        if not isinstance(group, click.Group):
            raise TypeError(f"exit_meanings() is for a group, not {group!r}")
        _GROUP_MEANINGS[group] = dict(meanings)
        return group

    return declare


def gather_exits(group: click.Group, ctx: click.Context | None = None) -> dict[str, Exits]:
    """Every command under ``group`` (its subgroups' included, loaded if
    need be) by its path (``"eceb corpus verify"``), with its declaration
    (:func:`exits`); a command without one is left out. ``ctx`` is
    ``group``'s context (a new one when ``None``)."""
    if ctx is None:
        ctx = click.Context(group, info_name=group.name, **group.context_settings)
    gathered: dict[str, Exits] = {}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            child = click.Context(command, info_name=name, parent=ctx, **command.context_settings)
            gathered.update(gather_exits(command, child))
        elif command is not None and command in _DECLARED:
            gathered[command_path(ctx, name)] = _DECLARED[command]
    return gathered


class Verbosity:
    """The verbosity of one command line, kept on its click context
    (``ctx.meta``, shared by a command and its groups; :func:`verbosity_of`)
    and set by ``-q``/``-v``: ``level`` -1 quiet, 0 normal, 1 verbose."""

    def __init__(self) -> None:
        self.level = 0


_META_KEY: Final = "eceb_cli.verbosity"
"""Where a command line's :class:`Verbosity` is kept in ``ctx.meta``."""


def verbosity_of(ctx: click.Context) -> Verbosity:
    """The :class:`Verbosity` of ``ctx``'s command line (made at the first
    ask: each command line starts at normal verbosity)."""
    held = ctx.meta.get(_META_KEY)
    if not isinstance(held, Verbosity):
        held = ctx.meta[_META_KEY] = Verbosity()
    return held


def _level() -> int:
    """The current command line's verbosity level; normal (0) outside one
    (a function called directly, not through the command line)."""
    ctx = click.get_current_context(silent=True)
    return 0 if ctx is None else verbosity_of(ctx).level


def is_quiet() -> bool:
    """``-q`` was given."""
    return _level() < 0


def is_verbose() -> bool:
    """``-v`` was given."""
    return _level() > 0


def say(line: str) -> None:
    """A line of a command's account of what it did, on standard output; not shown with ``-q``."""
    if not is_quiet():
        click.echo(line)


def info(line: str) -> None:
    """An informational line on standard error; not shown with ``-q``."""
    if not is_quiet():
        click.echo(line, err=True)


def detail(line: str) -> None:
    """A detail line on standard error; shown only with ``-v``."""
    if is_verbose():
        click.echo(line, err=True)


_STOP_WORDS: Final = {
    signal.SIGINT: "interrupted (Ctrl-C)",
    signal.SIGTERM: "terminated (SIGTERM)",
    signal.SIGHUP: "hung up (SIGHUP)",
}


class Stopped(BaseException):
    """Raised in the main thread by a SIGTERM or SIGHUP handler, so that the
    command unwinds as it does on Ctrl-C (temporary files removed); exits
    ``128 + signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def stopped_line(signum: int) -> str:
    """The one wording of a stop by ``signum``: ``"interrupted (Ctrl-C):
    stopped; no partial output was left"`` (SIGTERM, SIGHUP alike)."""
    what = _STOP_WORDS.get(signal.Signals(signum), f"stopped by signal {signum}")
    return f"{what}: stopped; no partial output was left"


def _command_epilog(command: click.Command, ctx: click.Context) -> str:
    """``Exit codes: 0 success, 2 usage error, ...`` for ``command``, a
    subcommand of ``ctx``'s group: its declaration (:func:`exits`), in the
    meanings of :data:`~eceb_cli.exit_codes.SHORT`, over them its groups'
    (:func:`exit_meanings`, the outermost first), over those its own; empty
    for a command that declared nothing."""
    declared = _DECLARED.get(command)
    if declared is None:
        return ""
    groups: list[click.Command] = []
    current: click.Context | None = ctx
    while current is not None:
        groups.append(current.command)
        current = current.parent
    meanings = dict(exit_codes.SHORT)
    for group in reversed(groups):
        meanings.update(_GROUP_MEANINGS.get(group, {}))
    meanings.update(declared.meanings)
    return "Exit codes: " + ", ".join(f"{code} {meanings[code]}" for code in declared.codes) + "."


def _group_epilog(group: click.Group, ctx: click.Context) -> str:
    """``Exit codes of its commands ...: ...`` for ``group`` (at ``ctx``):
    every code a command under it declares (:func:`gather_exits`), in the
    meanings of :data:`~eceb_cli.exit_codes.SHORT`, each command's
    ``--help`` saying which."""
    codes = sorted({code for declared in gather_exits(group, ctx).values() for code in declared.codes})
    return (
        "Exit codes of its commands (each command's --help says which it ends with): "
        + ", ".join(f"{code} {exit_codes.SHORT[code]}" for code in codes)
        + "."
    )


def _set_level(level: int) -> Any:
    def callback(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
        if value:
            verbosity_of(ctx).level = level

    return callback


_LEVELS: Final = (
    ("-q", "--quiet", -1, "Print only the result and errors."),
    ("-v", "--verbose", 1, "Print more detail (and the traceback of an internal error)."),
)
"""The verbosity options every command gets: short and long name, level, help."""


def adopt(command: click.Command, ctx: click.Context, name: str) -> click.Command:
    """Give ``command`` (subcommand ``name`` of ``ctx``'s group) the
    conventions: ``-q``/``-v`` (unless it has options of those names) and
    the exit-codes epilog of its declaration (:func:`exits`); a group's
    subcommands get them as they are resolved, its own epilog lists theirs.
    Idempotent; returns ``command``. Raises ``TypeError`` for a group that
    is not a :class:`ConventionalGroup`."""
    if getattr(command, "_eceb_adopted", False):
        return command
    command._eceb_adopted = True  # type: ignore[attr-defined]
    if isinstance(command, click.Group):
        if not isinstance(command, ConventionalGroup):
            raise TypeError(f"{command_path(ctx, name)}: a group must be a ConventionalGroup")
        return command
    names = {name for param in command.params for name in param.opts}
    for short, long, level, text in _LEVELS:
        if short not in names and long not in names:
            command.params.append(
                click.Option(
                    [short, long],
                    is_flag=True,
                    expose_value=False,
                    is_eager=True,
                    callback=_set_level(level),
                    help=text,
                )
            )
    epilog = _command_epilog(command, ctx)
    if epilog and epilog not in (command.epilog or ""):
        command.epilog = f"{command.epilog}\n\n{epilog}" if command.epilog else epilog
    return command


class ConventionalGroup(click.Group):
    """A click group whose subcommands keep the conventions (:func:`adopt`)."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The subcommand ``cmd_name``, adopted."""
        command = super().get_command(ctx, cmd_name)
        if command is None:
            return None
        return adopt(command, ctx, cmd_name)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The group's epilog, then the exit codes of its commands
        (gathered from their declarations when the help is shown: a
        command loaded lazily is loaded then)."""
        codes = _group_epilog(self, ctx)
        epilog = inspect.cleandoc(self.epilog) if self.epilog else ""
        formatter.write_paragraph()
        with formatter.indentation():
            formatter.write_text(f"{epilog}\n\n{codes}" if epilog else codes)


def command_path(ctx: click.Context, name: str) -> str:
    """The path of subcommand ``name`` of ``ctx``'s group by the commands'
    own names (``"eceb corpus verify"``), however the program was started
    (``eceb``, ``python -m eceb_cli``, a test runner)."""
    names = [name]
    current: click.Context | None = ctx
    while current is not None:
        names.append(current.command.name or "")
        current = current.parent
    return " ".join(reversed(names))
