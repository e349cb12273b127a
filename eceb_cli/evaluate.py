"""``eceb evaluate`` and ``eceb validate``."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click
import msgspec

from eceb_cli import exit_codes
from eceb_cli.arguments import local_path, location, no_disclosure_check_option, uncertainty_option
from eceb_cli.console import endpoint, progress
from eceb_cli.conventions import exits, info, is_quiet
from eceb_cli.corpus import advance_by, print_findings, source_options
from eceb_cli.outputs import Output, output_option
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.errors import VerificationError
from eceb_worker.executors import InProcessExecutor
from eceb_worker.families.eceb.options import IN_PROCESS_EVALUATION, EvaluationOptions
from eceb_worker.families.eceb.report import encode_report
from eceb_worker.families.eceb.uncertainty import UncertaintyMode
from eceb_worker.io.locations import Locator
from eceb_worker.pipeline.embedded import evaluate as run_evaluation
from eceb_worker.pipeline.inputs import check_inputs
from eceb_worker.render.text import report_lines, verdict_line

__all__ = ["evaluate", "validate"]


@exits(
    exit_codes.TASKS_FAILED,
    exit_codes.BAD_INPUT,
    exit_codes.VERIFICATION_FAILED,
    exit_codes.STORAGE,
    exit_codes.OUTPUT,
    meanings={exit_codes.TASKS_FAILED: "failing tasks"},
)
@click.command()
@click.argument("benchmark_path", metavar="BENCHMARK", callback=location)
@click.argument("run_path", metavar="RUN", callback=location)
@click.option(
    "--corpus", "source", required=True, callback=location, help="The corpus: a directory or s3://bucket/prefix."
)
@output_option("Write the report here (atomically).")
@click.option("--json", "as_json", is_flag=True, help="Print the report on standard output (as -o -).")
@no_disclosure_check_option
@uncertainty_option
@source_options
def evaluate(
    benchmark_path: str,
    run_path: str,
    source: str,
    output: Output | None,
    as_json: bool,
    no_disclosure_check: bool,
    endpoint_url: str | None,
    workers: int,
    concurrency: int,
    shard_bytes: int,
    uncertainty: UncertaintyMode,
) -> None:
    """Evaluate RUN against BENCHMARK (ECEB-0.1) and write one report.

    BENCHMARK and RUN are files or s3://bucket/key objects (read with
    --endpoint-url); the benchmark's registry is read beside it. Checks the
    benchmark, its registry and the run together (every problem is listed),
    re-hashes the whole corpus, evaluates every gate of every
    task, strategy and budget, and prints a summary. Exit 0 when every task
    passes, 1 when some fail, 3 for invalid input, 4 when the corpus does
    not verify, 5 when it cannot be read. With -q, only the verdict line.
    """
    started = time.monotonic()
    if as_json:
        if output is not None and not output.to_stdout:
            raise click.UsageError("--json prints the report on standard output: give it or -o FILE, not both")
        output = Output(None)
    quiet = is_quiet()
    if output is not None:
        output.check()
    endpoint_url = endpoint(endpoint_url)
    inputs = check_inputs(benchmark_path, run_path, Locator(endpoint_url), shard_bytes=shard_bytes)
    if output is not None:
        output.check([benchmark_path, run_path, inputs.registry_location])
        paths = {artifact.path for artifact in inputs.registry.artifacts}
        output.check_outside(source, paths.__contains__)
    spec = StorageSpec(source=source, endpoint_url=endpoint_url, concurrency=concurrency)
    try:
        with progress("verifying", total=inputs.registry.artifact_count) as advance:
            report, verification = run_evaluation(
                inputs,
                spec,
                executor=InProcessExecutor(workers),
                shard_bytes=shard_bytes,
                on_answer=advance_by(advance),
                evaluation=EvaluationOptions.chosen(
                    disclosure_check=not no_disclosure_check,
                    uncertainty=uncertainty,
                    shard_observations=IN_PROCESS_EVALUATION.shard_observations,
                ),
            )
    except VerificationError as exc:
        print_findings(exc.report)  # type: ignore[arg-type]
        raise
    data = encode_report(report)
    if output is not None:
        output.write([data])
    summary_to_stderr = output is not None and output.to_stdout
    if not quiet:
        written_to = str(output.path) if output is not None and output.path is not None else None
        for line in report_lines(report, verification.source, report_path=written_to):
            click.echo(line, err=summary_to_stderr)
    written = f"; report written to {output}" if output is not None and not output.to_stdout else ""
    click.echo(verdict_line(report) + written, err=summary_to_stderr)
    info(f"evaluated in {time.monotonic() - started:.2f} s")
    if report.summary.passing_tasks != report.summary.total_tasks:
        sys.exit(exit_codes.TASKS_FAILED)


@exits(exit_codes.BAD_INPUT)
@click.command()
@click.argument("path", metavar="FILE", callback=local_path)
@click.option(
    "--benchmark",
    "benchmark_path",
    callback=local_path,
    help="For a run: also check it against this benchmark and its registry.",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was found as one JSON object.")
def validate(path: Path, benchmark_path: Path | None, as_json: bool) -> None:
    """Validate FILE: a registry, rules file, benchmark, run, report,
    verification report, publication manifest, sources or declarations file,
    or run profile (with its rubric's digest).

    The kind comes from the file's schema identifier (symgliph.eceb/KIND-v0.1).
    A benchmark is checked with its registry, and its task root and corpus
    root are printed (a run must name them); a run, given --benchmark, is
    checked against that benchmark too. Every problem is listed. Exit 0 when
    valid, 3 when not.
    """
    from eceb_worker.documents import a_file_of
    from eceb_worker.pipeline.validation import kind_of, validate_file

    kind = kind_of(path)
    if benchmark_path is not None and kind != "run":
        raise click.UsageError(f"--benchmark applies to a run only; {path} is {a_file_of(kind)}")
    found = validate_file(path, kind, benchmark_path)
    click.echo(msgspec.json.encode(found).decode() if as_json else found.line())
