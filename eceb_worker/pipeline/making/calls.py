"""One execution's calls, journaled (``eceb run``): its answer, then its
judgment (ECEB-0.1 §8, §9).

Each attempt of a paid call is recorded in the journal before it is sent
(:meth:`~eceb_worker.families.eceb.making.journal.Journal.begin`), paced by the
provider's limits (:mod:`.pacing`) and retried by the one policy
(:mod:`.retry`); what came of it is recorded after. A call made before
(its record is in the journal) is read back, never sent again. Latency is
end to end for the attempt that answered: the context built, the prompt
sent, the answer read (waits between attempts are not the system's).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final, Literal, TypeVar

import msgspec

from eceb_worker.errors import InputError, Problem, ProviderError
from eceb_worker.families.eceb.benchmark import Task
from eceb_worker.families.eceb.making.baselines import estimate_tokens
from eceb_worker.families.eceb.making.costs import call_cost, upper_bound
from eceb_worker.families.eceb.making.exchange import ModelProvider, ModelRequest, ModelResponse
from eceb_worker.families.eceb.making.journal import Attempt, Journal
from eceb_worker.families.eceb.making.judging import (
    JUDGE_SYSTEM,
    JUDGMENT_SCHEMA,
    NotAJudgment,
    judge_prompt,
    parse_judgment,
)
from eceb_worker.families.eceb.making.plan import Call, Execution
from eceb_worker.families.eceb.making.profile import LlmJudge, RunProfile
from eceb_worker.families.eceb.making.records import AnswerRecord, JudgeRecord, decode_record, encode_record
from eceb_worker.io.judges import CommandJudgeRunner
from eceb_worker.pipeline.making.contexts import Contexts, Prepared
from eceb_worker.pipeline.making.pacing import Pacer
from eceb_worker.pipeline.making.retry import retrying

__all__ = ["Calls", "ExecutionResult", "Stopped", "kept_record"]

RecordT = TypeVar("RecordT", AnswerRecord, JudgeRecord)

_JUDGE_PARTY: Final = "judge"


class ExecutionResult(msgspec.Struct, frozen=True, kw_only=True):
    """What one execution came to in this run.

    Fields:
        execution: the execution.
        state: ``made`` (answered and judged), ``failed`` (a call failed
            finally: the run lacks its observation).
        input_tokens, spend_micro_usd: what its calls made now used (0 when
            read back from the journal).
    """

    execution: Execution
    state: Literal["made", "failed"]
    input_tokens: int = 0
    spend_micro_usd: int = 0


class _Party(msgspec.Struct, frozen=True, kw_only=True):
    """A model to call, its pacing and the pricing its calls are costed by."""

    model: ModelProvider
    pacer: Pacer


class Calls:
    """Makes executions' calls through the journal (see the module). Thread-safe.

    ``resumed``: the journal may hold calls made before (``--resume``), so
    each call is looked up before it is made; a new journal holds only the
    calls of this session, which makes each execution once, so none is.
    """

    def __init__(
        self,
        profile: RunProfile,
        *,
        tasks: tuple[Task, ...],
        rubric: str,
        journal: Journal,
        contexts: Contexts,
        answer_model: Callable[[], ModelProvider],
        judge_model: Callable[[], ModelProvider] | None,
        command_judge: CommandJudgeRunner | None,
        pacers: tuple[Pacer, Pacer],
        rerun_unknown: bool,
        resumed: bool = True,
    ) -> None:
        self._profile = profile
        self._tasks = tasks
        self._rubric = rubric
        self._journal = journal
        self._contexts = contexts
        self._answer_model = answer_model
        self._judge_model = judge_model
        self._command_judge = command_judge
        self._pacers = pacers
        self._rerun_unknown = rerun_unknown
        self._resumed = resumed
        self.stopped = threading.Event()
        """Set when the session stops (a signal, a fatal failure): no further
        call starts; a call in flight finishes and is journaled."""

    def execute(self, execution: Execution) -> ExecutionResult:
        """Answer and judge ``execution`` (each read back when made before).
        Raises :class:`ProviderError` (fatal, or transient past the retries),
        :class:`ExecutionRefused` (the journal refuses a call),
        ``StorageError`` (the corpus cannot be read)."""
        answer_call = Call(execution=execution, kind="answer")
        answer = self._kept(answer_call, AnswerRecord)
        spent = tokens = 0
        if answer is None:
            try:
                made = self._answer(answer_call)
            except _Failed:
                return ExecutionResult(execution=execution, state="failed")
            answer, tokens = made, made.usage.input_tokens
            spent += made.input_cost_micro_usd + made.output_cost_micro_usd
        assert isinstance(answer, AnswerRecord)
        judge_call = Call(execution=execution, kind="judge")
        if self._kept(judge_call, JudgeRecord) is None:
            try:
                judgment = self._judge(judge_call, answer.answer)
            except _Failed:
                return ExecutionResult(execution=execution, state="failed", input_tokens=tokens, spend_micro_usd=spent)
            spent += judgment.cost_micro_usd
        return ExecutionResult(execution=execution, state="made", input_tokens=tokens, spend_micro_usd=spent)

    def _kept(self, call: Call, kind: type[RecordT]) -> RecordT | None:
        if not self._resumed:  # a new journal holds only what this run made: each execution is made once
            return None
        return kept_record(self._journal, call, kind)

    def _begin(self, call: Call, upper: int, *, paid: bool = True) -> Attempt:
        """The journal's start of an attempt, unless the session stopped (:class:`Stopped`)."""
        if self.stopped.is_set():
            raise Stopped
        return self._journal.begin(call.call_id, upper, paid=paid, rerun_unknown=self._rerun_unknown)

    # -- the answer -------------------------------------------------------

    def _answer(self, call: Call) -> AnswerRecord:
        started = time.monotonic()
        try:
            prepared = self._prepared(call)
        except ProviderError as error:
            if error.fatal or error.transient:
                raise
            self._unpaid_failure(call, str(error))
            raise _Failed from None
        context_s = time.monotonic() - started
        decoding = self._profile.decoding
        request = ModelRequest(
            purpose="answer",
            system=prepared.system,
            prompt=prepared.prompt,
            max_output_tokens=decoding.max_output_tokens,
            temperature_milli=decoding.temperature_milli,
            top_p_milli=decoding.top_p_milli,
            seed=decoding.seed,
        )
        upper = upper_bound(prepared.local_prompt_tokens, decoding.max_output_tokens, self._profile.pricing)
        party = _Party(model=self._answer_model(), pacer=self._pacers[0])
        response, attempt, call_s = self._send(call, party, request, upper, prepared.local_prompt_tokens)
        input_cost, output_cost = call_cost(response.usage, self._profile.pricing)
        record = AnswerRecord(
            selected_artifacts=prepared.selected_artifacts,
            local_prompt_tokens=prepared.local_prompt_tokens,
            query_digest=prepared.query_digest,
            context_digest=prepared.context_digest,
            usage=response.usage,
            input_cost_micro_usd=input_cost,
            output_cost_micro_usd=output_cost,
            latency_ms=int((context_s + call_s) * 1000),
            answer=response.text,
            model_revision=response.model_revision,
            request_body=msgspec.Raw(response.request_body or b"null"),
            response_body=msgspec.Raw(response.response_body or b"null"),
        )
        self._journal.finish(attempt, "ok", cost_micro_usd=input_cost + output_cost, record=encode_record(record))
        return record

    def _prepared(self, call: Call) -> Prepared:
        for attempt in retrying():
            with attempt:
                return self._contexts.prepare(call.execution)
        raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover

    def _unpaid_failure(self, call: Call, detail: str) -> None:
        attempt = self._begin(call, 0, paid=False)
        self._journal.finish(attempt, "final", detail=detail)

    def _send(
        self, call: Call, party: _Party, request: ModelRequest, upper: int, tokens: int
    ) -> tuple[ModelResponse, Attempt, float]:
        """One paid call, retried by the policy; every attempt journaled.
        Returns the response, its attempt (still to be finished) and the
        attempt's seconds. A final failure is journaled and raises :class:`_Failed`."""
        for retry in retrying():
            with retry:
                attempt = self._begin(call, upper)
                party.pacer.acquire(tokens + request.max_output_tokens)
                sent = time.monotonic()
                try:
                    response = party.model.complete(request)
                except ProviderError as error:
                    outcome = "transient" if error.transient else "final"
                    self._journal.finish(attempt, outcome, maybe_billed=error.maybe_billed, detail=str(error))
                    if error.retry_after_s is not None:
                        party.pacer.pause(error.retry_after_s)
                    if not error.transient and not error.fatal:
                        raise _Failed from None
                    raise
                except BaseException:
                    self._journal.finish(attempt, "unknown", maybe_billed=True, detail="interrupted while sent")
                    raise
                return response, attempt, time.monotonic() - sent
        raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover

    # -- the judgment -----------------------------------------------------

    def _judge(self, call: Call, answer: str) -> JudgeRecord:
        task = self._tasks[call.execution.task_index]
        judge = self._profile.judge
        if isinstance(judge, LlmJudge):
            return self._llm_judgment(call, judge, task, answer)
        return self._command_judgment(call, task, answer)

    def _llm_judgment(self, call: Call, judge: LlmJudge, task: Task, answer: str) -> JudgeRecord:
        assert self._judge_model is not None
        prompt = judge_prompt(self._rubric, task, answer)
        request = ModelRequest(
            purpose="judge",
            system=JUDGE_SYSTEM,
            prompt=prompt,
            max_output_tokens=judge.decoding.max_output_tokens,
            temperature_milli=judge.decoding.temperature_milli,
            top_p_milli=judge.decoding.top_p_milli,
            seed=judge.decoding.seed,
            structured_output=JUDGMENT_SCHEMA,
        )
        tokens = estimate_tokens(JUDGE_SYSTEM) + estimate_tokens(prompt)
        upper = upper_bound(tokens, judge.decoding.max_output_tokens, judge.pricing)
        party = _Party(model=self._judge_model(), pacer=self._pacers[1])
        response, attempt, _ = self._send(call, party, request, upper, tokens)
        input_cost, output_cost = call_cost(response.usage, judge.pricing)
        try:
            quality, rationale = parse_judgment(response.text)
        except NotAJudgment as exc:
            detail = f"{_JUDGE_PARTY}: {exc}"
            self._journal.finish(attempt, "final", cost_micro_usd=input_cost + output_cost, detail=detail)
            raise _Failed from None
        record = JudgeRecord(
            quality_milli=quality,
            rationale=rationale,
            judge_prompt=prompt,
            raw_judgment=response.text,
            usage=response.usage,
            cost_micro_usd=input_cost + output_cost,
            model_revision=response.model_revision,
            request_body=msgspec.Raw(response.request_body or b"null"),
            response_body=msgspec.Raw(response.response_body or b"null"),
        )
        self._journal.finish(attempt, "ok", cost_micro_usd=record.cost_micro_usd, record=encode_record(record))
        return record

    def _command_judgment(self, call: Call, task: Task, answer: str) -> JudgeRecord:
        assert self._command_judge is not None
        for retry in retrying():
            with retry:
                attempt = self._begin(call, 0, paid=False)
                try:
                    quality, data, output = self._command_judge.score(task, answer)
                except ProviderError as error:
                    outcome = "transient" if error.transient else "final"
                    self._journal.finish(attempt, outcome, detail=str(error))
                    if not error.transient and not error.fatal:
                        raise _Failed from None
                    raise
                record = JudgeRecord(
                    quality_milli=quality,
                    rationale="",
                    judge_prompt=data.decode("utf-8", errors="replace"),
                    raw_judgment=output.decode("utf-8", errors="replace"),
                    usage=None,
                    cost_micro_usd=0,
                    model_revision=self._command_judge.spec.revision,
                )
                self._journal.finish(attempt, "ok", record=encode_record(record))
                return record
        raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover


def kept_record(journal: Journal, call: Call, kind: type[RecordT]) -> RecordT | None:
    """The record the journal keeps of ``call`` (of the ``kind`` its call
    makes), or ``None``; :class:`InputError` naming the journal and the call
    when it is not one eceb wrote (edited, damaged, another call's)."""
    data = journal.result(call.call_id)
    if data is None:
        return None
    try:
        record = decode_record(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        record = None
    if not isinstance(record, kind):
        message = f"the record of call {call.call_id} is not one eceb wrote (edited or damaged)"
        raise InputError([Problem(file=journal.where, record="results", message=message)])
    return record


class Stopped(Exception):
    """The session stopped: the call was not started (nothing journaled)."""


class _Failed(Exception):
    """A call failed finally: journaled; the execution has no observation."""
