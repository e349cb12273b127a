"""The text and Markdown of a comparison of two evaluation reports
(``eceb compare``; :mod:`eceb_worker.families.eceb.comparison`): what
changed, task by task, every regression named, and a difference of claim
classes said (ECEB-0.1 §15: results of one class are not evidence for a
stronger one). The ``--json`` form is the comparison document itself.
"""

from __future__ import annotations

from collections.abc import Iterator

from eceb_worker.core.figures import grouped, percent_bps, signed
from eceb_worker.families.eceb.comparison import ComparedReport, Comparison, TaskChange
from eceb_worker.families.eceb.report import Summary
from eceb_worker.render.markdown import markdown_text
from eceb_worker.render.terminal import printable

__all__ = [
    "claim_class_note",
    "comparison_lines",
    "comparison_markdown",
    "comparison_verdict",
    "passing_change_text",
    "task_change_text",
]


def _claim(report: ComparedReport) -> str:
    return f"{report.claim_class} ({'non-empirical' if report.non_empirical else 'empirical'})"


def _signed_or_na(change: int | None, unit: str) -> str:
    return "n/a" if change is None else f"{signed(change)} {unit}"


def _passing(summary: Summary) -> str:
    return f"{summary.passing_tasks}/{summary.total_tasks}"


def passing_change_text(change: int) -> str:
    """A change of the count of passing tasks, in words: ``no change``,
    ``+1: 1 more task passes``, ``-2: 2 fewer tasks pass``."""
    if change == 0:
        return "no change"
    count = abs(change)
    more = "more" if change > 0 else "fewer"
    return f"{signed(change)}: {grouped(count)} {more} {'task passes' if count == 1 else 'tasks pass'}"


def _verdict(passed: bool | None) -> str:
    return "-" if passed is None else ("PASS" if passed else "FAIL")


def _budget(budget: int | None) -> str:
    return "none" if budget is None else f"{grouped(budget)} tokens"


def claim_class_note(comparison: Comparison) -> str | None:
    """The sentence saying the two reports' claim classes (or empirical
    labels) differ; ``None`` when they are the same."""
    if not comparison.claim_classes_differ:
        return None
    return (
        f"claim classes differ: old {_claim(comparison.old)}, new {_claim(comparison.new)}; "
        "results of one claim class are not evidence for another (ECEB-0.1 §15)"
    )


def comparison_verdict(comparison: Comparison) -> str:
    """The last line: ``no regression`` or ``REGRESSED: n regression(s)``, with the task counts."""
    counts = f"{_passing(comparison.old.summary)} -> {_passing(comparison.new.summary)} tasks pass"
    if not comparison.regressed:
        return f"no regression ({counts})"
    return f"REGRESSED: {len(comparison.regressions)} regression(s) ({counts})"


def task_change_text(task: TaskChange) -> str:
    """What changed in one task, as ``;``-separated clauses (``added``,
    ``PASS -> FAIL``, the minimum viable budget, savings, violations, gates)."""
    parts: list[str] = [task.change] if task.change != "kept" else []
    if task.old_passed != task.new_passed or task.change != "kept":
        parts.append(f"{_verdict(task.old_passed)} -> {_verdict(task.new_passed)}")
    if task.old_minimum_viable_budget != task.new_minimum_viable_budget:
        budget = f"{_budget(task.old_minimum_viable_budget)} -> {_budget(task.new_minimum_viable_budget)}"
        if task.budget_change is not None:
            budget += f" ({signed(task.budget_change)})"
        parts.append(f"minimum viable budget {budget}")
    for what, old, new, change in (
        ("token savings", task.old_token_savings_bps, task.new_token_savings_bps, task.token_savings_change_bps),
        ("cost savings", task.old_cost_savings_bps, task.new_cost_savings_bps, task.cost_savings_change_bps),
    ):
        if old != new:
            parts.append(
                f"{what} {percent_bps(old)} -> {percent_bps(new)}"
                + ("" if change is None else f" ({signed(change)} bps)")
            )
    if task.old_policy_violations != task.new_policy_violations:
        old_count = "-" if task.old_policy_violations is None else grouped(task.old_policy_violations)
        new_count = "-" if task.new_policy_violations is None else grouped(task.new_policy_violations)
        parts.append(f"policy violations {old_count} -> {new_count}")
    if task.new_failed_gates:
        parts.append(f"now failing for gate(s): {', '.join(task.new_failed_gates)}")
    return "; ".join(parts)


def _summary_rows(comparison: Comparison) -> Iterator[tuple[str, str, str, str]]:
    old, new, change = comparison.old, comparison.new, comparison.summary_change
    yield "benchmark", old.inputs.benchmark_id, new.inputs.benchmark_id, ""
    yield "run", old.inputs.run_id, new.inputs.run_id, ""
    yield "run digest", old.inputs.run_digest[:16] + "...", new.inputs.run_digest[:16] + "...", ""
    yield (
        "task root",
        old.inputs.task_root[:16] + "...",
        new.inputs.task_root[:16] + "...",
        ("differ" if comparison.task_roots_differ else "same"),
    )
    yield (
        "corpus root",
        old.inputs.corpus_root[:16] + "...",
        new.inputs.corpus_root[:16] + "...",
        ("differ" if comparison.corpus_roots_differ else "same"),
    )
    yield "claim class", _claim(old), _claim(new), "differ" if comparison.claim_classes_differ else "same"
    yield "tasks passing", _passing(old.summary), _passing(new.summary), passing_change_text(change.passing_tasks)
    yield (
        "mean token savings",
        percent_bps(old.summary.mean_token_savings_bps),
        percent_bps(new.summary.mean_token_savings_bps),
        _signed_or_na(change.mean_token_savings_bps, "bps"),
    )
    yield (
        "mean cost savings",
        percent_bps(old.summary.mean_cost_savings_bps),
        percent_bps(new.summary.mean_cost_savings_bps),
        _signed_or_na(change.mean_cost_savings_bps, "bps"),
    )


def _thresholds(comparison: Comparison) -> str:
    t = comparison.thresholds
    allowed = [
        name
        for name, on in (
            ("new policy violations", t.allow_new_policy_violations),
            ("failing tasks failing for new gates", t.allow_new_failed_gates),
            ("removed tasks", t.allow_removed_tasks),
        )
        if on
    ]
    return (
        f"thresholds: savings may fall by {grouped(t.max_token_savings_drop_bps)} bps (tokens) and "
        f"{grouped(t.max_cost_savings_drop_bps)} bps (cost), a minimum viable budget may rise by "
        f"{grouped(t.max_budget_increase)} tokens; allowed: {', '.join(allowed) or 'nothing else'}"
    )


def comparison_lines(comparison: Comparison) -> Iterator[str]:
    """The text ``eceb compare`` prints: the claim-class note first when the
    classes differ, old and new side by side (benchmark, run, roots, claim
    class, tasks passing k/n, mean savings in % and bps), each changed task,
    each regression, the thresholds, and the verdict line last
    (:func:`comparison_verdict`). Figures are exact (integers). Every line
    is terminal-safe (:func:`~eceb_worker.render.terminal.printable`)."""
    return map(printable, _comparison_lines(comparison))


def _comparison_lines(comparison: Comparison) -> Iterator[str]:
    """:func:`comparison_lines`, before escaping."""
    if (note := claim_class_note(comparison)) is not None:
        yield f"NOTE: {note}"
    rows = list(_summary_rows(comparison))
    width = max(len(row[0]) for row in rows)
    for name, old, new, change in rows:
        yield f"{name:<{width}}  {old} -> {new}" + (f"  ({change})" if change else "")
    changed = [task for task in comparison.tasks if task.changed]
    yield f"{len(changed)} of {len(comparison.tasks)} task(s) changed"
    for task in changed:
        yield f"  {task.task_id}: {task_change_text(task)}"
    for regression in comparison.regressions:
        yield f"REGRESSION  {regression.kind}: {regression.message}"
    yield _thresholds(comparison)
    yield comparison_verdict(comparison)


def comparison_markdown(comparison: Comparison) -> str:
    """The comparison as Markdown for a CI comment: a heading saying whether
    it regressed, the claim-class difference as a quote, old and new side by
    side, a table of the changed tasks, the regressions as a list, the
    thresholds. Ends with a newline. Every text from the reports (ids,
    messages) is inert: no image, link, mention, HTML or table break
    (:func:`~eceb_worker.render.markdown.markdown_text`)."""
    heading = "regressed" if comparison.regressed else "no regression"
    out = [f"## eceb compare: {heading}", ""]
    if (note := claim_class_note(comparison)) is not None:
        out += [f"> **Note:** {markdown_text(note)}", ""]
    out += ["| | old | new | change |", "|---|---|---|---|"]
    out += [f"| {' | '.join(markdown_text(cell) for cell in row)} |" for row in _summary_rows(comparison)]
    changed = [task for task in comparison.tasks if task.changed]
    out += ["", f"### Changed tasks ({len(changed)} of {len(comparison.tasks)})", ""]
    if changed:
        out += [
            "| task | change | verdict | minimum viable budget | token savings | cost savings | regressions |",
            "|---|---|---|---|---|---|---|",
        ]
        for task in changed:
            cells = (
                task.task_id,
                task.change,
                f"{_verdict(task.old_passed)} -> {_verdict(task.new_passed)}",
                f"{_budget(task.old_minimum_viable_budget)} -> {_budget(task.new_minimum_viable_budget)}",
                f"{percent_bps(task.old_token_savings_bps)} -> {percent_bps(task.new_token_savings_bps)}",
                f"{percent_bps(task.old_cost_savings_bps)} -> {percent_bps(task.new_cost_savings_bps)}",
                ", ".join(r.kind for r in task.regressions) or "none",
            )
            out.append(f"| {' | '.join(markdown_text(cell) for cell in cells)} |")
    else:
        out.append("No task changed.")
    out += ["", f"### Regressions ({len(comparison.regressions)})", ""]
    out += [f"- **{r.kind}**: {markdown_text(r.message)}" for r in comparison.regressions] or ["None."]
    out += ["", markdown_text(_thresholds(comparison)), ""]
    return "\n".join(out)
