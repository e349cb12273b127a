"""Reading an evaluation report (``symgliph.eceb/report-v0.1``, ECEB-0.1
§12, §15) back: the one reader of a report file, local or ``s3://``, that
``eceb compare``, ``eceb render`` and ``eceb-dist nightly`` share.
"""

from __future__ import annotations

from eceb_worker.core.decoding import decode_document
from eceb_worker.documents import HEAD_BYTES, wrong_kind
from eceb_worker.errors import InputError
from eceb_worker.families.eceb.report import Report, report_problems
from eceb_worker.io.locations import Location

__all__ = ["decode_report", "read_report"]


def read_report(location: Location) -> Report:
    """Decode the evaluation report at ``location`` (a local file or an
    ``s3://`` object, see :class:`~eceb_worker.io.locations.Locator`):
    :func:`decode_report` of its bytes, under its name as given. A storage
    that cannot be used at all is a ``StorageError``."""
    return decode_report(location.read(), location.name)


def decode_report(data: bytes, name: str) -> Report:
    """The evaluation report ``data`` (the bytes of file ``name``).

    Raises :class:`~eceb_worker.errors.InputError` naming the file, and the
    record and field of every problem, when it is not valid JSON or does not
    match the report schema; a file of another kind eceb knows (a run, a
    benchmark) is the one problem saying so; a report that contradicts
    itself (a task id given twice, a summary its tasks do not make:
    :func:`~eceb_worker.families.eceb.report.report_problems`) has each
    contradiction named.
    """
    try:
        report = decode_document(data, Report, file=name)
    except InputError as error:
        problem = wrong_kind(name, data[:HEAD_BYTES], "report")
        raise (InputError([problem]) if problem is not None else error) from None
    problems = report_problems(report, name)
    if problems:
        raise InputError(problems)
    return report
