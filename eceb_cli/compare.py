"""``eceb compare``: two evaluation reports compared, every regression
named (:mod:`eceb_worker.families.eceb.comparison`), as text, JSON or
Markdown."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar, cast

import click

from eceb_cli import exit_codes
from eceb_cli.arguments import location
from eceb_cli.console import endpoint
from eceb_cli.conventions import exits, is_quiet
from eceb_cli.outputs import Output, output_option
from eceb_worker.families.eceb.comparison import Thresholds, compare_reports, encode_comparison
from eceb_worker.io.locations import Locator
from eceb_worker.pipeline.reports import read_report
from eceb_worker.render.comparison import comparison_lines, comparison_markdown, comparison_verdict

__all__ = ["compare", "threshold_options"]

F = TypeVar("F", bound=Callable[..., Any])

_AMOUNT = click.IntRange(min=0)


def threshold_options(function: F) -> F:
    """The options that set a comparison's :class:`Thresholds` and
    ``--allow-different-roots``, for ``eceb compare`` and ``eceb-dist
    nightly``: one definition, one help text. The command receives them as
    ``thresholds`` (a :class:`Thresholds`) and ``allow_different_roots``."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs["thresholds"] = Thresholds(
            max_token_savings_drop_bps=kwargs.pop("max_token_drop"),
            max_cost_savings_drop_bps=kwargs.pop("max_cost_drop"),
            max_budget_increase=kwargs.pop("max_budget_increase"),
            allow_new_policy_violations=kwargs.pop("allow_new_policy_violations"),
            allow_new_failed_gates=kwargs.pop("allow_new_failed_gates"),
            allow_removed_tasks=kwargs.pop("allow_removed_tasks"),
        )
        return function(*args, **kwargs)

    decorated: Any = wrapper
    for decorator in reversed(
        [
            click.option(
                "--max-token-savings-drop",
                "max_token_drop",
                type=_AMOUNT,
                default=0,
                show_default=True,
                metavar="BPS",
                help="Largest allowed fall of a passing task's token savings, and of the mean, in basis points.",
            ),
            click.option(
                "--max-cost-savings-drop",
                "max_cost_drop",
                type=_AMOUNT,
                default=0,
                show_default=True,
                metavar="BPS",
                help="Largest allowed fall of a passing task's cost savings, and of the mean, in basis points.",
            ),
            click.option(
                "--max-budget-increase",
                type=_AMOUNT,
                default=0,
                show_default=True,
                metavar="TOKENS",
                help="Largest allowed rise of a passing task's minimum viable budget, in tokens.",
            ),
            click.option(
                "--allow-new-policy-violations", is_flag=True, help="More policy violations is not a regression."
            ),
            click.option(
                "--allow-new-failed-gates",
                is_flag=True,
                help="A failing task failing for a new gate is not a regression.",
            ),
            click.option(
                "--allow-removed-tasks", is_flag=True, help="A task missing from the new report is not a regression."
            ),
            click.option(
                "--allow-different-roots", is_flag=True, help="Compare reports of different task roots or corpus roots."
            ),
        ]
    ):
        decorated = decorator(decorated)
    return cast("F", decorated)


@exits(exit_codes.BAD_INPUT, exit_codes.STORAGE, exit_codes.OUTPUT, exit_codes.REGRESSION)
@click.command()
@click.argument("old_path", metavar="OLD_REPORT", callback=location)
@click.argument("new_path", metavar="NEW_REPORT", callback=location)
@click.option("--json", "as_json", is_flag=True, help="Print the comparison document (schema comparison-v0.1).")
@click.option("--markdown", "as_markdown", is_flag=True, help="Print Markdown, for a CI comment.")
@output_option("Write the comparison here (atomically) instead of standard output.")
@click.option("--endpoint-url", help="S3-compatible endpoint for s3:// reports (else ECEB_S3_ENDPOINT_URL).")
@threshold_options
def compare(
    old_path: str,
    new_path: str,
    as_json: bool,
    as_markdown: bool,
    output: Output | None,
    endpoint_url: str | None,
    thresholds: Thresholds,
    allow_different_roots: bool,
) -> None:
    """Compare OLD_REPORT with NEW_REPORT (eceb evaluate reports; files or
    s3://bucket/key objects read with --endpoint-url) and name every
    regression.

    Per task: pass to fail and fail to pass, the minimum viable budget up or
    down, token and cost savings changes in basis points, new policy
    violations, gates newly deciding a failure, tasks added or removed. A
    regression is a passing task that fails now, a rise of its minimum
    viable budget or a fall of its savings (or of the mean savings) beyond
    the thresholds, more policy violations, a failing task failing for a new
    gate, or a removed task (the last three unless allowed). Reports of different task roots or corpus
    roots are refused unless --allow-different-roots; a difference of claim
    classes is said in every format.

    Text by default; --json prints the comparison document, --markdown a CI
    comment. Exit 0 when nothing regressed, 10 on a regression, 3 for an
    invalid report or different roots, 5 when storage cannot be read, 6
    when the output cannot be written (or is one of the reports), 2 for a
    usage error.
    """
    if as_json and as_markdown:
        raise click.UsageError("--json and --markdown are exclusive: choose one format")
    if output is not None:
        output.check([old_path, new_path])
    locator = Locator(endpoint(endpoint_url))
    old, new = read_report(locator.locate(old_path)), read_report(locator.locate(new_path))
    comparison = compare_reports(
        old, new, thresholds, allow_different_roots=allow_different_roots, names=(old_path, new_path)
    )
    if as_json:
        data = encode_comparison(comparison)
    elif as_markdown:
        data = comparison_markdown(comparison).encode()
    elif is_quiet() and output is None:
        data = (comparison_verdict(comparison) + "\n").encode()
    else:
        data = "".join(line + "\n" for line in comparison_lines(comparison)).encode()
    if output is None:
        Output(None).write([data])
    else:
        output.write([data])
        click.echo(comparison_verdict(comparison) + f"; comparison written to {output}", err=output.to_stdout)
    if comparison.regressed:
        sys.exit(exit_codes.REGRESSION)
