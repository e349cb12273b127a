"""What a job's steps send each other, in this process, to helper processes
or through a broker: frozen msgspec Structs, as JSON or MessagePack. They
carry references only (object URLs and their ETags, the corpus's
:class:`~eceb_worker.corpus.storage.StorageSpec`, byte ranges of the
registry, task index ranges, paths), never corpus bytes.

A shard task (:data:`ShardTask`) is what any executor runs (:mod:`eceb_worker.pipeline.shards`);
its answer (:data:`ShardAnswer`) is what the job's next step reduces
(:mod:`eceb_worker.pipeline.jobs`).
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Annotated, Any, Final, TypeVar

import msgspec

from eceb_worker.corpus.outcomes import HashOutcome
from eceb_worker.corpus.planning import RehashShard
from eceb_worker.corpus.registration import HashRange, ListingShard, ListingTally, PathProblem, Piece
from eceb_worker.corpus.rules import RulesFile
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.corpus.verification import ExpectedArtifact, ShardVerification
from eceb_worker.errors import ErrorKind
from eceb_worker.families.eceb.disclosure import DISCLOSURE_OFF, AnswerFindings, DisclosureCheck
from eceb_worker.families.eceb.disclosure.findings import DisclosurePartial
from eceb_worker.families.eceb.making.profile import RunProfile
from eceb_worker.families.eceb.options import EvaluationOptions
from eceb_worker.families.eceb.planning import EvaluationShard
from eceb_worker.families.eceb.verdicts import TaskOutcome

__all__ = [
    "JOB_MESSAGE_VERSION",
    "CheckedRegistry",
    "EvaluateAnswer",
    "EvaluateTask",
    "HashAnswer",
    "HashRangeAnswer",
    "HashRangeTask",
    "HashTask",
    "JobInputs",
    "JobKind",
    "JobMessage",
    "ListAnswer",
    "ListTask",
    "MakeAnswer",
    "MakeTask",
    "MakingOptions",
    "RehashAnswer",
    "RegistrationOptions",
    "RehashTask",
    "ShardAnswer",
    "ShardFailed",
    "ShardTask",
    "Stage",
    "job_message",
    "shard_index",
    "shard_task",
    "stage_of",
    "with_endpoint",
]

Positive = Annotated[int, msgspec.Meta(gt=0)]
Count = Annotated[int, msgspec.Meta(ge=0)]

JOB_MESSAGE_VERSION: Final = 2
"""The version of :class:`JobMessage` this eceb sends. Version 1 (no
``version`` field) carried an evaluation's options as separate fields
(``shard_observations``, ``disclosure_check``, ``uncertainty``); version 2
carries them as one :class:`~eceb_worker.families.eceb.options.EvaluationOptions`.
A worker reads both (:func:`job_message`)."""


class Stage(enum.Enum):
    """A map step of a job: every shard of one plan, in any order."""

    HASH = "hash"
    """Hash the files of a corpus being registered (ECEB-0.1 §5)."""
    LIST = "list"
    """List a key range of a corpus being registered on a cluster, and classify its files."""
    REHASH = "rehash"
    """Re-hash a registry's artifacts against their digests (§5)."""
    EVALUATE = "evaluate"
    """Check and evaluate a range of a run's tasks (§8-§14)."""
    MAKE = "make"
    """Make a range of a run's executions: answer and judge each (§7, §8)."""

    @property
    def shard_name(self) -> str:
        """What one shard of the stage is called in messages."""
        return {
            "hash": "hash batch",
            "rehash": "re-hash shard",
            "evaluate": "evaluation shard",
            "make": "execution shard",
            "list": "listing shard",
        }[self.value]


class JobKind(enum.Enum):
    """What a job produces."""

    VERIFY = "verify"
    """A verification report (``eceb corpus verify``, ``eceb-dist verify``)."""
    EVALUATE = "evaluate"
    """An evaluation report (``eceb evaluate``, ``eceb-dist submit``)."""
    MAKE = "make"
    """A made run, its transcripts and judgments (``eceb-dist run``)."""
    REGISTER = "register"
    """A corpus registry (``eceb-dist register``)."""


class JobInputs(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Where a job's inputs are (paths, or ``s3://bucket/key``) and which
    versions were checked: ``etags`` holds ``(url, ETag)`` of every object
    read (the registry included), so workers read exactly those.

    Fields:
        benchmark, run: an evaluation's benchmark and run (``""`` for a verification).
        registry: a verification's registry (an evaluation's comes from its benchmark).
        endpoint_url: the S3-compatible endpoint of the ``s3://`` inputs, as
            the sender reached them (a worker uses its own when it has
            one: :func:`with_endpoint`).
        etags: the versions checked.
    """

    benchmark: str = ""
    run: str = ""
    registry: str = ""
    endpoint_url: str | None = None
    etags: tuple[tuple[str, str], ...] = ()


class CheckedRegistry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The registry a job checked (ECEB-0.1 §5), as its first step found it.

    Fields:
        location: where it is (``s3://bucket/key``, or a path every worker sees).
        etag: the version checked (``""`` for a local file).
        corpus_root: its corpus root, 64 lowercase hex characters.
        artifact_count: how many artifacts it lists.
        rehash_shards: how many re-hash shards were planned over it.
    """

    location: str
    etag: str = ""
    corpus_root: str
    artifact_count: Count
    rehash_shards: Count


class MakingOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a made run's job (``eceb-dist run``) carries besides its inputs.

    Fields:
        profile: the run profile, as the submitter checked it.
        profile_dir: the profile's directory, absolute: relative paths in
            the profile (a context system's or a command judge's program, an
            ``api_key_file``) are taken from it, on every worker.
        rubric: an LLM judge's rubric text (bound by the profile's digest;
            ``""`` for a command judge).
        journal_id: the journal of paid calls (32 hex characters): the
            job's own id, or, resuming, the journal of the job it goes on with.
        shard_executions: executions per shard (one task each).
        rerun_unknown: send again calls whose outcome is unknown.
        benchmark_digest: BLAKE3 of the benchmark's bytes (set by the first step).
        executions: the plan's size (set by the first step).
    """

    profile: RunProfile
    profile_dir: str
    rubric: str = ""
    journal_id: str
    shard_executions: Positive
    rerun_unknown: bool = False
    benchmark_digest: str = ""
    executions: Count = 0


class RegistrationOptions(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a registration's job (``eceb-dist register``) carries besides
    its corpus and output.

    Fields:
        rules: the rules file, as the submitter read and checked it.
        rules_name: how problems name the rules file (its path as given).
        listing_shards: listing shards planned (set by the first step).
        hash_shards: hash shards planned (set once the listing is reduced).
        artifact_count: the files the listing classified, each an
            artifact once hashed (set with ``hash_shards``).
        previous: an incremental registration's previous registry (``""``:
            every object is hashed).
        previous_listing: its listing snapshot, when one is beside it and
            bound to it (set by the first step; ``""``: not used).
        previous_etags: the versions of both, as the first step read them.
        settled: a local file's status-change time before which its
            snapshot entry may be reused (ns since the epoch;
            :func:`~eceb_worker.corpus.incremental.settled_before`).
        listed_at: when the listing started (set by the first step): the
            new snapshot's ``listed_at``.
        listing_partials: the listing shards' partials, in shard order (set
            with ``hash_shards``): the new snapshot is merged from them.
    """

    rules: RulesFile
    rules_name: str
    listing_shards: Count = 0
    hash_shards: Count = 0
    artifact_count: Count = 0
    previous: str = ""
    previous_listing: str = ""
    previous_etags: tuple[tuple[str, str], ...] = ()
    settled: int = 0
    listed_at: datetime | None = None
    listing_partials: tuple[str, ...] = ()


class JobMessage(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A job: what it was asked to do, and (after its first step) the
    registry it checked.

    Fields:
        version: the message's version, :data:`JOB_MESSAGE_VERSION`
            (:func:`job_message` reads a version 1 message too).
        job_id: its id (32 hex characters on a cluster; ``""`` in one process).
        kind: what it produces (an evaluation when left out, as a client
            older than verification jobs sends it).
        inputs: where its inputs are.
        corpus: where the corpus is.
        out: where a cluster job writes its report (``s3://bucket/key``), ``""`` for none.
        shard_bytes: re-hash work per shard, in byte-equivalents.
        evaluation: an evaluation's options (the defaults for a verification).
        registry: the registry checked, set by the first step.
        making: a made run's options (``None`` for any other job).
        registration: a registration's options (``None`` for any other job).
    """

    version: int = JOB_MESSAGE_VERSION
    job_id: str = ""
    kind: JobKind = JobKind.EVALUATE
    inputs: JobInputs
    corpus: StorageSpec
    out: str = ""
    shard_bytes: Positive
    evaluation: EvaluationOptions = EvaluationOptions()
    registry: CheckedRegistry | None = None
    making: MakingOptions | None = None
    registration: RegistrationOptions | None = None


class RehashTask(msgspec.Struct, frozen=True, kw_only=True, tag="rehash", forbid_unknown_fields=True):
    """Re-hash one shard (ECEB-0.1 §5).

    Its artifacts come with it when the sender holds the registry (``eceb
    corpus verify``, ``eceb evaluate``: ids, paths, digests and sizes, no
    corpus byte),
    else by reference: its lines of the registry, a byte range the worker
    reads and decodes (a cluster job, whose coordinator holds no artifact).

    Fields:
        corpus: where the corpus is.
        registry: the registry checked (its location and version).
        endpoint_url: the endpoint of an ``s3://`` registry.
        shard: the shard: its artifact range, byte range, first path and count.
        artifacts: the shard's artifacts, or ``()`` to read them from the registry.
        job_id: the cluster job it belongs to (``""`` in one process).
        disclosure: an evaluation's disclosure check (ECEB-0.1 §17): when
            on, the bytes read are scanned for the answers' text as they
            are re-hashed (off when left out).
        inputs: where the evaluation's benchmark and run are, read by a
            worker to build what it scans for (``None``: the sender lends it).
    """

    corpus: StorageSpec
    registry: CheckedRegistry
    endpoint_url: str | None = None
    shard: RehashShard
    artifacts: tuple[ExpectedArtifact, ...] = ()
    job_id: str = ""
    disclosure: DisclosureCheck = DISCLOSURE_OFF
    inputs: JobInputs | None = None


class EvaluateTask(msgspec.Struct, frozen=True, kw_only=True, tag="evaluate", forbid_unknown_fields=True):
    """Evaluate a range of the run's tasks (ECEB-0.1 §8-§14).

    Fields:
        inputs: the job's inputs and their versions.
        registry: the registry checked (read for the artifacts the run refers to).
        shard: the range ``start..end`` of the sorted task ids.
        job_id: the cluster job it belongs to (``""`` in one process).
        evaluation: the job's options (:attr:`JobMessage.evaluation`; the
            defaults with the disclosure check off when left out).
        disclosures: with the check on, the findings of the answers of the
            shard's tasks that disclose something (ids and offsets, found
            by the re-hash's scan; an answer left out discloses nothing).
    """

    inputs: JobInputs
    registry: CheckedRegistry
    shard: EvaluationShard
    job_id: str = ""
    evaluation: EvaluationOptions = EvaluationOptions(disclosure_check=DISCLOSURE_OFF)
    disclosures: tuple[AnswerFindings, ...] = ()

    @classmethod
    def of(
        cls,
        job: JobMessage,
        registry: CheckedRegistry,
        shard: EvaluationShard,
        disclosures: tuple[AnswerFindings, ...] = (),
    ) -> EvaluateTask:
        """The task of evaluation shard ``shard`` of ``job``, whose registry
        checked is ``registry``, with the ``disclosures`` of its tasks' answers."""
        return cls(
            inputs=job.inputs,
            registry=registry,
            shard=shard,
            job_id=job.job_id,
            evaluation=job.evaluation,
            disclosures=disclosures,
        )


class HashTask(msgspec.Struct, frozen=True, kw_only=True, tag="hash", forbid_unknown_fields=True):
    """Hash a batch of a corpus's files (registering it, ECEB-0.1 §5).

    Fields:
        corpus: where the corpus is.
        index: the batch's position in its plan.
        paths: the files' corpus-relative paths.
    """

    corpus: StorageSpec
    index: Count
    paths: list[str]


class MakeTask(msgspec.Struct, frozen=True, kw_only=True, tag="make", forbid_unknown_fields=True):
    """Make executions ``start..end`` of a run's plan (ECEB-0.1 §7, §8):
    answer and judge each, every paid call through the job's journal.

    Fields:
        job_id: the cluster job it belongs to.
        index: the shard's position in its plan.
        start, end: the executions' positions in the plan.
        inputs: the benchmark and its registry, and their versions checked.
        corpus: where the corpus is.
        out: where the run goes (``s3://bucket/key``): the shard's partial
            is written beside it.
        making: the job's making options.
        corpus_root: the registry's corpus root, as the first step checked it.
    """

    job_id: str
    index: Count
    start: Count
    end: Count
    inputs: JobInputs
    corpus: StorageSpec
    out: str
    making: MakingOptions
    corpus_root: str


class ListTask(msgspec.Struct, frozen=True, kw_only=True, tag="list", forbid_unknown_fields=True):
    """List one key range of a corpus being registered, check and classify
    its files, and write them as a partial beside the registry
    (:func:`~eceb_worker.pipeline.register_job.list_shard`).

    Fields:
        job_id: the cluster job it belongs to.
        corpus: where the corpus is (``s3://bucket/prefix``).
        out: where the registry goes: the partial is written beside it.
        shard: its key range.
        registration: the job's rules.
        shard_bytes: the hash work per shard, in byte-equivalents (the
            partial's pieces are an eighth of it).
    """

    job_id: str
    corpus: StorageSpec
    out: str
    shard: ListingShard
    registration: RegistrationOptions
    shard_bytes: Positive


class HashRangeTask(msgspec.Struct, frozen=True, kw_only=True, tag="hash_range", forbid_unknown_fields=True):
    """Hash a range of a listing partial's files (registering a corpus on
    a cluster) and write their registry lines as a partial
    (:func:`~eceb_worker.pipeline.register_job.hash_shard`).

    Fields:
        job_id: the cluster job it belongs to.
        corpus: where the corpus is.
        out: where the registry goes: the partial is written beside it.
        range: the rows it hashes.
    """

    job_id: str
    corpus: StorageSpec
    out: str
    range: HashRange


ShardTask = RehashTask | EvaluateTask | HashTask | MakeTask | ListTask | HashRangeTask
"""What an executor runs: one shard of a map step."""


class RehashAnswer(msgspec.Struct, frozen=True, kw_only=True, tag="rehash"):
    """A re-hash shard's counts and findings, and its disclosure scan's
    partial result (ids, offsets and counts; ``None`` when it scanned nothing)."""

    index: Count
    verification: ShardVerification
    disclosure: DisclosurePartial | None = None


class EvaluateAnswer(msgspec.Struct, frozen=True, kw_only=True, tag="evaluate"):
    """An evaluation shard's outcome for each of its tasks."""

    index: Count
    outcomes: list[TaskOutcome]


class HashAnswer(msgspec.Struct, frozen=True, kw_only=True, tag="hash"):
    """What hashing a batch found for each of its paths, in order."""

    index: Count
    outcomes: list[HashOutcome]


class ShardFailed(msgspec.Struct, frozen=True, kw_only=True, tag="failed"):
    """A shard that did not complete (after its retries, on a cluster).

    Fields:
        index: the shard.
        kind: why.
        message: what failed, naming the shard (``re-hash shard 3: ...``).
    """

    index: Count
    kind: ErrorKind
    message: str


class MakeAnswer(msgspec.Struct, frozen=True, kw_only=True, tag="make"):
    """What an execution shard made.

    Fields:
        index: the shard.
        partial: where its executions' records are (``s3://``; JSON Lines,
            one per execution, in plan order).
        made, failed: executions answered and judged; failed finally.
        unknown: the first calls refused because their outcome is unknown
            (at most 16), ``unknown_count`` all of them.
        spent_micro_usd: what its calls made now cost.
    """

    index: Count
    partial: str
    made: Count
    failed: Count
    unknown: tuple[str, ...] = ()
    unknown_count: Count = 0
    spent_micro_usd: Count = 0


class ListAnswer(msgspec.Struct, frozen=True, kw_only=True, tag="list"):
    """What a listing shard found.

    Fields:
        index: the shard.
        partial: where its rows are (``s3://``; ``""`` when it has none).
        listed: the objects it listed (folder markers left out).
        rows: the files it classified (its partial's lines).
        size_bytes: their listed sizes.
        pieces: its partial cut in pieces, in order (the hash plan's units).
        tally: the problems it found (bounded).
    """

    index: Count
    partial: str = ""
    listed: Count = 0
    rows: Count = 0
    size_bytes: Count = 0
    pieces: tuple[Piece, ...] = ()
    tally: ListingTally = ListingTally()


class HashRangeAnswer(msgspec.Struct, frozen=True, kw_only=True, tag="hash_range"):
    """What a hash shard registered.

    Fields:
        index: the shard.
        listing: the listing shard whose rows it hashed.
        partial: where its registry lines are (``s3://``; ``""`` for none).
        artifacts: its registry lines; ``size_bytes``: their sizes.
        bytes_hashed: the bytes it read (a reused digest reads none).
        problems: its first files that could not be read, by path (at most
            :data:`~eceb_worker.corpus.registration.LISTED_PROBLEMS`);
            ``problem_count``: all of them.
        reused: its artifacts whose digest was taken from the previous
            registry (an incremental registration: their objects not read).
    """

    index: Count
    listing: Count
    partial: str = ""
    artifacts: Count = 0
    size_bytes: Count = 0
    bytes_hashed: Count = 0
    problems: tuple[PathProblem, ...] = ()
    problem_count: Count = 0
    reused: Count = 0


ShardAnswer = RehashAnswer | EvaluateAnswer | HashAnswer | MakeAnswer | ListAnswer | HashRangeAnswer | ShardFailed
"""What a shard task answers."""


def shard_index(task: ShardTask) -> int:
    """The task's position in its plan."""
    if isinstance(task, (HashTask, MakeTask)):
        return task.index
    if isinstance(task, HashRangeTask):
        return task.range.index
    return task.shard.index


def stage_of(task: ShardTask) -> Stage:
    """The map step ``task`` belongs to."""
    if isinstance(task, RehashTask):
        return Stage.REHASH
    if isinstance(task, EvaluateTask):
        return Stage.EVALUATE
    if isinstance(task, MakeTask):
        return Stage.MAKE
    if isinstance(task, ListTask):
        return Stage.LIST
    return Stage.HASH


_VERSION_1_OPTIONS: Final = ("disclosure_check", "uncertainty", "shard_observations")
"""The fields of a version 1 job message (and of its evaluation shards)
that version 2 carries as :class:`~eceb_worker.families.eceb.options.EvaluationOptions`."""


def _upgraded(message: dict[str, Any]) -> dict[str, Any]:
    """A version 1 message's builtins with its evaluation options moved
    into ``evaluation`` (a version 1 evaluation shard, which had no
    ``shard_observations``, gets the default: its shard is planned already)."""
    upgraded = {key: value for key, value in message.items() if key not in _VERSION_1_OPTIONS}
    upgraded["evaluation"] = {key: message[key] for key in _VERSION_1_OPTIONS if key in message}
    return upgraded


def job_message(message: object) -> JobMessage:
    """The :class:`JobMessage` of ``message``, a job message's builtins as
    a broker carries them (:func:`msgspec.to_builtins`), sent by this eceb
    (version 2) or by the previous one (version 1, no ``version`` field:
    its evaluation options are read into :attr:`JobMessage.evaluation`).

    Raises ``msgspec.ValidationError`` naming the field when ``message`` is
    not a job message, or is of a version this eceb does not read (a newer one)."""
    if isinstance(message, dict):
        version = message.get("version", 1)
        if version == 1 and type(version) is int:
            message = _upgraded({key: value for key, value in message.items() if key != "version"})
        elif version != JOB_MESSAGE_VERSION or type(version) is not int:
            read = f"this eceb reads versions 1 and {JOB_MESSAGE_VERSION}"
            raise msgspec.ValidationError(f"job message version {version!r}: {read} - at `$.version`")
    return msgspec.convert(message, JobMessage)


def shard_task(message: object) -> ShardTask:
    """The :data:`ShardTask` of ``message``, a shard task's builtins as a
    broker carries them; an evaluation shard sent by the previous eceb
    (its options as separate fields, :func:`job_message`) is read too.
    Raises ``msgspec.ValidationError`` naming the field otherwise."""
    if isinstance(message, dict) and message.get("type") == "evaluate" and "evaluation" not in message:
        message = _upgraded({"disclosure_check": msgspec.to_builtins(DISCLOSURE_OFF), **message})
    task: ShardTask = msgspec.convert(message, ShardTask)
    return task


Routed = TypeVar(
    "Routed", bound=JobMessage | RehashTask | EvaluateTask | HashTask | MakeTask | ListTask | HashRangeTask
)


def with_endpoint(message: Routed, endpoint_url: str | None) -> Routed:
    """``message`` with every S3 endpoint it carries (its inputs', its
    corpus's, its registry's) replaced by ``endpoint_url``: a worker reaches
    storage through its own endpoint, not the one its sender used. The
    message unchanged when ``endpoint_url`` is None (a worker configured
    with none uses the sender's)."""
    if endpoint_url is None:
        return message
    replace = msgspec.structs.replace
    if isinstance(message, JobMessage):
        return replace(
            message,
            inputs=replace(message.inputs, endpoint_url=endpoint_url),
            corpus=replace(message.corpus, endpoint_url=endpoint_url),
        )
    if isinstance(message, RehashTask):
        inputs = None if message.inputs is None else replace(message.inputs, endpoint_url=endpoint_url)
        return replace(
            message, corpus=replace(message.corpus, endpoint_url=endpoint_url), endpoint_url=endpoint_url, inputs=inputs
        )
    if isinstance(message, EvaluateTask):
        return replace(message, inputs=replace(message.inputs, endpoint_url=endpoint_url))
    if isinstance(message, MakeTask):
        return replace(
            message,
            inputs=replace(message.inputs, endpoint_url=endpoint_url),
            corpus=replace(message.corpus, endpoint_url=endpoint_url),
        )
    return replace(message, corpus=replace(message.corpus, endpoint_url=endpoint_url))
