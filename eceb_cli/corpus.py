"""``eceb corpus``: register a corpus, print its root, verify it (ECEB-0.1 §5)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

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
from eceb_worker.errors import InputError, OutputError
from eceb_worker.executors import InProcessExecutor
from eceb_worker.io.files import read_input
from eceb_worker.pipeline.inputs import load_registry
from eceb_worker.pipeline.jobs import SCAN_COST
from eceb_worker.pipeline.messages import HashAnswer, RehashAnswer, ShardAnswer
from eceb_worker.render.text import finding_lines, unregistered_lines, verification_verdict

if TYPE_CHECKING:
    from eceb_worker.pipeline.register import Registration

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
@click.option(
    "--previous",
    "previous_path",
    metavar="REGISTRY",
    callback=location,
    help=(
        "A registry written earlier from this corpus (a file or s3:// object), its listing snapshot beside it: "
        "files listed with the size and version the snapshot holds (S3 ETag and LastModified; a local file's "
        "mtime, ctime and inode) take their digest from it instead of being hashed. Same registry bytes."
    ),
)
@source_options
def register(
    source: str,
    rules_path: Path,
    output: Output,
    as_json: bool,
    previous_path: str | None,
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

    Beside the registry, REGISTRY_STEM.listing.jsonl records what identified
    each file's version when it was listed (not with -o -). Given as
    --previous, a registry and that snapshot let the next registration hash
    only the files that changed; without a snapshot bound to it, every file
    is hashed (a warning says why).
    """
    from eceb_worker.corpus.rules import group_unclassified
    from eceb_worker.io.locations import Locator
    from eceb_worker.pipeline.inputs import load_rules
    from eceb_worker.pipeline.register import build_registration, open_previous, write_listing

    if as_json and output.to_stdout:
        raise click.UsageError("--json prints on standard output, which -o - already takes for the registry")
    listing = _checked_outputs(output, source, [rules_path], previous_path)
    rules = load_rules(read_input(rules_path), str(rules_path))
    spec = StorageSpec(source=source, endpoint_url=endpoint(endpoint_url), concurrency=concurrency)
    previous = None
    if previous_path is not None:
        previous = open_previous(previous_path, Locator(spec.endpoint_url), on_warning=_warn)
    try:
        with progress("hashing", total=0) as advance:
            registration = build_registration(
                spec,
                rules,
                rules_name=str(rules_path),
                previous=previous,
                executor=InProcessExecutor(workers),
                shard_bytes=shard_bytes,
                on_answer=advance_by(advance),
                on_warning=_warn,
            )
    except InputError as error:
        if is_verbose():  # every file, one problem a line
            raise
        raise InputError(group_unclassified(error.problems, str(rules_path), hint=" (-v lists every file)")) from None
    output.write(registry_lines(registration.registry))
    if output.path is not None and listing is not None:
        try:
            write_listing(registration, output.path)
        except OutputError as error:  # the registry stands; the next --previous hashes every file
            _warn(f"{error}: no listing snapshot, so a registration with --previous {output} will hash every file")
            listing = None
    _say_registered(registration, output, listing, source=source, previous=previous_path, as_json=as_json)


def _warn(line: str) -> None:
    """A warning of ``register`` on standard error (shown with -q too)."""
    click.echo(f"warning: {line}", err=True)


def _checked_outputs(output: Output, source: str, inputs: list[str | Path], previous: str | None) -> Output | None:
    """Check the registry ``register`` writes and its listing snapshot
    (none with ``-o -``), which is returned: both writable, neither an input
    (the rules, the previous registry or its snapshot) nor inside the corpus."""
    from eceb_worker.core.urls import is_s3_url
    from eceb_worker.pipeline.register import listing_path

    if previous is not None and not is_s3_url(previous):
        inputs = [*inputs, previous, listing_path(Path(previous))]
    listing = None if output.path is None else Output(listing_path(output.path))
    for written in (output, listing):
        if written is not None:
            written.check(inputs)
            written.check_outside(source)
    return listing


def _say_registered(
    registration: Registration,
    output: Output,
    listing: Output | None,
    *,
    source: str,
    previous: str | None,
    as_json: bool,
) -> None:
    """Print what ``register`` did: one JSON object, or its lines (on standard
    error when standard output holds the registry)."""
    registry = registration.registry
    size = sum(a.size_bytes for a in registry.artifacts)
    if as_json:
        found = {"artifact_count": len(registry.artifacts), "bytes": size, "corpus_root": registry.corpus_root}
        counts = {"rehashed": registration.rehashed, "reused": registration.reused}
        named = {"listing": None if listing is None else str(listing), "registry": str(output), "source": source}
        click.echo(msgspec.json.encode(dict(sorted({**found, **counts, **named}.items()))).decode())
        return
    lines = [f"registered {len(registry.artifacts)} artifacts ({size} bytes) from {source}"]
    if previous is not None:
        lines.append(f"hashed {registration.rehashed}, took the digests of {registration.reused} from {previous}")
    if output.to_stdout:  # standard output holds the registry alone
        for line in [*lines, f"corpus root {registry.corpus_root}"]:
            info(line)
        return
    for line in lines:
        say(line)
    click.echo(f"corpus root {registry.corpus_root}")
    say(f"wrote {output}")
    if listing is not None:
        say(f"wrote {listing}")


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


@exits(exit_codes.BAD_INPUT, exit_codes.STORAGE, exit_codes.OUTPUT)
@corpus.command(name="diff")
@click.argument("old_path", metavar="OLD", callback=location)
@click.argument("new_path", metavar="NEW", callback=location)
@click.option(
    "--benchmark",
    "benchmark_path",
    metavar="BENCHMARK",
    callback=location,
    help="Also name each task whose required or denied artifacts changed, and say whether its corpus root holds.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the diff document (schema corpus-diff-v0.1).")
@click.option("--markdown", "as_markdown", is_flag=True, help="Print Markdown, for a CI comment.")
@output_option("Write the diff here (atomically) instead of standard output.")
@click.option("--endpoint-url", help="S3-compatible endpoint for s3:// inputs (else ECEB_S3_ENDPOINT_URL).")
def corpus_diff(
    old_path: str,
    new_path: str,
    benchmark_path: str | None,
    as_json: bool,
    as_markdown: bool,
    output: Output | None,
    endpoint_url: str | None,
) -> None:
    """Say what changed from registry OLD to registry NEW (files or
    s3://bucket/key objects): artifacts added, removed and changed, each
    change named by field (path, kind, classification, source_digest,
    size_bytes), old -> new.

    With --benchmark, also whether the corpus root the benchmark pins still
    holds (is NEW's), and each task whose required or denied artifacts were
    added, removed or changed, by task id and artifact id.

    Text by default (a summary line, then sections); --json prints the diff
    document, --markdown a CI comment. Exit 0 whatever the differences (the
    output says them), 3 for an invalid registry or benchmark (every problem
    named by file, line and field), 5 when storage cannot be read, 6 when
    the output cannot be written (or is one of the inputs), 2 for a usage
    error.
    """
    from eceb_cli.conventions import is_quiet
    from eceb_worker.corpus.diff import encode_corpus_diff
    from eceb_worker.io.locations import Locator
    from eceb_worker.pipeline.corpus_diff import read_corpus_diff
    from eceb_worker.render.corpus_diff import corpus_diff_lines, corpus_diff_markdown, corpus_diff_summary
    from eceb_worker.render.terminal import printable

    if as_json and as_markdown:
        raise click.UsageError("--json and --markdown are exclusive: choose one format")
    if output is not None:
        output.check([old_path, new_path, *([benchmark_path] if benchmark_path else [])])
    found = read_corpus_diff(old_path, new_path, benchmark_path, Locator(endpoint(endpoint_url)))
    names = (old_path, new_path)
    if as_json:
        data = encode_corpus_diff(found)
    elif as_markdown:
        data = corpus_diff_markdown(found, names).encode()
    elif is_quiet() and output is None:
        data = (corpus_diff_summary(found) + "\n").encode()
    else:
        data = "".join(line + "\n" for line in corpus_diff_lines(found, names)).encode()
    if output is None:
        Output(None).write([data])
    else:
        output.write([data])
        click.echo(printable(f"{corpus_diff_summary(found)}; diff written to {output}"), err=output.to_stdout)
