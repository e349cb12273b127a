"""The ``-o/--output`` option of every command that writes a file: a local
path (written atomically, into a directory that exists, never over one of
the command's inputs) or ``-`` for standard output. A URL is a usage
error: these commands write local files only (``eceb-dist submit --out``
writes to object storage).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import click

from eceb_worker.core.urls import check_no_credentials, is_s3_url
from eceb_worker.errors import OutputError
from eceb_worker.io.files import atomic_write, check_not_an_input, check_writable, path_inside

__all__ = ["Output", "output_option"]

F = TypeVar("F", bound=Callable[..., Any])

STANDARD_OUTPUT = "-"
"""The ``-o`` value that means standard output."""


class Output:
    """Where a command writes its one output: ``path``, or standard output
    when ``path`` is None."""

    def __init__(self, path: Path | None) -> None:
        self.path = path

    @property
    def to_stdout(self) -> bool:
        """True when the output goes to standard output (``-o -``)."""
        return self.path is None

    def __str__(self) -> str:
        return "standard output" if self.path is None else str(self.path)

    def check(self, inputs: Iterable[str | Path] = ()) -> None:
        """Raise :class:`OutputError` unless the output can be written (see
        :func:`eceb_worker.io.files.check_writable`) and is none of the
        local ``inputs`` (``s3://`` ones are skipped)."""
        if self.path is None:
            return
        check_not_an_input(self.path, [Path(given) for given in inputs if not is_s3_url(given)])
        check_writable(self.path)

    def check_outside(self, directory: str, registered: Callable[[str], bool] | None = None) -> None:
        """Raise :class:`OutputError` when the output lies inside the local
        corpus ``directory``: anywhere in it (``registered`` None: the
        corpus being registered), or at a path ``registered`` accepts (a
        registered artifact). ``s3://`` corpora are skipped."""
        if self.path is None or is_s3_url(directory):
            return
        relative = path_inside(self.path, Path(directory))
        if relative is None:
            return
        if registered is None:
            raise OutputError(f"{self.path}: lies inside the corpus {directory} being registered")
        if registered(relative):
            raise OutputError(f"{self.path}: is the registered artifact {relative} of the corpus {directory}")

    def write(self, chunks: Iterable[bytes]) -> None:
        """Write ``chunks``: atomically to the file, or to standard output."""
        if self.path is not None:
            atomic_write(self.path, chunks)
            return
        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()


def _output(_ctx: click.Context, param: click.Parameter, value: str | None) -> Output | None:
    if value is None:
        return None
    if value == STANDARD_OUTPUT:
        return Output(None)
    try:
        check_no_credentials(value)
    except ValueError as exc:  # the message shows the URL without its credentials
        raise click.BadParameter(str(exc), param=param) from None
    if "://" in value:
        # The value is not repeated: a URL may hold credentials.
        raise click.BadParameter(
            "this command writes a local file (or standard output, with -); URLs are not written "
            "(eceb-dist submit --out writes to object storage)",
            param=param,
        )
    return Output(Path(value))


def output_option(
    help_text: str, *, required: bool = False, names: tuple[str, ...] = ("-o", "--output", "output")
) -> Callable[[F], F]:
    """The ``-o/--output`` option (or another output option, ``names``: its
    flags and the parameter's name): the command receives an
    :class:`Output` (None when the option is not given)."""
    return click.option(
        *names,
        metavar="FILE|-",
        required=required,
        callback=_output,
        help=f"{help_text} '-' writes standard output.",
    )
