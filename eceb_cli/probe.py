"""``probe``: is this worker alive and consuming eceb's queue? The exec probe
of the Kubernetes worker Deployment (deploy/k8s/base/worker.yaml: startup,
readiness and liveness).

With ``--node NAME`` it asks that one Celery node, through the broker
(Celery's remote control, ``inspect(destination=[node]).active_queues()``),
which queues it consumes; ``%h`` in NAME is this host's name, as in the
worker's ``-n eceb@%h``. The worker's main process answers, also while its
pool runs shards, so a busy worker passes and a hung or disconnected one
does not. Without ``--node`` it asks every worker (a broadcast, answers
gathered for the whole ``--timeout``) and passes when any consumes the
queue, naming them: what a script waiting for "a worker" needs, whatever
names its workers were started with.
"""

from __future__ import annotations

import signal
import socket
import sys
from typing import Final, NoReturn

import click

from eceb_cli import exit_codes
from eceb_cli.arguments import seconds
from eceb_cli.cluster_commands import cluster_options, connect
from eceb_cli.conventions import exits, say
from eceb_worker.errors import StorageError

__all__ = ["NODE_PREFIX", "probe"]

NODE_PREFIX: Final = "eceb"
"""The part of a worker's node name before ``@``: the Deployment starts each
worker with ``-n eceb@%h`` (Celery expands ``%h`` to the host name), and
its probes ask ``--node eceb@%h``."""

NOT_READY: Final = 1
"""The exit code of a probe that fails: no answer, or not consuming ``eceb``."""


def node_name(pattern: str) -> str:
    """``pattern`` with each ``%h`` replaced by this host's name (Celery's own
    expansion of ``-n``), so ``--node eceb@%h`` asks the worker ``-n
    eceb@%h`` started on this host."""
    return pattern.replace("%h", socket.gethostname())


TIMEOUT_MAX_S: Final = 86_400.0
"""The longest ``--timeout`` (one day): the broker's wait for answers and the
probe's alarm are bounded by the system (an ``epoll`` wait by about 24 days),
and a probe that waits longer than a day is a mistake, refused as a usage error."""


def _probe_seconds(context: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """:func:`~eceb_cli.arguments.seconds`, at most :data:`TIMEOUT_MAX_S`."""
    checked = seconds(context, param, value)
    if checked is not None and checked > TIMEOUT_MAX_S:
        raise click.BadParameter(f"{checked:g} is more than {TIMEOUT_MAX_S:,.0f} seconds (one day)", param=param)
    return checked


class _OutOfTime(Exception):
    """The probe's whole deadline (twice ``--timeout``) passed."""


def _out_of_time(_signum: int, _frame: object) -> None:
    raise _OutOfTime


def _not_ready(reason: str) -> NoReturn:
    click.echo(f"not ready: {reason}", err=True)
    sys.exit(NOT_READY)


@exits(
    exit_codes.TASKS_FAILED,
    meanings={exit_codes.TASKS_FAILED: "not ready (the worker does not answer or does not consume eceb)"},
    stops=False,
)
@click.command()
@click.option(
    "--node",
    metavar="NAME",
    help="Ask only this worker, by its Celery node name (%h: this host's name, as in `-n eceb@%h`); "
    "default: any worker.",
)
@click.option(
    "--timeout",
    type=float,
    default=5.0,
    show_default=True,
    callback=_probe_seconds,
    help="Seconds to wait for the worker's answer (at most 86400).",
)
@cluster_options
def probe(node: str | None, timeout: float) -> None:
    """Exit 0 when a worker consumes the eceb queue: the worker NODE, when
    given, answering through the broker within TIMEOUT seconds (a
    Kubernetes exec probe gives `--node eceb@%h`); without --node, any
    worker answering within TIMEOUT (every worker that does is named).

    Exit 1 (not ready, the reason on standard error) when the broker cannot
    be reached, the worker does not answer in time, or it answers without
    consuming eceb; 2 for a usage error. The whole probe, reaching the
    broker included, ends within twice TIMEOUT.
    """
    from eceb_worker.cluster.app import QUEUE

    name = node_name(node) if node else None
    deadline = 2 * timeout
    signal.signal(signal.SIGALRM, _out_of_time)
    try:  # the alarm may ring at once (a tiny --timeout), or while it is being disarmed
        signal.setitimer(signal.ITIMER_REAL, deadline)
        try:
            try:
                cluster = connect()
            except StorageError as exc:
                _not_ready(str(exc))
            destination = [name] if name else None
            replies = cluster.app.control.inspect(destination=destination, timeout=timeout).active_queues() or {}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _OutOfTime:
        asked = f"worker {name}" if name else "any worker"
        _not_ready(f"no answer from the broker or {asked} within {deadline:g} s")
    if name is None:
        _any_worker(replies, QUEUE, timeout, cluster.broker)
        return
    if name not in replies:
        _not_ready(f"worker {name} did not answer within {timeout:g} s (through the broker {cluster.broker})")
    consumed = _queues(replies[name])
    if QUEUE not in consumed:
        shown = ", ".join(consumed) or "no queue"
        _not_ready(f"worker {name} answers but consumes {shown}, not {QUEUE}")
    say(f"ready: worker {name} consumes {QUEUE}")


def _queues(answer: object) -> list[str]:
    """The queue names in one worker's ``active_queues`` answer, sorted."""
    if not isinstance(answer, list):
        return []
    return sorted(str(queue.get("name")) for queue in answer if isinstance(queue, dict))


def _any_worker(replies: dict[str, object], queue: str, timeout: float, broker: str) -> None:
    """Ready when any worker that answered consumes ``queue`` (each named);
    else not ready, naming the workers that answered without it."""
    consuming = sorted(node for node, answer in replies.items() if queue in _queues(answer))
    if consuming:
        workers = "worker" if len(consuming) == 1 else "workers"
        say(f"ready: {workers} {', '.join(consuming)} consume{'s' if len(consuming) == 1 else ''} {queue}")
        return
    if replies:
        _not_ready(f"no worker consumes {queue}: {', '.join(sorted(replies))} answered, consuming other queues")
    _not_ready(f"no worker answered within {timeout:g} s (through the broker {broker})")
