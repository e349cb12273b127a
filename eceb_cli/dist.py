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
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

from eceb_cli import exit_codes
from eceb_cli.arguments import seconds
from eceb_cli.console import endpoint, handle_errors
from eceb_cli.outcomes import (
    POLL_S,
    exit_for,
    exit_for_verdict,
    is_verification,
    job_state,
    result_bytes,
    shards,
    status_line,
    verification_of,
    wait_until_ended,
)
from eceb_cli.outputs import Output, output_option
from eceb_cli.streams import PipeSafeGroup
from eceb_cli.submission import check_submission, corpus_argument, object_argument
from eceb_worker import __version__
from eceb_worker.cluster.state import Phase
from eceb_worker.core.urls import redact_url
from eceb_worker.corpus.planning import DEFAULT_TASK_BYTES
from eceb_worker.families.eceb.planning import DEFAULT_SHARD_OBSERVATIONS
from eceb_worker.render.text import artifacts_verified, tasks_pass, verification_verdict

if TYPE_CHECKING:
    from eceb_worker.cluster.client import Cluster
    from eceb_worker.pipeline.messages import JobMessage

__all__ = ["main"]

F = TypeVar("F", bound=Callable[..., Any])


def cluster_options(function: F) -> F:
    """Broker, result backend and S3 endpoint options (each with its environment variable)."""
    for decorator in reversed(
        [
            click.option(
                "--broker-url",
                help="Celery broker URL (default redis://127.0.0.1:6379/0); rediss:// for TLS, the CA bundle "
                "in ECEB_REDIS_CA_CERTS. Env: ECEB_BROKER_URL.",
            ),
            click.option(
                "--result-backend",
                help="Celery result backend URL, a Redis URL (default: the broker). Env: ECEB_RESULT_BACKEND.",
            ),
            click.option(
                "--endpoint-url",
                help="S3-compatible endpoint (MinIO, Ceph, ...). Env: ECEB_S3_ENDPOINT_URL.",
            ),
        ]
    ):
        function = decorator(function)
    return function


@contextmanager
def _settings_checked() -> Iterator[None]:
    """A setting that does not parse (ValueError, whose message never
    repeats a URL) is a usage error."""
    try:
        yield
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def _cluster(broker_url: str | None, result_backend: str | None) -> Cluster:
    """The cluster, reached; a setting that does not parse is a usage error."""
    with _settings_checked():
        # Importing the module configures its application from the environment.
        from eceb_worker.cluster.client import Cluster

        return Cluster(broker_url, result_backend)


def _submit(message: JobMessage, broker_url: str | None, result_backend: str | None, **fields: str) -> None:
    """Check what can be checked (the cluster's settings first, before
    anything is read or connected to), queue the job and print its id."""
    with _settings_checked():
        from eceb_worker.cluster.app import make_app

        make_app(broker_url, result_backend)
    check_submission(message)
    cluster = _cluster(broker_url, result_backend)
    cluster.submit(message, created=int(time.time()), corpus=message.corpus.source, out=message.out, **fields)
    click.echo(message.job_id)


@click.group(cls=PipeSafeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="eceb-dist")
def main() -> None:
    """Verify corpora and evaluate ECEB-0.1 runs on a cluster of Celery workers over Redis.

    Inputs, corpus and report live in S3-compatible storage; the report is
    byte for byte what `eceb evaluate` writes (`eceb corpus verify --json`
    prints, for `verify`). Exit codes: as `eceb`, plus 7 no such job, 8 job
    cancelled, 75 job not finished yet.
    """


_SHARD_BYTES = click.option(
    "--shard-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_TASK_BYTES,
    show_default=True,
    help="Re-hash work per shard, in bytes (each file also counts 32 KiB); each shard is one task.",
)
_CONCURRENCY = click.option(
    "--concurrency", type=click.IntRange(min=1), default=16, show_default=True, help="Object reads per worker."
)


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
@_CONCURRENCY
@cluster_options
@handle_errors
def submit(
    benchmark: str,
    run: str,
    corpus: str,
    out: str,
    shard_bytes: int,
    shard_observations: int,
    concurrency: int,
    broker_url: str | None,
    result_backend: str | None,
    endpoint_url: str | None,
) -> None:
    """Submit the evaluation of RUN against BENCHMARK (both s3://bucket/key) and print the job id.

    Returns at once; the job runs in the cluster. Follow it with `status`,
    `wait` and `result`.
    """
    from eceb_worker.corpus.storage import StorageSpec
    from eceb_worker.pipeline.messages import JobInputs, JobKind, JobMessage

    endpoint_url = endpoint(endpoint_url)
    message = JobMessage(
        job_id=uuid.uuid4().hex,
        kind=JobKind.EVALUATE,
        inputs=JobInputs(
            benchmark=object_argument(benchmark, "BENCHMARK"),
            run=object_argument(run, "RUN"),
            endpoint_url=endpoint_url,
        ),
        corpus=StorageSpec(source=corpus_argument(corpus), endpoint_url=endpoint_url, concurrency=concurrency),
        out=object_argument(out, "--out"),
        shard_bytes=shard_bytes,
        shard_observations=shard_observations,
    )
    _submit(message, broker_url, result_backend, benchmark=benchmark, run=run)


@main.command()
@click.argument("registry", metavar="REGISTRY")
@click.option("--corpus", required=True, help="The corpus: s3://bucket/prefix (or a directory every worker sees).")
@click.option("--out", "out", default="", help="Also write the verification report here (atomically): s3://bucket/key.")
@_SHARD_BYTES
@_CONCURRENCY
@cluster_options
@handle_errors
def verify(
    registry: str,
    corpus: str,
    out: str,
    shard_bytes: int,
    concurrency: int,
    broker_url: str | None,
    result_backend: str | None,
    endpoint_url: str | None,
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

    endpoint_url = endpoint(endpoint_url)
    message = JobMessage(
        job_id=uuid.uuid4().hex,
        kind=JobKind.VERIFY,
        inputs=JobInputs(registry=object_argument(registry, "REGISTRY", local=True), endpoint_url=endpoint_url),
        corpus=StorageSpec(source=corpus_argument(corpus), endpoint_url=endpoint_url, concurrency=concurrency),
        out=object_argument(out, "--out") if out else "",
        shard_bytes=shard_bytes,
        shard_observations=DEFAULT_SHARD_OBSERVATIONS,
    )
    _submit(message, broker_url, result_backend, registry=registry)


@main.command()
@click.argument("job_id", metavar="JOB")
@click.option("--watch", is_flag=True, help="Follow the job until it ends (a progress bar on a terminal).")
@cluster_options
@handle_errors
def status(
    job_id: str, watch: bool, broker_url: str | None, result_backend: str | None, endpoint_url: str | None
) -> None:
    """Show a job's phase, shards done/total and failures so far."""
    from eceb_worker.cluster.state import TERMINAL_PHASES

    cluster = _cluster(broker_url, result_backend)
    state = job_state(cluster, job_id)
    if not watch:
        click.echo(status_line(job_id, state, cluster.store.failures(job_id)))
        for failure in cluster.store.failures(job_id):
            click.echo(f"  failure: {failure}")
        return
    bar: Any = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=0, desc=job_id[:8], unit="shard", file=sys.stderr)
    last = ""
    while True:
        state = job_state(cluster, job_id)
        done, total = shards(state)
        if bar is not None:
            bar.total = total
            bar.set_postfix_str(state.get("phase", ""))
            bar.n = done
            bar.refresh()
        line = status_line(job_id, state, cluster.store.failures(job_id))
        if bar is None and line != last:
            click.echo(line)
            last = line
        if state.get("phase") in TERMINAL_PHASES:
            break
        time.sleep(POLL_S)
    if bar is not None:
        bar.close()
        click.echo(status_line(job_id, state, cluster.store.failures(job_id)))


@main.command()
@click.argument("job_id", metavar="JOB")
@click.option("--timeout", type=float, callback=seconds, help="Give up after this many seconds (exit 75).")
@cluster_options
@handle_errors
def wait(
    job_id: str, timeout: float | None, broker_url: str | None, result_backend: str | None, endpoint_url: str | None
) -> None:
    """Wait until a job ends. An evaluation exits 0 when every task passes,
    1 when some fail; a verification 0 when the corpus verified, 4 when not
    (its findings listed, as `eceb corpus verify`); 3/4/5/6/70 when the job
    failed (as `eceb evaluate`), 8 when cancelled, 75 on timeout.
    """
    from eceb_cli.corpus import print_findings

    cluster = _cluster(broker_url, result_backend)
    state = wait_until_ended(cluster, job_id, timeout)
    exit_for(job_id, state)
    if is_verification(state):
        report = verification_of(state)
        print_findings(report)
        click.echo(verification_verdict(report))
    else:
        click.echo(
            f"{tasks_pass(state.get('passing_tasks'), state.get('total_tasks'))}; report written to {state.get('out')}"
        )
    exit_for_verdict(state)


@main.command()
@click.argument("job_id", metavar="JOB")
@output_option("Write the report here (atomically; standard output without -o).")
@cluster_options
@handle_errors
def result(
    job_id: str, output: Output | None, broker_url: str | None, result_backend: str | None, endpoint_url: str | None
) -> None:
    """Download a finished job's report (to FILE, atomically, or to stdout)."""
    if output is not None:
        output.check()
    cluster = _cluster(broker_url, result_backend)
    state = job_state(cluster, job_id)
    exit_for(job_id, state)
    if state.get("phase") != Phase.DONE.value:
        done, total = shards(state)
        click.echo(f"job {job_id} not finished ({state.get('phase')}, {done}/{total} shards)", err=True)
        sys.exit(exit_codes.JOB_NOT_FINISHED)
    objects = None
    if state.get("out"):
        from eceb_worker.io.objects import ObjectStore

        objects = ObjectStore(endpoint(endpoint_url))
    data = result_bytes(job_id, state, objects)
    if output is None or output.to_stdout:
        Output(None).write([data])
    else:
        output.write([data])
        if is_verification(state):
            report = verification_of(state)
            click.echo(f"{artifacts_verified(report)}; report written to {output}")
        else:
            click.echo(
                f"{tasks_pass(state.get('passing_tasks'), state.get('total_tasks'))}; report written to {output}"
            )
    exit_for_verdict(state)


@main.command()
@click.argument("job_id", metavar="JOB")
@cluster_options
@handle_errors
def cancel(job_id: str, broker_url: str | None, result_backend: str | None, endpoint_url: str | None) -> None:
    """Cancel a job: its remaining shards are skipped and no report is written."""
    cluster = _cluster(broker_url, result_backend)
    state = job_state(cluster, job_id)
    if not cluster.store.update(job_id, phase=Phase.CANCELLED.value):
        ended = cluster.store.get(job_id) or state
        click.echo(f"job {job_id} already ended ({ended.get('phase')})")
        return
    if state.get("coordinator"):
        cluster.revoke(state["coordinator"])
    click.echo(f"job {job_id} cancelled")


@main.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.option("--concurrency", type=click.IntRange(min=1), help="Worker processes (default: one per core).")
@click.option("--loglevel", default="INFO", show_default=True)
@click.argument("celery_args", nargs=-1, type=click.UNPROCESSED)
@cluster_options
def worker(
    concurrency: int | None,
    loglevel: str,
    celery_args: tuple[str, ...],
    broker_url: str | None,
    result_backend: str | None,
    endpoint_url: str | None,
) -> None:
    """Run a Celery worker for eceb's tasks (extra arguments go to `celery worker`).

    The same as: celery -A eceb_worker.cluster.app worker --pool prefork -Q eceb
    """
    environment = dict(os.environ)
    for name, value in (
        ("ECEB_BROKER_URL", broker_url),
        ("ECEB_RESULT_BACKEND", result_backend),
        ("ECEB_S3_ENDPOINT_URL", endpoint_url),
    ):
        if value:
            environment[name] = value
    os.environ.update(environment)  # this process becomes the worker
    with _settings_checked():
        # Importing the module configures its application: the settings are checked here.
        from eceb_worker.cluster.app import worker_command
        from eceb_worker.settings import load_settings

        shown = redact_url(load_settings().broker_url)
    command = worker_command(concurrency=concurrency, loglevel=loglevel, extra=celery_args)
    click.echo(f"starting a worker on {shown}", err=True)
    sys.stdout.flush()
    os.execve(sys.executable, command, environment)  # noqa: S606 - replaces this process by the worker


if __name__ == "__main__":
    main()
