"""The HTML report page of an evaluation report (ECEB-0.1 §10-§12, §15):
one self-contained file (inline CSS and inline SVG plots, no script, no
font, image or style sheet fetched from anywhere), the same bytes for the
same report (and run), whatever the machine, the time or the file's name.

The header names the benchmark, the run and the claim class, with a
prominent banner when the run is non-empirical, and gives tasks passing
k/n and the mean token and cost savings with the sum and the count of
tasks each mean is over. Each task shows its verdict, its figures (tokens,
cost, quality; savings in percent and basis points, a negative saving shown
before it saturates at 0), what its baseline selected against what it
permits (§7), the budget-ladder plot and the prompt-token plot
(:mod:`~eceb_worker.render.plots`), the gates-by-group matrix (§11) and
every failed assertion, marked when it did not decide the verdict.

Pages are rendered from the jinja2 templates in ``templates/`` with
autoescaping on: a task id or message holding markup stays text. Every
printed figure is an exact integer format (:mod:`eceb_worker.core.figures`).
Pure: returns bytes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import jinja2
from markupsafe import Markup

from eceb_worker.core.figures import grouped, percent, percent_bps, usd
from eceb_worker.families.eceb.explanations import (
    CLAIM_CLASSES,
    NOT_STRONGER_EVIDENCE,
    decides_verdict,
    signed_savings_bps,
)
from eceb_worker.families.eceb.gates import GATES, GroupGate
from eceb_worker.families.eceb.report import Report
from eceb_worker.families.eceb.verdicts import Assertion, GroupResult, TaskResult
from eceb_worker.render.plots import COLOURS, Repetition, ladder_plot, tokens_plot
from eceb_worker.render.terminal import printable
from eceb_worker.render.text import disclosure_text, uncertainty_text

__all__ = [
    "breakable",
    "CLAIM_CLASSES",
    "GROUP_GATES",
    "render_page",
    "report_header",
    "report_html",
]

GROUP_GATES: Final[tuple[str, ...]] = tuple(gate.name for gate in GATES if isinstance(gate, GroupGate))
"""The rows of the gates matrix: the group gates of ECEB-0.1 §11 and §13, in report order."""

_STRATEGY_NAMES: Final = {"full_permitted_context": "baseline", "compiled": "compiled", "naive_top_k": "naive_top_k"}


_BREAK_AFTER: Final = re.compile(r"([_/\-.:@]+)(?=[^\s_/\-.:@])|([0-9A-Za-z]{16})(?=[0-9A-Za-z]{8})")
"""Where an id may wrap: after a run of separators (``_ / - . : @``), and
after each 16 letters or digits of a long run without one (a digest)."""


def breakable(text: object) -> Markup:
    """``text`` escaped for HTML, with a ``<wbr>`` (a line-break
    opportunity) after each separator of an id (``_ / - . : @``) and every
    16 characters of a long run of letters and digits (a digest): a long id
    wraps at its parts, never between two letters of a word
    (the template filter ``breakable``)."""
    raw = _shown(str(text))
    parts, start = [], 0
    for match in _BREAK_AFTER.finditer(raw):
        parts.append(raw[start : match.end()])
        start = match.end()
    parts.append(raw[start:])
    return Markup("<wbr>").join(parts)  # each part escaped


def _shown(text: str) -> str:
    """``text`` with each non-printable character but the line feed escaped
    (:func:`~eceb_worker.render.terminal.printable`)."""
    return "\n".join(printable(line) for line in text.split("\n"))


def _inert(value: object) -> object:
    """A plain string with each non-printable character but the line feed
    escaped (:func:`~eceb_worker.render.terminal.printable`): a page shown
    with ``cat`` or ``less`` then carries no terminal control, whatever an
    input held. Markup (a drawing, a filter's output) and other values are
    returned as they are (the template's ``finalize``)."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return _shown(value)
    return value


@functools.cache
def _environment() -> jinja2.Environment:
    """The templates, autoescaped, strict about undefined names, every
    string shown without terminal controls (:func:`_inert`), with the filter
    ``breakable`` (:func:`breakable`)."""
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("eceb_worker.render", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_inert,
    )
    environment.filters["breakable"] = breakable
    return environment


def render_page(template: str, **context: Any) -> bytes:
    """Template ``template`` of ``templates/`` rendered with ``context``, as
    UTF-8 bytes ending in one newline."""
    text = _environment().get_template(template).render(colours=COLOURS, **context)
    return text.rstrip("\n").encode("utf-8") + b"\n"


def _tokens(value: int | None) -> str:
    return "n/a" if value is None else f"{grouped(value)} tokens"


def _cost(value: int | None) -> str:
    return "n/a" if value is None else f"{usd(value)} ({grouped(value)} micro-USD)"


def _quality(value: int | None) -> str:
    return "n/a" if value is None else f"{value} / 1000"


def _group_name(strategy: str, budget: int | None) -> str:
    """``baseline``, ``compiled @ 512``, ``naive_top_k``, or ``task`` for a task-level assertion."""
    name = _STRATEGY_NAMES.get(strategy, "task")
    return name if budget is None else f"{name} @ {grouped(budget)}"


def _saving(task: TaskResult, reported: int | None, full: int | None, compiled: int | None) -> str:
    """A task's saving as the page words it."""
    if not task.passed:
        return "none: savings are reported for a passing task only"
    if reported is None:
        return "n/a: the baseline costs nothing"
    raw = signed_savings_bps(full, compiled)
    if raw is not None and raw < 0:
        return (
            f"{percent_bps(raw)}: negative, the compiled figure exceeds the baseline's; "
            f"the report saturates it to {percent_bps(reported)} (ECEB-0.1 §12)"
        )
    return percent_bps(reported)


def _matrix(task: TaskResult) -> list[dict[str, Any]]:
    """One row per group gate: the gate and, per group of the task, ``fail``
    when an assertion of that gate names that group, ``none`` when the group
    has no observation (nothing to check), else ``pass``."""
    failing = {(a.gate, a.strategy, a.budget) for a in task.failed_assertions}
    rows = []
    for gate in GROUP_GATES:
        cells = []
        for group in task.groups:
            if (gate, group.strategy, group.budget) in failing:
                cells.append("fail")
            else:
                cells.append("pass" if group.observations else "none")
        rows.append({"gate": gate, "cells": cells})
    return rows


def _column(task: TaskResult, group: GroupResult) -> dict[str, Any]:
    return {
        "name": _group_name(group.strategy, group.budget),
        "passed": group.passed,
        "observations": group.observations,
        "minimum": group.strategy == "compiled" and group.budget == task.minimum_viable_budget,
    }


def _assertion(task: TaskResult, assertion: Assertion) -> dict[str, Any]:
    return {
        "gate": assertion.gate,
        "group": _group_name(assertion.strategy, assertion.budget),
        "repetition": "" if assertion.repetition is None else str(assertion.repetition),
        "message": assertion.message,
        "decides": decides_verdict(task, assertion),
    }


def _verdict(task: TaskResult) -> str:
    ladder = ", ".join(grouped(g.budget) for g in task.groups if g.strategy == "compiled" and g.budget is not None)
    budget = task.minimum_viable_budget
    if task.passed and budget is not None:
        return (
            f"passes: its minimum viable budget is {grouped(budget)} tokens, the smallest budget of its ladder "
            f"({ladder}) at which every repetition passes every gate"
        )
    deciding = sum(1 for a in task.failed_assertions if decides_verdict(task, a))
    where = (
        f"its first passing budget is {grouped(budget)} tokens, but"
        if budget is not None
        else f"no budget of its ladder ({ladder}) passes every gate, and"
    )
    return f"fails: {where} {deciding} failed assertion(s) decide the verdict"


def _budget_short(task: TaskResult) -> str:
    """The index's budget column: the minimum viable budget, or what a failing task has."""
    budget = task.minimum_viable_budget
    if budget is None:
        return "none"
    return grouped(budget) if task.passed else f"— (first passing {grouped(budget)})"


def _at_budget(task: TaskResult) -> str:
    if task.passed:
        return "At the minimum viable budget"
    return "At the first passing budget" if task.minimum_viable_budget is not None else "With no passing budget"


def _share_of(share: int | None, whole: str) -> str:
    return f"{'n/a' if share is None else percent(share)} of {whole}"


def _composition(task: TaskResult) -> dict[str, Any] | None:
    """The baseline's composition (ECEB-0.1 §7) as the page shows it: rows
    of (what, artifacts, bytes, share) and notes on what the rows leave out;
    ``None`` for a report written before it was given."""
    c = task.baseline_composition
    if c is None:
        return None
    rows = [
        ("permitted by the task", grouped(c.permitted_artifacts), grouped(c.permitted_bytes), ""),
        ("required by the task", grouped(c.required_artifacts), grouped(c.required_bytes), ""),
    ]
    notes = []
    if c.repetition is None:
        notes.append("The task has no baseline observation: nothing is selected.")
    else:
        permitted_share = _share_of(c.permitted_bytes_selected_bps, "the permitted bytes (its permitted artifacts)")
        rows += [
            (
                f"selected by the baseline (repetition {c.repetition})",
                grouped(c.selected_artifacts),
                grouped(c.selected_bytes),
                permitted_share,
            ),
            (
                "selected and required",
                grouped(c.selected_required),
                grouped(c.selected_required_bytes),
                _share_of(c.required_bytes_share_bps, "the bytes selected"),
            ),
            ("selected but not permitted (policy violations)", grouped(c.selected_not_permitted), "", ""),
        ]
    if c.repetitions_differ:
        notes.append(
            f"The baseline's repetitions select different artifacts; repetition {c.repetition} is shown "
            "(the repeatability gate fails such a baseline)."
        )
    return {"rows": rows, "notes": notes}


def _task(index: int, task: TaskResult, repetitions: Sequence[Repetition] | None) -> dict[str, Any]:
    budget = task.minimum_viable_budget
    compiled = "compiled" if budget is None else f"compiled @ {grouped(budget)}"
    return {
        "anchor": f"task-{index + 1}",
        "task_id": task.task_id,
        "passed": task.passed,
        "verdict": _verdict(task),
        "minimum_viable_budget": _budget_short(task),
        "at_budget": _at_budget(task),
        "token_saving_short": "—" if task.token_savings_bps is None else percent_bps(task.token_savings_bps),
        "compiled_column": compiled if task.passed or budget is None else f"{compiled} (first passing)",
        "figures": [
            (
                "prompt tokens",
                _tokens(task.baseline_prompt_tokens),
                _tokens(task.compiled_prompt_tokens),
                _saving(task, task.token_savings_bps, task.baseline_prompt_tokens, task.compiled_prompt_tokens),
            ),
            (
                "cost per repetition",
                _cost(task.baseline_cost_micro_usd),
                _cost(task.compiled_cost_micro_usd),
                _saving(task, task.cost_savings_bps, task.baseline_cost_micro_usd, task.compiled_cost_micro_usd),
            ),
            (
                "quality",
                _quality(task.baseline_quality_milli),
                _quality(task.compiled_quality_milli),
                f"floor τ {_quality(task.quality_floor_milli)}",
            ),
        ],
        "provenance": percent_bps(task.provenance_coverage_bps),
        "policy_violations": "n/a" if task.policy_violations is None else grouped(task.policy_violations),
        "policy_violations_all_groups": grouped(task.policy_violations_all_groups),
        "repeatability": {None: "n/a", True: "yes", False: "no"}[task.repeatability],
        "composition": _composition(task),
        "ladder_plot": Markup(ladder_plot(task, repetitions, plot_id=f"ladder-{index + 1}")),  # noqa: S704 - matplotlib's SVG of our own labels
        "tokens_plot": Markup(tokens_plot(task, repetitions, plot_id=f"tokens-{index + 1}")),  # noqa: S704
        "columns": [_column(task, g) for g in task.groups],
        "matrix": _matrix(task),
        "assertions": [_assertion(task, a) for a in task.failed_assertions],
        "undeciding": sum(1 for a in task.failed_assertions if not decides_verdict(task, a)),
    }


def _mean(mean: int | None, values: Sequence[int], what: str) -> dict[str, str]:
    """A summary mean with its numerator and denominator."""
    if mean is None:
        return {"value": "n/a", "bps": "", "detail": f"no passing task has a {what} saving"}
    count = len(values)
    return {
        "value": percent(mean),
        "bps": f"{grouped(mean)} bps",
        "detail": f"floored mean over {count} passing task(s): {grouped(sum(values))} bps ÷ {count}",
    }


def _token_counts(report: Report) -> str:
    local = report.token_counts.local == "reported_separately"
    return "provider-reported; local counts " + ("reported separately, per group" if local else "absent")


def report_header(report: Report) -> dict[str, Any]:
    """What the page's header shows of ``report``: claim, inputs, counts,
    means (shared with the comparison page)."""
    passing = [t for t in report.tasks if t.passed]
    tokens = [t.token_savings_bps for t in passing if t.token_savings_bps is not None]
    costs = [t.cost_savings_bps for t in passing if t.cost_savings_bps is not None]
    summary = report.summary
    inputs = report.inputs
    return {
        "claim_class": report.claim_class,
        "claim": CLAIM_CLASSES.get(report.claim_class, ""),
        "not_stronger": NOT_STRONGER_EVIDENCE,
        "non_empirical": report.non_empirical,
        "benchmark_id": inputs.benchmark_id,
        "run_id": inputs.run_id,
        "passing": f"{grouped(summary.passing_tasks)}/{grouped(summary.total_tasks)}",
        "token_mean": _mean(summary.mean_token_savings_bps, tokens, "token"),
        "cost_mean": _mean(summary.mean_cost_savings_bps, costs, "cost"),
        "inputs": [
            ("benchmark", inputs.benchmark_id),
            ("task root", inputs.task_root),
            ("corpus root", inputs.corpus_root),
            ("artifacts verified", grouped(inputs.artifact_count)),
            ("run", inputs.run_id),
            ("run digest", inputs.run_digest),
            ("evaluator", f"eceb {report.eceb_version}"),
            ("token counts compared", _token_counts(report)),
            ("uncertainty", uncertainty_text(report)),
            ("disclosure check", disclosure_text(report)),
        ],
    }


def report_html(report: Report, repetitions: Mapping[str, Sequence[Repetition]] | None = None) -> bytes:
    """The report page of ``report``: UTF-8 HTML, the same bytes for the
    same arguments.

    ``repetitions``: every repetition of the run the report was computed
    from, by task id (see
    :func:`~eceb_worker.pipeline.report_runs.report_repetitions`, which
    checks the run's digest); the plots then draw each repetition. ``None``:
    they draw each group's mean and lowest quality, and the page says the
    repetitions come with ``--run``.
    """
    tasks = [
        _task(index, task, None if repetitions is None else repetitions.get(task.task_id, ()))
        for index, task in enumerate(report.tasks)
    ]
    return render_page(
        "report.html.j2",
        header=report_header(report),
        tasks=tasks,
        with_run=repetitions is not None,
        gates=GROUP_GATES,
    )
