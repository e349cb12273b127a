"""Reading an evaluation report (``symgliph.eceb/report-v0.1``, ECEB-0.1
§12, §15) back: the one reader of a report file, local or ``s3://``, that
``eceb compare``, ``eceb render`` and ``eceb-dist nightly`` share.
"""

from __future__ import annotations

from eceb_worker.core.decoding import decode_document
from eceb_worker.documents import HEAD_BYTES, wrong_kind
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.report import Report
from eceb_worker.io.locations import Location

__all__ = ["read_report"]


def read_report(location: Location) -> Report:
    """Decode the evaluation report at ``location`` (a local file or an
    ``s3://`` object, see :class:`~eceb_worker.io.locations.Locator`).

    Raises :class:`~eceb_worker.errors.InputError` naming the file (its
    name as given), and the record and field of every problem, when it
    cannot be read, is not valid JSON or does not match the report schema;
    a file of another kind eceb knows (a run, a benchmark) is the one
    problem saying so; a task id given twice is a problem of its second
    record (``tasks[i]``, field ``task_id``). A storage that cannot be used at all is a
    ``StorageError``.
    """
    data = location.read()
    try:
        report = decode_document(data, Report, file=location.name)
    except InputError as error:
        problem = wrong_kind(location.name, data[:HEAD_BYTES], "report")
        raise (InputError([problem]) if problem is not None else error) from None
    seen: set[str] = set()
    problems = []
    for index, task in enumerate(report.tasks):
        if task.task_id in seen:
            message = f"task {task.task_id!r} appears more than once"
            problems.append(Problem(file=location.name, record=f"tasks[{index}]", field="task_id", message=message))
        seen.add(task.task_id)
    if problems:
        raise InputError(problems)
    return report
