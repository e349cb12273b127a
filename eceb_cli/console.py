"""Terminal behaviour shared by the commands: error reports mapped to exit
codes (:func:`run_reported`, applied once, to every command, by the root
groups: :class:`eceb_cli.streams.PipeSafeGroup`), progress bars, worker
defaults, and the text writer (:func:`echo`): what an input holds is printed with its non-printable characters escaped
(:func:`~eceb_worker.render.terminal.printable`), so that no id can move
the cursor or rewrite a line.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final, NamedTuple, TypeVar

import click

from eceb_cli import exit_codes
from eceb_cli.conventions import Stopped, is_quiet, is_verbose, stopped_line
from eceb_worker.core.urls import check_no_credentials, redact_text
from eceb_worker.errors import (
    EcebError,
    ExecutionRefused,
    InputError,
    OutputError,
    Problem,
    ProviderError,
    PublicationRefused,
    StorageError,
    VerificationError,
)
from eceb_worker.render.terminal import printable
from eceb_worker.settings import read_setting

__all__ = ["default_workers", "echo", "endpoint", "progress", "report_input_error", "run_reported"]

T = TypeVar("T")


def echo(line: str, *, err: bool = False) -> None:
    """Print one line of text on standard output (``err``: standard error),
    its non-printable characters escaped (:func:`printable`): the writer for
    text that holds what an input says (ids, paths, messages, worker
    names). JSON is printed as it is: its own escaping suffices."""
    click.echo(printable(line), err=err)


def _error(line: str) -> None:
    """Print ``line`` on stderr, every URL in it redacted: a message may quote
    what an input file holds, a credential included (:func:`redact_text`),
    and its non-printable characters escaped (:func:`echo`)."""
    echo(redact_text(line), err=True)


def report_input_error(error: InputError) -> None:
    """Print every problem of ``error`` on stderr, one a line, then a count."""
    _report_problems(error.problems, "error", "problem")


def _report_problems(problems: list[Problem], prefix: str, noun: str) -> None:
    for problem in problems:
        _error(f"{prefix}: {problem}")
    count = len(problems)
    click.echo(f"{count} {noun}{'s' if count != 1 else ''} found.", err=True)


class _Wording(NamedTuple):
    """How an error of eceb is reported on stderr: ``prefix: message``, or,
    with a ``noun``, every one of its problems a line (``prefix: problem``)
    then their count (``3 problems found.``)."""

    prefix: str
    noun: str = ""


_WORDINGS: Final[dict[type[EcebError], _Wording]] = {
    InputError: _Wording("error", "problem"),
    PublicationRefused: _Wording("refused", "reason"),
    VerificationError: _Wording("error"),
    StorageError: _Wording("error: storage"),
    OutputError: _Wording("error: output"),
    ExecutionRefused: _Wording("error: refused"),
    ProviderError: _Wording("error: provider"),
}
"""Each error of eceb a command can end with, and how it is reported; its
exit code is :func:`exit_codes.for_error`'s. Any other exception is an
internal error (exit 70)."""


def _wording(error: BaseException) -> _Wording | None:
    """The wording of ``error`` (of its nearest class in :data:`_WORDINGS`), if any."""
    for kind in type(error).__mro__:
        if kind in _WORDINGS:
            return _WORDINGS[kind]
    return None


def run_reported(command: Callable[[], T]) -> T:
    """Run ``command`` (a command line's work) and map what it raises to
    its documented exit code (README, "Exit codes"), the error reported on
    stderr (:data:`_WORDINGS`): a stop by signal exits ``128 + signum``,
    click's own exceptions pass through, any other exception is an internal
    error (exit 70; re-raised, with its traceback, under ``-v`` or
    ``ECEB_DEBUG``).

    Raises:
        SystemExit: with the exit code of what ``command`` raised.
    """
    try:
        return command()
    except (click.ClickException, click.exceptions.Exit, click.Abort):
        raise
    except KeyboardInterrupt:
        click.echo(stopped_line(signal.SIGINT), err=True)
        sys.exit(exit_codes.INTERRUPTED)
    except Stopped as exc:
        click.echo(stopped_line(exc.signum), err=True)
        sys.exit(128 + exc.signum)
    except Exception as exc:
        wording = _wording(exc)
        if wording is None or not isinstance(exc, EcebError):
            _error(f"internal error: {type(exc).__name__}: {exc} (please report this)")
            if _debug():
                raise
            sys.exit(exit_codes.INTERNAL)
        problems: list[Problem] | None = getattr(exc, "problems", None) if wording.noun else None
        if problems is None:
            _error(f"{wording.prefix}: {exc}")
        else:
            _report_problems(problems, wording.prefix, wording.noun)
        sys.exit(exit_codes.for_error(exc))


def _debug() -> bool:
    """``ECEB_DEBUG`` is set: show the traceback of an internal error."""
    try:
        return is_verbose() or bool(read_setting("debug"))
    except ValueError:
        return False


def endpoint(endpoint_url: str | None) -> str | None:
    """The S3 endpoint: ``--endpoint-url``, else ``ECEB_S3_ENDPOINT_URL``
    (:mod:`eceb_worker.settings`). One that holds credentials is a usage
    error (:func:`eceb_worker.core.urls.check_no_credentials`)."""
    value: str | None = endpoint_url or read_setting("s3_endpoint_url")
    if value:
        try:
            check_no_credentials(value)
        except ValueError as exc:  # the message shows the URL without its credentials
            raise click.UsageError(f"the S3 endpoint (--endpoint-url or ECEB_S3_ENDPOINT_URL): {exc}") from None
    return value


def default_workers() -> int:
    """Worker processes used when ``--workers`` is not given: one per usable core."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@contextmanager
def progress(description: str, total: int, unit: str = "file") -> Iterator[Callable[[int], object]]:
    """A tqdm progress bar on stderr when it is a terminal (and ``-q`` was not given), silent otherwise.

    Yields ``advance(n)``. tqdm is imported only for a terminal (it costs
    tens of milliseconds of start-up).
    """
    if is_quiet() or not sys.stderr.isatty():
        yield _ignore
        return
    from tqdm import tqdm

    with tqdm(
        total=total,
        desc=description,
        unit=unit,
        unit_scale=False,
        file=sys.stderr,
        leave=False,
    ) as bar:
        yield bar.update


def _ignore(_: int) -> None:
    """``advance`` of a progress display that shows nothing."""
