"""``eceb corpus``: register a corpus, print its root, verify it (ECEB-0.1 §5)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click
import msgspec

from eceb_cli import exit_codes
from eceb_cli.arguments import local_path, location
from eceb_cli.console import default_workers, endpoint, progress
from eceb_cli.conventions import ConventionalGroup, exits, info, is_verbose, say
from eceb_cli.outputs import Output, output_option
from eceb_worker.corpus.planning import DEFAULT_FILE_COST_BYTES, DEFAULT_SHARD_BYTES
from eceb_worker.corpus.registry import registry_lines
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.corpus.verification import VerificationReport, encode_verification
from eceb_worker.errors import InputError
from eceb_worker.executors import InProcessExecutor
from eceb_worker.io.files import read_input
from eceb_worker.pipeline.inputs import load_registry
from eceb_worker.pipeline.jobs import SCAN_COST
from eceb_worker.pipeline.messages import HashAnswer, RehashAnswer, ShardAnswer
from eceb_worker.render.text import finding_lines, unregistered_lines, verification_verdict

__all__ = ["advance_by", "corpus", "print_findings", "source_options"]


def source_options(function: click.decorators.FC) -> click.decorators.FC:
    """Add the options every command reading a corpus takes: endpoint, workers, concurrency, shard size."""
    for decorator in reversed(
        [
            click.option(
                "--endpoint-url",
                help="S3-compatible endpoint for s3:// sources (MinIO, Ceph, ...). Env: ECEB_S3_ENDPOINT_URL.",
            ),
            click.option(
                "--workers",
                type=click.IntRange(min=1),
                default=default_workers,
                show_default="one per core",
                help="Processes that hash in parallel.",
            ),
            click.option(
                "--concurrency",
                type=click.IntRange(min=1),
                default=16,
                show_default=True,
                help="Concurrent object reads per process (s3:// sources).",
            ),
            click.option(
                "--shard-bytes",
                type=click.IntRange(min=1),
                default=DEFAULT_SHARD_BYTES,
                show_default=True,
                help=(
                    f"Work per shard, in bytes hashed (each file also counts {DEFAULT_FILE_COST_BYTES // 1024} KiB; "
                    f"with the disclosure check on, each byte scanned counts {SCAN_COST})."
                ),
            ),
        ]
    ):
        function = decorator(function)
    return function


@click.group(cls=ConventionalGroup)
def corpus() -> None:
    """Register, fingerprint and verify corpora (ECEB-0.1 §5)."""


@exits(exit_codes.BAD_INPUT, exit_codes.STORAGE, exit_codes.OUTPUT)
@corpus.command()
@click.argument("source", callback=location)
@click.option("--rules", "rules_path", callback=local_path, required=True, help="TOML rules file.")
@output_option("Registry file to write (atomically).", required=True)
@click.option("--json", "as_json", is_flag=True, help="Print what was registered as one JSON object (not with -o -).")
@source_options
def register(
    source: str,
    rules_path: Path,
    output: Output,
    as_json: bool,
    endpoint_url: str | None,
    workers: int,
    concurrency: int,
    shard_bytes: int,
) -> None:
    """Build the registry of every file under SOURCE (a directory or s3://bucket/prefix).

    Each file's kind and classification come from the rules file (first
    matching glob wins); its artifact_id is its corpus-relative path. A file
    no rule classifies is an error, nothing is written: such files are
    grouped by top-level directory, with their count and the first few
    named (-v lists every file).
    """
    from eceb_worker.corpus.rules import group_unclassified
    from eceb_worker.pipeline.inputs import load_rules
    from eceb_worker.pipeline.register import register_corpus

    if as_json and output.to_stdout:
        raise click.UsageError("--json prints on standard output, which -o - already takes for the registry")
    output.check([rules_path])
    output.check_outside(source)
    rules = load_rules(read_input(rules_path), str(rules_path))
    spec = StorageSpec(source=source, endpoint_url=endpoint(endpoint_url), concurrency=concurrency)
    totals: dict[str, int] = {}

    def listed(files: int, size: int) -> None:
        totals.update(files=files, size=size)

    try:
        with progress("hashing", total=0) as advance:
            registry = register_corpus(
                spec,
                rules,
                rules_name=str(rules_path),
                executor=InProcessExecutor(workers),
                shard_bytes=shard_bytes,
                on_answer=advance_by(advance),
                on_listed=listed,
            )
    except InputError as error:
        if is_verbose():  # every file, one problem a line
            raise
        raise InputError(group_unclassified(error.problems, str(rules_path), hint=" (-v lists every file)")) from None
    output.write(registry_lines(registry))
    size = sum(a.size_bytes for a in registry.artifacts)
    if as_json:
        found = {"artifact_count": len(registry.artifacts), "bytes": size, "corpus_root": registry.corpus_root}
        click.echo(msgspec.json.encode({**found, "registry": str(output), "source": source}).decode())
        return
    registered = f"registered {len(registry.artifacts)} artifacts ({size} bytes) from {source}"
    if output.to_stdout:  # standard output holds the registry alone
        info(registered)
        info(f"corpus root {registry.corpus_root}")
        return
    say(registered)
    click.echo(f"corpus root {registry.corpus_root}")
    say(f"wrote {output}")


@exits(exit_codes.BAD_INPUT, exit_codes.STORAGE)
@corpus.command()
@click.argument("registry_path", metavar="REGISTRY", callback=local_path)
@click.option("--json", "as_json", is_flag=True, help="Print the corpus root and artifact count as one JSON object.")
def root(registry_path: Path, as_json: bool) -> None:
    """Validate REGISTRY and print its corpus root (64 hex characters)."""
    registry = load_registry(registry_path)
    if as_json:
        found = {"artifact_count": registry.artifact_count, "corpus_root": registry.corpus_root}
        click.echo(msgspec.json.encode(found).decode())
        return
    click.echo(registry.corpus_root)


@exits(exit_codes.BAD_INPUT, exit_codes.VERIFICATION_FAILED, exit_codes.STORAGE, exit_codes.OUTPUT)
@corpus.command()
@click.argument("registry_path", metavar="REGISTRY", callback=local_path)
@click.option("--source", required=True, callback=location, help="The corpus: a directory or s3://bucket/prefix.")
@click.option("--json", "as_json", is_flag=True, help="Print the verification report as JSON on stdout.")
@click.option(
    "--unregistered",
    type=click.Choice(["fail", "report", "ignore"]),
    default="fail",
    show_default=True,
    help=(
        "Files (objects) of SOURCE that REGISTRY does not list: fail the verification, "
        "only report them, or do not look for them."
    ),
)
@click.option(
    "--rules",
    "rules_path",
    callback=local_path,
    help="The rules file REGISTRY was made with: files its exclude globs match are not unregistered.",
)
@source_options
def verify(
    registry_path: Path,
    source: str,
    as_json: bool,
    unregistered: str,
    rules_path: Path | None,
    endpoint_url: str | None,
    workers: int,
    concurrency: int,
    shard_bytes: int,
) -> None:
    """Re-hash every artifact of REGISTRY from SOURCE and report every missing,
    stale, unreadable or escaping artifact, and every file of SOURCE that
    REGISTRY does not list (by name only).

    Exit 0 when all verify and no file is unregistered (or only reported),
    4 when any does not, 3 for an invalid registry, 5 when the storage
    cannot be read at all.
    """
    from eceb_worker.executors.streaming import verify_streamed

    skip = None
    if rules_path is not None:
        from eceb_worker.corpus.rules import excluded
        from eceb_worker.pipeline.inputs import load_rules

        skip = excluded(load_rules(read_input(rules_path), str(rules_path)))
    spec = StorageSpec(source=source, endpoint_url=endpoint(endpoint_url), concurrency=concurrency)
    with progress("verifying", total=0) as advance:  # the count is known once the registry is checked
        report = verify_streamed(
            str(registry_path), spec, workers=workers, shard_bytes=shard_bytes, on_answer=advance_by(advance)
        )
    if unregistered != "ignore":
        from eceb_worker.io.unregistered import find_unregistered, with_unregistered

        with progress("listing", total=0) as listed:
            found = find_unregistered(
                str(registry_path), spec, fail=unregistered == "fail", on_listed=listed, skip=skip
            )
        report = with_unregistered(report, found)
    print_verification(report, as_json=as_json)


def advance_by(advance: Callable[[int], object]) -> Callable[[ShardAnswer], None]:
    """A progress callback of shard answers: ``advance`` by the files each checked or hashed."""

    def on_answer(answer: ShardAnswer) -> None:
        if isinstance(answer, RehashAnswer):
            advance(answer.verification.checked)
        elif isinstance(answer, HashAnswer):
            advance(len(answer.outcomes))

    return on_answer


def print_verification(report: VerificationReport, *, as_json: bool) -> None:
    """Print a verification report as ``eceb corpus verify`` does (its JSON
    on stdout, or its findings and unregistered files on stderr and its
    verdict), then exit 4 unless it is ok (every artifact verified, and no
    unregistered file that fails it)."""
    if as_json:
        sys.stdout.buffer.write(encode_verification(report))
        sys.stdout.flush()
    else:
        print_findings(report)
        for line in unregistered_lines(report):
            click.echo(line, err=True)
        click.echo(verification_verdict(report))
    if not report.ok:
        sys.exit(exit_codes.VERIFICATION_FAILED)


def print_findings(report: VerificationReport) -> None:
    """Print one line per failing artifact on stderr."""
    for line in finding_lines(report):
        click.echo(line, err=True)
