"""What the ``eceb-dist`` commands share: the cluster options, the one
check of the cluster's settings, reaching the cluster and queueing a job."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click
import msgspec

from eceb_cli.submission import check_submission

if TYPE_CHECKING:
    from eceb_worker.cluster.client import Cluster
    from eceb_worker.pipeline.messages import JobMessage

__all__ = ["cluster_options", "connect", "holds_password", "settings_checked", "submit_job"]

F = TypeVar("F", bound=Callable[..., Any])


def holds_password(value: str) -> bool:
    """Whether ``value`` holds a URL with user information (``user:password@``
    or ``:password@`` before the host), in any part of a ``;``-separated
    list or after an ``=`` (``--broker=URL``)."""
    for part in value.split(";"):
        _, separator, rest = part.partition("://")
        if separator and "@" in rest.split("/", 1)[0]:
            return True
    return False


def _without_password(context: click.Context, parameter: click.Parameter, value: str | None) -> str | None:
    """A ``--broker-url`` or ``--result-backend`` holding a password
    (:func:`holds_password`) is a usage error naming its variable: a command
    line shows in the process list (``ps``, ``/proc/PID/cmdline``) to every
    user of the machine. The URL is never repeated."""
    if value is None:
        return value
    if holds_password(value):
        variable = "ECEB_BROKER_URL" if parameter.name == "broker_url" else "ECEB_RESULT_BACKEND"
        option = "--broker-url" if parameter.name == "broker_url" else "--result-backend"
        raise click.BadParameter(
            f"holds a password, which a command line shows to every user of the machine (ps); give this URL "
            f"in {variable} (the environment) and leave {option} out",
            ctx=context,
            param=parameter,
        )
    return value


def cluster_options(function: F) -> F:
    """Broker, result backend and S3 endpoint options (each with its
    environment variable). A broker or backend URL holding a password is
    refused on the command line (:func:`_without_password`): it goes in the
    environment."""
    for decorator in reversed(
        [
            click.option(
                "--broker-url",
                callback=_without_password,
                help="Celery broker URL (default redis://127.0.0.1:6379/0), without a password (one goes in "
                "ECEB_BROKER_URL); rediss:// for TLS, the CA bundle in ECEB_REDIS_CA_CERTS. Env: ECEB_BROKER_URL.",
            ),
            click.option(
                "--result-backend",
                callback=_without_password,
                help="Celery result backend URL, a Redis URL without a password (default: the broker). "
                "Env: ECEB_RESULT_BACKEND.",
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
def settings_checked() -> Iterator[None]:
    """A setting that does not parse (ValueError, whose message never
    repeats a URL) is a usage error."""
    try:
        yield
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def connect(broker_url: str | None, result_backend: str | None, *, app: Any = None) -> Cluster:
    """The cluster, reached (its application ``app`` when given, one made
    here otherwise); a setting that does not parse is a usage error."""
    with settings_checked():
        from eceb_worker.cluster.client import Cluster

        return Cluster(broker_url, result_backend, app=app)


def submit_job(
    message: JobMessage, broker_url: str | None, result_backend: str | None, *, as_json: bool = False, **fields: str
) -> Cluster:
    """Check what can be checked (the cluster's settings first, before
    anything is read or connected to), queue the job and print its id (as
    ``{"job_id": ...}`` with ``as_json``); warn when no worker consumes the
    queue. Returns the cluster reached."""
    from eceb_cli.outcomes import warn_without_workers

    with settings_checked():
        from eceb_worker.cluster.app import make_app

        application = make_app(broker_url, result_backend)  # the process's one application
    check_submission(message)
    cluster = connect(broker_url, result_backend, app=application)
    cluster.submit(message, created=int(time.time()), corpus=message.corpus.source, out=message.out, **fields)
    click.echo(msgspec.json.encode({"job_id": message.job_id}).decode() if as_json else message.job_id)
    warn_without_workers(cluster)
    return cluster
