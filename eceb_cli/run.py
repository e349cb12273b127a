"""``eceb run``: make a run, driving the user's context system, a model and a
judge through every task, strategy, budget and repetition of a benchmark,
journaled so that nothing is paid for twice (ECEB-0.1 §7-§9, §13)."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click
import msgspec

from eceb_cli import exit_codes
from eceb_cli.arguments import local_path
from eceb_cli.conventions import exits, info, is_quiet
from eceb_cli.outputs import Output, output_option
from eceb_worker.core.figures import grouped, usd
from eceb_worker.core.urls import is_s3_url
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.errors import ExecutionRefused, OutputError, ProviderError, StorageError
from eceb_worker.families.eceb.making.estimate import estimate_plan
from eceb_worker.families.eceb.making.plan import executions
from eceb_worker.io.files import check_not_an_input
from eceb_worker.io.storage import open_storage
from eceb_worker.pipeline.making.calls import ExecutionResult
from eceb_worker.pipeline.making.inputs import MakingInputs, load_making_inputs
from eceb_worker.pipeline.making.session import MadeRun, RunOutputs, SessionOptions, make_run

__all__ = ["run"]


@exits(
    exit_codes.TASKS_FAILED,
    exit_codes.BAD_INPUT,
    exit_codes.STORAGE,
    exit_codes.OUTPUT,
    exit_codes.EXECUTION_REFUSED,
    exit_codes.PROVIDER_FAILED,
    meanings={exit_codes.TASKS_FAILED: "made, with executions that failed"},
)
@click.command()
@click.argument("benchmark_path", metavar="BENCHMARK", callback=local_path)
@click.argument("profile_path", metavar="PROFILE", callback=local_path)
@click.option("--corpus", "source", required=True, help="The corpus directory the benchmark's registry describes.")
@output_option("Write the run here (atomically); its transcripts and judgments go beside it.")
@click.option(
    "--journal",
    "journal_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The run's journal (SQLite). Default: beside the run, RUN_STEM.journal.",
)
@click.option("--resume", is_flag=True, help="Go on with the journal: make only what it does not hold.")
@click.option(
    "--rerun-unknown",
    is_flag=True,
    help="Send again the calls whose outcome is unknown (the process sending them stopped); "
    "their possible cost stays counted.",
)
@click.option("--dry-run", is_flag=True, help="Print the plan, its tokens and its spend; call and write nothing.")
def run(
    benchmark_path: Path,
    profile_path: Path,
    source: str,
    output: Output | None,
    journal_path: Path | None,
    resume: bool,
    rerun_unknown: bool,
    dry_run: bool,
) -> None:
    """Make a run of BENCHMARK as PROFILE declares it: the model, the judge,
    the context system, the prompt template, pricing and spending limits.

    eceb builds the full permitted-context and naive top-k baselines itself
    and asks the context system for the compiled context at each budget;
    every paid call is journaled before it is sent (--journal), so a run
    cut short goes on with --resume and pays only for what is missing.
    Writes RUN, RUN_STEM.transcripts.jsonl and RUN_STEM.judgments.jsonl
    when every execution has come to an end. Credentials come from the
    environment variable or file the profile names, never from the profile.
    """
    inputs = load_making_inputs(benchmark_path, profile_path)
    if dry_run:
        _print_plan(inputs)
        return
    if output is None:
        raise click.UsageError("give -o RUN (a file, or - for standard output)")
    outputs, journal = _paths(output, journal_path)
    try:
        _check_outputs(inputs, source, outputs, journal, to_stdout=output.to_stdout)
        storage = open_storage(StorageSpec(source=source))
        _check_corpus(inputs, source)
        options = SessionOptions(journal=journal, resume=resume, rerun_unknown=rerun_unknown, environ=dict(os.environ))
        with _progress() as (start, advance), _resume_hint(journal):
            made = make_run(
                inputs, storage=storage, options=options, outputs=outputs, on_start=start, on_result=advance
            )
        if output.to_stdout:
            sys.stdout.buffer.write(outputs.run.read_bytes())
            sys.stdout.flush()
    finally:
        if output.to_stdout:
            outputs.run.unlink(missing_ok=True)
    written = "" if output.to_stdout else f"; run written to {outputs.run}"
    click.echo(
        f"{made.made}/{made.executions} executions made, {made.failed} failed{_before(made)}, "
        f"{made.retried} attempts retried; "
        f"spend {usd(made.spent_micro_usd)} known, {usd(made.possible_micro_usd)} possible"
        f"{written}",
        err=output.to_stdout,
    )
    if made.failed:
        sys.exit(exit_codes.TASKS_FAILED)


def _before(made: MadeRun) -> str:
    """What a resumed run found made: `` (all 72 before this run: no call sent)``."""
    if not made.before:
        return ""
    if made.before == made.executions:
        return f" (all {made.before} before this run: no call sent)"
    return f" ({made.before} of them before this run)"


@contextmanager
def _resume_hint(journal: Path) -> Iterator[None]:
    """After a failure that leaves the journal, say how to go on."""
    try:
        yield
    except (ExecutionRefused, ProviderError, StorageError):
        if journal.exists():
            info(f"the journal {journal} keeps what was made: the same command with --resume goes on")
        raise


def _check_corpus(inputs: MakingInputs, source: str) -> None:
    """Refuse (``StorageError``, before anything is created) a local corpus
    directory that does not hold the registry's first artifact: most often
    a directory one level off."""
    if is_s3_url(source) or not inputs.registry.artifacts:
        return
    first = inputs.registry.artifacts[0].path
    if not (Path(source) / first).is_file():
        question = "is it the corpus directory the registry describes?"
        raise StorageError(f"{source}: holds no {first}, the registry's first artifact: {question}")


def _check_outputs(inputs: MakingInputs, source: str, outputs: RunOutputs, journal: Path, *, to_stdout: bool) -> None:
    """Refuse (:class:`OutputError`, before anything runs) an output that
    is an input (benchmark, registry, profile, rubric), a registered
    artifact of the corpus, or the journal; and a journal that is an input
    or an output."""
    written = [outputs.transcripts, outputs.judgments, *([] if to_stdout else [outputs.run])]
    registered = {artifact.path for artifact in inputs.registry.artifacts}
    for path in written:
        target = Output(path)
        target.check([*inputs.files, journal])
        target.check_outside(source, registered.__contains__)
    check_not_an_input(journal, [*inputs.files, *written])
    if any(path.resolve() == journal.resolve() for path in written):
        raise OutputError(f"{journal}: the journal cannot be one of the run's outputs (give another --journal)")


def _paths(output: Output, journal_path: Path | None) -> tuple[RunOutputs, Path]:
    if output.path is None:
        if journal_path is None:
            raise click.UsageError("-o - needs --journal: the journal and the transcripts go beside it")
        stem = journal_path.name.removesuffix(".journal")
        beside = RunOutputs.beside(journal_path.with_name(f"{stem}.json"))
        fd, staged = tempfile.mkstemp(dir=journal_path.parent or ".", prefix=f".{stem}.", suffix=".run.json")
        os.close(fd)  # the run is staged here, copied to standard output, then removed: no file is replaced
        return msgspec.structs.replace(beside, run=Path(staged)), journal_path
    stem = output.path.name.removesuffix(".json")
    return RunOutputs.beside(output.path), journal_path or output.path.with_name(f"{stem}.journal")


def _print_plan(inputs: MakingInputs) -> None:
    profile = inputs.profile
    plan = list(executions(inputs.benchmark, profile))
    estimate = estimate_plan(profile, plan, inputs.benchmark.tasks, inputs.registry.artifacts, inputs.rubric)
    strategies = ", ".join(f"{count} {strategy}" for strategy, count in estimate.executions.items())
    click.echo(f"plan: {len(plan)} executions of {len(inputs.benchmark.tasks)} tasks ({strategies})")
    click.echo(f"paid calls: {estimate.paid_calls} (answers and LLM judgments)")
    tokens = f"{grouped(estimate.input_tokens)} input (estimated), {grouped(estimate.output_tokens)} output"
    click.echo(f"tokens at most: {tokens}")
    pricing = profile.pricing
    click.echo(
        f"spend at most: {usd(estimate.upper_micro_usd)} "
        f"(pricing {pricing.source}, {pricing.date}; no cache discount, every output allowance used)"
    )


@contextmanager
def _progress() -> Iterator[tuple[Callable[[int, int], None], Callable[[ExecutionResult], None]]]:
    """A progress bar of executions, input tokens and spend on a terminal's standard error."""
    if is_quiet() or not sys.stderr.isatty():
        yield (lambda total, done: None), (lambda result: None)
        return
    from tqdm import tqdm

    bar = tqdm(total=0, desc="executions", unit="exec", file=sys.stderr, leave=False)
    totals = [0, 0]

    def start(total: int, done: int) -> None:
        bar.reset(total=total)
        bar.update(done)
        if done:
            info(f"{done} of {total} executions made before; going on")

    def advance(result: ExecutionResult) -> None:
        totals[0] += result.input_tokens
        totals[1] += result.spend_micro_usd
        bar.set_postfix_str(f"{grouped(totals[0])} tokens in, {usd(totals[1])}", refresh=False)
        bar.update(1)

    try:
        yield start, advance
    finally:
        bar.close()
