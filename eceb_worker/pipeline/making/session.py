"""``eceb run``: the plan driven through the journal, N executions in
flight, and the run written when every execution has come to an end
(ECEB-0.1 §7, §8, §13).

One session: read the inputs (:mod:`.inputs`), plan every execution
(:mod:`~eceb_worker.families.eceb.making.plan`), create the journal or go
on with it (``resume``), make what the journal does not hold yet
(:mod:`.calls`), then write the transcripts, the judgments and the run,
each atomically, the run last. Nothing is written while an execution is
missing: a run cut short (Ctrl-C, a spending stop, a provider failing past
its retries, calls of unknown outcome) leaves its journal, and ``--resume``
makes only what is missing.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import Final

import msgspec

from eceb_worker.corpus.storage import CorpusStorage
from eceb_worker.errors import EcebError, OutcomeUnknown, OutputError
from eceb_worker.families.eceb.making.assemble import MadeExecution
from eceb_worker.families.eceb.making.exchange import ModelProvider
from eceb_worker.families.eceb.making.journal import Journal
from eceb_worker.families.eceb.making.plan import Call, Execution, executions, paid_calls, plan_digest, plan_size
from eceb_worker.families.eceb.making.profile import CommandJudge, LlmJudge, ModelSpec, RunProfile
from eceb_worker.families.eceb.making.records import AnswerRecord, JudgeRecord
from eceb_worker.families.eceb.run import BenchmarkReference
from eceb_worker.io.files import atomic_write
from eceb_worker.io.judges import CommandJudgeRunner
from eceb_worker.io.run_journal import JournalBinding, RunJournal
from eceb_worker.pipeline.making.calls import Calls, ExecutionResult, Stopped, kept_record
from eceb_worker.pipeline.making.contexts import open_contexts
from eceb_worker.pipeline.making.inputs import MakingInputs
from eceb_worker.pipeline.making.outputs import judgment_lines, made_run, possible_costs, transcript_lines
from eceb_worker.pipeline.making.pacing import Pacer

__all__ = [
    "MadeRun",
    "Parties",
    "command_judge",
    "RunOutputs",
    "SessionOptions",
    "drive",
    "execution_ended",
    "journal_binding",
    "make_run",
    "pacers",
]

_SIGNAL_POLL_S: Final = 0.1
"""How long the main thread waits at a time for an execution to end (a signal is handled between waits)."""
_QUEUED_PER_SLOT: Final = 2
"""Executions submitted ahead per execution in flight (memory stays flat in the plan's size)."""


class RunOutputs(msgspec.Struct, frozen=True, kw_only=True):
    """Where a made run goes: the run file, its transcripts and its judgments (JSON Lines)."""

    run: Path
    transcripts: Path
    judgments: Path

    @classmethod
    def beside(cls, run: Path) -> RunOutputs:
        """``run`` and, beside it, ``<stem>.transcripts.jsonl`` and ``<stem>.judgments.jsonl``."""
        stem = run.name.removesuffix(".json")
        return cls(
            run=run,
            transcripts=run.with_name(f"{stem}.transcripts.jsonl"),
            judgments=run.with_name(f"{stem}.judgments.jsonl"),
        )


class SessionOptions(msgspec.Struct, frozen=True, kw_only=True):
    """How a session runs.

    Fields:
        journal: the journal's path.
        resume: go on with an existing journal (else a new one is created).
        rerun_unknown: send again calls whose outcome is unknown.
        environ: where credentials are read from (the process environment).
    """

    journal: Path
    resume: bool = False
    rerun_unknown: bool = False
    environ: Mapping[str, str] = msgspec.field(default_factory=dict)


class MadeRun(msgspec.Struct, frozen=True, kw_only=True):
    """A session's end: executions made and failed (every one came to an
    end), how many of them ended before this session (``--resume``), the
    calls retried, and the spend known and possible (micro-USD)."""

    executions: int
    before: int = 0
    made: int
    failed: int
    retried: int
    spent_micro_usd: int
    possible_micro_usd: int


def journal_binding(profile: RunProfile, *, benchmark_digest: str, corpus_root: str, size: int) -> JournalBinding:
    """What a run's journal is bound to: the plan's digest, the authorized
    paid calls (the profile's, else every call of the plan) and the stop."""
    return JournalBinding(
        plan_digest=plan_digest(benchmark_digest=benchmark_digest, corpus_root=corpus_root, profile=profile),
        authorized_calls=profile.spending.authorized_executions or paid_calls(profile, size),
        stop_micro_usd=profile.spending.stop_micro_usd,
    )


def _journal(inputs: MakingInputs, options: SessionOptions, size: int) -> RunJournal:
    binding = journal_binding(
        inputs.profile, benchmark_digest=inputs.benchmark_digest, corpus_root=inputs.registry.corpus_root, size=size
    )
    if not options.resume:
        if options.journal.exists():
            raise OutputError(f"{options.journal}: a run journal is already here: --resume goes on with it")
        return RunJournal.create(options.journal, binding)
    journal = RunJournal.open(options.journal, plan_digest=binding.plan_digest)
    try:
        journal.set_limits(authorized_calls=binding.authorized_calls, stop_micro_usd=binding.stop_micro_usd)
    except BaseException:
        journal.close()
        raise
    return journal


class Parties:
    """The models and judge of a session, opened on first use (thread-safe)."""

    def __init__(self, inputs: MakingInputs, environ: Mapping[str, str]) -> None:
        self._inputs = inputs
        self._environ = environ
        self._opened: list[ModelProvider] = []
        self._answer: ModelProvider | None = None
        self._judge: ModelProvider | None = None
        self._lock = threading.Lock()  # the first calls of every thread open one client, not one each

    def check_credentials(self) -> None:
        """Read every credential the profile names (raises ``InputError``
        naming a missing one) before anything is created or called."""
        from eceb_worker.io.models import read_api_key

        profile = self._inputs.profile
        specs = [profile.model, *([profile.judge.model] if isinstance(profile.judge, LlmJudge) else [])]
        for spec in specs:
            read_api_key(spec, base_dir=self._inputs.profile_dir, environ=self._environ)

    def answer_model(self) -> ModelProvider:
        """The answer model's provider client (opened on first use)."""
        if self._answer is None:
            with self._lock:
                if self._answer is None:
                    self._answer = self._open(self._inputs.profile.model)
        return self._answer

    def judge_model(self) -> ModelProvider:
        """The LLM judge's provider client (opened on first use)."""
        judge = self._inputs.profile.judge
        assert isinstance(judge, LlmJudge)
        if self._judge is None:
            with self._lock:
                if self._judge is None:
                    self._judge = self._open(judge.model)
        return self._judge

    def _open(self, spec: ModelSpec) -> ModelProvider:
        from eceb_worker.io.models import open_model  # the SDKs: imported when a model is first called

        model = open_model(
            spec,
            base_dir=self._inputs.profile_dir,
            environ=self._environ,
            connections=max(self._inputs.profile.in_flight, 1),
        )
        self._opened.append(model)
        return model

    def close(self) -> None:
        """Close every client opened."""
        for model in self._opened:
            with contextlib.suppress(Exception):
                model.close()


PacerFactory = Callable[..., Pacer]
"""Makes a provider's :class:`Pacer` (``key``, ``requests_per_minute``, ``tokens_per_minute``)."""


def pacers(inputs: MakingInputs, make: PacerFactory = Pacer) -> tuple[Pacer, Pacer]:
    """The answer model's pacer and the judge's (the same one when both
    call the same provider at the same address)."""
    model = inputs.profile.model
    answer = make(
        key=f"answer:{model.provider}",
        requests_per_minute=model.requests_per_minute,
        tokens_per_minute=model.tokens_per_minute,
    )
    judge = inputs.profile.judge
    if not isinstance(judge, LlmJudge):
        return answer, answer
    same = (judge.model.provider, judge.model.base_url) == (model.provider, model.base_url)
    if same:
        return answer, answer
    return answer, make(
        key=f"judge:{judge.model.provider}",
        requests_per_minute=judge.model.requests_per_minute,
        tokens_per_minute=judge.model.tokens_per_minute,
    )


def command_judge(inputs: MakingInputs) -> CommandJudgeRunner | None:
    """The runner of the profile's command judge (``None`` for an LLM judge)."""
    judge = inputs.profile.judge
    return CommandJudgeRunner(judge, base_dir=inputs.profile_dir) if isinstance(judge, CommandJudge) else None


def _next_done(finished: SimpleQueue[Future[ExecutionResult]]) -> Future[ExecutionResult]:
    """The next future done, waiting in short steps so that a signal's
    handler runs at once in this (the main) thread."""
    while True:
        try:
            return finished.get(timeout=_SIGNAL_POLL_S)
        except Empty:
            continue


def drive(
    calls: Calls, pending: Iterable[Execution], in_flight: int, on_result: Callable[[ExecutionResult], None]
) -> tuple[int, int, list[OutcomeUnknown]]:
    """Make ``pending`` with ``in_flight`` executions at once; returns made,
    failed and the refusals of calls of unknown outcome. The first other
    error stops submitting; what is in flight finishes, then it is raised."""
    made = failed = 0
    unknown: list[OutcomeUnknown] = []
    stop: BaseException | None = None
    queue = iter(pending)
    running: set[Future[ExecutionResult]] = set()
    finished: SimpleQueue[Future[ExecutionResult]] = SimpleQueue()  # each future once it is done, in that order
    with ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="eceb-run") as pool:
        try:
            while True:
                if stop is None:
                    for execution in itertools.islice(queue, in_flight * _QUEUED_PER_SLOT - len(running)):
                        future = pool.submit(calls.execute, execution)
                        running.add(future)
                        future.add_done_callback(finished.put)
                if not running:
                    break
                future = _next_done(finished)
                running.discard(future)
                try:
                    result = future.result()
                except Stopped:
                    continue
                except OutcomeUnknown as refusal:
                    unknown.append(refusal)
                    continue
                except EcebError as error:
                    stop = stop or error
                    calls.stopped.set()  # no further call starts; what is in flight is journaled
                    continue
                made += result.state == "made"
                failed += result.state == "failed"
                on_result(result)
        except BaseException:
            calls.stopped.set()
            for future in running:
                future.cancel()
            raise
    if stop is not None:
        raise stop
    return made, failed, unknown


def make_run(
    inputs: MakingInputs,
    *,
    storage: CorpusStorage,
    options: SessionOptions,
    outputs: RunOutputs,
    on_start: Callable[[int, int], None] = lambda total, done: None,
    on_result: Callable[[ExecutionResult], None] = lambda result: None,
) -> MadeRun:
    """Make the run (see the module) and write ``outputs``. ``on_start``
    gets the plan's size and the executions already made; ``on_result``
    each execution made now. Raises :class:`~eceb_worker.errors.ProviderError`,
    :class:`~eceb_worker.errors.ExecutionRefused` (spending stopped, calls of
    unknown outcome), ``StorageError``, :class:`OutputError`; the journal
    keeps what was made."""
    profile = inputs.profile
    size = plan_size(inputs.benchmark, profile)

    def plan() -> Iterator[Execution]:  # made again for each pass: memory stays flat in the plan's size
        return executions(inputs.benchmark, profile)

    parties = Parties(inputs, options.environ)
    parties.check_credentials()
    with _journal(inputs, options, size) as journal, _removed_unless_used(journal, created=not options.resume):
        before = sum(execution_ended(journal, e) for e in plan()) if options.resume else 0
        on_start(size, before)
        pending: Iterable[Execution] = (
            (e for e in plan() if not execution_ended(journal, e)) if options.resume else plan()
        )
        contexts = open_contexts(inputs, storage)
        judge = profile.judge
        calls = Calls(
            profile,
            tasks=inputs.benchmark.tasks,
            rubric=inputs.rubric,
            journal=journal,
            contexts=contexts,
            answer_model=parties.answer_model,
            judge_model=parties.judge_model if isinstance(judge, LlmJudge) else None,
            command_judge=CommandJudgeRunner(judge, base_dir=inputs.profile_dir)
            if isinstance(judge, CommandJudge)
            else None,
            pacers=pacers(inputs),
            rerun_unknown=options.rerun_unknown,
            resumed=options.resume,
        )
        try:
            _, _, unknown = drive(calls, pending, profile.in_flight, on_result)
        finally:
            contexts.close()
            parties.close()
        if unknown:
            more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
            raise OutcomeUnknown(f"{unknown[0]}{more}; nothing was written")
        observations = _write(inputs, journal, plan, outputs)
        summary = journal.summary()
    return MadeRun(
        executions=size,
        before=before,
        made=observations,
        failed=size - observations,
        retried=summary.retried,
        spent_micro_usd=summary.spent_micro_usd,
        possible_micro_usd=summary.possible_micro_usd,
    )


@contextlib.contextmanager
def _removed_unless_used(journal: RunJournal, *, created: bool) -> Iterator[None]:
    """A journal this session created is removed again when the session
    fails before anything was journaled (a corpus that cannot be read, a
    context system that cannot start): there is nothing to resume."""
    try:
        yield
    except BaseException:
        if created and journal.is_empty():
            journal.close()
            journal.path.unlink(missing_ok=True)
            for suffix in ("-wal", "-shm"):
                journal.path.with_name(journal.path.name + suffix).unlink(missing_ok=True)
        raise


def execution_ended(journal: Journal, execution: Execution) -> bool:
    """True when the execution came to an end before: judged, or failed finally."""
    for kind in ("answer", "judge"):
        call_id = Call(execution=execution, kind=kind).call_id
        if journal.result(call_id) is not None:
            continue
        attempts = journal.attempts(call_id)
        return bool(attempts) and attempts[-1].outcome == "final"
    return True


def _made(journal: Journal, plan: Iterable[Execution]) -> Iterator[MadeExecution]:
    for execution in plan:
        answer = kept_record(journal, Call(execution=execution, kind="answer"), AnswerRecord)
        judgment = kept_record(journal, Call(execution=execution, kind="judge"), JudgeRecord)
        yield MadeExecution(execution=execution, answer=answer, judgment=judgment)


def _write(
    inputs: MakingInputs, journal: RunJournal, plan: Callable[[], Iterator[Execution]], outputs: RunOutputs
) -> int:
    """Write the transcripts, the judgments, then the run, each a pass over
    the plan and the journal (one execution in memory at a time); returns
    the run's number of observations."""
    run = made_run(
        inputs.profile,
        benchmark=BenchmarkReference(benchmark_id=inputs.benchmark.benchmark_id, task_root=inputs.task_root),
        corpus_root=inputs.registry.corpus_root,
        made=lambda: _made(journal, plan()),
        possible_costs=possible_costs(journal, plan),
    )
    atomic_write(outputs.transcripts, transcript_lines(_made(journal, plan())))
    atomic_write(outputs.judgments, judgment_lines(_made(journal, plan())))
    atomic_write(outputs.run, run.chunks())
    return run.observations
