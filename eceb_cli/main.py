"""``eceb``: the command line of the ECEB-0.1 evaluator."""

from __future__ import annotations

import importlib

import click

from eceb_cli.conventions import adopt
from eceb_cli.streams import PipeSafeGroup
from eceb_worker import __version__

__all__ = ["main"]

_COMMANDS = {
    "compare": "eceb_cli.compare:compare",
    "corpus": "eceb_cli.corpus:corpus",
    "evaluate": "eceb_cli.evaluate:evaluate",
    "pair": "eceb_cli.pair:pair",
    "publish": "eceb_cli.publish:publish",
    "render": "eceb_cli.render:render",
    "run": "eceb_cli.run:run",
    "validate": "eceb_cli.evaluate:validate",
}
"""Each subcommand and where it is defined (``module:attribute``)."""


class _LazyGroup(PipeSafeGroup):
    """A group that imports a subcommand's module only when that subcommand
    is used, so that one command does not pay for the imports of the others
    (start-up time counts when a command runs in well under a second).
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in _COMMANDS:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = _COMMANDS[cmd_name].partition(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command)
        return adopt(command, ctx, cmd_name)


@click.group("eceb", cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="eceb")
def main() -> None:
    """Evaluate context-efficiency runs against ECEB-0.1 benchmarks."""
