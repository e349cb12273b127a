"""``eceb corpus``: register a corpus, print its root, verify it (ECEB-0.1 §5)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import msgspec

from eceb_cli import exit_codes
from eceb_cli.console import default_workers, handle_errors, progress
from eceb_worker.corpus import load_registry, register_corpus, verify_corpus
from eceb_worker.engine.plan import DEFAULT_FILE_COST_BYTES, DEFAULT_SHARD_BYTES
from eceb_worker.engine.registry import registry_lines
from eceb_worker.engine.verification import VerificationReport
from eceb_worker.executors import InProcessExecutor
from eceb_worker.files import atomic_write, check_writable, read_input
from eceb_worker.storage import StorageSpec

__all__ = ["corpus", "print_findings", "source_options"]

_JSON = msgspec.json.Encoder(order="sorted")


def source_options(function: click.decorators.FC) -> click.decorators.FC:
    """Add the options every command reading a corpus takes: endpoint, workers, concurrency, shard size."""
    for decorator in reversed(
        [
            click.option(
                "--endpoint-url",
                envvar="ECEB_S3_ENDPOINT_URL",
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
                help=f"Work per shard, in bytes (each file also counts {DEFAULT_FILE_COST_BYTES // 1024} KiB).",
            ),
        ]
    ):
        function = decorator(function)
    return function


@click.group()
def corpus() -> None:
    """Register, fingerprint and verify corpora (ECEB-0.1 §5)."""


@corpus.command()
@click.argument("source")
@click.option(
    "--rules", "rules_path", type=click.Path(path_type=Path, dir_okay=False), required=True, help="TOML rules file."
)
@click.option(
    "-o", "--output", type=click.Path(path_type=Path, dir_okay=False), required=True, help="Registry file to write."
)
@source_options
@handle_errors
def register(
    source: str,
    rules_path: Path,
    output: Path,
    endpoint_url: str | None,
    workers: int,
    concurrency: int,
    shard_bytes: int,
) -> None:
    """Build the registry of every file under SOURCE (a directory or s3://bucket/prefix).

    Each file's kind and classification come from the rules file (first
    matching glob wins); its artifact_id is its corpus-relative path. A file
    no rule classifies is an error: every such file is listed, nothing is
    written.
    """
    from eceb_worker.engine.rules import parse_rules  # glob matching: only registering needs it

    check_writable(output)
    rules = parse_rules(read_input(rules_path), str(rules_path))
    spec = StorageSpec(source=source, endpoint_url=endpoint_url, concurrency=concurrency)
    totals: dict[str, int] = {}

    def listed(files: int, size: int) -> None:
        totals.update(files=files, size=size)

    with progress("hashing", total=0) as advance:
        registry = register_corpus(
            spec,
            rules,
            rules_name=str(rules_path),
            executor=InProcessExecutor(workers),
            shard_bytes=shard_bytes,
            on_batch=lambda batch: advance(len(batch)),
            on_listed=listed,
        )
    atomic_write(output, registry_lines(registry))
    size = sum(a.size_bytes for a in registry.artifacts)
    click.echo(f"registered {len(registry.artifacts)} artifacts ({size} bytes) from {source}")
    click.echo(f"corpus root {registry.corpus_root}")
    click.echo(f"wrote {output}")


@corpus.command()
@click.argument("registry_path", metavar="REGISTRY", type=click.Path(path_type=Path, dir_okay=False))
@handle_errors
def root(registry_path: Path) -> None:
    """Validate REGISTRY and print its corpus root (64 hex characters)."""
    click.echo(load_registry(registry_path).corpus_root)


@corpus.command()
@click.argument("registry_path", metavar="REGISTRY", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--source", required=True, help="The corpus: a directory or s3://bucket/prefix.")
@click.option("--json", "as_json", is_flag=True, help="Print the verification report as JSON on stdout.")
@source_options
@handle_errors
def verify(
    registry_path: Path,
    source: str,
    as_json: bool,
    endpoint_url: str | None,
    workers: int,
    concurrency: int,
    shard_bytes: int,
) -> None:
    """Re-hash every artifact of REGISTRY from SOURCE and report every missing,
    stale, unreadable or escaping artifact.

    Exit 0 when all verify, 4 when any does not, 3 for an invalid registry,
    5 when the storage cannot be read at all.
    """
    registry = load_registry(registry_path)
    spec = StorageSpec(source=source, endpoint_url=endpoint_url, concurrency=concurrency)
    with progress("verifying", total=len(registry.artifacts)) as advance:
        report = verify_corpus(
            registry,
            spec,
            executor=InProcessExecutor(workers),
            shard_bytes=shard_bytes,
            on_shard=lambda shard: advance(shard.checked),
        )
    if as_json:
        sys.stdout.buffer.write(_JSON.encode(report) + b"\n")
    else:
        _print_report(report)
    if not report.ok:
        sys.exit(exit_codes.VERIFICATION_FAILED)


def print_findings(report: VerificationReport) -> None:
    """Print one line per failing artifact on stderr."""
    for finding in report.findings:
        line = f"{finding.status.upper()}  {finding.path}"
        if finding.artifact_id != finding.path:
            line += f"  (artifact {finding.artifact_id})"
        if finding.status == "stale":
            line += (
                f"  expected {finding.expected_digest} ({finding.expected_size} bytes),"
                f" found {finding.observed_digest} ({finding.observed_size} bytes)"
            )
        elif finding.detail:
            line += f"  {finding.detail}"
        click.echo(line, err=True)


def _print_report(report: VerificationReport) -> None:
    print_findings(report)
    verdict = "verified" if report.ok else "FAILED"
    click.echo(
        f"{verdict}: {report.verified_count}/{report.artifact_count} artifacts match "
        f"({report.bytes_hashed} bytes hashed) from {report.source}; corpus root {report.corpus_root}"
    )
