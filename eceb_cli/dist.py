"""``eceb-dist``: distributed evaluation on Celery workers over Redis.

The job runs in the cluster (see :mod:`eceb_worker.brokers.jobs`): ``submit``
returns its id at once, and the submitting machine may disconnect. Inputs,
corpus and report live in S3-compatible storage. The report is the same
bytes ``eceb evaluate`` writes for the same inputs.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import msgspec

from eceb_cli import exit_codes
from eceb_cli.console import handle_errors, report_input_error
from eceb_worker import __version__
from eceb_worker.brokers import redact_url
from eceb_worker.engine.plan import DEFAULT_SHARD_OBSERVATIONS, DEFAULT_TASK_BYTES
from eceb_worker.errors import InputError, Problem, StorageError

if TYPE_CHECKING:
    from eceb_worker.brokers.job_messages import JobMessage
    from eceb_worker.storage.objects import ObjectStore

__all__ = ["main"]

F = TypeVar("F", bound=Callable[..., Any])

_EXIT_FOR_KIND = {
    "input": exit_codes.BAD_INPUT,
    "verification": exit_codes.VERIFICATION_FAILED,
    "storage": exit_codes.STORAGE,
    "output": exit_codes.OUTPUT,
    "internal": exit_codes.INTERNAL,
}
_POLL_S = 0.2


def cluster_options(function: F) -> F:
    """Broker, result backend and S3 endpoint options (each with its environment variable)."""
    for decorator in reversed(
        [
            click.option(
                "--broker-url",
                envvar="ECEB_BROKER_URL",
                help="Celery broker URL (default redis://127.0.0.1:6379/0); rediss:// for TLS, the CA bundle "
                "in ECEB_REDIS_CA_CERTS. Env: ECEB_BROKER_URL.",
            ),
            click.option(
                "--result-backend",
                envvar="ECEB_RESULT_BACKEND",
                help="Celery result backend URL, a Redis URL (default: the broker). Env: ECEB_RESULT_BACKEND.",
            ),
            click.option(
                "--endpoint-url",
                envvar="ECEB_S3_ENDPOINT_URL",
                help="S3-compatible endpoint (MinIO, Ceph, ...). Env: ECEB_S3_ENDPOINT_URL.",
            ),
        ]
    ):
        function = decorator(function)
    return function


class _Cluster:
    """The Celery application and the job store of one command."""

    def __init__(self, broker_url: str | None, result_backend: str | None) -> None:
        try:
            # Importing the module configures its application from the environment.
            from eceb_worker.brokers.celery_app import make_app

            self.app = make_app(broker_url, result_backend)
        except ValueError as exc:  # a setting is wrong; the message never repeats a URL
            raise click.UsageError(str(exc)) from None
        from eceb_worker.brokers.celery_executor import CeleryExecutor
        from eceb_worker.brokers.job_state import JobStore

        self.executor = CeleryExecutor(self.app)
        self.executor.check_connection()
        client = getattr(self.app.backend, "client", None)
        if client is None:
            raise StorageError(f"the result backend {self.executor.backend} is not Redis: job state needs Redis")
        self.store = JobStore(client)

    def job(self, job_id: str) -> dict[str, str]:
        state = self.store.get(job_id)
        if state is None:
            click.echo(f"error: no such job {job_id} (unknown, or expired)", err=True)
            sys.exit(exit_codes.NO_SUCH_JOB)
        return state


def _corpus(value: str) -> str:
    """``--corpus`` checked: an ``s3://bucket/prefix`` URL names no credential
    (it is stored in the job's state and shown by ``status``); a directory is
    an absolute path (workers resolve it, not the submitter)."""
    from eceb_worker.storage.objects import is_s3_url
    from eceb_worker.storage.s3 import parse_s3_url

    if is_s3_url(value):
        try:
            parse_s3_url(value)
        except ValueError as exc:
            raise click.UsageError(f"--corpus: {exc}") from None
    elif not os.path.isabs(value):
        raise click.UsageError(
            f"--corpus: {value!r} is a relative path; give the directory as an absolute path every worker sees "
            "(or an s3://bucket/prefix URL)"
        )
    return value


def _object_url(value: str, what: str) -> str:
    from eceb_worker.storage.objects import split_object_url

    role = "write it to" if what == "--out" else "read it from"
    authority = value.split("/", 3)[2] if value.startswith("s3://") and value.count("/") >= 2 else ""
    if "@" in authority or "?" in value or "#" in value:
        raise click.UsageError(
            f"{what}: an s3:// URL takes no credentials, query or fragment (credentials come from the "
            "environment, as for boto3)"
        )
    try:
        split_object_url(value)
    except ValueError:
        raise click.UsageError(f"{what} must be an s3://bucket/key URL: the workers {role} object storage") from None
    return value


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="eceb-dist")
def main() -> None:
    """Evaluate ECEB-0.1 runs on a cluster of Celery workers over Redis.

    Inputs, corpus and report live in S3-compatible storage; the report is
    byte for byte what `eceb evaluate` writes. Exit codes: as `eceb`, plus
    7 no such job, 8 job cancelled, 75 job not finished yet.
    """


@main.command()
@click.argument("benchmark", metavar="BENCHMARK")
@click.argument("run", metavar="RUN")
@click.option("--corpus", required=True, help="The corpus: s3://bucket/prefix (or a directory every worker sees).")
@click.option("--out", "out", required=True, help="Where the report is written (atomically): s3://bucket/key.")
@click.option(
    "--shard-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_TASK_BYTES,
    show_default=True,
    help="Re-hash work per shard, in bytes (each file also counts 32 KiB); each shard is one task.",
)
@click.option(
    "--shard-observations",
    type=click.IntRange(min=1),
    default=DEFAULT_SHARD_OBSERVATIONS,
    show_default=True,
    help="Evaluation work per shard, in observations.",
)
@click.option(
    "--concurrency", type=click.IntRange(min=1), default=16, show_default=True, help="Object reads per worker."
)
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
    from eceb_worker.brokers.job_messages import JobInputs, JobMessage
    from eceb_worker.brokers.jobs import COORDINATE_TASK
    from eceb_worker.storage import StorageSpec

    message = JobMessage(
        job_id=uuid.uuid4().hex,
        inputs=JobInputs(
            benchmark=_object_url(benchmark, "BENCHMARK"), run=_object_url(run, "RUN"), endpoint_url=endpoint_url
        ),
        corpus=StorageSpec(source=_corpus(corpus), endpoint_url=endpoint_url, concurrency=concurrency),
        out=_object_url(out, "--out"),
        shard_bytes=shard_bytes,
        shard_observations=shard_observations,
    )
    _check_submission(message, endpoint_url)
    cluster = _Cluster(broker_url, result_backend)
    cluster.store.create(
        message.job_id,
        phase="queued",
        created=int(time.time()),
        benchmark=benchmark,
        run=run,
        corpus=corpus,
        out=out,
    )
    handle = cluster.app.send_task(COORDINATE_TASK, args=(msgspec.to_builtins(message),))
    cluster.store.update(message.job_id, coordinator=handle.id)
    click.echo(message.job_id)


def _check_submission(message: JobMessage, endpoint_url: str | None) -> None:
    """What can be told before queuing: the benchmark and run exist (every
    missing one named, :class:`InputError`), and the report can be written
    under ``--out`` (:class:`OutputError`)."""
    from eceb_worker.storage.objects import ObjectStore

    store = ObjectStore(endpoint_url)
    missing = [
        Problem(
            file=url,
            message="cannot read: no such object" if store.bucket_exists(url) else "cannot read: no such bucket",
        )
        for url in (message.inputs.benchmark, message.inputs.run)
        if not store.exists(url)
    ]
    if missing:
        raise InputError(missing)
    store.check_writable(message.out)


def _shards(state: dict[str, str]) -> tuple[int, int]:
    done = int(state.get("rehash_done", 0)) + int(state.get("eval_done", 0))
    total = int(state.get("rehash_total", 0)) + int(state.get("eval_total", 0))
    return done, total


def _status_line(job_id: str, state: dict[str, str], failures: list[str]) -> str:
    line = (
        f"{job_id}: {state.get('phase', '?')}; re-hash shards {state.get('rehash_done', 0)}/"
        f"{state.get('rehash_total', '?')}; evaluation shards {state.get('eval_done', 0)}/"
        f"{state.get('eval_total', '?')}; failures {len(failures)}"
    )
    if state.get("phase") == "done":
        line += f"; {state.get('passing_tasks')}/{state.get('total_tasks')} tasks pass; report {state.get('out')}"
    elif state.get("phase") == "failed":
        line += f"; {state.get('error_kind')} error: {state.get('error')}"
    return line


@main.command()
@click.argument("job_id", metavar="JOB")
@click.option("--watch", is_flag=True, help="Follow the job until it ends (a progress bar on a terminal).")
@cluster_options
@handle_errors
def status(
    job_id: str, watch: bool, broker_url: str | None, result_backend: str | None, endpoint_url: str | None
) -> None:
    """Show a job's phase, shards done/total and failures so far."""
    from eceb_worker.brokers.job_state import TERMINAL_PHASES

    cluster = _Cluster(broker_url, result_backend)
    state = cluster.job(job_id)
    if not watch:
        click.echo(_status_line(job_id, state, cluster.store.failures(job_id)))
        for failure in cluster.store.failures(job_id):
            click.echo(f"  failure: {failure}")
        return
    bar: Any = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=0, desc=job_id[:8], unit="shard", file=sys.stderr)
    last = ""
    while True:
        state = cluster.job(job_id)
        done, total = _shards(state)
        if bar is not None:
            bar.total = total
            bar.set_postfix_str(state.get("phase", ""))
            bar.n = done
            bar.refresh()
        line = _status_line(job_id, state, cluster.store.failures(job_id))
        if bar is None and line != last:
            click.echo(line)
            last = line
        if state.get("phase") in TERMINAL_PHASES:
            break
        time.sleep(_POLL_S)
    if bar is not None:
        bar.close()
        click.echo(_status_line(job_id, state, cluster.store.failures(job_id)))


def _finished(cluster: _Cluster, job_id: str, timeout: float | None) -> dict[str, str]:
    from eceb_worker.brokers.job_state import TERMINAL_PHASES

    deadline = None if timeout is None else time.monotonic() + timeout
    state = cluster.job(job_id)
    while state.get("phase") not in TERMINAL_PHASES:
        if deadline is not None and time.monotonic() >= deadline:
            done, total = _shards(state)
            click.echo(
                f"job {job_id} not finished within {timeout:g} s ({state.get('phase')}, {done}/{total} shards)",
                err=True,
            )
            sys.exit(exit_codes.JOB_NOT_FINISHED)
        time.sleep(_POLL_S)
        found = cluster.store.get(job_id)
        if found is None:
            click.echo(
                f"error: job {job_id} vanished from Redis while it ran (was the server restarted without "
                "persistence?); no report was written",
                err=True,
            )
            sys.exit(exit_codes.NO_SUCH_JOB)
        state = found
    return state


def _exit_for(job_id: str, state: dict[str, str]) -> None:
    """Print a failed or cancelled job's reason and exit with its code; return when done."""
    phase = state.get("phase")
    if phase == "cancelled":
        click.echo(f"job {job_id} was cancelled; no report was written", err=True)
        sys.exit(exit_codes.JOB_CANCELLED)
    if phase != "failed":
        return
    kind = state.get("error_kind", "internal")
    if kind == "input" and state.get("problems"):
        report_input_error(InputError(msgspec.json.decode(state["problems"], type=list[Problem])))
    elif kind == "verification" and state.get("verification"):
        from eceb_cli.corpus import print_findings
        from eceb_worker.engine.verification import VerificationReport

        print_findings(msgspec.json.decode(state["verification"], type=VerificationReport))
        click.echo(f"error: {state.get('error')}", err=True)
    else:
        click.echo(f"error: {kind}: {state.get('error')}", err=True)
    click.echo(f"job {job_id} failed; no report was written", err=True)
    sys.exit(_EXIT_FOR_KIND.get(kind, exit_codes.INTERNAL))


def _passed_exit(state: dict[str, str]) -> None:
    if state.get("passing_tasks") != state.get("total_tasks"):
        sys.exit(exit_codes.TASKS_FAILED)


@main.command()
@click.argument("job_id", metavar="JOB")
@click.option(
    "--timeout", type=click.FloatRange(min=0, min_open=True), help="Give up after this many seconds (exit 75)."
)
@cluster_options
@handle_errors
def wait(
    job_id: str, timeout: float | None, broker_url: str | None, result_backend: str | None, endpoint_url: str | None
) -> None:
    """Wait until a job ends. Exit 0 when every task passes, 1 when some fail,
    3/4/5/6/70 when the job failed (as `eceb evaluate`), 8 when cancelled, 75 on timeout.
    """
    cluster = _Cluster(broker_url, result_backend)
    state = _finished(cluster, job_id, timeout)
    _exit_for(job_id, state)
    click.echo(
        f"{state.get('passing_tasks')}/{state.get('total_tasks')} tasks pass; report written to {state.get('out')}"
    )
    _passed_exit(state)


@main.command()
@click.argument("job_id", metavar="JOB")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), help="Write the report here.")
@cluster_options
@handle_errors
def result(
    job_id: str, output: Path | None, broker_url: str | None, result_backend: str | None, endpoint_url: str | None
) -> None:
    """Download a finished job's report (to FILE, atomically, or to stdout)."""
    from eceb_worker.files import atomic_write, check_writable
    from eceb_worker.storage.objects import ObjectStore

    if output is not None:
        check_writable(output)
    cluster = _Cluster(broker_url, result_backend)
    state = cluster.job(job_id)
    _exit_for(job_id, state)
    if state.get("phase") != "done":
        done, total = _shards(state)
        click.echo(f"job {job_id} not finished ({state.get('phase')}, {done}/{total} shards)", err=True)
        sys.exit(exit_codes.JOB_NOT_FINISHED)
    data = _report_of(job_id, state, ObjectStore(endpoint_url))
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        atomic_write(output, [data])
        click.echo(f"{state.get('passing_tasks')}/{state.get('total_tasks')} tasks pass; report written to {output}")
    _passed_exit(state)


def _report_of(job_id: str, state: dict[str, str], objects: ObjectStore) -> bytes:
    """The report job ``job_id`` wrote, checked against the digest it
    recorded. Raises ``StorageError`` when the object at its ``--out`` is
    gone or holds other bytes (another job or writer replaced it)."""
    from blake3 import blake3

    url = state["out"]
    try:
        data, _ = objects.get(url)
    except InputError:
        raise StorageError(f"{url}: the report of job {job_id} is gone (deleted after the job wrote it)") from None
    expected = state.get("report_digest")
    if expected and blake3(data).hexdigest() != expected:
        raise StorageError(
            f"{url}: no longer holds the report of job {job_id} (another job or writer replaced it; run the job again)"
        )
    return data


@main.command()
@click.argument("job_id", metavar="JOB")
@cluster_options
@handle_errors
def cancel(job_id: str, broker_url: str | None, result_backend: str | None, endpoint_url: str | None) -> None:
    """Cancel a job: its remaining shards are skipped and no report is written."""
    cluster = _Cluster(broker_url, result_backend)
    state = cluster.job(job_id)
    if not cluster.store.update(job_id, phase="cancelled"):
        ended = cluster.store.get(job_id) or state
        click.echo(f"job {job_id} already ended ({ended.get('phase')})")
        return
    if state.get("coordinator"):
        cluster.app.control.revoke(state["coordinator"])
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

    The same as: celery -A eceb_worker.brokers.celery_app worker --pool prefork -Q eceb
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
    try:
        # Importing the module configures its application: the settings are checked here.
        from eceb_worker.brokers.celery_app import worker_command
    except ValueError as exc:  # the message never repeats a URL
        raise click.UsageError(str(exc)) from None
    command = worker_command(concurrency=concurrency, loglevel=loglevel, extra=celery_args)
    shown = redact_url(environment.get("ECEB_BROKER_URL", "redis://127.0.0.1:6379/0"))
    click.echo(f"starting a worker on {shown}", err=True)
    sys.stdout.flush()
    os.execve(sys.executable, command, environment)  # noqa: S606 - replaces this process by the worker


if __name__ == "__main__":
    main()
