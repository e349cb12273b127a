"""``eceb render``: an evaluation report, or two compared, as one
self-contained HTML page (:mod:`eceb_worker.render.html`) or as the text
``eceb evaluate`` and ``eceb compare`` print."""

from __future__ import annotations

import click

from eceb_cli import exit_codes
from eceb_cli.arguments import location
from eceb_cli.console import endpoint
from eceb_cli.conventions import detail, exits, info
from eceb_cli.outputs import Output, output_option
from eceb_worker.families.eceb.report import Report
from eceb_worker.io.locations import Locator
from eceb_worker.pipeline.reports import read_report

__all__ = ["render"]


@exits(exit_codes.BAD_INPUT, exit_codes.STORAGE, exit_codes.OUTPUT)
@click.command()
@click.argument("report_path", metavar="REPORT", callback=location)
@click.argument("new_path", metavar="[NEW_REPORT]", required=False, callback=location)
@click.option(
    "--run",
    "run_path",
    metavar="RUN",
    callback=location,
    help="The run REPORT was computed from (file or s3:// object): the plots then draw every repetition.",
)
@click.option("--html", "form", flag_value="html", help="Write one self-contained HTML page (needs -o).")
@click.option("--text", "form", flag_value="text", help="Print the summary text of eceb evaluate (or eceb compare).")
@output_option("Write the page or text here (atomically); text goes to standard output without it.")
@click.option(
    "--endpoint-url",
    metavar="URL",
    help="S3-compatible endpoint for s3:// reports and runs (else ECEB_S3_ENDPOINT_URL).",
)
@click.option(
    "--allow-different-roots",
    is_flag=True,
    help="With two reports: compare reports of different task roots or corpus roots.",
)
def render(
    report_path: str,
    new_path: str | None,
    run_path: str | None,
    form: str | None,
    output: Output | None,
    endpoint_url: str | None,
    allow_different_roots: bool,
) -> None:
    """Render REPORT (an eceb evaluate report: a file or an s3://bucket/key
    object, read with --endpoint-url) for people to read; given NEW_REPORT
    too, render the comparison of REPORT (the old one) with NEW_REPORT,
    judged as eceb compare judges it by default (no drop of savings, no rise
    of a budget allowed).

    --html writes one self-contained page (no network needed to open it:
    inline styles and SVG plots, no script), the same bytes for the same
    reports: the claim class, a banner when the run is non-empirical, tasks
    passing k/n, mean savings with their numerator and denominator, and per
    task its figures, the budget-ladder and prompt-token plots, the gates by
    group and every failed assertion. With --run the plots draw every
    repetition of that run, which must be the run REPORT was computed from
    (its digest is checked); without it they draw each group's mean and
    lowest quality. --text prints the summary text instead.
    """
    if form is None:
        raise click.UsageError("choose a form: --html (a page, with -o FILE) or --text")
    if form == "html" and output is None:
        raise click.UsageError("--html writes a file: give -o FILE (or -o - for standard output)")
    if run_path is not None and (new_path is not None or form != "html"):
        raise click.UsageError("--run applies to the HTML page of one report")
    if allow_different_roots and new_path is None:
        raise click.UsageError("--allow-different-roots applies to a comparison of two reports")
    inputs = [path for path in (report_path, new_path, run_path) if path is not None]
    if output is not None:
        output.check(inputs)
    locator = Locator(endpoint(endpoint_url))
    report = read_report(locator.locate(report_path))
    if new_path is None:
        data = _one(report, report_path, run_path, form, locator)
    else:
        data = _two(report, read_report(locator.locate(new_path)), (report_path, new_path), form, allow_different_roots)
    (output or Output(None)).write([data])
    if output is not None and not output.to_stdout:
        info(f"{'page' if form == 'html' else 'text'} written to {output}")


def _one(report: Report, report_path: str, run_path: str | None, form: str, locator: Locator) -> bytes:
    """One report's page or text."""
    if form == "text":
        from eceb_worker.render.text import report_lines, verdict_line

        lines = [*report_lines(report, "of the report", report_path=report_path), verdict_line(report)]
        return "".join(line + "\n" for line in lines).encode()
    from eceb_worker.render.html import report_html

    repetitions = None
    if run_path is not None:
        from eceb_worker.pipeline.report_runs import report_repetitions

        repetitions = report_repetitions(report, run_path, locator, report_name=report_path)
        detail(f"run {run_path}: its digest matches {report_path}'s")
    return report_html(report, repetitions)


def _two(old: Report, new: Report, names: tuple[str, str], form: str, allow_different_roots: bool) -> bytes:
    """The comparison's page or text."""
    from eceb_worker.families.eceb.comparison import Thresholds, compare_reports

    comparison = compare_reports(old, new, Thresholds(), allow_different_roots=allow_different_roots, names=names)
    if form == "text":
        from eceb_worker.render.comparison import comparison_lines

        return "".join(line + "\n" for line in comparison_lines(comparison)).encode()
    from eceb_worker.render.comparison_html import comparison_html

    return comparison_html(comparison, old, new)
