"""``eceb publish``: assemble a publication bundle (ECEB-0.1 §16), or
verify one (``--check``), its claim class judged against its evidence (§15)."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import click

from eceb_cli import exit_codes
from eceb_cli.arguments import local_path, location
from eceb_cli.console import endpoint
from eceb_cli.conventions import exits, info, say
from eceb_cli.corpus import print_findings, source_options
from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.urls import check_location
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.errors import VerificationError
from eceb_worker.executors import InProcessExecutor
from eceb_worker.families.eceb.vocabulary import ClaimClass
from eceb_worker.io.bundles import check_new_directory
from eceb_worker.pipeline.publication import assemble_bundle, check_bundle, made_files, write_bundle

__all__ = ["publish"]


def _directory(_ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    """A local directory path (a URL is a usage error: bundles are local directories)."""
    if value is None:
        return None
    try:
        check_location(value, s3=False)
    except ValueError as exc:  # the message shows the URL without its credentials
        raise click.BadParameter(str(exc), param=param) from None
    return Path(value)


def _files(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[Path, ...]:
    """Local file paths (:func:`local_path` of each)."""
    return tuple(path for value in values if (path := local_path(ctx, param, value)) is not None)


@exits(
    exit_codes.BAD_INPUT,
    exit_codes.VERIFICATION_FAILED,
    exit_codes.STORAGE,
    exit_codes.OUTPUT,
    exit_codes.PUBLICATION_REFUSED,
)
@click.command()
@click.argument("inputs", nargs=-1, metavar="BENCHMARK RUN REPORT", callback=_files)
@click.option("-o", "--output", "output", callback=_directory, metavar="DIR", help="The bundle: a new directory.")
@click.option("--sources", "sources", callback=local_path, metavar="FILE", help="Sources file (sources-v0.1).")
@click.option(
    "--declarations", callback=local_path, metavar="FILE", help="Declarations file (declarations-v0.1), optional."
)
@click.option("--implementation-revision", metavar="REV", help="Revision of the context-construction implementation.")
@click.option(
    "--rubric",
    callback=local_path,
    metavar="FILE",
    help="The judge's rubric: its BLAKE3 must be the run's judge.rubric_digest.",
)
@click.option(
    "--no-transcripts",
    "no_transcripts",
    is_flag=True,
    help="Leave out the transcripts found beside RUN (a corpus not redistributable refuses them).",
)
@click.option(
    "--claim",
    "claimed",
    type=click.Choice(get_args(ClaimClass)),
    help="Claim class the bundle states (default: the run's own).",
)
@click.option("--check", "check_dir", callback=_directory, metavar="DIR", help="Verify the bundle in DIR instead.")
@click.option(
    "--corpus", "source", callback=location, help="With --check: the corpus, a directory or s3://bucket/prefix."
)
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as one JSON object.")
@source_options
def publish(
    inputs: tuple[Path, ...],
    output: Path | None,
    sources: Path | None,
    declarations: Path | None,
    implementation_revision: str | None,
    rubric: Path | None,
    no_transcripts: bool,
    claimed: ClaimClass | None,
    check_dir: Path | None,
    source: str | None,
    as_json: bool,
    endpoint_url: str | None,
    workers: int,
    concurrency: int,
    shard_bytes: int,
) -> None:
    """Assemble a publication bundle from BENCHMARK, RUN and REPORT (local
    files) into the new directory -o DIR, or verify one with --check DIR
    --corpus CORPUS.

    The bundle copies the benchmark, its registry, the run, the report, the
    --sources file and the --declarations file, the transcripts and
    judgments eceb run wrote beside RUN (RUN_STEM.transcripts.jsonl,
    RUN_STEM.judgments.jsonl) and the judge's --rubric, and binds each by
    size and BLAKE3 digest in manifest.json, with every item ECEB-0.1 §16
    requires:
    corpus and task roots, source licences and redistribution status, the
    --implementation-revision, model, judge, tokenizer and pricing
    identities, the raw measurements, every exclusion, timeout, retry and
    failed task, uncertainty, human-review status. The judgments must agree
    with the run and the rubric be the one its judge names (§9). The claim
    class (--claim, default the run's) must be supported by the evidence
    (§15; an empirical model-quality claim whose judge names a rubric needs
    the judgments and the rubric): every reason it is not is named and
    nothing is written.

    --check re-hashes every bound file (naming each missing, changed or
    added one), derives the manifest again from the files, checks the
    judgments against the run line by line, judges the claim class, and
    recomputes the report from the bundled benchmark and run and the
    corpus, comparing bytes. Exit 0 when it verifies, 11 when refused
    (every reason listed), 3 for an invalid manifest or input, 4 when the
    corpus does not verify, 6 when -o exists or cannot be written.
    """
    if check_dir is not None:
        if inputs or no_transcripts or any(v is not None for v in (output, sources, declarations, rubric)):
            raise click.UsageError(
                "--check DIR takes only --corpus (and its storage options): no inputs, -o, files or --no-transcripts"
            )
        if implementation_revision is not None or claimed is not None:
            raise click.UsageError("--check DIR judges the claim the bundle states: give no --claim or revision")
        if source is None:
            raise click.UsageError("--check needs --corpus: the report is recomputed from the corpus")
        spec = StorageSpec(source=source, endpoint_url=endpoint(endpoint_url), concurrency=concurrency)
        _check(check_dir, spec, as_json=as_json, workers=workers, shard_bytes=shard_bytes)
        return
    if source is not None:
        raise click.UsageError("--corpus applies to --check only")
    if len(inputs) != 3:
        raise click.UsageError("give BENCHMARK RUN REPORT (or --check DIR)")
    missing = [name for name, value in (("-o", output), ("--sources", sources)) if value is None]
    if not (implementation_revision or "").strip():
        missing.append("--implementation-revision")
    if missing:
        raise click.UsageError(f"missing {', '.join(missing)}")
    assert output is not None and sources is not None and implementation_revision is not None
    benchmark_at, run_at, report_at = inputs
    given = [*inputs, sources, *(path for path in (declarations, rubric) if path is not None)]
    check_new_directory(output, [*given, *made_files(run_at).values()])
    bundle = assemble_bundle(
        benchmark_at,
        run_at,
        report_at,
        sources_at=sources,
        declarations_at=declarations,
        implementation_revision=implementation_revision.strip(),
        claimed=claimed,
        rubric_at=rubric,
        transcripts=not no_transcripts,
    )
    digest = write_bundle(output, bundle)
    if as_json:
        click.echo(bundle.manifest_bytes().decode(), nl=False)
    made = [f.role for f in bundle.manifest.files if f.role in ("transcripts", "judgments", "rubric")]
    among = f" ({', '.join(sorted(made))} among them)" if made else ""
    (info if as_json else say)(
        f"bundle written to {output}: {len(bundle.manifest.files)} files bound{among}, "
        f"claim class {bundle.manifest.claim.claimed}; manifest BLAKE3 {digest}"
    )


def _check(check_dir: Path, spec: StorageSpec, *, as_json: bool, workers: int, shard_bytes: int) -> None:
    """``--check DIR``: verify the bundle and say so (the manifest printed with ``--json``)."""
    try:
        checked = check_bundle(check_dir, spec, executor=InProcessExecutor(workers), shard_bytes=shard_bytes)
    except VerificationError as exc:
        print_findings(exc.report)  # type: ignore[arg-type]
        raise
    if as_json:
        click.echo(canonical_json(checked.manifest).decode())
    manifest = checked.manifest
    (info if as_json else say)(
        f"bundle {check_dir} verified: {len(manifest.files)} files bound, the report recomputed byte for byte, "
        f"claim class {manifest.claim.claimed} supported; manifest BLAKE3 {checked.manifest_digest}"
    )
