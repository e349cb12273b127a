"""Every exception eceb raises on purpose, under one root.

Hierarchy::

    EcebError                    root; never raised itself
    ├── InputError               bad input; carries every Problem found in it
    ├── VerificationError        the corpus does not match its registry (ECEB-0.1 §5)
    ├── OutputError              an output file cannot be written (nothing was)
    ├── ExecutionRefused         a paid execution may not start: not authorized, its
    │   │                        count used up, spending stopped, awaiting approval,
    │   │                        or already started (nothing runs twice)
    │   └── OutcomeUnknown       its last attempt's outcome is unknown (the process
    │                            sending it stopped): sent again only when allowed
    ├── PublicationRefused       a publication bundle does not verify, or its claim
    │                            class is not supported by its evidence (ECEB-0.1 §15-§16)
    ├── ProviderError            a model provider, judge or context system failed
    │                            (``eceb run``): transient (worth another attempt) or final
    └── StorageError             a storage backend failed as a whole (unreachable,
                                 refused, missing bucket): nothing was judged
        ├── ShardFailedError     a shard of a distributed job did not complete
        │   │                    (failed after its retries, or never answered):
        │   │                    final, never retried
        │   └── ShardLostError   delivered too often: the worker process
        │                        running it died each time
        ├── NoSuchBucketError    the bucket does not exist: final, never retried
        └── ArtifactReadError    one artifact could not be read
            ├── ArtifactMissing         no object at the artifact's path
            ├── ArtifactOutsideCorpus   the path resolves outside the corpus directory
            └── ArtifactUnreadable      the object exists but its bytes cannot be read

The CLI maps each class to an exit code (``eceb_cli.exit_codes``); a
cluster job records the kind of error that ended it
(:class:`ErrorKind`). Messages
never contain credentials: storage locations are always given in their
redacted form.
"""

from __future__ import annotations

import enum
from typing import Final

import msgspec

__all__ = [
    "ArtifactMissing",
    "ArtifactOutsideCorpus",
    "ArtifactReadError",
    "ArtifactUnreadable",
    "EcebError",
    "ErrorKind",
    "ExecutionRefused",
    "InputError",
    "NoSuchBucketError",
    "OutcomeUnknown",
    "OutputError",
    "Problem",
    "ProviderError",
    "PublicationRefused",
    "ShardFailedError",
    "ShardLostError",
    "StorageError",
    "VerificationError",
]


class Problem(msgspec.Struct, frozen=True, kw_only=True, order=True):
    """One defect of one input, located as precisely as the input allows.

    Fields:
        file: the input's name as the user gave it (path or URL, redacted).
        record: where in the file, e.g. ``"line 12"`` or ``"tasks[3]"``; ``""``
            when the problem concerns the whole file.
        field: the field inside the record, e.g. ``"path"``; ``""`` when the
            problem concerns the whole record.
        message: what is wrong, in plain words.
    """

    file: str
    record: str = ""
    field: str = ""
    message: str

    def __str__(self) -> str:
        where = ", ".join(part for part in (self.file, self.record) if part)
        field = f" field {self.field!r}:" if self.field else ""
        return f"{where}:{field} {self.message}"


class EcebError(Exception):
    """Root of every error eceb raises on purpose."""


class InputError(EcebError):
    """An input file is malformed or inconsistent.

    ``problems`` holds every problem found in the input, in input order, so
    that one run reports all of them together. Raised before any output is
    written.
    """

    def __init__(self, problems: list[Problem]) -> None:
        if not problems:
            raise ValueError("InputError needs at least one problem")
        self.problems = list(problems)
        first = self.problems[0]
        more = len(self.problems) - 1
        suffix = f" (and {more} more problem{'s' if more != 1 else ''})" if more else ""
        super().__init__(f"{first}{suffix}")


class VerificationError(EcebError):
    """The corpus differs from its registry: missing, stale, unreadable or
    escaping artifacts (ECEB-0.1 §5). ``report`` is the full verification
    report (an ``eceb_worker.corpus.verification.VerificationReport``).
    """

    def __init__(self, message: str, report: object) -> None:
        super().__init__(message)
        self.report = report


class OutputError(EcebError):
    """An output file cannot be written: its directory is missing or not
    writable, it is one of the command's inputs, or the write failed. No
    partial file is left under its name."""


class ExecutionRefused(EcebError):
    """A paid execution of the paired benchmark may not start (its ledger,
    :mod:`eceb_worker.io.paired.ledger`, says why): nothing was spawned."""


class ProviderError(EcebError):
    """A model provider, a judge or a context system failed one call
    (``eceb run``). The message names the party and the HTTP status or
    process outcome, never a credential nor prompt or context text.

    Attributes:
        party: who failed, e.g. ``"openai"``, ``"context system"``, ``"judge"``.
        transient: another attempt may succeed (HTTP 408, 409, 429, 5xx, a
            timeout, a connection lost); a final failure (an authentication
            refused, a request the provider rejects) is not retried.
        retry_after_s: the wait the provider asked for (``Retry-After``), if any.
        maybe_billed: the provider may have billed the failed attempt (the
            request was sent whole and no answer was read: a timeout, a
            connection lost after the request, a 5xx); counted as an
            auxiliary cost when retried (ECEB-0.1 §8).
        status: the HTTP status, when there was one.
        fatal: no further call to this party can succeed (an authentication
            or permission refusal, a context system that exited): the run stops.
    """

    def __init__(
        self,
        message: str,
        *,
        party: str,
        transient: bool,
        retry_after_s: float | None = None,
        maybe_billed: bool = False,
        status: int | None = None,
        fatal: bool = False,
    ) -> None:
        super().__init__(message)
        self.party = party
        self.transient = transient
        self.retry_after_s = retry_after_s
        self.maybe_billed = maybe_billed
        self.status = status
        self.fatal = fatal


class OutcomeUnknown(ExecutionRefused):
    """A paid call of ``eceb run`` whose last attempt has no recorded outcome:
    the process sending it stopped during it, so the provider may have billed
    it. It is sent again only when the user allows it (``--rerun-unknown``)."""


class PublicationRefused(EcebError):
    """A publication bundle (``eceb publish``) is refused: a bound file is
    missing, changed or not bound, the manifest or the report is not what
    the bundled files make, or the claim class is not supported by the
    evidence (ECEB-0.1 §15, §16). ``problems`` holds every reason, each
    naming its file (and record and field where there is one)."""

    def __init__(self, problems: list[Problem]) -> None:
        if not problems:
            raise ValueError("PublicationRefused needs at least one problem")
        self.problems = list(problems)
        more = len(self.problems) - 1
        suffix = f" (and {more} more reason{'s' if more != 1 else ''})" if more else ""
        super().__init__(f"{self.problems[0]}{suffix}")


class StorageError(EcebError):
    """A storage backend failed as a whole; no artifact was judged by it."""


class ShardFailedError(StorageError):
    """A shard of a distributed job did not complete: it failed after its
    retries, or the job's answers do not cover its plan. Final: never retried."""


class ShardLostError(ShardFailedError):
    """A task of a distributed job was delivered more often than
    ``ECEB_MAX_DELIVERIES``: the worker process running it died each time
    (see :mod:`eceb_worker.cluster.deliveries`)."""


class NoSuchBucketError(StorageError):
    """The storage answered that the bucket does not exist (``NoSuchBucket``):
    asking again cannot help. Final: never retried."""


class ArtifactReadError(StorageError):
    """One artifact could not be read. ``path`` is its corpus-relative path."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path
        self.detail = detail


class ArtifactMissing(ArtifactReadError):
    """No file or object exists at the artifact's path."""


class ArtifactOutsideCorpus(ArtifactReadError):
    """The artifact's path resolves (through a symbolic link) outside the corpus."""


class ArtifactUnreadable(ArtifactReadError):
    """The artifact exists but its bytes could not be read (permissions, I/O
    error, not a regular file).
    """


class ErrorKind(enum.Enum):
    """Why a job failed, as its state records it; each has its exit code
    (``eceb_cli.exit_codes``)."""

    INPUT = "input"
    VERIFICATION = "verification"
    STORAGE = "storage"
    OUTPUT = "output"
    REFUSED = "refused"
    PUBLICATION = "publication"
    PROVIDER = "provider"
    INTERNAL = "internal"

    @classmethod
    def of(cls, error: BaseException) -> ErrorKind:
        """The kind of ``error`` (an eceb error by its class; anything else is internal)."""
        for kind, error_type in _ERROR_TYPES:
            if isinstance(error, error_type):
                return kind
        return cls.INTERNAL


_ERROR_TYPES: Final[tuple[tuple[ErrorKind, type[EcebError]], ...]] = (
    (ErrorKind.INPUT, InputError),
    (ErrorKind.VERIFICATION, VerificationError),
    (ErrorKind.OUTPUT, OutputError),
    (ErrorKind.REFUSED, ExecutionRefused),
    (ErrorKind.PUBLICATION, PublicationRefused),
    (ErrorKind.PROVIDER, ProviderError),
    (ErrorKind.STORAGE, StorageError),
)
