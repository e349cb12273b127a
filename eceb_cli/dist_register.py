"""``eceb-dist register``: build a corpus's registry on the cluster
(ECEB-0.1 §5): the listing spread over the workers by key ranges, the
hashing by byte ranges of the listing, the partial registries merged into
the bytes ``eceb corpus register`` writes for the same objects
(docs/DISTRIBUTED.md, "Registering a corpus on the cluster").
"""

from __future__ import annotations

import uuid
from pathlib import Path

import click

from eceb_cli import exit_codes
from eceb_cli.arguments import local_path
from eceb_cli.cluster_commands import cluster_endpoint, cluster_options, submit_job
from eceb_cli.conventions import exits
from eceb_cli.submission import DEFAULT_CONCURRENCY, corpus_argument, object_argument
from eceb_worker.corpus.planning import DEFAULT_FILE_COST_BYTES, DEFAULT_TASK_BYTES
from eceb_worker.pipeline.messages import JobMessage

__all__ = ["register", "registration_message"]


def registration_message(
    source: str,
    rules_path: Path,
    *,
    out: str,
    endpoint_url: str | None,
    shard_bytes: int = DEFAULT_TASK_BYTES,
    concurrency: int = DEFAULT_CONCURRENCY,
    previous: str = "",
    job_id: str | None = None,
) -> JobMessage:
    """The message of the job registering the corpus ``source``
    (``s3://bucket/prefix``; ``click.UsageError`` for anything else) with
    the rules file at ``rules_path`` (read and checked here, as ``eceb
    corpus register`` reads it: :class:`~eceb_worker.errors.InputError`
    with every problem), its registry written to ``out``
    (``s3://bucket/key``, checked: :class:`~eceb_worker.errors.OutputError`
    when it lies under the corpus prefix). The rules travel in the message.
    ``previous``: an earlier registry (``s3://bucket/key``) whose listing
    snapshot lets unchanged objects keep their digests (incremental)."""
    from eceb_worker.core.urls import is_s3_url
    from eceb_worker.corpus.storage import StorageSpec
    from eceb_worker.io.files import read_input
    from eceb_worker.pipeline.inputs import load_rules
    from eceb_worker.pipeline.messages import JobInputs, JobKind, RegistrationOptions
    from eceb_worker.pipeline.register_job import check_output

    source = corpus_argument(source)
    if not is_s3_url(source):
        raise click.UsageError(
            "SOURCE must be an s3://bucket/prefix URL: the workers list object storage by key ranges "
            "(register a directory with eceb corpus register)"
        )
    out = object_argument(out, "--out")
    rules = load_rules(read_input(rules_path), str(rules_path))
    message = JobMessage(
        job_id=job_id or uuid.uuid4().hex,
        kind=JobKind.REGISTER,
        inputs=JobInputs(endpoint_url=endpoint_url),
        corpus=StorageSpec(source=source, endpoint_url=endpoint_url, concurrency=concurrency),
        out=out,
        shard_bytes=shard_bytes,
        registration=RegistrationOptions(
            rules=rules,
            rules_name=str(rules_path),
            previous=object_argument(previous, "--previous") if previous else "",
        ),
    )
    check_output(message)
    return message


@exits(exit_codes.BAD_INPUT, exit_codes.STORAGE, exit_codes.OUTPUT)
@click.command("register")
@click.argument("source", metavar="SOURCE")
@click.option(
    "--rules",
    "rules_path",
    callback=local_path,
    required=True,
    help="TOML rules file, read here (it travels with the job).",
)
@click.option("--out", "out", required=True, help="Where the registry is written (atomically): s3://bucket/key.")
@click.option(
    "--shard-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_TASK_BYTES,
    show_default=True,
    help=f"Hash work per shard, in bytes hashed (a file adds {DEFAULT_FILE_COST_BYTES // 1024} KiB); one task each.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=DEFAULT_CONCURRENCY,
    show_default=True,
    help="Object reads per worker.",
)
@click.option(
    "--previous",
    metavar="REGISTRY",
    default="",
    help="An earlier registry (s3://bucket/key): objects its listing snapshot shows unchanged keep their digests.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (for scripts).")
@cluster_options
def register(
    source: str,
    rules_path: Path,
    out: str,
    shard_bytes: int,
    concurrency: int,
    previous: str,
    as_json: bool,
) -> None:
    """Register every object under SOURCE (s3://bucket/prefix) on the cluster and print the job id.

    Each file's kind and classification come from the rules file, as with
    `eceb corpus register`, whose registry bytes the job writes to --out.
    The listing is spread over the workers by key ranges, the hashing by
    shards of --shard-bytes. A file no rule classifies fails the job (exit
    3 from `wait`), every such file grouped, nothing written. A listing
    snapshot is written beside the registry; with --previous, only objects
    whose size, ETag or LastModified differ from the previous registry's
    snapshot are read, and the registry is the same bytes. Returns at
    once; follow the job with `status`, `wait` and `result` (which prints
    the registry).
    """
    message = registration_message(
        source,
        rules_path,
        out=out,
        endpoint_url=cluster_endpoint(),
        shard_bytes=shard_bytes,
        concurrency=concurrency,
        previous=previous,
    )
    submit_job(message, as_json=as_json, rules=str(rules_path))
