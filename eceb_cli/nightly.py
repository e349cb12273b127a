"""``eceb-dist nightly``: tonight's evaluation on the cluster, compared with
the last accepted report (the command of the nightly CronJob,
deploy/k8s/base/nightly.yaml; docs/KUBERNETES.md); ``eceb-dist
nightly-accept``: accept a night's report as the baseline.

Under the reports prefix ``PREFIX`` (``s3://bucket/prefix``) each night's
report is ``PREFIX/reports/<job id>.json`` (the job's ``--out``);
``PREFIX/baseline.json`` holds a copy of the last accepted report, the one
every night is compared with, and ``PREFIX/latest.json`` a copy of the last
night's whose job succeeded, regressed or not. A report is accepted by a
night without regression (and by the first night), or explicitly by
``nightly-accept``: a regressed night leaves the baseline as it was, so the
regression is reported every night until it is fixed or accepted. One night:

1. reach the broker, read ``PREFIX/baseline.json`` (absent: ``latest.json``,
   a prefix kept before the baseline existed; both absent: the first night);
2. submit the evaluation (as ``eceb-dist submit``; its id printed) and wait
   until it ends: a job that failed or was cancelled ends the night with its
   own exit code (as ``eceb-dist wait``), nothing under PREFIX changed;
3. compare the baseline with tonight's report
   (:func:`~eceb_worker.families.eceb.comparison.compare_reports`, the
   thresholds of ``eceb compare``) and print the comparison;
4. write tonight's report bytes to ``PREFIX/latest.json``, and, without a
   regression, to ``PREFIX/baseline.json`` (each atomically: a reader sees
   the old report or the new one, never a part);
5. exit 10 when tonight regressed (every regression named), else 0.
"""

from __future__ import annotations

import re
import sys
import uuid
from typing import TYPE_CHECKING, Final

import click

from eceb_cli import exit_codes
from eceb_cli.arguments import seconds
from eceb_cli.cluster_commands import cluster_endpoint, cluster_options, submit_job
from eceb_cli.compare import threshold_options
from eceb_cli.console import endpoint
from eceb_cli.conventions import exits, info, is_quiet, say
from eceb_cli.outcomes import exit_for, result_bytes, wait_until_ended
from eceb_cli.outputs import Output, output_option
from eceb_cli.submission import evaluation_message

if TYPE_CHECKING:
    from eceb_worker.families.eceb.comparison import Thresholds
    from eceb_worker.io.objects import ObjectStore

__all__ = ["accept_night", "nightly"]

LATEST: Final = "latest.json"
"""The object under the reports prefix that holds the last night's report."""

BASELINE: Final = "baseline.json"
"""The object under the reports prefix that holds the last accepted report,
the one each night is compared with."""

_JOB_ID: Final = re.compile(r"[0-9a-f]{32}")


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


@exits(
    exit_codes.BAD_INPUT,
    exit_codes.STORAGE,
    exit_codes.VERIFICATION_FAILED,
    exit_codes.NO_SUCH_JOB,
    exit_codes.OUTPUT,
    exit_codes.JOB_CANCELLED,
    exit_codes.REGRESSION,
    exit_codes.JOB_NOT_FINISHED,
)
@click.command()
@click.argument("benchmark", metavar="BENCHMARK")
@click.argument("run", metavar="RUN")
@click.option("--corpus", required=True, help="The corpus: s3://bucket/prefix (or a directory every worker sees).")
@click.option(
    "--reports",
    required=True,
    metavar="s3://BUCKET/PREFIX/",
    help="Where the nightly reports live: PREFIX/reports/<job id>.json each night, PREFIX/baseline.json the last "
    "accepted one, PREFIX/latest.json the last one.",
)
@output_option("Also write the comparison as Markdown here (a CI comment).", names=("--markdown", "markdown"))
@click.option(
    "--timeout", type=float, callback=seconds, help="Give up waiting for the job after this many seconds (exit 75)."
)
@threshold_options
@cluster_options
def nightly(
    benchmark: str,
    run: str,
    corpus: str,
    reports: str,
    markdown: Output | None,
    timeout: float | None,
    thresholds: Thresholds,
    allow_different_roots: bool,
) -> None:
    """Evaluate RUN against BENCHMARK (s3://bucket/key) on the cluster and
    compare the report with the last accepted one, PREFIX/baseline.json.

    Tonight's report is written to PREFIX/reports/<job id>.json; once it is
    compared, PREFIX/latest.json is replaced by it, and so is
    PREFIX/baseline.json unless tonight regressed (each atomically): a
    regression fails every night until it is fixed, or accepted with
    `eceb-dist nightly-accept`. The first night (no baseline.json, nor a
    latest.json, which stands in for it) has nothing to compare and exits
    0. Thresholds
    and --allow-* as `eceb compare` (a regression: a passing task that
    fails, a minimum viable budget up or savings down beyond them, more
    policy violations, a newly failing gate, a removed task).

    Exit 0 when the job succeeded and nothing regressed (failing tasks
    alone are no regression), 10 on a regression (each one named); when the
    job failed, its own code as `eceb-dist wait` (3, 4, 5, 6, 70), 8 when it
    was cancelled, 75 when --timeout passed first; nothing under PREFIX is
    then changed. 3 also when the baseline is not a report or judges other
    task or corpus roots (unless --allow-different-roots), 2 for a usage
    error.
    """
    from eceb_worker.families.eceb.comparison import compare_reports
    from eceb_worker.io.locations import Locator
    from eceb_worker.io.objects import ObjectStore
    from eceb_worker.pipeline.reports import decode_report, read_report
    from eceb_worker.render.comparison import comparison_lines, comparison_markdown, comparison_verdict
    from eceb_worker.render.text import tasks_pass

    prefix = reports_prefix(reports)
    latest, baseline = f"{prefix}/{LATEST}", f"{prefix}/{BASELINE}"
    for written in (latest, baseline):
        if written in (benchmark, run):
            raise click.UsageError(f"--reports: {written} would be overwritten, and it is one of the inputs")
    if markdown is not None:
        markdown.check()
    endpoint_url = cluster_endpoint()
    job_id = uuid.uuid4().hex
    tonight_url = f"{prefix}/reports/{job_id}.json"
    message = evaluation_message(
        benchmark, run, corpus=corpus, out=tonight_url, endpoint_url=endpoint_url, job_id=job_id
    )
    objects = ObjectStore(endpoint_url)
    locator = Locator(endpoint_url, make_store=lambda: objects)
    compared_with = baseline if objects.exists(baseline) else latest
    previous = read_report(locator.locate(compared_with)) if objects.exists(compared_with) else None

    cluster = submit_job(message, benchmark=benchmark, run=run)
    info(f"waiting for job {job_id}")
    state = wait_until_ended(cluster, job_id, timeout)
    exit_for(job_id, state)
    data = result_bytes(job_id, state, objects)  # checked against the digest the job recorded
    tonight = decode_report(data, tonight_url)
    say(f"tonight: {tasks_pass(state.passing_tasks, state.total_tasks)}; report {tonight_url}")

    if previous is None:
        say(f"no baseline at {baseline}: the first night, nothing to compare")
        if markdown is not None:
            markdown.write([f"## eceb nightly: first night\n\nNo baseline at `{baseline}`.\n".encode()])
        _keep(objects, data, job_id, latest, baseline)
        return
    say(f"compared with the last accepted report, {compared_with}:")
    comparison = compare_reports(
        previous, tonight, thresholds, allow_different_roots=allow_different_roots, names=(compared_with, tonight_url)
    )
    if is_quiet():
        click.echo(comparison_verdict(comparison))
    else:
        for line in comparison_lines(comparison):
            click.echo(line)
    if markdown is not None:
        markdown.write([comparison_markdown(comparison).encode()])
    if comparison.regressed:
        _keep(objects, data, job_id, latest)
        say(
            f"{baseline} unchanged: tonight regressed (accept tonight's report as the baseline with "
            f"`eceb-dist nightly-accept {job_id} --reports {prefix}/`)"
        )
        sys.exit(exit_codes.REGRESSION)
    _keep(objects, data, job_id, latest, baseline)


def _keep(objects: ObjectStore, data: bytes, job_id: str, *urls: str) -> None:
    """Write tonight's report bytes to each of ``urls`` (atomically), saying so."""
    for url in urls:
        objects.put_atomic(url, data)
        say(f"{url} now holds tonight's report (job {job_id})")


@exits(exit_codes.BAD_INPUT, exit_codes.STORAGE)
@click.command("nightly-accept")
@click.argument("accepted", metavar="JOB|REPORT")
@click.option(
    "--reports",
    required=True,
    metavar="s3://BUCKET/PREFIX/",
    help="The nightly reports prefix (as `eceb-dist nightly --reports`).",
)
@click.option("--endpoint-url", help="S3-compatible endpoint (MinIO, Ceph, ...). Env: ECEB_S3_ENDPOINT_URL.")
def accept_night(accepted: str, reports: str, endpoint_url: str | None) -> None:
    """Make a report the nightly baseline, PREFIX/baseline.json, the one the
    next nights are compared with: the report of the night JOB (a job id,
    PREFIX/reports/JOB.json) or REPORT (an s3://bucket/key report).

    After a regression that is meant (a task retired, a cheaper model
    accepted), accept that night's report: the nights after it compare with
    it. The report is checked first (exit 3, the baseline left as it was,
    when it is missing or not a report); the baseline is replaced
    atomically. Needs no broker.
    """
    from eceb_cli.submission import object_argument
    from eceb_worker.io.objects import ObjectStore
    from eceb_worker.pipeline.reports import decode_report
    from eceb_worker.render.text import tasks_pass

    prefix = reports_prefix(reports)
    baseline = f"{prefix}/{BASELINE}"
    if _JOB_ID.fullmatch(accepted):
        url = f"{prefix}/reports/{accepted}.json"
    else:
        url = object_argument(accepted, "JOB|REPORT")
    if url == baseline:
        raise click.UsageError(f"JOB|REPORT: {baseline} is the baseline already")
    objects = ObjectStore(endpoint(endpoint_url))
    data, _ = objects.get(url)
    report = decode_report(data, url)
    objects.put_atomic(baseline, data)
    summary = report.summary
    say(f"{baseline} now holds the report {url} ({tasks_pass(summary.passing_tasks, summary.total_tasks)})")
