"""``eceb``: the command line of the ECEB-0.1 evaluator."""

from __future__ import annotations

import click

from eceb_cli.corpus import corpus
from eceb_cli.evaluate import evaluate, validate
from eceb_worker import __version__

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="eceb")
def main() -> None:
    """Evaluate context-efficiency runs against ECEB-0.1 benchmarks.

    Exit codes: 0 success, 1 failing tasks, 2 usage error, 3 bad input,
    4 corpus verification failed, 5 storage unavailable.
    """


main.add_command(corpus)
main.add_command(evaluate)
main.add_command(validate)
