"""``eceb pair summary``: what the evidence of a paired experiment
supports, recomputed from the raw bytes (task-context-benchmark-reference.md,
"Paired inputs and retained outputs", "Credit and quality calculation",
"Fixed paid comparison schedule")."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import click

from eceb_cli import exit_codes
from eceb_cli.conventions import exits, is_quiet
from eceb_cli.outputs import Output, output_option
from eceb_worker.core.canonical import canonical_json
from eceb_worker.errors import OutputError
from eceb_worker.io.files import path_inside
from eceb_worker.pipeline.paired.summary import pair_directories, summarize_pairs
from eceb_worker.render.paired.summary import csv_rows, summary_lines, verdict_line

__all__ = ["summary"]


def _check_outputs(outputs: list[Output], inputs: list[Path], assessments: tuple[Path, ...], repository: str) -> None:
    """Refuse an output that is one of the inputs or lies inside a pair
    directory, an experiment directory or the repository (it would change
    what is summarized), and two outputs to one file or both to standard output."""
    pairs, experiments = pair_directories(inputs)
    others = sorted({*experiments, *(pair.parent for pair in pairs), Path(repository)} - set(pairs))
    files = [out for out in outputs if out.path is not None]
    for out in files:
        out.check([*pairs, *experiments, *assessments])
        assert out.path is not None
        for directory in pairs:
            if path_inside(out.path, directory) is not None:
                raise OutputError(f"{out.path}: lies inside the task-pair directory {directory}, an input")
        for directory in others:
            if path_inside(out.path, directory) is not None:
                raise OutputError(
                    f"{out.path}: lies inside {directory}, which the summary reads: nothing is written there"
                )
    paths = [out.path.resolve() for out in files if out.path is not None]
    if len(paths) == 2 and paths[0] == paths[1]:
        raise OutputError(f"{paths[0]}: -o and --csv name the same file")
    if sum(1 for out in outputs if out.to_stdout) > 1:
        raise OutputError("-o - and --csv - both ask for standard output: give one of them a file")


@exits(
    exit_codes.TASKS_FAILED, exit_codes.BAD_INPUT, exit_codes.OUTPUT, meanings={exit_codes.TASKS_FAILED: "no verdict"}
)
@click.command()
@click.argument(
    "directories", metavar="DIR...", nargs=-1, required=True, type=click.Path(path_type=Path, file_okay=False)
)
@click.option(
    "--assessments",
    "assessments",
    multiple=True,
    metavar="FILE",
    type=click.Path(path_type=Path, dir_okay=False),
    help="An assessment bundle (repocue/task-evaluation-1, kind assessments); may be repeated.",
)
@click.option(
    "--repo",
    "repository",
    metavar="DIR",
    type=click.Path(path_type=Path, file_okay=False),
    help="The target repository to read the frozen revision from (default: the frozen repository's path).",
)
@output_option("Write the summary as canonical JSON (schema pair-summary-v0.1) here, atomically.")
@output_option("Write the pairs as CSV here, atomically.", names=("--csv", "csv_output"))
def summary(
    directories: tuple[Path, ...],
    assessments: tuple[Path, ...],
    repository: Path | None,
    output: Output | None,
    csv_output: Output | None,
) -> None:
    """Summarize the task-pair directories DIR... (or every task-pair
    directory of an experiment directory) from their raw bytes.

    Every digest, record, captured schema link and provider stream is
    re-checked; outcomes are recomputed from the repository at the frozen
    revision (the verification check re-executed there) and the assessment
    bundles. Missing or changed evidence keeps its attempt visible and its
    pair from counting. Prints the pairs, the differences A - B (overview
    minus task cue) with their coverage, the schedule check and the
    verdict (with -q, only the verdict line; -o and --csv are written
    all the same). Exit 0 with a verdict, 1 without one (every reason listed),
    3 for inputs that are not task-pair or experiment directories.
    """
    outputs = [out for out in (output, csv_output) if out is not None]
    shown = summarize_pairs(list(directories), assessments=assessments, repository=repository)
    _check_outputs(outputs, list(directories), assessments, shown.repository)
    if output is not None:
        output.write([canonical_json(shown), b"\n"])
    if csv_output is not None:
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(csv_rows(shown))
        csv_output.write([text.getvalue().encode()])
    if not any(out.to_stdout for out in outputs):
        for line in [verdict_line(shown)] if is_quiet() else summary_lines(shown):
            click.echo(line)
    sys.exit(exit_codes.OK if shown.verdict.reached else exit_codes.TASKS_FAILED)
