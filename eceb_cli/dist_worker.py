"""What ``eceb-dist worker`` does before it becomes the Celery worker: the
environment its options set (broker, result backend, S3 endpoint, log
format, metrics), the settings checked, and the metrics port tried.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping

import click

from eceb_cli.cluster_commands import holds_password, settings_checked
from eceb_worker.settings import Settings

__all__ = ["check_metrics_port", "refuse_passwords", "worker_environment", "worker_settings"]


def worker_environment(base: Mapping[str, str], **options: str | int | None) -> dict[str, str]:
    """``base`` (the environment) with each option given (by its settings
    field name: ``broker_url``, ``result_backend``, ``s3_endpoint_url``,
    ``log_format``, ``metrics_port``, ``metrics_address``) set as its
    variable; an option left out (None) leaves the variable as it is."""
    from eceb_worker.settings import SETTINGS

    variables = {setting.field: setting.name for setting in SETTINGS}
    environment = dict(base)
    for field, value in options.items():
        if value is not None and value != "":
            environment[variables[field]] = str(value)
    return environment


def worker_settings() -> Settings:
    """The settings of the worker about to start (from the environment),
    its application configured from them: one that does not parse is a
    usage error (exit 2)."""
    with settings_checked():
        # Configuring the worker's application checks the settings here.
        from eceb_worker.cluster.app import worker_app
        from eceb_worker.settings import load_settings

        worker_app()

        return load_settings()


def check_metrics_port(settings: Settings) -> None:
    """With metrics on, check that their port can be listened on at their
    address (the worker would stop otherwise): a usage error (exit 2)
    naming the option when it cannot."""
    port = settings.metrics_port
    if port is None:
        return
    address = settings.metrics_address
    try:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        with socket.create_server((address, port), family=family):
            pass
    except OSError as exc:
        raise click.UsageError(
            f"--metrics-port {port} (ECEB_METRICS_PORT): cannot listen on {address} ({exc.strerror or exc})"
        ) from None


def refuse_passwords(celery_args: tuple[str, ...]) -> None:
    """Refuse arguments for ``celery worker`` that hold a password (a URL with
    user information): a command line is shown to every user of the machine.

    Raises:
        click.UsageError: naming the environment variables to use instead.
    """
    if any(holds_password(argument) for argument in celery_args):
        raise click.UsageError(
            "an argument for celery holds a password, which a command line shows to every user of the machine "
            "(ps); give the broker in ECEB_BROKER_URL and the backend in ECEB_RESULT_BACKEND (the environment)"
        )
