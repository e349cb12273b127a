"""The one orchestration of a job, for every executor: verify a corpus
(ECEB-0.1 §5), or evaluate a run (§5-§15).

A job is a sequence of steps; between them, map stages any executor runs::

    start      check the inputs; plan the re-hash     -> MapStage(REHASH)
    after      reduce the verification; a verification job ends with its report;
               an evaluation fails here, or plans the evaluation -> MapStage(EVALUATE)
    after      reduce the outcomes into the report    -> Finished

:func:`run_job` drives it in this process (``eceb corpus verify``, ``eceb
evaluate``), the map stages run by an :class:`Executor` (this process and
helper processes); the cluster (:mod:`eceb_worker.cluster.tasks`) runs the
same :meth:`Job.start` and :meth:`Job.after` as Celery tasks, each map stage
as shard tasks, the last to answer publishing the reduce. Only the first step differs: in one process the
inputs are held whole (:class:`~eceb_worker.pipeline.shards.Held`), on a
cluster the coordinator scans the registry and keeps no artifact.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Final, Protocol, TypeVar

import msgspec

from eceb_worker import __version__
from eceb_worker.core.urls import parse_s3_url
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.planning import DEFAULT_FILE_COST_BYTES, RehashShard, plan_rehash
from eceb_worker.corpus.registration import Registered
from eceb_worker.corpus.registry import Registry
from eceb_worker.corpus.verification import (
    ExpectedArtifact,
    VerificationReport,
    reduce_verification,
    verification_failed,
)
from eceb_worker.errors import (
    EcebError,
    ErrorKind,
    ExecutionRefused,
    OutputError,
    ProviderError,
    ShardFailedError,
    StorageError,
)
from eceb_worker.families.eceb.disclosure import DISCLOSURE_OFF, DisclosureCheck
from eceb_worker.families.eceb.disclosure.findings import findings_of_tasks, shard_findings
from eceb_worker.families.eceb.disclosure.spec import scanned_check
from eceb_worker.families.eceb.planning import (
    EvaluationShard,
    plan_evaluation,
)
from eceb_worker.families.eceb.report import Report
from eceb_worker.families.eceb.shards import reduce_evaluation
from eceb_worker.io.local_corpus import LARGE_FILE_BYTES
from eceb_worker.pipeline.inputs import check_inputs, load_registry
from eceb_worker.pipeline.making.shards import MadeSummary
from eceb_worker.pipeline.messages import (
    CheckedRegistry,
    EvaluateAnswer,
    EvaluateTask,
    HashRangeAnswer,
    JobKind,
    JobMessage,
    ListAnswer,
    MakeAnswer,
    RegistrationOptions,
    RehashAnswer,
    RehashTask,
    ShardAnswer,
    ShardFailed,
    ShardTask,
    Stage,
)
from eceb_worker.pipeline.shards import Held, Prepared, Workspace

_logger = logging.getLogger("eceb.jobs")

SCAN_COST: Final = 16
"""What scanning a byte for disclosures costs on one core, in bytes hashed
(the scan runs at a sixteenth to a twenty-fifth of BLAKE3's speed on one
core, docs/PERFORMANCE.md)."""

OBSERVATION_COST_BYTES: Final = 32 * 1024
"""What evaluating one observation costs on one core (decoding, checking,
gating and digesting it: some 7 us), in the byte-equivalents of
:attr:`MapStage.single_core_bytes`: as long as hashing 32 KiB takes."""

__all__ = ["SCAN_COST", "Executor", "Finished", "Job", "MapStage", "ThisProcess", "run_job"]


class MapStage(msgspec.Struct, frozen=True, kw_only=True):
    """A map step to run: every task, once, in any order.

    Fields:
        stage: which step.
        tasks: the shard tasks, in plan order (a task's index is its position).
        single_core_bytes: the work, in byte-equivalents on one core, that
            helper processes would share (files too small for BLAKE3's own
            threads; observations to evaluate, at
            :data:`OBSERVATION_COST_BYTES` each); ``None`` when every task
            gains from a process of its own (reads from object storage wait
            on the network).
    """

    stage: Stage
    tasks: list[ShardTask]
    single_core_bytes: int | None = None


class Finished(msgspec.Struct, frozen=True, kw_only=True):
    """A job's result: the verification report, an evaluation's report, a
    made run's summary (its run, transcripts and judgments written), or
    the registry a registration wrote."""

    verification: VerificationReport | None = None
    report: Report | None = None
    made: MadeSummary | None = None
    registered: Registered | None = None


AnswerCallback = Callable[[ShardAnswer], object]


class Executor(Protocol):
    """Runs the tasks of a map stage and returns one answer per task, in task order."""

    def map(self, stage: MapStage, workspace: Workspace, on_answer: AnswerCallback | None = None) -> list[ShardAnswer]:
        """Run every task of ``stage`` once; ``workspace`` runs those of this
        process. ``on_answer`` is called in the caller's thread for each
        answer, in completion order (progress). Raises what a task raises
        (``StorageError`` for a failing storage)."""
        ...


class Job:
    """One job's steps (:class:`~eceb_worker.pipeline.messages.JobMessage`).

    ``workspace`` runs this process's shard tasks and keeps what later
    steps reuse; ``held`` is what this process already holds of the job's
    inputs (then :meth:`start` reads nothing).
    """

    def __init__(self, message: JobMessage, workspace: Workspace | None = None, *, held: Held | None = None) -> None:
        self.message = message
        self.held = held
        self.workspace = workspace or Workspace(held)
        self.verification: VerificationReport | None = None

    def start(self, on_shards: Callable[[Sequence[RehashShard]], object] | None = None) -> MapStage:
        """Check the job's inputs and plan the re-hash (ECEB-0.1 §5).

        Updates :attr:`message` with the registry checked and the versions
        of the inputs read; ``on_shards`` gets the first shards of a
        verification job's registry as they close (:func:`~eceb_worker.pipeline.inputs.load_registry`).
        Raises :class:`~eceb_worker.errors.InputError`
        with every problem of the inputs, ``StorageError`` when they cannot
        be read at all, :class:`~eceb_worker.errors.OutputError` when the
        job's ``out`` is one of its inputs.
        """
        if self.message.kind is JobKind.MAKE:
            return self._plan_making()
        if self.message.kind is JobKind.REGISTER:
            return self._plan_listing()
        if self.held is not None:
            # Held whole: each task carries its artifacts (no byte ranges are needed).
            registry = self.held.registry
            sizes = [a.size_bytes for a in registry.artifacts]
            shards = tuple(plan_rehash(sizes, shard_bytes=self._rehash_shard_bytes()))
            location = self.message.inputs.registry
        else:
            registry, location = self._scan(on_shards)
            shards = registry.shards
        message = self.message
        scan = self._scan_check()
        checked = CheckedRegistry(
            location=location,
            etag=dict(message.inputs.etags).get(location, ""),
            corpus_root=registry.corpus_root,
            artifact_count=registry.artifact_count,
            rehash_shards=len(shards),
        )
        self.message = msgspec.structs.replace(message, registry=checked)
        tasks: list[ShardTask] = [
            RehashTask(
                corpus=message.corpus,
                registry=checked,
                endpoint_url=message.inputs.endpoint_url,
                shard=shard,
                artifacts=_expected(registry.artifacts[shard.start : shard.end]) if self.held is not None else (),
                job_id=message.job_id,
                disclosure=scan,
                inputs=message.inputs if scan.enabled else None,
            )
            for shard in shards
        ]
        return MapStage(stage=Stage.REHASH, tasks=tasks, single_core_bytes=self._single_core_bytes(scan.enabled))

    def _rehash_shard_bytes(self) -> int:
        """The bytes of a re-hash shard: the job's ``shard_bytes`` of work,
        each byte costing :data:`SCAN_COST` when an evaluation's re-hash
        scans for disclosures (so that a shard is about as much work either way)."""
        message = self.message
        if message.kind is JobKind.EVALUATE and message.evaluation.disclosure_check.enabled:
            return max(message.shard_bytes // SCAN_COST, 1)
        return message.shard_bytes

    def _scan_check(self) -> DisclosureCheck:
        """The disclosure check the re-hash shards run (ECEB-0.1 §17)."""
        message = self.message
        if message.kind is not JobKind.EVALUATE:
            return DISCLOSURE_OFF
        return scanned_check(
            message.evaluation.disclosure_check, self.workspace.prepared(message.inputs).benchmark.tasks
        )

    def _scan(self, on_shards: Callable[[Sequence[RehashShard]], object] | None = None) -> tuple[Registry, str]:
        """Read and check the inputs, keeping no registry artifact beyond
        those the benchmark names; record the versions read."""
        message = self.message
        inputs = message.inputs
        locator = self.workspace.locator(inputs.endpoint_url)
        prepared = None
        if message.kind is JobKind.VERIFY:
            location = locator.locate(inputs.registry)
            registry = load_registry(location, keep=frozenset(), shard_bytes=message.shard_bytes, on_shards=on_shards)
            place = location.name
        else:
            checked = check_inputs(
                inputs.benchmark, inputs.run, locator, keep=frozenset(), shard_bytes=self._rehash_shard_bytes()
            )
            registry, place = checked.registry, checked.registry_location
            prepared = Prepared.of(checked.benchmark, checked.run)
        inputs = msgspec.structs.replace(inputs, registry=place, etags=tuple(sorted(locator.etags.items())))
        if message.out and any(_same_place(message.out, read) for read in (*locator.etags, place)):
            raise OutputError(f"{message.out}: is an input of this job; the report would overwrite it")
        if prepared is not None:
            self.workspace.remember(inputs, prepared)
        self.message = msgspec.structs.replace(message, inputs=inputs)
        return registry, place

    def _single_core_bytes(self, scanning: bool) -> int | None:
        """See :attr:`MapStage.single_core_bytes`: for a local corpus, the
        files hashed on one core each (smaller than ``LARGE_FILE_BYTES``),
        or, when the re-hash scans for disclosures, every file, each byte
        scanned costing :data:`SCAN_COST` bytes hashed."""
        if self.message.corpus.is_s3 or self.held is None:
            return None
        artifacts = self.held.registry.artifacts
        if scanning:
            return SCAN_COST * sum(a.size_bytes for a in artifacts) + DEFAULT_FILE_COST_BYTES * len(artifacts)
        small = [a.size_bytes for a in artifacts if a.size_bytes < LARGE_FILE_BYTES]
        return sum(small) + DEFAULT_FILE_COST_BYTES * len(small)

    @property
    def registry(self) -> CheckedRegistry:
        """The registry :meth:`start` checked. Raises ValueError before."""
        if self.message.registry is None:
            raise ValueError("the job's message names no checked registry (its first step has not run)")
        return self.message.registry

    def after(self, stage: Stage, answers: Sequence[ShardAnswer]) -> MapStage | Finished:
        """Reduce a map stage's answers (in any order; an answer repeated
        counts once) and plan what follows.

        Raises :class:`~eceb_worker.errors.ShardFailedError` naming the first
        shard that failed, or when the answers do not cover the plan; :class:`~eceb_worker.errors.VerificationError`
        (holding the report) when an evaluation's corpus does not verify;
        :class:`~eceb_worker.errors.InputError` with every problem of the
        run's records.
        """
        if stage is Stage.REHASH:
            return self._verified(_collect(answers, self.registry.rehash_shards, stage, RehashAnswer))
        if stage is Stage.MAKE:
            return Finished(made=self._made(answers))
        if stage is Stage.LIST:
            return self._listed(answers)
        if stage is Stage.HASH and self.message.kind is JobKind.REGISTER:
            return Finished(registered=self._registered(answers))
        if stage is Stage.EVALUATE:
            prepared = self.workspace.prepared(self.message.inputs)
            total = len(self._evaluation_plan(prepared))
            outcomes = [o for a in _collect(answers, total, stage, EvaluateAnswer) for o in a.outcomes]
            report = reduce_evaluation(
                outcomes,
                benchmark=prepared.benchmark,
                run=prepared.run,
                corpus_root=self.registry.corpus_root,
                artifact_count=self.registry.artifact_count,
                eceb_version=__version__,
                disclosure_check=self.message.evaluation.disclosure_check,
                uncertainty=self.message.evaluation.uncertainty,
            )
            return Finished(verification=self.verification, report=report)
        raise ValueError(f"a {self.message.kind.value} job has no {stage.value} stage")

    def _plan_making(self) -> MapStage:
        """A made run's first step: check the benchmark and its registry
        (their versions recorded), that no output is an input or lies in
        the corpus, that the corpus holds the registry's first artifact and
        that this worker holds every credential the profile names; then
        bind the job's journal and plan the shards."""
        from eceb_worker.pipeline.making.shards import binding_of, outputs_of, plan_making

        message = self.message
        making = message.making
        if making is None:
            raise ValueError("a made run's job message carries no making options")
        locator = self.workspace.locator(message.inputs.endpoint_url)
        inputs, registry_at = self.workspace.making_inputs(message.inputs, making, locator)
        job_inputs = msgspec.structs.replace(message.inputs, etags=tuple(sorted(locator.etags.items())))
        for out in outputs_of(message.out):
            if any(_same_place(out, read) for read in locator.etags):
                raise OutputError(f"{out}: is an input of this job; the run would overwrite it")
            if message.corpus.is_s3 and _under(out, message.corpus.source):
                raise OutputError(
                    f"{out}: lies under the corpus {message.corpus.source}, which holds exactly its registered "
                    "artifacts: write the run elsewhere"
                )
        self._check_corpus(inputs.registry.artifacts[:1])
        if self.workspace.making is not None:  # (without it, binding the journal below says so)
            self.workspace.making.check_credentials(inputs)
        registry = CheckedRegistry(
            location=registry_at,
            corpus_root=inputs.registry.corpus_root,
            artifact_count=len(inputs.registry.artifacts),
            rehash_shards=0,
        )
        message = msgspec.structs.replace(message, inputs=job_inputs, registry=registry)
        tasks = plan_making(message, inputs)
        making = tasks[0].making if tasks else making
        self.message = msgspec.structs.replace(message, making=making)
        self.workspace.making_services().journal(making.journal_id, binding_of(making, registry.corpus_root), bind=True)
        return MapStage(stage=Stage.MAKE, tasks=list(tasks))

    def _plan_listing(self) -> MapStage:
        """A registration's first step: refuse an output under the corpus,
        then plan the listing shards (key ranges of the corpus prefix)."""
        from eceb_worker.pipeline.register_job import check_output, plan_listing

        message = self.message
        registration = message.registration
        if registration is None:
            raise ValueError("a registration's job message carries no registration options")
        check_output(message)
        registration = self._previous(registration)
        message = msgspec.structs.replace(message, registration=registration)
        tasks = plan_listing(message, self.workspace.object_store(message.corpus.endpoint_url).client)
        registration = msgspec.structs.replace(registration, listing_shards=len(tasks))
        self.message = msgspec.structs.replace(message, registration=registration)
        return MapStage(stage=Stage.LIST, tasks=list(tasks))

    def _previous(self, registration: RegistrationOptions) -> RegistrationOptions:
        """The listing's start, and an incremental registration's previous
        registry checked and its listing snapshot found beside it (bound to
        it by digest: one that is missing or made for other bytes is not
        used, said in the worker's log, and every object is hashed); their
        versions recorded for the shards."""
        from eceb_worker.corpus.incremental import settled_before
        from eceb_worker.pipeline.previous import open_previous

        started = datetime.now(UTC)
        if not registration.previous:
            return msgspec.structs.replace(registration, listed_at=started)
        locator = self.workspace.locator(self.message.corpus.endpoint_url)
        previous = open_previous(registration.previous, locator, on_warning=_logger.warning)
        if previous.listing is None or previous.header is None:
            return msgspec.structs.replace(registration, listed_at=started, previous_listing="")
        return msgspec.structs.replace(
            registration,
            listed_at=started,
            previous_listing=previous.listing.name,
            previous_etags=tuple(sorted(locator.etags.items())),
            settled=settled_before(previous.header),
        )

    def _listed(self, answers: Sequence[ShardAnswer]) -> MapStage:
        """A registration's listing reduced: its problems fail the job, or
        the hash shards are planned over the listing partials."""
        from eceb_worker.pipeline.register_job import plan_hashing

        message = self.message
        registration = message.registration
        assert registration is not None
        _raise_failed(answers, Stage.LIST, registration.listing_shards)
        listed = [a for a in answers if isinstance(a, ListAnswer)]
        tasks, rows = plan_hashing(message, listed)
        partials = tuple(a.partial for a in sorted(listed, key=lambda a: a.index) if a.partial)
        registration = msgspec.structs.replace(
            registration, hash_shards=len(tasks), artifact_count=rows, listing_partials=partials
        )
        self.message = msgspec.structs.replace(message, registration=registration)
        return MapStage(stage=Stage.HASH, tasks=list(tasks))

    def _registered(self, answers: Sequence[ShardAnswer]) -> Registered:
        """A registration's hashing reduced: the registry merged from the
        partials and written (:func:`~eceb_worker.pipeline.register_job.finish_registration`)."""
        from eceb_worker.pipeline.register_job import finish_registration

        message = self.message
        registration = message.registration
        assert registration is not None
        _raise_failed(answers, Stage.HASH, registration.hash_shards)
        store = self.workspace.object_store(message.corpus.endpoint_url)
        return finish_registration(
            message,
            [a for a in answers if isinstance(a, HashRangeAnswer)],
            read=lambda url: store.get(url)[0],
            download=store.download,
            upload=store.put_file_atomic,
        )

    def _check_corpus(self, first: Sequence[Artifact]) -> None:
        """Refuse (``StorageError``, before the journal is bound or any
        call sent) a corpus that does not hold the registry's first
        artifact, as ``eceb run`` does: a directory one level off, or a
        misspelled prefix."""
        corpus = self.message.corpus
        if not first:
            return
        path = first[0].path
        if corpus.is_s3:
            bucket, prefix = parse_s3_url(corpus.source)
            key = f"{prefix.rstrip('/')}/{path}" if prefix else path
            found = self.workspace.object_store(self.message.inputs.endpoint_url).exists(f"s3://{bucket}/{key}")
        else:
            found = os.path.isfile(os.path.join(corpus.source, path))
        if not found:
            question = "is it the corpus the registry describes?"
            raise StorageError(f"{corpus.source}: holds no {path}, the registry's first artifact: {question}")

    def _made(self, answers: Sequence[ShardAnswer]) -> MadeSummary:
        """A made run's reduce (:func:`~eceb_worker.pipeline.making.shards.finish_making`)."""
        from eceb_worker.pipeline.making.shards import binding_of, finish_making

        message = self.message
        making, registry = message.making, self.registry
        assert making is not None
        failed = [a for a in answers if isinstance(a, ShardFailed)]
        if failed:
            raise _failure(failed)
        locator = self.workspace.locator(message.inputs.endpoint_url, message.inputs.etags)
        inputs, _ = self.workspace.making_inputs(message.inputs, making, locator)
        journal = self.workspace.making_services().journal(making.journal_id, binding_of(making, registry.corpus_root))
        store = self.workspace.object_store(message.inputs.endpoint_url)
        return finish_making(
            message,
            inputs,
            [a for a in answers if isinstance(a, MakeAnswer)],
            journal,
            read=lambda url: store.get(url)[0],
            upload=store.put_file_atomic,
        )

    def _verified(self, answers: Sequence[RehashAnswer]) -> MapStage | Finished:
        registry = self.registry
        verification = reduce_verification(
            (answer.verification for answer in answers),
            corpus_root=registry.corpus_root,
            artifact_count=registry.artifact_count,
            source=self.message.corpus.location,
        )
        self.verification = verification
        if self.message.kind is JobKind.VERIFY:
            return Finished(verification=verification)
        if not verification.ok:
            raise verification_failed(verification)
        prepared = self.workspace.prepared(self.message.inputs)
        plan = self._evaluation_plan(prepared)
        partials = [
            a.disclosure
            for a in answers
            if a.disclosure is not None and self.message.evaluation.disclosure_check.enabled
        ]
        by_task = findings_of_tasks(partials, prepared.benchmark.tasks)
        tasks: list[ShardTask] = [
            EvaluateTask.of(
                self.message, registry, shard, shard_findings(by_task, prepared.task_ids[shard.start : shard.end])
            )
            for shard in plan
        ]
        work = sum(max(shard.observations, 1) for shard in plan)
        return MapStage(stage=Stage.EVALUATE, tasks=tasks, single_core_bytes=work * OBSERVATION_COST_BYTES)

    def _evaluation_plan(self, prepared: Prepared) -> list[EvaluationShard]:
        counts = [len(prepared.run.observations.get(task_id, ())) for task_id in prepared.task_ids]
        return plan_evaluation(counts, shard_observations=self.message.evaluation.shard_observations)


def _failure(failed: Sequence[ShardFailed]) -> EcebError:
    """The error ending a made run whose shards failed: of the kind of the
    failed shard first in plan order (a spending stop refused, a provider
    failed), naming it; anything else (an input changed or a credential
    missing where the shard ran, a partial damaged, storage failing) ends
    it as a shard the cluster could not complete, as an evaluation's
    shards do."""
    first = min(failed, key=lambda answer: answer.index)
    message = f"{len(failed)} execution shard(s) failed; first: {first.message}"
    if first.kind is ErrorKind.REFUSED:
        return ExecutionRefused(message)
    if first.kind is ErrorKind.PROVIDER:
        return ProviderError(message, party="provider", transient=False)
    return ShardFailedError(message)


def _raise_failed(answers: Sequence[ShardAnswer], stage: Stage, total: int) -> None:
    """Raise ``ShardFailedError`` naming the first shard of ``stage`` that
    failed (in plan order), when one did."""
    failed = [a for a in answers if isinstance(a, ShardFailed)]
    if failed:
        first = min(failed, key=lambda answer: answer.index)
        raise ShardFailedError(f"{len(failed)} of {total} {stage.shard_name}s failed; first: {first.message}")


def _expected(artifacts: Sequence[Artifact]) -> tuple[ExpectedArtifact, ...]:
    """What a held shard's task carries of its artifacts."""
    return tuple(
        [ExpectedArtifact(a.artifact_id, a.path, a.source_digest, a.size_bytes, a.classification) for a in artifacts]
    )


def _under(url: str, prefix: str) -> bool:
    """True when object ``url`` lies under the ``s3://`` prefix ``prefix``."""
    try:
        bucket, key = parse_s3_url(url)
        corpus_bucket, corpus_prefix = parse_s3_url(prefix)
    except ValueError:
        return False
    return bucket == corpus_bucket and (not corpus_prefix or key.startswith(corpus_prefix.rstrip("/") + "/"))


def _same_place(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` name the same object or file, however spelled."""
    if a.startswith("s3://") and b.startswith("s3://"):
        try:
            return parse_s3_url(a) == parse_s3_url(b)
        except ValueError:
            return a == b
    return a == b or os.path.realpath(a) == os.path.realpath(b)


A = TypeVar("A", RehashAnswer, EvaluateAnswer)


def _collect(answers: Sequence[ShardAnswer], total: int, stage: Stage, kind: type[A]) -> list[A]:
    """Each shard's answer, in plan order (a shard answered twice counts
    once). Raises ``ShardFailedError`` when a shard failed or one is missing."""
    failed = [a for a in answers if isinstance(a, ShardFailed)]
    if failed:
        raise ShardFailedError(f"{len(failed)} of {total} {stage.shard_name}s failed; first: {failed[0].message}")
    by_index: dict[int, A] = {}
    for answer in answers:
        if isinstance(answer, kind):
            by_index.setdefault(answer.index, answer)
    if sorted(by_index) != list(range(total)):
        raise ShardFailedError(
            f"{stage.shard_name} results do not cover the plan ({len(by_index)} of {total} answered)"
        )
    return [by_index[index] for index in range(total)]


def run_job(job: Job, executor: Executor, *, on_answer: AnswerCallback | None = None) -> Finished:
    """Run every step of ``job`` in this process, its map stages on ``executor``."""
    step: MapStage | Finished = job.start()
    while isinstance(step, MapStage):
        answers = executor.map(step, job.workspace, on_answer)
        step = job.after(step.stage, answers)
    return step


class ThisProcess:
    """The simplest :class:`Executor`: every task in this process, in order
    (the embedded executor without helper processes)."""

    def map(self, stage: MapStage, workspace: Workspace, on_answer: AnswerCallback | None = None) -> list[ShardAnswer]:
        """Run every task of ``stage`` with ``workspace``; answers in task order."""
        answers = []
        for task in stage.tasks:
            answer = workspace.run(task)
            answers.append(answer)
            if on_answer is not None:
                on_answer(answer)
        return answers
