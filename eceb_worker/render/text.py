"""The text summaries ``eceb evaluate``, ``eceb corpus verify`` and
``eceb-dist wait`` print: an evaluation report (ECEB-0.1 §12) and a
verification report (§5), as lines.
"""

from __future__ import annotations

from collections.abc import Iterator

from eceb_worker.corpus.verification import VerificationReport
from eceb_worker.families.eceb.report import Report
from eceb_worker.families.eceb.verdicts import TaskResult

__all__ = [
    "artifacts_verified",
    "bps",
    "finding_lines",
    "report_lines",
    "task_line",
    "tasks_pass",
    "verdict_line",
    "verification_verdict",
]


def bps(value: int | None) -> str:
    """Basis points and the percentage they make, e.g. ``1234 bps (12.34 %)``; ``n/a`` for none."""
    return "n/a" if value is None else f"{value} bps ({value // 100}.{value % 100:02d} %)"


def task_line(task: TaskResult) -> str:
    """One task's verdict and figures, in one line."""
    if task.passed:
        return (
            f"PASS  {task.task_id}: minimum viable budget {task.minimum_viable_budget}; "
            f"tokens {task.baseline_prompt_tokens} -> {task.compiled_prompt_tokens} "
            f"(saves {bps(task.token_savings_bps)}); "
            f"cost {task.baseline_cost_micro_usd} -> {task.compiled_cost_micro_usd} micro-USD "
            f"(saves {bps(task.cost_savings_bps)}); "
            f"quality {task.baseline_quality_milli} -> {task.compiled_quality_milli} (floor {task.quality_floor_milli})"
        )
    budget = task.minimum_viable_budget
    where = f"first passing budget {budget}" if budget is not None else "no viable budget"
    return f"FAIL  {task.task_id}: {where}; {len(task.failed_assertions)} failed assertion(s)"


def report_lines(report: Report, source: str) -> Iterator[str]:
    """The summary of an evaluation report read from the corpus at
    ``source``: inputs and claim class, each task's verdict with every
    failed assertion, the mean savings."""
    inputs = report.inputs
    empirical = "non-empirical" if report.non_empirical else "empirical"
    yield (
        f"benchmark {inputs.benchmark_id} (task root {inputs.task_root[:16]}...), run {inputs.run_id}, "
        f"claim class {report.claim_class} ({empirical})"
    )
    yield f"corpus {source}: {inputs.artifact_count} artifacts verified, root {inputs.corpus_root[:16]}..."
    for task in report.tasks:
        yield task_line(task)
        for failure in task.failed_assertions:
            group = f"{failure.strategy}@{failure.budget}" if failure.budget is not None else failure.strategy
            repetition = f" rep {failure.repetition}" if failure.repetition is not None else ""
            yield f"      {failure.gate}: {group or 'task'}{repetition}: {failure.message}"
    summary = report.summary
    yield (
        f"mean savings over {summary.passing_tasks} passing task(s): tokens {bps(summary.mean_token_savings_bps)}, "
        f"cost {bps(summary.mean_cost_savings_bps)} (over the {summary.cost_savings_tasks} with a cost baseline)"
    )


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
        yield line


def artifacts_verified(report: VerificationReport) -> str:
    """``k/n artifacts verified``."""
    return f"{report.verified_count}/{report.artifact_count} artifacts verified"


def verification_verdict(report: VerificationReport) -> str:
    """The verdict line of a verification."""
    verdict = "verified" if report.ok else "FAILED"
    return (
        f"{verdict}: {report.verified_count}/{report.artifact_count} artifacts match "
        f"({report.bytes_hashed} bytes hashed) from {report.source}; corpus root {report.corpus_root}"
    )
