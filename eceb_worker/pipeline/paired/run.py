"""``eceb pair run PAIRDIR``: run at most one pair, the pair of that
directory (task-context-benchmark-reference.md, "Paired inputs and
retained outputs", "Fixed paid comparison schedule" and "Paid experiment
preflight conditions").

:func:`run_pair` checks the experiment (:func:`eceb_worker.pipeline.paired.checks.open_pair`),
records an outcome of the pair that its complete journal holds and the
ledger never recorded (:func:`eceb_worker.pipeline.paired.approvals.reconcile_outcomes`),
then runs the pair's arms in the manifest's order, each arm not yet started
(:func:`eceb_worker.pipeline.paired.attempt.run_attempt`): an arm started
before (a complete or an incomplete journal, or a start the ledger holds)
never runs again, nothing is retried and no conversation is resumed. No
further arm starts after a cancelled attempt, after a ``mutated`` one (the
repository changed) or after a spending stop; before each later arm the
repository and the provider are checked again, and a later arm the ledger
refuses (its authorized count used up) leaves the earlier attempts' outcome
to decide the exit code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from eceb_worker.errors import ExecutionRefused
from eceb_worker.families.paired.journal import AttemptStatus
from eceb_worker.io.paired.provider import DeferredSignals
from eceb_worker.pipeline.paired.approvals import continuation_problem, reconcile_outcomes
from eceb_worker.pipeline.paired.attempt import AttemptReport, RunnerLog, run_attempt
from eceb_worker.pipeline.paired.checks import PairRun, attempt_id_of, check_provider, check_repository, open_pair
from eceb_worker.pipeline.paired.status import arm_state

__all__ = ["run_pair"]


@dataclass(frozen=True)
class PairOutcome:
    """What one ``eceb pair run`` did.

    Fields: ``position`` (the pair's place in the schedule), ``attempts``
    (this run's, in order), ``states`` (each arm's state once the run
    ended: an :class:`AttemptStatus` value, ``"incomplete journal"`` or
    ``"not started"``, in the manifest's order), ``signal`` (SIGINT or
    SIGTERM received during the run, or ``None``), ``stopped`` (why an arm
    was left unstarted, or ``None``).
    """

    position: int
    attempts: tuple[AttemptReport, ...]
    states: tuple[tuple[str, str], ...]
    signal: int | None
    stopped: str | None

    @property
    def completed(self) -> bool:
        """Every attempt of the pair completed."""
        return all(state == AttemptStatus.COMPLETED.value for _, state in self.states)


def _started(pair: PairRun) -> set[str]:
    """The arms of the pair that started before: by their journal on disk or the ledger."""
    started = {entry.arm for entry in pair.ledger.entries() if entry.pair == pair.manifest.pair.position}
    for arm in pair.manifest.arms:
        attempt = pair.directory / arm.attempt
        if attempt.exists() or attempt.is_symlink():
            started.add(arm.arm.value)
    return started


def _why_stop(report: AttemptReport) -> str | None:
    if report.cancelled is not None:
        return "the attempt was cancelled"
    if report.status is AttemptStatus.MUTATED:
        return "the repository changed during the attempt: no further arm starts on a changed repository"
    if report.stop is not None:
        return f"spending stopped ({report.stop})"
    return None


def run_pair(  # noqa: C901, PLR0912 - a pair's arms in schedule order with the stops between them
    directory: Path, signals: DeferredSignals, out: Callable[[str], None], err: Callable[[str], None]
) -> PairOutcome:
    """Run the pair of ``directory`` (module), printing through ``out`` and
    ``err``, ``signals`` entered by the caller. Raises
    :class:`ExecutionRefused` when nothing may start (every arm started
    before, or a check of :func:`open_pair` refuses), and what
    :func:`open_pair` and :func:`run_attempt` raise."""
    pair = open_pair(directory)
    try:
        position = pair.manifest.pair.position
        if position > 1 and (problem := continuation_problem(pair.experiment, pair.freeze_digest)) is not None:
            raise ExecutionRefused(f"pair {position} comes after the pilot: continuation needs an approval: {problem}")
        for attempt_id, outcome in reconcile_outcomes(pair.ledger, pair.directory, pair.manifest):
            out(f"pair {position}: recorded the outcome of attempt {attempt_id} from its attempt.json: {outcome}")
        started = _started(pair)
        if len(started) == len(pair.manifest.arms):
            raise ExecutionRefused(f"every arm of pair {position} has started: nothing runs twice")
        reports: list[AttemptReport] = []
        stopped: str | None = None
        for index, arm in enumerate(pair.manifest.arms):
            if arm.arm.value in started:
                out(f"pair {position} arm {arm.arm.value}: started before, never run again")
                continue
            if signals.received is not None:
                break
            try:
                if reports:
                    pair.repository = check_repository(pair.freeze)
                    check_provider(pair.freeze, pair.manifest)
                report = run_attempt(pair, index, signals, RunnerLog(out, err))
            except ExecutionRefused as refused:
                if not reports:
                    raise
                stopped = f"refused: {refused}"  # what already ran keeps its outcome
                break
            if report is None:
                break
            reports.append(report)
            stopped = _why_stop(report)
            if stopped is not None:
                break
        if stopped is not None and len(reports) + len(started) < len(pair.manifest.arms):
            err(f"pair {position}: no further arm starts: {stopped}")
        in_ledger = {entry.attempt_id for entry in pair.ledger.entries()}
        states = tuple(
            (
                arm.arm.value,
                arm_state(pair.directory / arm.attempt, attempt_id_of(pair.directory, arm.arm.value) in in_ledger),
            )
            for arm in pair.manifest.arms
        )
        return PairOutcome(
            position=position, attempts=tuple(reports), states=states, signal=signals.received, stopped=stopped
        )
    finally:
        pair.ledger.close()
