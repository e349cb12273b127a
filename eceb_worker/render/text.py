"""The text summaries ``eceb evaluate``, ``eceb corpus verify`` and
``eceb-dist wait`` print: an evaluation report (ECEB-0.1 §12) and a
verification report (§5), as lines.

Every line is terminal-safe: the ids, paths and messages an input holds are
printed with their non-printable characters escaped
(:func:`~eceb_worker.render.terminal.printable`).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from typing import Final

from eceb_worker.core.figures import grouped, percent, percent_bps, usd
from eceb_worker.corpus.verification import VerificationReport
from eceb_worker.families.eceb.explanations import (
    CLAIM_CLASSES,
    NOT_STRONGER_EVIDENCE,
    decides_verdict,
    interval_not_estimated_reason,
    signed_savings_bps,
)
from eceb_worker.families.eceb.report import Report
from eceb_worker.families.eceb.verdicts import TaskResult
from eceb_worker.render.terminal import printable

__all__ = [
    "MINIMUM_VIABLE_BUDGET",
    "NOT_DECIDING",
    "artifacts_verified",
    "composition_text",
    "disclosure_text",
    "finding_lines",
    "html_pointer",
    "report_lines",
    "saving_text",
    "task_line",
    "task_lines",
    "tasks_pass",
    "uncertainty_text",
    "unregistered_lines",
    "verdict_line",
    "verification_verdict",
]


MINIMUM_VIABLE_BUDGET: Final = (
    "minimum viable budget: the smallest budget of a task's ladder (in prompt tokens) at which every repetition "
    "of the compiled context passes every gate; savings compare the compiled context at that budget with the full "
    "permitted context, mean per repetition (ECEB-0.1 §10, §12)"
)
"""The line that says what the minimum viable budget is."""

NOT_DECIDING: Final = " (did not decide the verdict)"
"""How a failed assertion that did not decide its task's verdict is marked."""


def _tokens(count: int | None) -> str:
    return "n/a" if count is None else f"{grouped(count)} tokens"


def _money(micro_usd: int | None) -> str:
    return "n/a" if micro_usd is None else f"{usd(micro_usd)} ({grouped(micro_usd)} micro-USD)"


def saving_text(what: str, reported: int | None, full: int | None, compiled: int | None) -> str:
    """A passing task's saving of ``what`` (``"prompt tokens"``, ``"cost"``):
    ``62.50 % of prompt tokens saved (6,250 bps)``; a negative saving shown
    as computed before it saturates at 0 (ECEB-0.1 §12), then the 0 the
    report holds; ``n/a`` (with the reason) without a positive baseline."""
    signed_bps = signed_savings_bps(full, compiled)
    if signed_bps is None or reported is None:
        return f"{what} saved: n/a (the baseline {what} is zero)" if full == 0 else f"{what} saved: n/a"
    if signed_bps < 0:
        larger = "has more prompt tokens" if what == "prompt tokens" else f"has a higher {what}"
        return (
            f"{percent(signed_bps)} of {what} saved ({grouped(signed_bps)} bps: the compiled context {larger} "
            f"than the baseline; reported as {grouped(reported)} bps, as savings saturate at 0)"
        )
    return f"{percent(reported)} of {what} saved ({grouped(reported)} bps)"


def task_line(task: TaskResult) -> str:
    """One task's verdict in one line: a passing task's minimum viable
    budget and savings; a failing task's first passing budget (or none) and
    how many failed assertions decide its verdict."""
    budget = task.minimum_viable_budget
    if task.passed:
        tokens = saving_text(
            "prompt tokens", task.token_savings_bps, task.baseline_prompt_tokens, task.compiled_prompt_tokens
        )
        cost = saving_text("cost", task.cost_savings_bps, task.baseline_cost_micro_usd, task.compiled_cost_micro_usd)
        return printable(f"PASS  {task.task_id}: minimum viable budget {_tokens(budget)}; {tokens}; {cost}")
    where = (
        f"first passing budget {_tokens(budget)}, but the task fails"
        if budget is not None
        else "no budget of the ladder passes every gate"
    )
    deciding = sum(1 for failure in task.failed_assertions if decides_verdict(task, failure))
    return printable(f"FAIL  {task.task_id}: {where}; {deciding} failed assertion(s) decide the verdict")


def _interval(bps: tuple[int, int] | None) -> str:
    if bps is None:
        return "n/a"
    lower, upper = bps
    return f"{percent(lower)} to {percent(upper)} ({grouped(lower)} to {grouped(upper)} bps)"


def _interval_line(task: TaskResult, estimated: bool) -> str:
    """A passing task's savings intervals (ECEB-0.1 §16), or why they were not estimated."""
    tokens, cost = task.token_savings_interval_bps, task.cost_savings_interval_bps
    if tokens is None and cost is None:
        return f"      savings interval: {interval_not_estimated_reason(task, estimated)}"
    return (
        f"      savings, 95 % bootstrap interval over the repetitions: prompt tokens {_interval(tokens)}; "
        f"cost {_interval(cost)}"
    )


def uncertainty_text(report: Report) -> str:
    """How the report's intervals were estimated, or that they were not (ECEB-0.1 §16)."""
    estimate = report.uncertainty
    if estimate.method == "not_estimated":
        return "not estimated (no interval is given; eceb evaluate --uncertainty none)"
    return (
        f"seeded bootstrap percentile intervals, {grouped(estimate.resamples)} resamples, "
        f"{percent(estimate.confidence_bps)} coverage (ECEB-0.1 §16)"
    )


def disclosure_text(report: Report) -> str:
    """Whether answers were checked for restricted text (ECEB-0.1 §1, §17), and how."""
    check = report.disclosure_check
    if not check.enabled:
        return "off: answers were not checked for text of artifacts their task may not see (--no-disclosure-check)"
    return (
        f"on: every answer checked against the artifacts its task may not see (a run of "
        f"{check.minimum_overlap_tokens} normalised tokens in common, or a marked secret value, fails the group)"
    )


def _share(bps: int | None) -> str:
    return "n/a" if bps is None else percent(bps)


def composition_text(task: TaskResult) -> str:
    """What the task's baseline selected against what the task permits
    (ECEB-0.1 §7): artifacts and bytes selected of those permitted, the
    required artifacts among them, and those not permitted; said when the
    repetitions select different artifacts, when there is no baseline, or
    when the report predates the figures."""
    c = task.baseline_composition
    if c is None:
        return "baseline composition: not in this report (written before eceb reported it)"
    permitted = f"the task permits {grouped(c.permitted_artifacts)} artifact(s), {grouped(c.permitted_bytes)} bytes"
    if c.repetition is None:
        return f"baseline composition: no baseline observation; {permitted}"
    text = (
        f"baseline composition, repetition {c.repetition}: {grouped(c.selected_artifacts)} artifact(s) selected, "
        f"{grouped(c.selected_bytes)} bytes; {permitted} ({_share(c.permitted_bytes_selected_bps)} of those bytes "
        f"selected); required: {grouped(c.selected_required)} of {grouped(c.required_artifacts)} selected, "
        f"{grouped(c.selected_required_bytes)} bytes ({_share(c.required_bytes_share_bps)} of the bytes selected); "
        f"{grouped(c.selected_not_permitted)} selected not permitted"
    )
    if c.repetitions_differ:
        text += f"; the baseline's repetitions select different artifacts (repetition {c.repetition} shown)"
    return text


def task_lines(task: TaskResult, *, estimated: bool = True) -> Iterator[str]:
    """:func:`task_line`, then (passing) the figures behind the savings and
    their intervals (``estimated``: the report estimated uncertainty), then
    the baseline's composition (:func:`composition_text`), then every failed
    assertion, those that did not decide the verdict marked so
    (:data:`NOT_DECIDING`: for a passing task, all of them)."""
    yield task_line(task)
    if task.passed:
        yield (
            f"      prompt tokens, mean per repetition: {_tokens(task.baseline_prompt_tokens)} with the full "
            f"permitted context, {_tokens(task.compiled_prompt_tokens)} compiled"
        )
        yield (
            f"      cost, mean per repetition: {_money(task.baseline_cost_micro_usd)} with the full permitted "
            f"context, {_money(task.compiled_cost_micro_usd)} compiled"
        )
        yield (
            f"      quality (thousandths): {task.baseline_quality_milli} with the full permitted context, "
            f"{task.compiled_quality_milli} compiled, floor {task.quality_floor_milli}"
        )
        yield _interval_line(task, estimated)
    yield f"      {composition_text(task)}"
    for failure in task.failed_assertions:
        group = f"{failure.strategy}@{failure.budget}" if failure.budget is not None else failure.strategy
        repetition = f" rep {failure.repetition}" if failure.repetition is not None else ""
        mark = "" if decides_verdict(task, failure) else NOT_DECIDING
        yield printable(f"      {failure.gate}: {group or 'task'}{repetition}: {failure.message}{mark}")


def claim_lines(report: Report) -> Iterator[str]:
    """The report's claim class as given (never upgraded), whether the run
    is empirical, then what the class means and that it is no evidence for
    a stronger one (ECEB-0.1 §9, §15)."""
    if report.non_empirical:
        yield (
            f"claim class {report.claim_class}, NON-EMPIRICAL: the run declares synthetic scores or usage, so these "
            "figures show how the evaluator behaves, not how a model performs (ECEB-0.1 §9, §15)"
        )
    else:
        yield f"claim class {report.claim_class} (empirical)"
    meaning = CLAIM_CLASSES.get(report.claim_class, "")
    yield f"claim class {report.claim_class} means: {meaning}; {NOT_STRONGER_EVIDENCE}"


def token_counts_line(report: Report) -> str:
    """Which token counts are compared, and where local counts are (ECEB-0.1 §16)."""
    local = (
        "local token counts are reported separately (per group, local_prompt_tokens), never in a saving"
        if report.token_counts.local == "reported_separately"
        else "the run records no local token counts"
    )
    return (
        "token counts compared: the provider-reported input tokens (provider-native, authoritative for budgets, "
        f"savings and cost; ECEB-0.1 §16); {local}"
    )


def _mean_line(report: Report) -> str:
    summary = report.summary
    passing = [task for task in report.tasks if task.passed]
    token_sum = sum(t.token_savings_bps for t in passing if t.token_savings_bps is not None)
    cost_sum = sum(t.cost_savings_bps for t in passing if t.cost_savings_bps is not None)
    tokens = percent_bps(summary.mean_token_savings_bps)
    cost = percent_bps(summary.mean_cost_savings_bps)
    if summary.mean_token_savings_bps is not None:
        tokens += f", {grouped(token_sum)} bps / {summary.passing_tasks} task(s)"
    if summary.mean_cost_savings_bps is not None:
        cost += f", {grouped(cost_sum)} bps / {summary.cost_savings_tasks} task(s) with a cost baseline"
    failing = summary.total_tasks - summary.passing_tasks
    return (
        f"mean savings over the {summary.passing_tasks} passing task(s) (floored): prompt tokens {tokens}; "
        f"cost {cost}; the {failing} failing task(s) count in tasks passing k/n, not in the means"
    )


def _mean_interval_line(report: Report) -> str:
    summary = report.summary
    if report.uncertainty.method == "not_estimated":
        return f"uncertainty: {uncertainty_text(report)}"
    intervals = (summary.token_savings_interval_bps, summary.cost_savings_interval_bps)
    return (
        f"uncertainty: {uncertainty_text(report)}; means, the passing tasks resampled: prompt tokens "
        f"{_interval(intervals[0])}; cost {_interval(intervals[1])}"
        + (" (n/a: fewer than two tasks to resample)" if None in intervals else "")
    )


def html_pointer(report_path: str | None) -> str:
    """The line pointing to the HTML report of the report at ``report_path``
    (the file ``-o`` wrote; ``None``: not written to a file)."""
    if report_path is None:
        return "HTML report with plots: write the report with -o FILE, then eceb render FILE --html -o report.html"
    return f"HTML report with plots: eceb render {shlex.quote(report_path)} --html -o report.html"


def report_lines(report: Report, source: str, *, report_path: str | None = None) -> Iterator[str]:
    """The summary of an evaluation report read from the corpus at
    ``source``, worded for a reader who has not read ECEB-0.1: inputs, the
    claim class (a non-empirical run said so), what the minimum viable
    budget is, each task's verdict and figures (tokens with thousands
    separators, cost in USD and micro-USD, savings in % and bps) with every
    failed assertion, the mean savings with their sums and counts, and a
    pointer to the HTML report of ``report_path`` (the file written, if any)."""
    inputs = report.inputs
    yield printable(f"benchmark {inputs.benchmark_id} (task root {inputs.task_root[:16]}...), run {inputs.run_id}")
    yield from map(printable, claim_lines(report))
    yield token_counts_line(report)
    yield f"disclosure check: {disclosure_text(report)}"
    yield printable(
        f"corpus {source}: {grouped(inputs.artifact_count)} artifacts verified against the registry, "
        f"root {inputs.corpus_root[:16]}..."
    )
    yield MINIMUM_VIABLE_BUDGET
    estimated = report.uncertainty.method != "not_estimated"
    for task in report.tasks:
        yield from task_lines(task, estimated=estimated)
    yield _mean_line(report)
    yield _mean_interval_line(report)
    yield printable(html_pointer(report_path))


def verdict_line(report: Report) -> str:
    """``k/n tasks pass``."""
    return tasks_pass(report.summary.passing_tasks, report.summary.total_tasks)


def tasks_pass(passing: object, total: object) -> str:
    """``k/n tasks pass`` from the counts of a report (or of a job's state,
    which holds them)."""
    return f"{passing}/{total} tasks pass"


def finding_lines(report: VerificationReport) -> Iterator[str]:
    """One line per failing artifact (printed on standard error)."""
    for finding in report.findings:
        line = f"{finding.status.upper()}  {finding.path}"
        if finding.artifact_id != finding.path:
            line += f"  (artifact {finding.artifact_id})"
        if finding.status == "stale":
            line += (
                f"  expected {finding.expected_digest} ({finding.expected_size} bytes),"
                f" found {finding.observed_digest} ({finding.observed_size} bytes)"
            )
        elif finding.detail:
            line += f"  {finding.detail}"
        yield printable(line)


UNREGISTERED_SHOWN: Final = 10
"""Unregistered files :func:`unregistered_lines` names; the rest are counted."""


def unregistered_lines(report: VerificationReport) -> Iterator[str]:
    """One line per file the registry does not list (printed on standard
    error), at most :data:`UNREGISTERED_SHOWN`, then a count of the rest."""
    found = report.unregistered
    if found is None or not found.count:
        return
    label = "UNREGISTERED" if found.fail else "unregistered"
    for path in found.paths[:UNREGISTERED_SHOWN]:
        yield f"{label}  {printable(path)}  not in the registry"
    rest = found.count - min(len(found.paths), UNREGISTERED_SHOWN)
    if rest:
        listed = "them all" if len(found.paths) >= found.count else f"the first {grouped(len(found.paths))}"
        yield f"... and {grouped(rest)} more not in the registry (--json lists {listed})"


def artifacts_verified(report: VerificationReport) -> str:
    """``k/n artifacts verified``."""
    return f"{report.verified_count}/{report.artifact_count} artifacts verified"


def verification_verdict(report: VerificationReport) -> str:
    """The verdict line of a verification."""
    verdict = "verified" if report.ok else "FAILED"
    found = report.unregistered
    extra = ""
    if found is not None:
        files = f"{grouped(found.count)} file{'s' if found.count != 1 else ''}"
        extra = f"; {files} not in the registry" + ("" if found.fail or not found.count else " (reported only)")
        if found.excluded:
            extra += f" ({grouped(found.excluded)} more left out by the rules' exclude globs)"
    return printable(
        f"{verdict}: {report.verified_count}/{report.artifact_count} artifacts match "
        f"({report.bytes_hashed} bytes hashed) from {report.source}; corpus root {report.corpus_root}{extra}"
    )
