"""A job run whole in this process (``eceb corpus verify``, ``eceb
evaluate``): the inputs held, the one orchestration of
:mod:`eceb_worker.pipeline.jobs` driven by :func:`~eceb_worker.pipeline.jobs.run_job`
on an executor (by default this process alone)."""

from __future__ import annotations

from eceb_worker.corpus.planning import DEFAULT_SHARD_BYTES
from eceb_worker.corpus.registry import Registry
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.corpus.verification import VerificationReport
from eceb_worker.families.eceb.options import IN_PROCESS_EVALUATION, EvaluationOptions
from eceb_worker.families.eceb.report import Report
from eceb_worker.pipeline.inputs import CheckedInputs
from eceb_worker.pipeline.jobs import AnswerCallback, Executor, Job, ThisProcess, run_job
from eceb_worker.pipeline.messages import JobInputs, JobKind, JobMessage
from eceb_worker.pipeline.shards import Held, Prepared

__all__ = ["evaluate", "verify_corpus", "verify_message"]


def verify_message(registry: str, corpus: StorageSpec, shard_bytes: int) -> JobMessage:
    """The message of a job verifying ``corpus`` against the registry at ``registry`` (ECEB-0.1 §5)."""
    return JobMessage(kind=JobKind.VERIFY, inputs=JobInputs(registry=registry), corpus=corpus, shard_bytes=shard_bytes)


def verify_corpus(
    registry: Registry,
    corpus: StorageSpec,
    *,
    executor: Executor | None = None,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    on_answer: AnswerCallback | None = None,
    registry_location: str = "",
) -> VerificationReport:
    """Re-hash every artifact of a held ``registry`` from the storage of
    ``corpus`` (ECEB-0.1 §5), on ``executor`` (by default :class:`ThisProcess`).

    Returns the report (``report.ok`` tells whether the corpus verified).
    Raises ``StorageError`` when the storage as a whole fails.
    """
    message = verify_message(registry_location, corpus, shard_bytes)
    finished = run_job(Job(message, held=Held(registry=registry)), executor or ThisProcess(), on_answer=on_answer)
    assert finished.verification is not None
    return finished.verification


def evaluate(
    inputs: CheckedInputs,
    corpus: StorageSpec,
    *,
    executor: Executor | None = None,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    evaluation: EvaluationOptions = IN_PROCESS_EVALUATION,
    on_answer: AnswerCallback | None = None,
) -> tuple[Report, VerificationReport]:
    """Verify the corpus (ECEB-0.1 §5), then check and evaluate every task
    of checked, held ``inputs`` and reduce them into the report (§8-§15),
    as the ``evaluation`` options ask (its shards, its savings intervals
    §16, its disclosure check §17).

    Raises :class:`~eceb_worker.errors.VerificationError` (holding the
    verification report) when any registered artifact is missing, stale,
    unreadable or escapes the corpus; ``StorageError`` when the corpus
    cannot be read at all; :class:`~eceb_worker.errors.InputError` with
    every problem of the run's records.
    """
    message = JobMessage(
        kind=JobKind.EVALUATE,
        inputs=JobInputs(registry=inputs.registry_location),
        corpus=corpus,
        shard_bytes=shard_bytes,
        evaluation=evaluation,
    )
    held = Held(registry=inputs.registry, prepared=Prepared.of(inputs.benchmark, inputs.run))
    finished = run_job(Job(message, held=held), executor or ThisProcess(), on_answer=on_answer)
    assert finished.report is not None and finished.verification is not None
    return finished.report, finished.verification
