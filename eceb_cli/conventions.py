"""The conventions every ``eceb`` and ``eceb-dist`` command keeps, applied
in one place as a command is resolved (:class:`ConventionalGroup`):

- ``-q``/``--quiet`` prints only what the command exists to print (the
  verdict, the id, the document) and its errors: no progress bar, no
  informational line (:func:`info`);
- ``-v``/``--verbose`` adds detail lines (:func:`detail`) and the traceback
  of an internal error;
- ``--help`` ends with the command's exit codes, from one table
  (:data:`EXITS` here, their meanings in :mod:`eceb_cli.exit_codes`);
- a stop by signal is worded the same way whatever the signal
  (:func:`stopped_line`): Ctrl-C, SIGTERM and SIGHUP.
"""

from __future__ import annotations

import signal
from typing import Any, Final

import click

from eceb_cli import exit_codes

__all__ = [
    "EXITS",
    "ConventionalGroup",
    "Stopped",
    "adopt",
    "command_path",
    "detail",
    "exit_codes_epilog",
    "group_epilog",
    "info",
    "is_quiet",
    "is_verbose",
    "say",
    "stopped_line",
    "verbosity_of",
    "Verbosity",
]

_STOPS: Final = (exit_codes.HANGUP, exit_codes.INTERRUPTED, exit_codes.TERMINATED)
_COMMON: Final = (exit_codes.OK, exit_codes.USAGE, exit_codes.INTERNAL, *_STOPS)
"""What any command can end with: success, a usage error, a bug, a stop by signal."""
_CLUSTER: Final = (*_COMMON, exit_codes.BAD_INPUT, exit_codes.STORAGE)

EXITS: Final[dict[str, tuple[int, ...]]] = {
    "eceb compare": (*_COMMON, exit_codes.BAD_INPUT, exit_codes.STORAGE, exit_codes.OUTPUT, exit_codes.REGRESSION),
    "eceb corpus register": (*_COMMON, exit_codes.BAD_INPUT, exit_codes.STORAGE, exit_codes.OUTPUT, *_STOPS),
    "eceb corpus root": (*_COMMON, exit_codes.BAD_INPUT, exit_codes.STORAGE, *_STOPS),
    "eceb corpus verify": (
        *_COMMON,
        exit_codes.BAD_INPUT,
        exit_codes.VERIFICATION_FAILED,
        exit_codes.STORAGE,
        exit_codes.OUTPUT,
        *_STOPS,
    ),
    "eceb evaluate": (
        *_COMMON,
        exit_codes.TASKS_FAILED,
        exit_codes.BAD_INPUT,
        exit_codes.VERIFICATION_FAILED,
        exit_codes.STORAGE,
        exit_codes.OUTPUT,
        *_STOPS,
    ),
    "eceb pair approve": (*_COMMON, exit_codes.BAD_INPUT, exit_codes.OUTPUT, exit_codes.EXECUTION_REFUSED, *_STOPS),
    "eceb pair authorize": (*_COMMON, exit_codes.BAD_INPUT, exit_codes.OUTPUT, exit_codes.EXECUTION_REFUSED, *_STOPS),
    "eceb pair freeze": (*_COMMON, exit_codes.BAD_INPUT, exit_codes.OUTPUT, exit_codes.EXECUTION_REFUSED, *_STOPS),
    "eceb pair plan": (*_COMMON,),
    "eceb pair prepare": (*_COMMON, exit_codes.BAD_INPUT, exit_codes.OUTPUT, exit_codes.EXECUTION_REFUSED, *_STOPS),
    "eceb pair run": (
        *_COMMON,
        exit_codes.TASKS_FAILED,
        exit_codes.BAD_INPUT,
        exit_codes.OUTPUT,
        exit_codes.EXECUTION_REFUSED,
        *_STOPS,
    ),
    "eceb pair status": (*_COMMON, exit_codes.BAD_INPUT, exit_codes.OUTPUT),
    "eceb pair stop": (*_COMMON, exit_codes.BAD_INPUT, exit_codes.OUTPUT, *_STOPS),
    "eceb pair summary": (*_COMMON, exit_codes.TASKS_FAILED, exit_codes.BAD_INPUT, exit_codes.OUTPUT, *_STOPS),
    "eceb publish": (
        *_COMMON,
        exit_codes.BAD_INPUT,
        exit_codes.VERIFICATION_FAILED,
        exit_codes.STORAGE,
        exit_codes.OUTPUT,
        exit_codes.PUBLICATION_REFUSED,
        *_STOPS,
    ),
    "eceb render": (*_COMMON, exit_codes.BAD_INPUT, exit_codes.STORAGE, exit_codes.OUTPUT, *_STOPS),
    "eceb validate": (*_COMMON, exit_codes.BAD_INPUT),
    "eceb-dist cancel": (*_CLUSTER, exit_codes.NO_SUCH_JOB),
    "eceb-dist jobs": _CLUSTER,
    "eceb-dist nightly": (
        *_CLUSTER,
        exit_codes.VERIFICATION_FAILED,
        exit_codes.NO_SUCH_JOB,
        exit_codes.OUTPUT,
        exit_codes.JOB_CANCELLED,
        exit_codes.REGRESSION,
        exit_codes.JOB_NOT_FINISHED,
    ),
    "eceb-dist nightly-accept": _CLUSTER,
    "eceb-dist probe": (exit_codes.OK, exit_codes.TASKS_FAILED, exit_codes.USAGE, exit_codes.INTERNAL),
    "eceb-dist result": (
        *_CLUSTER,
        exit_codes.TASKS_FAILED,
        exit_codes.VERIFICATION_FAILED,
        exit_codes.OUTPUT,
        exit_codes.NO_SUCH_JOB,
        exit_codes.JOB_CANCELLED,
        exit_codes.JOB_NOT_FINISHED,
    ),
    "eceb-dist status": (*_CLUSTER, exit_codes.NO_SUCH_JOB),
    "eceb-dist submit": _CLUSTER,
    "eceb-dist verify": _CLUSTER,
    "eceb-dist wait": (
        *_CLUSTER,
        exit_codes.TASKS_FAILED,
        exit_codes.VERIFICATION_FAILED,
        exit_codes.NO_SUCH_JOB,
        exit_codes.JOB_CANCELLED,
        exit_codes.JOB_NOT_FINISHED,
    ),
    "eceb-dist worker": (*_COMMON, exit_codes.STORAGE, *_STOPS),
}
"""The exit codes each command can end with (README, "Exit codes")."""

_TASKS_FAIL: Final = {exit_codes.TASKS_FAILED: "failing tasks"}
_MEANINGS: Final[dict[str, dict[int, str]]] = {
    "eceb evaluate": _TASKS_FAIL,
    "eceb pair run": {exit_codes.TASKS_FAILED: "an attempt not completed"},
    "eceb pair summary": {exit_codes.TASKS_FAILED: "no verdict"},
    "eceb-dist probe": {exit_codes.TASKS_FAILED: "not ready (the worker does not answer or does not consume eceb)"},
    "eceb-dist result": _TASKS_FAIL,
    "eceb-dist wait": _TASKS_FAIL,
}
"""Where a command gives a code a meaning of its own."""


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


def exit_codes_epilog(path: str) -> str:
    """``Exit codes: 0 success, 2 usage error, ...`` for the command at ``path``
    (``"eceb evaluate"``); empty for a path without an entry in :data:`EXITS`."""
    codes = EXITS.get(path)
    if codes is None:
        return ""
    meanings = {**exit_codes.SHORT, **_MEANINGS.get(path, {})}
    if path.startswith("eceb-dist "):
        meanings[exit_codes.STORAGE] = "storage or cluster unavailable"
    return "Exit codes: " + ", ".join(f"{code} {meanings[code]}" for code in sorted(set(codes))) + "."


def group_epilog(prefix: str) -> str:
    """``Exit codes (of its commands): ...`` for the group at ``prefix``
    (``"eceb"``, ``"eceb pair"``): every code a command under it can end
    with, each command's ``--help`` saying which."""
    codes = sorted({code for path, listed in EXITS.items() if path.startswith(prefix + " ") for code in listed})
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


def adopt(command: click.Command, path: str) -> click.Command:
    """Give ``command`` (found at ``path``, e.g. ``"eceb corpus verify"``) the
    conventions: ``-q``/``-v`` (unless it has options of those names) and
    the exit-codes epilog; a group's subcommands get them as they are
    resolved. Idempotent; returns ``command``."""
    if getattr(command, "_eceb_adopted", False):
        return command
    command._eceb_adopted = True  # type: ignore[attr-defined]
    if isinstance(command, click.Group):
        if not isinstance(command, ConventionalGroup):
            raise TypeError(f"{path}: a group must be a ConventionalGroup")
        command.epilog = group_epilog(path)
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
    epilog = exit_codes_epilog(path)
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
        return adopt(command, command_path(ctx, cmd_name))


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
