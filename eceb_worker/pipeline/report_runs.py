"""The run a report was computed from, read back for the report's page
(``eceb render REPORT --run RUN``): every repetition of every task, after
proving that the run is the one the report names (ECEB-0.1 §8, §12).
"""

from __future__ import annotations

from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.report import Report, RunDigester, task_records_digest
from eceb_worker.families.eceb.run_index import decode_task_evidence
from eceb_worker.io.locations import Locator
from eceb_worker.pipeline.inputs import Where, load_run
from eceb_worker.render.plots import Repetition, repetitions_of

__all__ = ["report_repetitions"]


def report_repetitions(
    report: Report, run_at: Where, locator: Locator | None = None, *, report_name: str = "the report"
) -> dict[str, tuple[Repetition, ...]]:
    """Every repetition of the run at ``run_at`` (a path or an ``s3://``
    URL, read by ``locator`` with the one run reader,
    :func:`~eceb_worker.pipeline.inputs.load_run`), by task id.

    The run must be the one ``report`` was computed from: its digest
    (:class:`~eceb_worker.families.eceb.report.RunDigester` over every
    task's :func:`~eceb_worker.families.eceb.report.task_records_digest`,
    as evaluation computes it) must equal ``report.inputs.run_digest``.
    Raises :class:`~eceb_worker.errors.InputError` with every problem of
    the run's records, or the one problem naming both digests (``report_name``
    says which report) when they differ; ``StorageError`` when the storage
    cannot be used.
    """
    run = load_run(run_at, locator)
    problems: list[Problem] = list(run.unkeyed)
    digester = RunDigester(run.header)
    repetitions: dict[str, tuple[Repetition, ...]] = {}
    for task_id in sorted(run.task_ids):
        evidence, _observations, _auxiliary, record_problems = decode_task_evidence(run, task_id)
        problems.extend(p.problem for p in sorted(record_problems, key=lambda p: p.order))
        digester.add_task(task_id, task_records_digest(evidence.observations, evidence.auxiliary_costs))
        repetitions[task_id] = repetitions_of(evidence.observations)
    if problems:
        raise InputError(problems)
    digest = digester.hexdigest()
    expected = report.inputs.run_digest
    if digest != expected:
        message = (
            f"is not the run {report_name} was computed from: its run digest is {digest}, "
            f"the report's inputs.run_digest is {expected} (run {report.inputs.run_id!r})"
        )
        raise InputError([Problem(file=run.file, field="", message=message)])
    return repetitions
