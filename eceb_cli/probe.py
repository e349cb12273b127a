"""``probe``: is this worker alive and consuming eceb's queue? The exec probe
of the Kubernetes worker Deployment (deploy/k8s/base/worker.yaml: startup,
readiness and liveness).

It asks one Celery node, by name, through the broker (Celery's remote
control, ``inspect(destination=[node]).active_queues()``), which queues it
consumes. The worker's main process answers, also while its pool runs
shards, so a busy worker passes and a hung or disconnected one does not.
"""

from __future__ import annotations

import signal
import socket
import sys
from typing import Final, NoReturn

import click

from eceb_cli.arguments import seconds
from eceb_cli.cluster_commands import cluster_options, connect
from eceb_cli.console import handle_errors
from eceb_cli.conventions import say
from eceb_worker.errors import StorageError

__all__ = ["NODE_PREFIX", "NOT_READY", "default_node", "probe"]

NODE_PREFIX: Final = "eceb"
"""The part of a worker's node name before ``@``: the Deployment starts each
worker with ``-n eceb@%h`` (Celery expands ``%h`` to the host name)."""

NOT_READY: Final = 1
"""The exit code of a probe that fails: no answer, or not consuming ``eceb``."""


def default_node() -> str:
    """``eceb@HOSTNAME``: the node name ``-n eceb@%h`` gives a worker on this
    host (in a pod, the pod's name)."""
    return f"{NODE_PREFIX}@{socket.gethostname()}"


class _OutOfTime(Exception):
    """The probe's whole deadline (twice ``--timeout``) passed."""


def _out_of_time(_signum: int, _frame: object) -> None:
    raise _OutOfTime


def _not_ready(reason: str) -> NoReturn:
    click.echo(f"not ready: {reason}", err=True)
    sys.exit(NOT_READY)


@click.command()
@click.option(
    "--node",
    metavar="NAME",
    help="The worker's Celery node name (default: eceb@ and this host's name, what `-n eceb@%h` gives).",
)
@click.option(
    "--timeout",
    type=float,
    default=5.0,
    show_default=True,
    callback=seconds,
    help="Seconds to wait for the worker's answer.",
)
@cluster_options
@handle_errors
def probe(
    node: str | None,
    timeout: float,
    broker_url: str | None,
    result_backend: str | None,
    endpoint_url: str | None,
) -> None:
    """Exit 0 when the worker NODE answers through the broker within TIMEOUT
    seconds and consumes the eceb queue (a Kubernetes exec probe).

    Exit 1 (not ready, the reason on standard error) when the broker cannot
    be reached, the worker does not answer in time, or it answers without
    consuming eceb; 2 for a usage error. The whole probe, reaching the
    broker included, ends within twice TIMEOUT.
    """
    from eceb_worker.cluster.app import QUEUE

    name = node or default_node()
    deadline = 2 * timeout
    signal.signal(signal.SIGALRM, _out_of_time)
    signal.setitimer(signal.ITIMER_REAL, deadline)
    try:
        try:
            cluster = connect(broker_url, result_backend)
        except StorageError as exc:
            _not_ready(str(exc))
        replies = cluster.app.control.inspect(destination=[name], timeout=timeout).active_queues() or {}
    except _OutOfTime:
        _not_ready(f"no answer from the broker or worker {name} within {deadline:g} s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if name not in replies:
        _not_ready(f"worker {name} did not answer within {timeout:g} s (through the broker {cluster.broker})")
    consumed = sorted(str(queue.get("name")) for queue in replies[name] or [])
    if QUEUE not in consumed:
        shown = ", ".join(consumed) or "no queue"
        _not_ready(f"worker {name} answers but consumes {shown}, not {QUEUE}")
    say(f"ready: worker {name} consumes {QUEUE}")
