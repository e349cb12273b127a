"""A made run's job on a cluster (``eceb-dist run``): its first step, its
execution shards and its reduce, each run by whichever worker takes it
(ECEB-0.1 §7, §8; docs/DISTRIBUTED.md, "Making a run on the cluster").

- :func:`plan_making`: check the benchmark and its registry (pinned by
  their ETags), bind the job's journal to the plan, and cut the plan into
  shards of ``shard_executions`` executions (index ranges: a shard
  carries no execution, only where its range starts and ends).
- :func:`make_shard`: make the executions of one range, ``in_flight`` at
  once (threads: see :class:`MakingWorkspace`), every paid call through
  the job's journal (kept by the cluster, shared by every worker) and
  paced by the providers' limits (shared by every worker); then write the
  shard's *partial* beside the run (one JSON line per execution of the
  range, in plan order, with what was made of it) and answer where it is.
  A shard run again (its worker died) first marks the calls its earlier
  holder left in flight as of unknown outcome, then reads its earlier
  partial, and makes only what neither holds. The journal drops the records
  of the executions a partial holds made, and keeps those of an execution
  left half made (answered, not judged) until it is.
- :func:`finish_making`: the reduce. Every shard answered; a call of
  unknown outcome fails the job (nothing is written; the job can be
  resumed, sending them again only when allowed); otherwise the partials
  are read once, in shard order, into a local file, and the transcripts,
  the judgments and then the run are written from it, each atomically:
  the same bytes ``eceb run`` writes from its journal for the same
  executions.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import posixpath
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import IO, Final, Protocol

import msgspec

from eceb_worker.core.digests import digest_chunks
from eceb_worker.corpus.storage import CorpusStorage
from eceb_worker.errors import InputError, OutcomeUnknown, OutputError, Problem, ShardFailedError, StorageError
from eceb_worker.families.eceb.benchmark import task_root
from eceb_worker.families.eceb.making.assemble import MadeExecution
from eceb_worker.families.eceb.making.journal import Journal, JournalBinding
from eceb_worker.families.eceb.making.plan import Call, Execution, executions, plan_size
from eceb_worker.families.eceb.making.profile import LlmJudge
from eceb_worker.families.eceb.making.records import AnswerRecord, JudgeRecord, decode_record
from eceb_worker.families.eceb.run import BenchmarkReference
from eceb_worker.pipeline.making.calls import Calls
from eceb_worker.pipeline.making.contexts import Contexts, open_contexts
from eceb_worker.pipeline.making.inputs import MakingInputs
from eceb_worker.pipeline.making.outputs import judgment_lines, made_run, possible_costs, transcript_lines
from eceb_worker.pipeline.making.pacing import Pacer
from eceb_worker.pipeline.making.session import Parties, command_judge, drive, execution_ended, journal_binding, pacers
from eceb_worker.pipeline.messages import JobMessage, MakeAnswer, MakeTask, MakingOptions

__all__ = [
    "ClusterJournal",
    "MadeSummary",
    "MakingServices",
    "MakingWorkspace",
    "discard",
    "finish_making",
    "make_shard",
    "outputs_of",
    "plan_making",
]

_ENDED_LOOK_S: Final = 1.0
"""How often a shard looks whether its job ended meanwhile (cancelled), at most, in seconds."""

LISTED_UNKNOWN: Final = 16
"""Calls of unknown outcome an answer, an error or ``status`` names (the rest are counted)."""


class ClusterJournal(Journal, Protocol):
    """A journal shared by every worker of a cluster: a :class:`Journal`,
    and what shards run again and their reduce need of it."""

    def lost(self, call_ids: Iterable[str]) -> int:
        """Mark every call among ``call_ids`` whose last attempt is in
        flight as of unknown outcome (its sender died); how many were."""
        ...

    def forget(self, call_ids: Iterable[str]) -> int:
        """Drop the kept records of these calls (their shard's partial holds
        them); how many were dropped."""
        ...

    def keep_partial(self, index: int, url: str) -> None:
        """Note that shard ``index``'s partial is at ``url``."""
        ...

    def partial(self, index: int) -> str | None:
        """Where shard ``index``'s last partial is, ``None`` before one."""
        ...

    def unknown_calls(self, limit: int = LISTED_UNKNOWN) -> tuple[list[str], int]:
        """The first ``limit`` calls of unknown outcome (sorted) and how many there are."""
        ...


class MakingServices(Protocol):
    """What a worker lends execution shards: the cluster's journal of a
    job and the providers' pacing shared by every worker."""

    def journal(self, journal_id: str, binding: JournalBinding, *, bind: bool = False) -> ClusterJournal:
        """The journal ``journal_id``, checked to be bound to ``binding``'s
        plan (``InputError`` otherwise). ``bind`` (a job's first step):
        create it when new, and record ``binding``'s limits (clearing a
        recorded spending stop); otherwise it must exist (``StorageError``)
        and its limits are left as they are."""
        ...

    def pacer(self, *, key: str, requests_per_minute: int = 0, tokens_per_minute: int = 0) -> Pacer:
        """A provider's pacer, its windows and pause shared by every worker."""
        ...

    def ended(self, job_id: str) -> bool:
        """The job ended (cancelled, or failed elsewhere): no further call should start."""
        ...


class MadeSummary(msgspec.Struct, frozen=True, kw_only=True):
    """A made run's job at its end: executions planned, observations
    written, the run's BLAKE3 digest, the spend known and possible
    (micro-USD), and the shards' partials the run was reduced from (in
    shard order: once the job is recorded done, they are deleted)."""

    executions: int
    observations: int
    run_digest: str
    spent_micro_usd: int
    possible_micro_usd: int
    partials: tuple[str, ...] = ()


class _PartialLine(msgspec.Struct, frozen=True, kw_only=True):
    """One execution in a shard's partial: its id, and its answer's and
    judgment's records as the journal kept them (``null`` when not made)."""

    execution_id: str
    answer: msgspec.Raw = msgspec.Raw(b"null")
    judgment: msgspec.Raw = msgspec.Raw(b"null")


_LINE: Final = msgspec.json.Decoder(_PartialLine)
_NULL: Final = msgspec.Raw(b"null")


def outputs_of(out: str) -> tuple[str, str, str]:
    """The run's, transcripts' and judgments' URLs of a run written to ``out``
    (``.../run.json``: ``.../run.transcripts.jsonl``, ``.../run.judgments.jsonl``),
    as ``eceb run`` names them beside its run file."""
    directory, name = posixpath.split(out)
    stem = name.removesuffix(".json")
    return out, f"{directory}/{stem}.transcripts.jsonl", f"{directory}/{stem}.judgments.jsonl"


def _partial_url(task: MakeTask) -> str:
    """A new partial's URL: beside the run, under its journal, unique to this holding."""
    directory, name = posixpath.split(task.out)
    return f"{directory}/.{name}.parts/{task.making.journal_id}/{task.index:06d}-{uuid.uuid4().hex}.jsonl"


# -- the job's inputs in a worker process ---------------------------------


class _JobMaking:
    """What a worker process keeps of one made run's job between its
    shards: the inputs, the contexts (the context system process, the BM25
    index), the model clients and the pacers."""

    def __init__(self, inputs: MakingInputs, contexts: Contexts, parties: Parties, paced: tuple[Pacer, Pacer]) -> None:
        self.inputs = inputs
        self.contexts = contexts
        self.parties = parties
        self.pacers = paced

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.contexts.close()
        self.parties.close()


class MakingWorkspace:
    """A worker process's made-run jobs: what :func:`make_shard` reuses
    between the shards of one job (the last :data:`_KEPT_JOBS` jobs kept,
    the older closed), the cluster's services, and the process's environment
    (credentials are read from it, never from a message).

    Executions are I/O-bound: each shard keeps ``in_flight`` of them at
    once on threads of its own (the providers' SDK clients and the journal
    are thread-safe, and the same code makes ``eceb run``'s executions);
    a worker's process pool adds processes."""

    _KEPT_JOBS: Final = 2

    def __init__(
        self,
        services: MakingServices,
        load: Callable[[MakeTask], MakingInputs],
        storage: Callable[[MakeTask], CorpusStorage],
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        self.services = services
        self._load = load
        self._storage = storage
        self._environ = environ
        self._jobs: dict[str, _JobMaking] = {}
        self._lock = threading.Lock()

    def job(self, task: MakeTask) -> _JobMaking:
        """The job of ``task``, loaded when this process first meets it."""
        with self._lock:
            found = self._jobs.get(task.job_id)
            if found is not None:
                return found
            for old in list(self._jobs)[: max(len(self._jobs) - self._KEPT_JOBS + 1, 0)]:
                self._jobs.pop(old).close()
            found = self._jobs[task.job_id] = self._open(task)
            return found

    def _open(self, task: MakeTask) -> _JobMaking:
        inputs = self._load(task)
        contexts = open_contexts(inputs, self._storage(task))
        parties = Parties(inputs, self._environ)
        parties.check_credentials()
        paced = pacers(inputs, self.services.pacer)
        return _JobMaking(inputs, contexts, parties, paced)

    def check_credentials(self, inputs: MakingInputs) -> None:
        """Read every credential ``inputs``' profile names from this
        process's environment (or its key files), before a job is planned:
        ``InputError`` naming a missing one (never a value)."""
        Parties(inputs, self._environ).check_credentials()

    def close(self) -> None:
        """Close every job's context system and clients."""
        with self._lock:
            for job in self._jobs.values():
                job.close()
            self._jobs.clear()


# -- planning --------------------------------------------------------------


def plan_making(message: JobMessage, inputs: MakingInputs) -> list[MakeTask]:
    """The shard tasks of a made run's job whose first step checked
    ``inputs`` (its ``making`` options completed with the benchmark's digest
    and the plan's size): ranges of ``shard_executions`` executions, in plan order."""
    making = message.making
    assert making is not None
    size = plan_size(inputs.benchmark, inputs.profile)
    making = msgspec.structs.replace(making, benchmark_digest=inputs.benchmark_digest, executions=size)
    step = making.shard_executions
    return [
        MakeTask(
            job_id=message.job_id,
            index=index,
            start=start,
            end=min(start + step, size),
            inputs=message.inputs,
            corpus=message.corpus,
            out=message.out,
            making=making,
            corpus_root=inputs.registry.corpus_root,
        )
        for index, start in enumerate(range(0, size, step))
    ]


def binding_of(making: MakingOptions, corpus_root: str) -> JournalBinding:
    """The journal binding of a job's plan (:func:`journal_binding`)."""
    return journal_binding(
        making.profile, benchmark_digest=making.benchmark_digest, corpus_root=corpus_root, size=making.executions
    )


# -- one shard -------------------------------------------------------------


def _range(inputs: MakingInputs, task: MakeTask) -> list[Execution]:
    return list(itertools.islice(executions(inputs.benchmark, inputs.profile), task.start, task.end))


def _complete(line: _PartialLine) -> bool:
    """The line holds a made execution: answered and judged."""
    return _NULL not in (line.answer, line.judgment)


def _decoded_line(raw: bytes, where: str, number: int) -> _PartialLine:
    """Line ``number`` (1-based) of the partial at ``where``, its records
    checked to decode. Raises :class:`InputError` naming the partial and the
    line (never its bytes: they hold prompts and answers) when it is not a
    line a shard wrote (replaced, truncated or damaged since)."""
    try:
        return _LINE.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        raise _damaged(where, number) from None


def _damaged(where: str, number: int) -> InputError:
    message = "is not a line of an execution shard's partial (the object was replaced or damaged since)"
    return InputError([Problem(file=where, record=f"line {number}", message=message)])


def _records(line: _PartialLine, where: str, number: int) -> tuple[AnswerRecord | None, JudgeRecord | None]:
    """The answer's and judgment's records of a partial's line (``None``
    when not made). Raises :class:`InputError` when one does not decode."""
    try:
        answer = None if line.answer == _NULL else decode_record(line.answer)
        judgment = None if line.judgment == _NULL else decode_record(line.judgment)
    except (msgspec.DecodeError, RecursionError):
        raise _damaged(where, number) from None
    return (
        answer if isinstance(answer, AnswerRecord) else None,
        judgment if isinstance(judgment, JudgeRecord) else None,
    )


def _made_before(read: Callable[[str], bytes], url: str | None) -> dict[str, _PartialLine]:
    """The executions an earlier partial of the shard holds made (answered
    and judged), by id: the journal keeps no record of them any more. (The
    records of an execution left half made stay in the journal.) Raises
    :class:`InputError` when the partial does not decode."""
    if url is None:
        return {}
    lines = (_decoded_line(raw, url, number) for number, raw in enumerate(read(url).splitlines(), 1))
    return {line.execution_id: line for line in lines if _complete(line)}


def _line(journal: Journal, execution: Execution, before: _PartialLine | None) -> _PartialLine:
    """What the shard's new partial holds of ``execution``: its earlier
    partial's records, else the journal's."""
    answer = before.answer if before is not None else _NULL
    judgment = before.judgment if before is not None else _NULL
    if answer == _NULL and (data := journal.result(Call(execution=execution, kind="answer").call_id)) is not None:
        answer = msgspec.Raw(data)
    if judgment == _NULL and (data := journal.result(Call(execution=execution, kind="judge").call_id)) is not None:
        judgment = msgspec.Raw(data)
    return _PartialLine(execution_id=execution.execution_id, answer=answer, judgment=judgment)


def _call_ids(planned: Iterable[Execution]) -> list[str]:
    return [Call(execution=e, kind=kind).call_id for e in planned for kind in ("answer", "judge")]


def make_shard(
    task: MakeTask,
    workspace: MakingWorkspace,
    *,
    read: Callable[[str], bytes],
    write: Callable[[str, bytes], None],
) -> MakeAnswer:
    """Make shard ``task`` (see the module) and write its partial through
    ``write`` (atomically; ``read`` reads an earlier one). Raises what the
    calls raise past their retries (:class:`~eceb_worker.errors.ProviderError`,
    :class:`~eceb_worker.errors.ExecutionRefused` for a spending stop),
    ``StorageError``, ``InputError`` (an earlier partial that does not decode).

    An earlier partial is kept: another holder of the shard (whose lease
    lapsed while it ran) may have answered with it."""
    job = workspace.job(task)
    inputs = job.inputs
    making = task.making
    journal = workspace.services.journal(making.journal_id, binding_of(making, task.corpus_root))
    planned = _range(inputs, task)
    before = _made_before(read, journal.partial(task.index))
    journal.lost(_call_ids(e for e in planned if e.execution_id not in before))  # a holder before died during these
    pending = [e for e in planned if e.execution_id not in before and not execution_ended(journal, e)]
    judge = inputs.profile.judge
    calls = Calls(
        inputs.profile,
        tasks=inputs.benchmark.tasks,
        rubric=inputs.rubric,
        journal=journal,
        contexts=job.contexts,
        answer_model=job.parties.answer_model,
        judge_model=job.parties.judge_model if isinstance(judge, LlmJudge) else None,
        command_judge=command_judge(inputs),
        pacers=job.pacers,
        rerun_unknown=making.rerun_unknown,
        resumed=True,
    )
    spent = 0
    looked = time.monotonic()

    def counted(result: object) -> None:
        nonlocal spent, looked
        spent += getattr(result, "spend_micro_usd", 0)
        if time.monotonic() - looked >= _ENDED_LOOK_S:  # a job cancelled meanwhile starts no further call
            looked = time.monotonic()
            if workspace.services.ended(task.job_id):
                calls.stopped.set()

    _, _, unknown = drive(calls, pending, max(inputs.profile.in_flight, 1), counted)
    lines = [_line(journal, e, before.get(e.execution_id)) for e in planned]
    url = _partial_url(task)
    write(url, b"".join(msgspec.json.encode(line) + b"\n" for line in lines))
    journal.keep_partial(task.index, url)
    made_now = [e for e, line in zip(planned, lines, strict=True) if _complete(line) and e.execution_id not in before]
    journal.forget(_call_ids(made_now))  # the partial holds them; half-made executions keep theirs in the journal
    made = sum(_complete(line) for line in lines)
    refused = sorted(_refused_call(str(u)) for u in unknown)
    return MakeAnswer(
        index=task.index,
        partial=url,
        made=made,
        failed=len(lines) - made - len(unknown),
        unknown=tuple(refused[:LISTED_UNKNOWN]),
        unknown_count=len(unknown),
        spent_micro_usd=spent,
    )


def _refused_call(message: str) -> str:
    """The call id an :class:`OutcomeUnknown` refusal names (``call <id>: ...``)."""
    head = message.removeprefix("call ")
    return head.split(":", 1)[0] if head != message else message


# -- the reduce ------------------------------------------------------------


def _checked(answers: Sequence[MakeAnswer], total: int) -> list[MakeAnswer]:
    by_index: dict[int, MakeAnswer] = {}
    for answer in answers:
        by_index.setdefault(answer.index, answer)
    if sorted(by_index) != list(range(total)):
        raise ShardFailedError(f"execution shard results do not cover the plan ({len(by_index)} of {total} answered)")
    ordered = [by_index[index] for index in range(total)]
    unknown = [call for a in ordered for call in a.unknown]
    count = sum(a.unknown_count for a in ordered)
    if count:
        shown = ", ".join(unknown[:LISTED_UNKNOWN])
        more = f" (and {count - min(len(unknown), LISTED_UNKNOWN)} more)" if count > LISTED_UNKNOWN else ""
        raise OutcomeUnknown(
            f"{count} calls of unknown outcome (the worker sending them died; the provider may have billed them): "
            f"{shown}{more}; nothing was written: eceb-dist run --resume JOB --rerun-unknown sends them again"
        )
    return ordered


_READS_AHEAD: Final = 8
"""Partials the reduce reads at once (each written to its file in shard order)."""


def _spilled(answers: Sequence[MakeAnswer], read: Callable[[str], bytes], spill: IO[bytes]) -> None:
    """Every shard's partial, in shard order, into ``spill``: read
    :data:`_READS_AHEAD` at a time (at most that many held)."""
    with ThreadPoolExecutor(max_workers=_READS_AHEAD, thread_name_prefix="eceb-partials") as pool:
        ahead: deque[Future[bytes]] = deque()
        for answer in answers:
            ahead.append(pool.submit(read, answer.partial))
            if len(ahead) >= _READS_AHEAD:
                spill.write(ahead.popleft().result())
        while ahead:
            spill.write(ahead.popleft().result())
    spill.flush()


def _made_from(
    spill_path: Path, plan: Callable[[], Iterator[Execution]], where: str
) -> Callable[[], Iterator[MadeExecution]]:
    def made() -> Iterator[MadeExecution]:
        with spill_path.open("rb") as lines:
            for number, (execution, raw) in enumerate(itertools.zip_longest(plan(), lines), 1):
                if execution is None or raw is None:
                    raise ShardFailedError(f"{where}: the shards' partials do not hold the plan's executions")
                line = _decoded_line(raw, where, number)
                if line.execution_id != execution.execution_id:
                    message = f"holds execution {line.execution_id} where the plan has {execution.execution_id}"
                    raise InputError([Problem(file=where, record="partial", message=message)])
                answer, judgment = _records(line, where, number)
                yield MadeExecution(execution=execution, answer=answer, judgment=judgment)

    return made


def finish_making(
    message: JobMessage,
    inputs: MakingInputs,
    answers: Sequence[MakeAnswer],
    journal: ClusterJournal,
    *,
    read: Callable[[str], bytes],
    upload: Callable[[str, Path], None],
) -> MadeSummary:
    """The reduce (see the module): ``upload(url, path)`` writes a local
    file's bytes to ``url`` atomically. Raises :class:`OutcomeUnknown` when
    a call's outcome is unknown, ``ShardFailedError`` when the answers do
    not cover the plan, ``StorageError``, ``OutputError``."""
    making = message.making
    assert making is not None
    total = -(-making.executions // making.shard_executions) if making.executions else 0
    ordered = _checked(answers, total)
    profile = inputs.profile

    def plan() -> Iterator[Execution]:
        return executions(inputs.benchmark, profile)

    run_url, transcripts_url, judgments_url = outputs_of(message.out)
    with tempfile.TemporaryDirectory(prefix="eceb-run-") as directory:
        spill_path = Path(directory, "made.jsonl")
        with spill_path.open("wb") as spill:
            _spilled(ordered, read, spill)
        made = _made_from(spill_path, plan, f"{message.out} (partials)")
        run = made_run(
            profile,
            benchmark=BenchmarkReference(
                benchmark_id=inputs.benchmark.benchmark_id, task_root=task_root(inputs.benchmark.tasks)
            ),
            corpus_root=inputs.registry.corpus_root,
            made=made,
            possible_costs=possible_costs(journal, plan),
        )
        digest = _write_local(Path(directory, "run.json"), run.chunks())
        _write_local(Path(directory, "transcripts.jsonl"), transcript_lines(made()))
        _write_local(Path(directory, "judgments.jsonl"), judgment_lines(made()))
        upload(transcripts_url, Path(directory, "transcripts.jsonl"))
        upload(judgments_url, Path(directory, "judgments.jsonl"))
        upload(run_url, Path(directory, "run.json"))
    summary = journal.summary()
    return MadeSummary(
        executions=making.executions,
        observations=run.observations,
        run_digest=digest,
        spent_micro_usd=summary.spent_micro_usd,
        possible_micro_usd=summary.possible_micro_usd,
        partials=tuple(answer.partial for answer in ordered),
    )


def discard(delete: Callable[[str], None], urls: Iterable[str]) -> int:
    """Delete the partials at ``urls`` through ``delete`` (a job done:
    its run holds what they held, and a done job is never resumed), as far
    as storage lets: one that cannot be deleted stays; how many were
    deleted."""
    deleted = 0
    for url in urls:
        try:
            delete(url)
        except (StorageError, OutputError):
            continue
        deleted += 1
    return deleted


def _write_local(path: Path, chunks: Iterable[bytes]) -> str:
    """Write ``chunks`` to ``path``; the BLAKE3 digest of the bytes written."""
    with path.open("wb") as file:

        def written() -> Iterator[bytes]:
            for chunk in chunks:
                file.write(chunk)
                yield chunk

        _, digest = digest_chunks(written())
        return digest
