"""What the ``eceb-dist`` commands share: the cluster options (kept on the
command line's click context as :class:`ClusterOptions`), the one check of
the cluster's settings, reaching the cluster and queueing a job."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, TypeVar

import click
import msgspec

from eceb_cli.submission import check_submission
from eceb_worker.core.urls import redact_url

if TYPE_CHECKING:
    from eceb_worker.cluster.client import Cluster
    from eceb_worker.pipeline.messages import JobMessage

__all__ = [
    "ClusterOptions",
    "cluster_endpoint",
    "cluster_options",
    "cluster_options_of",
    "connect",
    "current_cluster_options",
    "holds_password",
    "settings_checked",
    "submit_job",
]

F = TypeVar("F", bound=Callable[..., Any])


@dataclasses.dataclass(frozen=True)
class ClusterOptions:
    """The cluster options of one ``eceb-dist`` command line, as given
    (``None``: not given, the environment or the default applies later):
    ``--broker-url``, ``--result-backend`` (neither holding a password,
    refused while parsing) and ``--endpoint-url`` (checked when used,
    :func:`cluster_endpoint`). Kept in the click context's ``ctx.meta``
    (:func:`cluster_options_of`) by the options themselves, which give the
    command no parameter."""

    broker_url: str | None = None
    result_backend: str | None = None
    endpoint_url: str | None = None

    def keep(self, ctx: click.Context) -> None:
        """Make these the options of ``ctx``'s command line (``ctx.meta``,
        shared by a command and its groups; :func:`cluster_options_of`)."""
        ctx.meta[_META_KEY] = self


_META_KEY: Final = "eceb_cli.cluster_options"
"""Where a command line's :class:`ClusterOptions` are kept in ``ctx.meta``."""


def cluster_options_of(ctx: click.Context) -> ClusterOptions:
    """The :class:`ClusterOptions` of ``ctx``'s command line (none given
    until an option is parsed)."""
    held = ctx.meta.get(_META_KEY)
    return held if isinstance(held, ClusterOptions) else ClusterOptions()


def current_cluster_options() -> ClusterOptions:
    """The :class:`ClusterOptions` of the current command line; none given
    outside one (a function called directly, not through the command line)."""
    ctx = click.get_current_context(silent=True)
    return ClusterOptions() if ctx is None else cluster_options_of(ctx)


def cluster_endpoint() -> str | None:
    """The S3 endpoint of the current command line: ``--endpoint-url``,
    else ``ECEB_S3_ENDPOINT_URL``; one holding credentials is a usage error
    (:func:`eceb_cli.console.endpoint`)."""
    from eceb_cli.console import endpoint

    return endpoint(current_cluster_options().endpoint_url)


def holds_password(value: str) -> bool:
    """Whether ``value`` holds a URL with something the one redaction rule
    hides (:func:`~eceb_worker.core.urls.redact_url`: user information, a
    query parameter named like a secret), in any part of a ``;``-separated
    list or after an ``=`` (``--broker=URL``); text without ``://`` (a node
    name ``w1@%h``) is no URL."""
    return any("://" in part and redact_url(part) != part for part in value.split(";"))


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


def _keep(context: click.Context, parameter: click.Parameter, value: str | None) -> None:
    """Keep a cluster option's value in the command line's
    :class:`ClusterOptions` (``ctx.meta``), a broker or backend URL once
    checked (:func:`_without_password`; :class:`click.BadParameter`)."""
    if parameter.name in ("broker_url", "result_backend"):
        value = _without_password(context, parameter, value)
    kept = cluster_options_of(context)
    if parameter.name == "broker_url":
        kept = dataclasses.replace(kept, broker_url=value)
    elif parameter.name == "result_backend":
        kept = dataclasses.replace(kept, result_backend=value)
    else:
        kept = dataclasses.replace(kept, endpoint_url=value)
    kept.keep(context)


def cluster_options(function: F) -> F:
    """Broker, result backend and S3 endpoint options (each with its
    environment variable), kept as the command line's
    :class:`ClusterOptions` rather than passed to the command. A broker or
    backend URL holding a password is refused on the command line
    (:func:`_without_password`): it goes in the environment."""
    for decorator in reversed(
        [
            click.option(
                "--broker-url",
                callback=_keep,
                expose_value=False,
                help="Celery broker URL (default redis://127.0.0.1:6379/0), without a password (one goes in "
                "ECEB_BROKER_URL); rediss:// for TLS, the CA bundle in ECEB_REDIS_CA_CERTS. Env: ECEB_BROKER_URL.",
            ),
            click.option(
                "--result-backend",
                callback=_keep,
                expose_value=False,
                help="Celery result backend URL, a Redis URL without a password (default: the broker). "
                "Env: ECEB_RESULT_BACKEND.",
            ),
            click.option(
                "--endpoint-url",
                callback=_keep,
                expose_value=False,
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


def connect(*, app: Any = None) -> Cluster:
    """The cluster of the current command line's :class:`ClusterOptions`
    (its broker and result backend), reached (its application ``app`` when
    given, one made here otherwise); a setting that does not parse is a
    usage error."""
    options = current_cluster_options()
    with settings_checked():
        from eceb_worker.cluster.client import Cluster

        return Cluster(options.broker_url, options.result_backend, app=app)


def submit_job(message: JobMessage, *, as_json: bool = False, **fields: str) -> Cluster:
    """Check what can be checked (the cluster's settings, the current
    command line's :class:`ClusterOptions`, first, before anything is read
    or connected to), queue the job and print its id (as ``{"job_id":
    ...}`` with ``as_json``); warn when no worker consumes the queue.
    Returns the cluster reached."""
    from eceb_cli.outcomes import warn_without_workers

    options = current_cluster_options()
    with settings_checked():
        from eceb_worker.cluster.app import make_app

        application = make_app(options.broker_url, options.result_backend)  # the process's one application
    check_submission(message)
    cluster = connect(app=application)
    cluster.submit(message, created=int(time.time()), corpus=message.corpus.source, out=message.out, **fields)
    click.echo(msgspec.json.encode({"job_id": message.job_id}).decode() if as_json else message.job_id)
    warn_without_workers(cluster)
    return cluster
