"""Checks of the location arguments and options of the command lines
(inputs, corpora): the one rule of :func:`eceb_worker.core.urls.check_location`
(a local path or an ``s3://`` URL, never with credentials), a usage error
(exit 2) otherwise, before anything is read or connected to; and of
durations (:func:`seconds`).
"""

from __future__ import annotations

import math
from pathlib import Path

import click

from eceb_worker.core.urls import check_location

__all__ = ["local_path", "location", "seconds"]


def location(_ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A click callback: ``value`` is a local path or an ``s3://`` URL without credentials."""
    if value is not None:
        try:
            check_location(value)
        except ValueError as exc:  # the message shows the URL without its credentials
            raise click.BadParameter(str(exc), param=param) from None
    return value


def local_path(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    """A click callback: ``value`` is a local file path (not a directory), never a URL."""
    if value is None:
        return None
    try:
        check_location(value, s3=False)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param=param) from None
    converted: Path = click.Path(path_type=Path, dir_okay=False).convert(value, param, ctx)
    return converted


def seconds(_ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A click callback for a ``click.FLOAT`` option: ``value`` is a finite
    number of seconds greater than zero (``nan`` and ``inf``, which parse
    as floats, are usage errors)."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise click.BadParameter(f"{value} is not a finite number of seconds greater than 0", param=param)
    return value


uncertainty_option = click.option(
    "--uncertainty",
    type=click.Choice(["bootstrap", "none"]),
    default="bootstrap",
    show_default=True,
    help=(
        "Savings intervals (ECEB-0.1 §16): bootstrap, a seeded 95 % percentile interval per passing task and for "
        "the means; none, the report states they were not estimated."
    ),
)
"""``--uncertainty {bootstrap,none}`` of ``eceb evaluate`` and ``eceb-dist submit``."""

no_disclosure_check_option = click.option(
    "--no-disclosure-check",
    "no_disclosure_check",
    is_flag=True,
    help="Do not check answers for text of artifacts their task may not see (the report says so).",
)
"""``--no-disclosure-check`` of ``eceb evaluate`` and ``eceb-dist submit`` (ECEB-0.1 §17)."""
