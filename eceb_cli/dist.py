"""``eceb-dist``: verification and evaluation jobs on Celery workers over Redis.

A job runs in the cluster (see :mod:`eceb_worker.cluster.tasks`): ``submit``
and ``verify`` return its id at once, and the submitting machine may
disconnect. Inputs, corpus and report live in S3-compatible storage. The
report is the same bytes ``eceb evaluate`` writes (``submit``), or ``eceb
corpus verify --json`` prints (``verify``), for the same inputs.
"""

from __future__ import annotations

import os
import sys
import uuid

import click

from eceb_cli import exit_codes
from eceb_cli.arguments import no_disclosure_check_option, seconds, uncertainty_option
from eceb_cli.cluster_commands import cluster_endpoint, cluster_options, connect, current_cluster_options, submit_job
from eceb_cli.conventions import exit_meanings, exits
from eceb_cli.dist_views import DEFAULT_JOBS, print_jobs, print_status, watch_status
from eceb_cli.dist_worker import check_metrics_port, refuse_passwords, worker_environment, worker_settings
from eceb_cli.outcomes import (
    exit_for,
    exit_for_verdict,
    job_state,
    made_verdict,
    registered_verdict,
    result_bytes,
    verification_of,
    wait_until_ended,
    warn_without_workers,
)
from eceb_cli.outputs import Output, output_option
from eceb_cli.streams import PipeSafeGroup
from eceb_cli.submission import DEFAULT_CONCURRENCY, corpus_argument, evaluation_message, object_argument
from eceb_worker import __version__
from eceb_worker.cluster.logs import LOG_FORMATS
from eceb_worker.cluster.state import Phase
from eceb_worker.core.urls import redact_url
from eceb_worker.corpus.planning import DEFAULT_TASK_BYTES
from eceb_worker.families.eceb.options import EvaluationOptions
from eceb_worker.families.eceb.planning import DEFAULT_SHARD_OBSERVATIONS
from eceb_worker.families.eceb.uncertainty import UncertaintyMode
from eceb_worker.pipeline.jobs import SCAN_COST
from eceb_worker.pipeline.messages import JobKind
from eceb_worker.render.text import artifacts_verified, tasks_pass, verification_verdict

__all__ = ["main"]


@exit_meanings({exit_codes.STORAGE: "storage or cluster unavailable"})
@click.group("eceb-dist", cls=PipeSafeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="eceb-dist")
def main() -> None:
    """Verify corpora and evaluate ECEB-0.1 runs on a cluster of Celery workers over Redis.

    Inputs, corpus and report live in S3-compatible storage; the report is
    byte for byte what `eceb evaluate` writes (`eceb corpus verify --json`
    prints, for `verify`).
    """


_SHARD_BYTES = click.option(
    "--shard-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_TASK_BYTES,
    show_default=True,
    help=f"Re-hash work per shard, in bytes hashed (a file adds 32 KiB, a byte scanned {SCAN_COST}); one task each.",
)
_JSON = click.option("--json", "as_json", is_flag=True, help="Print JSON (for scripts).")
_CONCURRENCY = click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=DEFAULT_CONCURRENCY,
    show_default=True,
    help="Object reads per worker.",
)


@exits(exit_codes.BAD_INPUT, exit_codes.STORAGE)
@main.command()
@click.argument("benchmark", metavar="BENCHMARK")
@click.argument("run", metavar="RUN")
@click.option("--corpus", required=True, help="The corpus: s3://bucket/prefix (or a directory every worker sees).")
@click.option("--out", "out", required=True, help="Where the report is written (atomically): s3://bucket/key.")
@_SHARD_BYTES
@click.option(
    "--shard-observations",
    type=click.IntRange(min=1),
    default=DEFAULT_SHARD_OBSERVATIONS,
    show_default=True,
    help="Evaluation work per shard, in observations.",
)
@no_disclosure_check_option
@uncertainty_option
@_CONCURRENCY
@_JSON
@cluster_options
def submit(
    benchmark: str,
    run: str,
    corpus: str,
    out: str,
    shard_bytes: int,
    shard_observations: int,
    no_disclosure_check: bool,
    uncertainty: UncertaintyMode,
    concurrency: int,
    as_json: bool,
) -> None:
    """Submit the evaluation of RUN against BENCHMARK (both s3://bucket/key) and print the job id.

    Returns at once; the job runs in the cluster. Follow it with `status`,
    `wait` and `result`.
    """
    message = evaluation_message(
        benchmark,
        run,
        corpus=corpus,
        out=out,
        endpoint_url=cluster_endpoint(),
        shard_bytes=shard_bytes,
        evaluation=EvaluationOptions.chosen(
            disclosure_check=not no_disclosure_check, uncertainty=uncertainty, shard_observations=shard_observations
        ),
        concurrency=concurrency,
    )
    submit_job(message, as_json=as_json, benchmark=benchmark, run=run)


@exits(exit_codes.BAD_INPUT, exit_codes.STORAGE)
@main.command()
@click.argument("registry", metavar="REGISTRY")
@click.option("--corpus", required=True, help="The corpus: s3://bucket/prefix (or a directory every worker sees).")
@click.option("--out", "out", default="", help="Also write the verification report here (atomically): s3://bucket/key.")
@_SHARD_BYTES
@_CONCURRENCY
@_JSON
@cluster_options
def verify(
    registry: str,
    corpus: str,
    out: str,
    shard_bytes: int,
    concurrency: int,
    as_json: bool,
) -> None:
    """Submit the verification of the corpus against REGISTRY (ECEB-0.1 §5) and print the job id.

    REGISTRY is an s3://bucket/key object (or a file every worker sees, by
    its absolute path). Every registered artifact is re-hashed on the
    workers; `wait` then exits as `eceb corpus verify` does (0 verified, 4
    not), and `result` prints the same verification report bytes as `eceb
    corpus verify --json`.
    """
    from eceb_worker.corpus.storage import StorageSpec
    from eceb_worker.pipeline.messages import JobInputs, JobKind, JobMessage

    endpoint_url = cluster_endpoint()
    message = JobMessage(
        job_id=uuid.uuid4().hex,
        kind=JobKind.VERIFY,
        inputs=JobInputs(registry=object_argument(registry, "REGISTRY", local=True), endpoint_url=endpoint_url),
        corpus=StorageSpec(source=corpus_argument(corpus), endpoint_url=endpoint_url, concurrency=concurrency),
        out=object_argument(out, "--out") if out else "",
        shard_bytes=shard_bytes,
    )
    submit_job(message, as_json=as_json, registry=registry)


@exits(exit_codes.BAD_INPUT, exit_codes.STORAGE, exit_codes.NO_SUCH_JOB)
@main.command()
@click.argument("job_id", metavar="JOB")
@click.option("--watch", is_flag=True, help="Follow the job until it ends (progress bars on a terminal).")
@_JSON
@cluster_options
def status(
    job_id: str,
    watch: bool,
    as_json: bool,
) -> None:
    """Show a job's phase, shards done/total and failures so far.

    With --json, one JSON object: kind, phase, started_at (when it was
    submitted, UTC, RFC 3339), ended_at, age_s and elapsed_s (integer
    seconds), shards done and planned of each stage, its locations,
    failures and outcome.
    """
    cluster = connect()
    if watch:
        watch_status(cluster, job_id, as_json=as_json)
    else:
        print_status(cluster, job_id, as_json=as_json)


@exits(exit_codes.BAD_INPUT, exit_codes.STORAGE)
@main.command()
@click.option(
    "--limit", type=click.IntRange(min=1), default=DEFAULT_JOBS, show_default=True, help="List at most this many."
)
@_JSON
@cluster_options
def jobs(limit: int, as_json: bool) -> None:
    """List recent jobs, the newest first: id, kind, phase, age and shards done/planned.

    Jobs are kept a week after their last change. With --json, a JSON
    array of objects (job_id, kind, phase, started_at, ended_at, age_s,
    elapsed_s, shards_done, shards_total).
    """
    print_jobs(connect(), limit, as_json=as_json)


@exits(
    exit_codes.BAD_INPUT,
    exit_codes.STORAGE,
    exit_codes.TASKS_FAILED,
    exit_codes.VERIFICATION_FAILED,
    exit_codes.EXECUTION_REFUSED,
    exit_codes.PROVIDER_FAILED,
    exit_codes.NO_SUCH_JOB,
    exit_codes.JOB_CANCELLED,
    exit_codes.JOB_NOT_FINISHED,
    meanings={exit_codes.TASKS_FAILED: "failing tasks (a made run: executions that failed)"},
)
@main.command()
@click.argument("job_id", metavar="JOB")
@click.option("--timeout", type=float, callback=seconds, help="Give up after this many seconds (exit 75).")
@cluster_options
def wait(job_id: str, timeout: float | None) -> None:
    """Wait until a job ends. An evaluation exits 0 when every task passes,
    1 when some fail; a verification 0 when the corpus verified, 4 when not
    (its findings listed, as `eceb corpus verify`); a made run 0 when every
    execution was made, 1 when some failed; a registration 0 once its
    registry is written; 3/4/5/6/9/12/70 when the job failed (as `eceb
    evaluate`, `eceb run` and `eceb corpus register`), 8 when cancelled, 75
    on timeout.

    Progress bars show on a terminal. Warns when no worker consumes the
    queue (the job would wait for ever).
    """
    from eceb_cli.corpus import print_findings

    cluster = connect()
    if not job_state(cluster, job_id).phase.ended:
        warn_without_workers(cluster)
    state = wait_until_ended(cluster, job_id, timeout)
    exit_for(job_id, state)
    if state.is_verification:
        report = verification_of(state)
        print_findings(report)
        click.echo(verification_verdict(report))
    elif state.kind is JobKind.MAKE:
        click.echo(f"{made_verdict(state)}; run written to {state.out}")
    elif state.kind is JobKind.REGISTER:
        click.echo(f"{registered_verdict(state)}; registry written to {state.out}")
    else:
        click.echo(f"{tasks_pass(state.passing_tasks, state.total_tasks)}; report written to {state.out}")
    exit_for_verdict(state)


@exits(
    exit_codes.BAD_INPUT,
    exit_codes.STORAGE,
    exit_codes.TASKS_FAILED,
    exit_codes.VERIFICATION_FAILED,
    exit_codes.OUTPUT,
    exit_codes.EXECUTION_REFUSED,
    exit_codes.PROVIDER_FAILED,
    exit_codes.NO_SUCH_JOB,
    exit_codes.JOB_CANCELLED,
    exit_codes.JOB_NOT_FINISHED,
    meanings={exit_codes.TASKS_FAILED: "failing tasks (a made run: executions that failed)"},
)
@main.command()
@click.argument("job_id", metavar="JOB")
@output_option("Write the report here (atomically; standard output without -o).")
@cluster_options
def result(job_id: str, output: Output | None) -> None:
    """Download a finished job's report, made run or registry (to FILE, atomically, or to stdout)."""
    if output is not None:
        output.check()
    cluster = connect()
    state = job_state(cluster, job_id)
    exit_for(job_id, state)
    if state.phase is not Phase.DONE:
        done, total = state.shards
        click.echo(f"job {job_id} not finished ({state.phase.value}, {done}/{total} shards)", err=True)
        sys.exit(exit_codes.JOB_NOT_FINISHED)
    objects = None
    if state.out:
        from eceb_worker.io.objects import ObjectStore

        objects = ObjectStore(cluster_endpoint())
    data = result_bytes(job_id, state, objects)
    if output is None or output.to_stdout:
        Output(None).write([data])
    else:
        output.write([data])
        if state.is_verification:
            report = verification_of(state)
            click.echo(f"{artifacts_verified(report)}; report written to {output}")
        elif state.kind is JobKind.MAKE:
            click.echo(f"{made_verdict(state)}; run written to {output}")
        elif state.kind is JobKind.REGISTER:
            click.echo(f"{registered_verdict(state)}; registry written to {output}")
        else:
            click.echo(f"{tasks_pass(state.passing_tasks, state.total_tasks)}; report written to {output}")
    exit_for_verdict(state)


@exits(exit_codes.BAD_INPUT, exit_codes.STORAGE, exit_codes.NO_SUCH_JOB)
@main.command()
@click.argument("job_id", metavar="JOB")
@cluster_options
def cancel(job_id: str) -> None:
    """Cancel a job: its remaining shards are skipped and no report is written."""
    cluster = connect()
    state = job_state(cluster, job_id)
    if not cluster.store.update(job_id, phase=Phase.CANCELLED.value):
        ended = cluster.store.get(job_id) or state
        click.echo(f"job {job_id} already ended ({ended.phase.value})")
        return
    if state.coordinator:
        cluster.revoke(state.coordinator)
    if state.kind is JobKind.REGISTER and state.out:
        from eceb_worker.io.objects import ObjectStore
        from eceb_worker.pipeline.register_job import discard_parts

        discard_parts(ObjectStore(cluster_endpoint()).client, state.out, job_id)  # its partials: nothing is left
    click.echo(f"job {job_id} cancelled")


@exits(exit_codes.STORAGE)
@main.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.option("--concurrency", type=click.IntRange(min=1), help="Worker processes (default: one per core).")
@click.option("--loglevel", default="INFO", show_default=True)
@click.option(
    "--log-format",
    type=click.Choice(LOG_FORMATS),
    help="Log lines as text or json (one JSON object a line); each line about a job names the job and the "
    "shard. Env: ECEB_LOG_FORMAT (default text).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    help="Serve Prometheus metrics on this port (/metrics), summed over the worker's processes. "
    "Env: ECEB_METRICS_PORT (default: no metrics).",
)
@click.option(
    "--metrics-address",
    help="Address the metrics server listens on. Env: ECEB_METRICS_ADDRESS (default 0.0.0.0).",
)
@click.argument("celery_args", nargs=-1, type=click.UNPROCESSED)
@cluster_options
def worker(
    concurrency: int | None,
    loglevel: str,
    log_format: str | None,
    metrics_port: int | None,
    metrics_address: str | None,
    celery_args: tuple[str, ...],
) -> None:
    """Run a Celery worker for eceb's tasks (extra arguments go to `celery worker`).

    The same as: celery -A eceb_worker.cluster.app worker --pool prefork -Q eceb
    --hostname eceb@%h (the node name `eceb-dist probe --node eceb@%h` asks;
    give -n NAME to choose another).

    The worker reaches S3 through its own endpoint (--endpoint-url or
    ECEB_S3_ENDPOINT_URL), whatever endpoint a job's submitter used; one
    configured with none uses the submitter's.
    """
    cluster = current_cluster_options()
    cluster_endpoint()  # one holding credentials is a usage error
    refuse_passwords(celery_args)
    environment = worker_environment(
        os.environ,
        broker_url=cluster.broker_url,
        result_backend=cluster.result_backend,
        s3_endpoint_url=cluster.endpoint_url,
        log_format=log_format,
        metrics_port=metrics_port,
        metrics_address=metrics_address,
    )
    os.environ.update(environment)  # this process becomes the worker
    settings = worker_settings()
    check_metrics_port(settings)
    from eceb_cli.probe import NODE_PREFIX
    from eceb_worker.cluster.app import worker_command
    from eceb_worker.cluster.logs import log_line

    named = any(a in ("-n", "--hostname") or a.startswith(("-n=", "--hostname=")) for a in celery_args)
    extra = celery_args if named else ("--hostname", f"{NODE_PREFIX}@%h", *celery_args)
    command = worker_command(concurrency=concurrency, loglevel=loglevel, extra=extra)
    click.echo(log_line(f"starting a worker on {redact_url(settings.broker_url)}", settings.log_format), err=True)
    sys.stdout.flush()
    os.execve(sys.executable, command, environment)  # noqa: S606 - replaces this process by the worker


def _add_commands() -> None:
    """Commands defined in modules of their own."""
    from eceb_cli.dist_register import register
    from eceb_cli.dist_run import run
    from eceb_cli.nightly import accept_night, nightly
    from eceb_cli.probe import probe

    main.add_command(run)
    main.add_command(register)
    main.add_command(nightly)
    main.add_command(accept_night)
    main.add_command(probe)


_add_commands()

if __name__ == "__main__":
    main()
