"""``eceb-dist nightly``: tonight's evaluation on the cluster, compared with
the previous night's (the command of the nightly CronJob,
deploy/k8s/base/nightly.yaml; docs/KUBERNETES.md).

Under the reports prefix ``PREFIX`` (``s3://bucket/prefix``) each night's
report is ``PREFIX/reports/<job id>.json`` (the job's ``--out``), and
``PREFIX/latest.json`` holds a copy of the last night's whose job succeeded:
the previous night's report of the next night. One night:

1. reach the broker, read ``PREFIX/latest.json`` (absent: the first night);
2. submit the evaluation (as ``eceb-dist submit``; its id printed) and wait
   until it ends: a job that failed or was cancelled ends the night with its
   own exit code (as ``eceb-dist wait``), ``latest.json`` unchanged;
3. compare the previous report with tonight's
   (:func:`~eceb_worker.families.eceb.comparison.compare_reports`, the
   thresholds of ``eceb compare``) and print the comparison;
4. write tonight's report bytes to ``PREFIX/latest.json`` (atomically: a
   reader sees last night's or tonight's, never a part);
5. exit 10 when tonight regressed (every regression named), else 0.
"""

from __future__ import annotations

import sys
import uuid
from typing import TYPE_CHECKING, Final

import click

from eceb_cli import exit_codes
from eceb_cli.arguments import seconds
from eceb_cli.cluster_commands import cluster_options, submit_job
from eceb_cli.compare import threshold_options
from eceb_cli.console import endpoint, handle_errors
from eceb_cli.conventions import info, is_quiet, say
from eceb_cli.outcomes import exit_for, result_bytes, wait_until_ended
from eceb_cli.outputs import Output, output_option
from eceb_cli.submission import evaluation_message

if TYPE_CHECKING:
    from eceb_worker.families.eceb.comparison import Thresholds

__all__ = ["LATEST", "nightly", "reports_prefix"]

LATEST: Final = "latest.json"
"""The object under the reports prefix that holds the last night's report."""


def reports_prefix(value: str) -> str:
    """``--reports`` checked: an ``s3://bucket[/prefix][/]`` URL without
    credentials; returned without its trailing ``/``. A usage error otherwise."""
    from eceb_worker.core.urls import check_location, split_object_url

    try:
        check_location(value, s3=True)
    except ValueError as exc:  # the message shows the URL without its credentials
        raise click.UsageError(f"--reports: {exc}") from None
    prefix = value.rstrip("/")
    try:
        split_object_url(f"{prefix}/{LATEST}")
    except ValueError:
        raise click.UsageError(
            "--reports must be an s3://bucket/prefix/ URL: the nightly reports live in object storage"
        ) from None
    return prefix


@click.command()
@click.argument("benchmark", metavar="BENCHMARK")
@click.argument("run", metavar="RUN")
@click.option("--corpus", required=True, help="The corpus: s3://bucket/prefix (or a directory every worker sees).")
@click.option(
    "--reports",
    required=True,
    metavar="s3://BUCKET/PREFIX/",
    help="Where the nightly reports live: PREFIX/reports/<job id>.json each night, PREFIX/latest.json the last one.",
)
@output_option("Also write the comparison as Markdown here (a CI comment).", names=("--markdown", "markdown"))
@click.option(
    "--timeout", type=float, callback=seconds, help="Give up waiting for the job after this many seconds (exit 75)."
)
@threshold_options
@cluster_options
@handle_errors
def nightly(
    benchmark: str,
    run: str,
    corpus: str,
    reports: str,
    markdown: Output | None,
    timeout: float | None,
    broker_url: str | None,
    result_backend: str | None,
    endpoint_url: str | None,
    thresholds: Thresholds,
    allow_different_roots: bool,
) -> None:
    """Evaluate RUN against BENCHMARK (s3://bucket/key) on the cluster and
    compare the report with the previous night's, PREFIX/latest.json.

    Tonight's report is written to PREFIX/reports/<job id>.json; once it is
    compared, PREFIX/latest.json is replaced by it (atomically). The first
    night (no latest.json) has nothing to compare and exits 0. Thresholds
    and --allow-* as `eceb compare` (a regression: a passing task that
    fails, a minimum viable budget up or savings down beyond them, more
    policy violations, a newly failing gate, a removed task).

    Exit 0 when the job succeeded and nothing regressed (failing tasks
    alone are no regression), 10 on a regression (each one named); when the
    job failed, its own code as `eceb-dist wait` (3, 4, 5, 6, 70), 8 when it
    was cancelled, 75 when --timeout passed first; latest.json is then left
    as it was. 3 also when latest.json is not a report or judges other task
    or corpus roots (unless --allow-different-roots), 2 for a usage error.
    """
    from eceb_worker.families.eceb.comparison import compare_reports
    from eceb_worker.io.locations import Locator
    from eceb_worker.io.objects import ObjectStore
    from eceb_worker.pipeline.reports import decode_report, read_report
    from eceb_worker.render.comparison import comparison_lines, comparison_markdown, comparison_verdict
    from eceb_worker.render.text import tasks_pass

    prefix = reports_prefix(reports)
    latest = f"{prefix}/{LATEST}"
    if latest in (benchmark, run):
        raise click.UsageError(f"--reports: {latest} would be overwritten, and it is one of the inputs")
    if markdown is not None:
        markdown.check()
    endpoint_url = endpoint(endpoint_url)
    job_id = uuid.uuid4().hex
    tonight_url = f"{prefix}/reports/{job_id}.json"
    message = evaluation_message(
        benchmark, run, corpus=corpus, out=tonight_url, endpoint_url=endpoint_url, job_id=job_id
    )
    objects = ObjectStore(endpoint_url)
    locator = Locator(endpoint_url, make_store=lambda: objects)
    previous = read_report(locator.locate(latest)) if objects.exists(latest) else None

    cluster = submit_job(message, broker_url, result_backend, benchmark=benchmark, run=run)
    info(f"waiting for job {job_id}")
    state = wait_until_ended(cluster, job_id, timeout)
    exit_for(job_id, state)
    data = result_bytes(job_id, state, objects)  # checked against the digest the job recorded
    tonight = decode_report(data, tonight_url)
    say(f"tonight: {tasks_pass(state.get('passing_tasks'), state.get('total_tasks'))}; report {tonight_url}")

    if previous is None:
        say(f"no previous report at {latest}: the first night, nothing to compare")
        if markdown is not None:
            markdown.write([f"## eceb nightly: first night\n\nNo previous report at `{latest}`.\n".encode()])
        objects.put_atomic(latest, data)
        say(f"{latest} now holds tonight's report (job {job_id})")
        return
    say(f"compared with the previous night's report, {latest}:")
    comparison = compare_reports(
        previous, tonight, thresholds, allow_different_roots=allow_different_roots, names=(latest, tonight_url)
    )
    if is_quiet():
        click.echo(comparison_verdict(comparison))
    else:
        for line in comparison_lines(comparison):
            click.echo(line)
    if markdown is not None:
        markdown.write([comparison_markdown(comparison).encode()])
    objects.put_atomic(latest, data)
    say(f"{latest} now holds tonight's report (job {job_id})")
    if comparison.regressed:
        sys.exit(exit_codes.REGRESSION)
