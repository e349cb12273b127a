"""``eceb pair``: the paired task-context benchmark
(task-context-benchmark-reference.md)."""

from __future__ import annotations

import click

from eceb_cli.conventions import ConventionalGroup, exits, is_quiet
from eceb_cli.outputs import Output
from eceb_cli.pair_run import run, status
from eceb_cli.pair_setup import approve, authorize_command, freeze, prepare, stop
from eceb_cli.pair_summary import summary
from eceb_worker.core.canonical import canonical_json
from eceb_worker.families.paired.schedule import plan as make_plan
from eceb_worker.render.paired.plan import execution_lines, plan_lines

__all__ = ["pair"]


@click.group(cls=ConventionalGroup)
def pair() -> None:
    """The paired task-context benchmark: two context arms (A: a frozen
    overview, B: a task cue) given to a coding-agent CLI on the same tasks."""


@exits()
@pair.command()
@click.option("--json", "as_json", is_flag=True, help="Print the plan as canonical JSON (schema pair-plan-v0.1).")
def plan(as_json: bool) -> None:
    """Print the fixed counterbalanced schedule: the execution order, the
    cumulative execution counts and the order imbalance, counted from the
    seed's table (with -q, only the execution order, a line a pair). Runs
    nothing."""
    schedule = make_plan()
    if as_json:
        Output(None).write([canonical_json(schedule), b"\n"])
        return
    for line in execution_lines(schedule) if is_quiet() else plan_lines(schedule):
        click.echo(line)


# Setting up and between executions (eceb_cli/pair_setup.py).
pair.add_command(freeze)
pair.add_command(authorize_command)
pair.add_command(approve)
pair.add_command(stop)
pair.add_command(prepare)

# Running pairs and showing them (eceb_cli/pair_run.py).
pair.add_command(run)
pair.add_command(status)

# What the evidence supports (eceb_cli/pair_summary.py).
pair.add_command(summary)
