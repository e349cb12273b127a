"""``eceb evaluate`` and ``eceb validate``."""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

import click
import msgspec

from eceb_cli import exit_codes
from eceb_cli.console import handle_errors, progress
from eceb_cli.corpus import print_findings, source_options
from eceb_worker.corpus import load_registry
from eceb_worker.engine.benchmark import task_root
from eceb_worker.engine.checks import run_header_problems
from eceb_worker.engine.documents import decode_document
from eceb_worker.engine.evaluation import TaskResult
from eceb_worker.engine.report import Report, encode_report
from eceb_worker.engine.verification import VerificationReport
from eceb_worker.errors import InputError, Problem, VerificationError
from eceb_worker.evaluate import evaluate as run_evaluation
from eceb_worker.executors import InProcessExecutor
from eceb_worker.files import atomic_write, check_writable, map_input, read_input
from eceb_worker.inputs import InputReader, check_benchmark, check_run_records, load_inputs, load_run
from eceb_worker.storage import StorageSpec

__all__ = ["evaluate", "validate"]


@click.command()
@click.argument("benchmark_path", metavar="BENCHMARK")
@click.argument("run_path", metavar="RUN")
@click.option("--corpus", "source", required=True, help="The corpus: a directory or s3://bucket/prefix.")
@click.option(
    "-o", "--output", type=click.Path(path_type=Path, dir_okay=False), help="Write the report here (atomically)."
)
@click.option("--quiet", is_flag=True, help="Print only the verdict line.")
@source_options
@handle_errors
def evaluate(
    benchmark_path: str,
    run_path: str,
    source: str,
    output: Path | None,
    quiet: bool,
    endpoint_url: str | None,
    workers: int,
    concurrency: int,
    shard_bytes: int,
) -> None:
    """Evaluate RUN against BENCHMARK (ECEB-0.1) and write one report.

    BENCHMARK and RUN are files or s3://bucket/key objects (read with
    --endpoint-url); the benchmark's registry is read beside it. Checks the
    benchmark, its registry and the run together (every problem is listed),
    re-hashes the whole corpus, evaluates every gate of every
    task, strategy and budget, and prints a summary. Exit 0 when every task
    passes, 1 when some fail, 3 for invalid input, 4 when the corpus does
    not verify, 5 when it cannot be read.
    """
    started = time.monotonic()
    if output is not None:
        check_writable(output)
    inputs = load_inputs(benchmark_path, run_path, InputReader(endpoint_url))
    spec = StorageSpec(source=source, endpoint_url=endpoint_url, concurrency=concurrency)
    try:
        with progress("verifying", total=len(inputs.registry.artifacts)) as advance:
            report, verification = run_evaluation(
                inputs,
                spec,
                executor=InProcessExecutor(workers),
                shard_bytes=shard_bytes,
                on_shard=lambda shard: advance(shard.checked),
            )
    except VerificationError as exc:
        print_findings(exc.report)  # type: ignore[arg-type]
        raise
    data = encode_report(report)
    if output is not None:
        atomic_write(output, [data])
    if not quiet:
        _print_summary(report, verification.source)
    click.echo(
        f"{report.summary.passing_tasks}/{report.summary.total_tasks} tasks pass"
        + (f"; report written to {output}" if output else "")
    )
    if not quiet:
        click.echo(f"evaluated in {time.monotonic() - started:.2f} s", err=True)
    if report.summary.passing_tasks != report.summary.total_tasks:
        sys.exit(exit_codes.TASKS_FAILED)


def _bps(value: int | None) -> str:
    return "n/a" if value is None else f"{value} bps ({value // 100}.{value % 100:02d} %)"


def _task_line(task: TaskResult) -> str:
    if task.passed:
        return (
            f"PASS  {task.task_id}: minimum viable budget {task.minimum_viable_budget}; "
            f"tokens {task.baseline_prompt_tokens} -> {task.compiled_prompt_tokens} "
            f"(saves {_bps(task.token_savings_bps)}); "
            f"cost {task.baseline_cost_micro_usd} -> {task.compiled_cost_micro_usd} micro-USD "
            f"(saves {_bps(task.cost_savings_bps)}); "
            f"quality {task.baseline_quality_milli} -> {task.compiled_quality_milli} (floor {task.quality_floor_milli})"
        )
    budget = task.minimum_viable_budget
    where = f"first passing budget {budget}" if budget is not None else "no viable budget"
    return f"FAIL  {task.task_id}: {where}; {len(task.failed_assertions)} failed assertion(s)"


def _print_summary(report: Report, source: str) -> None:
    inputs = report.inputs
    empirical = "non-empirical" if report.non_empirical else "empirical"
    click.echo(
        f"benchmark {inputs.benchmark_id} (task root {inputs.task_root[:16]}...), run {inputs.run_id}, "
        f"claim class {report.claim_class} ({empirical})"
    )
    click.echo(f"corpus {source}: {inputs.artifact_count} artifacts verified, root {inputs.corpus_root[:16]}...")
    for task in report.tasks:
        click.echo(_task_line(task))
        for failure in task.failed_assertions:
            group = f"{failure.strategy}@{failure.budget}" if failure.budget is not None else failure.strategy
            repetition = f" rep {failure.repetition}" if failure.repetition is not None else ""
            click.echo(f"      {failure.gate}: {group or 'task'}{repetition}: {failure.message}")
    summary = report.summary
    click.echo(
        f"mean savings over {summary.passing_tasks} passing task(s): tokens {_bps(summary.mean_token_savings_bps)}, "
        f"cost {_bps(summary.mean_cost_savings_bps)} (over the {summary.cost_savings_tasks} with a cost baseline)"
    )


_KINDS = ("registry", "benchmark", "run", "report", "verification", "rules")


class _SchemaField(msgspec.Struct):
    """Only a document's ``schema`` field; everything else is skipped unread."""

    schema: str = ""


def _kind_of(path: Path) -> str | None:
    """Which artifact a file is, from its ``schema`` field: of the whole JSON
    document, of the first line of a JSON Lines registry, or of a TOML file."""
    data = map_input(path)
    candidates: list[str] = []
    for document in (data, bytes(data[: data.find(b"\n") if data.find(b"\n") >= 0 else len(data)])):
        try:
            candidates.append(msgspec.json.decode(document, type=_SchemaField).schema)
            break
        except (msgspec.DecodeError, RecursionError):
            continue
    else:
        with contextlib.suppress(msgspec.DecodeError, RecursionError):
            candidates.append(msgspec.toml.decode(bytes(data), type=_SchemaField).schema)
    return next((k for k in _KINDS for c in candidates if c == f"symgliph.eceb/{k}-v0.1"), None)


@click.command()
@click.argument("path", metavar="FILE", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--benchmark",
    "benchmark_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="For a run: also check it against this benchmark and its registry.",
)
@handle_errors
def validate(path: Path, benchmark_path: Path | None) -> None:
    """Validate FILE: a registry, rules file, benchmark, run, report or
    verification report.

    The kind comes from the file's schema identifier (symgliph.eceb/KIND-v0.1).
    A benchmark is checked with its registry, and its task root and corpus
    root are printed (a run must name them); a run, given --benchmark, is
    checked against that benchmark too. Every problem is listed. Exit 0 when
    valid, 3 when not.
    """
    kind = _kind_of(path)
    if benchmark_path is not None and kind != "run":
        raise click.UsageError("--benchmark applies to a run only")
    if kind == "registry":
        registry = load_registry(path)
        click.echo(f"{path}: valid registry: {len(registry.artifacts)} artifacts, corpus root {registry.corpus_root}")
        return
    if kind == "benchmark":
        benchmark, registry = check_benchmark(path)
        click.echo(
            f"{path}: valid benchmark: {len(benchmark.tasks)} tasks, task root {task_root(benchmark.tasks)}, "
            f"corpus root {registry.corpus_root}"
        )
        return
    if kind == "run" and benchmark_path is not None:
        inputs = load_inputs(benchmark_path, path)
        check_run_records(inputs.run, inputs.benchmark)
    elif kind == "run":
        run = load_run(path)
        problems = list(run.unkeyed) + run_header_problems(run.header, None, None, file=str(path))
        if problems:
            raise InputError(problems)
        check_run_records(run)
    elif kind == "report":
        decode_document(read_input(path), Report, "report-v0.1.json", file=str(path))
    elif kind == "verification":
        decode_document(read_input(path), VerificationReport, "verification-v0.1.json", file=str(path))
    elif kind == "rules":
        from eceb_worker.engine.rules import parse_rules

        parse_rules(read_input(path), str(path))
    else:
        known = ", ".join(f"symgliph.eceb/{k}-v0.1" for k in _KINDS)
        raise InputError([Problem(file=str(path), field="schema", message=f"is none of {known}")])
    click.echo(f"{path}: valid {kind}")
