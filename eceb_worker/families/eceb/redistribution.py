"""What the answers of a run disclose, against publishing it (ECEB-0.1
§1, §16, §17): a bundle binds its run verbatim, so a run whose answers
repeat restricted text or a marked secret of a corpus that may not be
redistributed is refused (:func:`disclosure_refusals`)."""

from __future__ import annotations

from eceb_worker.core.lenient import brief_repr
from eceb_worker.errors import Problem
from eceb_worker.families.eceb.publication import Published

__all__ = ["disclosure_refusals"]


def disclosure_refusals(published: Published, report_file: str) -> list[Problem]:
    """Why the bundle may not be published because of what its run's answers
    disclose (ECEB-0.1 §1, §16, §17): one problem per task whose answers the
    report finds disclosing restricted text or a marked secret (its
    ``disclosure`` assertions; ids, groups and counts only, never the text),
    and one when the answers were not checked (``--no-disclosure-check``),
    each only when some source is declared not redistributable.

    A bundle binds the run verbatim: its answers, the disclosing ones
    included, are what ``--check`` recomputes the report from, so they can
    be neither left out nor redacted; the bundle is refused instead
    (:class:`~eceb_worker.errors.PublicationRefused`, raised by the caller).
    When every source is redistributable, the answers repeat only text the
    corpus itself may publish, and nothing is refused here.
    """
    closed = sorted(source.name for source in published.sources.sources if not source.redistributable)
    if not closed:
        return []
    sources = ", ".join(brief_repr(name) for name in closed[:3]) + (
        f" and {len(closed) - 3} more" if len(closed) > 3 else ""
    )
    why = (
        f"the bundle would publish them verbatim in run.json, and the sources file declares {sources} not "
        "redistributable: a bundle never carries restricted text or a marked secret (the run cannot be redacted, "
        "as --check recomputes the report from it); publish a run whose answers disclose nothing"
    )
    report = published.report
    if not report.disclosure_check.enabled:
        message = (
            f"the report was evaluated with --no-disclosure-check: its answers may disclose restricted text; {why}"
        )
        return [Problem(file=report_file, field="disclosure_check", message=message)]
    problems = []
    for index, task in enumerate(report.tasks):
        found = [a for a in task.failed_assertions if a.gate == "disclosure"]
        count = max(task.disclosures_all_groups, len(found))
        if not count:
            continue
        places = sorted(
            {
                (f"{a.strategy}@{a.budget}" if a.budget is not None else a.strategy or "task")
                + (f" rep {a.repetition}" if a.repetition is not None else "")
                for a in found
            }
        )
        shown = ", ".join(places[:4]) + (f" and {len(places) - 4} more" if len(places) > 4 else "")
        message = (
            f"task {brief_repr(task.task_id)}: the report finds {count} disclosure(s) of restricted text or a marked "
            f"secret in its answers{f' ({shown})' if shown else ''}; {why}"
        )
        problems.append(Problem(file=report_file, record=f"tasks[{index}]", field="failed_assertions", message=message))
    return problems
