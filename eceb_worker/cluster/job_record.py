"""A job's state as Redis holds it, decoded once: the :class:`Phase` a job
stands in, and :class:`JobRecord`, every field ``eceb-dist`` reads, typed
(:func:`decode_job`, the one place a record is decoded; its writer is
:class:`~eceb_worker.cluster.state.JobStore`).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from eceb_worker.corpus.verification import VerificationReport
from eceb_worker.errors import Problem, StorageError
from eceb_worker.pipeline.messages import JobKind, Stage

__all__ = ["TERMINAL_PHASES", "JobRecord", "Phase", "decode_job", "job_key"]


class Phase(enum.Enum):
    """Where a job stands (the ``phase`` field of its state)."""

    QUEUED = "queued"
    LOADING = "loading"
    VERIFYING = "verifying"
    EVALUATING = "evaluating"
    MAKING = "making"
    LISTING = "listing"
    HASHING = "hashing"
    WRITING = "writing"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @classmethod
    def of_stage(cls, stage: Stage) -> Phase:
        """The phase of a job running ``stage``."""
        if stage is Stage.MAKE:
            return cls.MAKING
        if stage is Stage.LIST:
            return cls.LISTING
        if stage is Stage.HASH:
            return cls.HASHING
        return cls.EVALUATING if stage is Stage.EVALUATE else cls.VERIFYING

    @property
    def ended(self) -> bool:
        """True for a phase of a job that has ended (done, failed, cancelled)."""
        return self.value in TERMINAL_PHASES


TERMINAL_PHASES: Final = frozenset(phase.value for phase in (Phase.DONE, Phase.FAILED, Phase.CANCELLED))


def job_key(job_id: str) -> str:
    """The Redis hash holding a job's state."""
    return f"eceb:job:{job_id}"


class JobRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A job's state as :class:`JobStore` stores it, decoded once
    (:func:`decode_job`): every field ``eceb-dist`` reads, typed.

    Fields:
        job_id: the job's id (its key, ``eceb:job:<id>``).
        phase: where it stands.
        kind: what it produces (``evaluate`` when not recorded).
        benchmark, run: an evaluation's inputs as submitted (``""`` otherwise).
        registry: a verification's registry as submitted (``""`` otherwise).
        corpus, out: its corpus and where its report goes (``""`` when none).
        coordinator: the task id of its first step (``""`` until queued).
        created, updated, ended: Unix seconds when it was submitted, last
            changed and ended (None when not recorded).
        rehash_done, eval_done: shards done of each stage.
        rehash_total, eval_total: shards planned of each stage (None until planned).
        passing_tasks, total_tasks: an evaluation's outcome once done.
        verified: a verification's outcome once done (None before).
        error_kind, error: why it failed, as recorded (an
            :class:`~eceb_worker.errors.ErrorKind` value, or one of another
            version of eceb), None unless it failed.
        problems: an input error's problems, None when none were recorded.
        verification: the verification report it recorded (a verification
            once done, or an evaluation whose corpus did not verify);
            ``verification_json``: the same report, the bytes recorded.
        report_digest: BLAKE3 of the report it wrote (None before); a
            made run's: of its run file.
        journal: a made run's journal of paid calls (its id; ``""`` otherwise).
        make_done, make_total: a made run's execution shards done and planned.
        executions, observations: a made run's plan size and, once done,
            the observations its run holds.
        spent_micro_usd, possible_micro_usd: a made run's spend once done:
            known, and possible beyond it (upper bounds of calls of unknown outcome).
        rules: a registration's rules file, as submitted (``""`` otherwise).
        list_done, list_total, hash_done, hash_total: a registration's
            listing and hash shards done and planned.
        artifact_count, registered_bytes, corpus_root: a registration's
            registry once done: its artifacts, their bytes, its corpus root.
        reused: a registration's artifacts whose digest a previous
            registry gave (``--previous``), once done.
    """

    job_id: str
    phase: Phase
    kind: JobKind = JobKind.EVALUATE
    benchmark: str = ""
    run: str = ""
    registry: str = ""
    corpus: str = ""
    out: str = ""
    coordinator: str = ""
    created: int | None = None
    updated: int | None = None
    ended: int | None = None
    rehash_done: int = 0
    eval_done: int = 0
    rehash_total: int | None = None
    eval_total: int | None = None
    passing_tasks: int | None = None
    total_tasks: int | None = None
    verified: bool | None = None
    error_kind: str | None = None
    error: str | None = None
    problems: tuple[Problem, ...] | None = None
    verification: VerificationReport | None = None
    verification_json: str | None = None
    report_digest: str | None = None
    journal: str = ""
    make_done: int = 0
    make_total: int | None = None
    executions: int | None = None
    observations: int | None = None
    spent_micro_usd: int | None = None
    possible_micro_usd: int | None = None
    rules: str = ""
    list_done: int = 0
    list_total: int | None = None
    hash_done: int = 0
    hash_total: int | None = None
    artifact_count: int | None = None
    registered_bytes: int | None = None
    reused: int | None = None
    corpus_root: str | None = None

    @property
    def is_verification(self) -> bool:
        """True for a job of ``eceb-dist verify``."""
        return self.kind is JobKind.VERIFY

    @property
    def shards(self) -> tuple[int, int]:
        """Shards done and planned so far, every stage together (a stage not yet planned counts none)."""
        done = self.rehash_done + self.eval_done + self.make_done + self.list_done + self.hash_done
        totals = (self.rehash_total, self.eval_total, self.make_total, self.list_total, self.hash_total)
        return done, sum(total or 0 for total in totals)


_INTEGER: Final = re.compile(r"-?[0-9]+")
_TEXTS: Final = ("benchmark", "run", "registry", "corpus", "out", "coordinator", "journal", "rules")
_OPTIONAL_TEXTS: Final = ("error_kind", "error", "report_digest", "corpus_root")
_INTEGERS: Final = (
    "created",
    "updated",
    "ended",
    "rehash_total",
    "eval_total",
    "passing_tasks",
    "total_tasks",
    "rehash_done",
    "eval_done",
    "make_done",
    "make_total",
    "executions",
    "observations",
    "spent_micro_usd",
    "possible_micro_usd",
    "list_done",
    "list_total",
    "hash_done",
    "hash_total",
    "artifact_count",
    "registered_bytes",
    "reused",
)


def decode_job(job_id: str, fields: Mapping[str, str]) -> JobRecord:
    """The :class:`JobRecord` of job ``job_id`` from ``fields``, its hash's
    strings (the counts of shards done among them); fields of other
    versions of eceb are ignored. Raises ``StorageError`` naming the job and
    every malformed field (never a value): a phase or kind this version does
    not know, a count or time that is not an integer, ``problems`` or
    ``verification`` that does not decode, a finished verification without
    its report."""
    bad: list[str] = []
    values: dict[str, Any] = {"job_id": job_id}
    _read_enums(fields, values, bad)
    values.update((name, fields[name]) for name in (*_TEXTS, *_OPTIONAL_TEXTS) if name in fields)
    _read_integers(fields, values, bad)
    _read_documents(fields, values, bad)
    if bad:
        raise StorageError(
            f"the state of job {job_id} in the result backend ({job_key(job_id)}) is malformed: "
            + "; ".join(f"field {text}" for text in bad)
        )
    return JobRecord(**values)


def _read_enums(fields: Mapping[str, str], values: dict[str, Any], bad: list[str]) -> None:
    """``phase`` (always) and ``kind`` (when present) into ``values``, or why not into ``bad``."""
    try:
        values["phase"] = Phase(fields.get("phase", ""))
    except ValueError:
        bad.append("'phase' is not a phase of a job")
    if "kind" in fields:
        try:
            values["kind"] = JobKind(fields["kind"])
        except ValueError:
            bad.append("'kind' is not a kind of job")


def _read_integers(fields: Mapping[str, str], values: dict[str, Any], bad: list[str]) -> None:
    """The counts and times, and ``verified`` (``1`` true), into ``values``, or why not into ``bad``."""
    for name in (*_INTEGERS, "verified"):
        if name not in fields:
            continue
        if not _INTEGER.fullmatch(fields[name]):
            bad.append(f"{name!r} is not an integer")
        elif name == "verified":
            values[name] = int(fields[name]) == 1
        else:
            values[name] = int(fields[name])


def _read_documents(fields: Mapping[str, str], values: dict[str, Any], bad: list[str]) -> None:
    """``problems`` and ``verification`` (JSON) into ``values``, or why not into ``bad``."""
    if fields.get("problems"):
        try:
            values["problems"] = tuple(msgspec.json.decode(fields["problems"], type=list[Problem]))
        except msgspec.DecodeError:
            bad.append("'problems' is not a JSON list of problems")
    if fields.get("verification"):
        try:
            values["verification"] = msgspec.json.decode(fields["verification"], type=VerificationReport)
            values["verification_json"] = fields["verification"]
        except msgspec.DecodeError:
            bad.append("'verification' is not a verification report")
    elif values.get("phase") is Phase.DONE and values.get("kind") is JobKind.VERIFY:
        bad.append("'verification' is missing (a finished verification records its report)")
