"""``eceb pair run`` and ``eceb pair status``: run one pair through the
provider adapter, and show every pair and attempt of an experiment
(task-context-benchmark-reference.md, "Paired inputs and retained outputs")."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from eceb_cli import exit_codes
from eceb_cli.conventions import exits
from eceb_cli.outputs import Output
from eceb_worker.core.canonical import canonical_json
from eceb_worker.families.paired.outcome import signal_name
from eceb_worker.io.paired.provider import DeferredSignals
from eceb_worker.pipeline.paired.approvals import BILLING_NOTICE
from eceb_worker.pipeline.paired.run import run_pair
from eceb_worker.pipeline.paired.status import experiment_status
from eceb_worker.render.paired.status import status_lines

__all__ = ["run", "status"]


def _out(line: str) -> None:
    click.echo(line)


def _err(line: str) -> None:
    click.echo(line, err=True)


@exits(
    exit_codes.TASKS_FAILED,
    exit_codes.BAD_INPUT,
    exit_codes.OUTPUT,
    exit_codes.EXECUTION_REFUSED,
    meanings={exit_codes.TASKS_FAILED: "an attempt not completed"},
)
@click.command()
@click.argument("pair_directory", metavar="PAIRDIR", type=click.Path(path_type=Path, file_okay=False))
def run(pair_directory: Path) -> None:
    """Run the pair prepared in PAIRDIR: its arms in order, each at most once.

    Checks first, writing nothing: the freeze and every file of the
    manifest by digest, the authorization, the ledger, that the pair is the
    next in the schedule, the repository at its frozen state, the frozen
    provider. Each attempt keeps its complete journal in PAIRDIR/attempts/ARM.
    SIGINT or SIGTERM stops the provider and completes the journal as
    cancelled (exit 130 or 143). Exit 0 when every attempt of the pair
    completed, 1 when one shows another status, 9 when nothing may run.
    """
    click.echo(BILLING_NOTICE)
    with DeferredSignals() as signals:
        outcome = run_pair(pair_directory, signals, _out, _err)
    click.echo(f"pair {outcome.position}: " + "; ".join(f"arm {arm} {state}" for arm, state in outcome.states))
    if outcome.signal is not None:
        _err(f"stopped by {signal_name(outcome.signal)}: no further arm started; every journal written is complete")
        sys.exit(128 + outcome.signal)
    sys.exit(exit_codes.OK if outcome.completed else exit_codes.TASKS_FAILED)


@exits(exit_codes.BAD_INPUT, exit_codes.OUTPUT)
@click.command()
@click.argument("experiment", metavar="EXPERIMENT", type=click.Path(path_type=Path, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the status as canonical JSON (schema pair-status-v0.1).")
def status(experiment: Path, as_json: bool) -> None:
    """Show every pair directory and attempt of the experiment EXP: each
    attempt's status or "incomplete journal", the ledger's executions, the
    authorized count and how many remain, spending stops, whether
    continuation after the pilot is approved, and every inconsistency
    between the journals and the ledger. Reads only."""
    shown = experiment_status(experiment)
    if as_json:
        Output(None).write([canonical_json(shown), b"\n"])
        return
    for line in status_lines(shown):
        click.echo(line)
