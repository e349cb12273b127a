"""Exit codes of the ``eceb`` and ``eceb-dist`` commands, in one place
(documented in README.md, "Exit codes").

======  ==========================================================
code    meaning
======  ==========================================================
0       success: the corpus verified / all tasks pass
1       evaluated, with failing tasks (``eceb evaluate``); an attempt of
        the pair not completed (``eceb pair run``); no verdict (``eceb pair summary``)
2       usage error: unknown option, missing argument, a bad setting (click)
3       bad input: a registry, rules, benchmark or run file is invalid
4       corpus verification failed: missing, stale, unreadable or
        escaping artifacts
5       storage unavailable: the corpus could not be read at all;
        (eceb-dist) an unreachable broker, a shard the cluster could not
        complete, a report gone or replaced since its job wrote it
6       output cannot be written: missing or unwritable directory, or one
        of the inputs (checked before the work starts)
7       no such job (``eceb-dist``: unknown or expired job id)
8       the job was cancelled (``eceb-dist wait`` / ``result``)
9       a paid execution refused (``eceb pair``): not authorized, count used
        up, spending stopped, approval missing, or already started
10      a regression (``eceb compare``, ``eceb-dist nightly``): the new
        report is worse than the old one beyond the given thresholds
11      publication refused (``eceb publish``): the bundle does not verify
        (a bound file missing, changed or not bound; the manifest or the
        report not what the bundled files make), or the claim class is not
        supported by the evidence
12      a provider failed (``eceb run``): a model, judge or context system
        refused the credentials, or could not be reached or answered out of
        protocol beyond the retries; the journal keeps what was made
        (``--resume`` goes on)
70      internal error (a bug: please report it)
75      the job has not finished yet (``eceb-dist wait --timeout`` passed,
        ``eceb-dist result`` asked too early); try again later
130     interrupted (Ctrl-C); 143: terminated (SIGTERM); ``eceb pair run``:
        the running attempt cancelled, its journal complete
======  ==========================================================

:func:`for_error` and :func:`for_kind` are the one mapping from eceb's
errors (:mod:`eceb_worker.errors`), raised here or recorded by a cluster
job, to these codes.
"""

from __future__ import annotations

from typing import Final

from eceb_worker.errors import EcebError, ErrorKind

__all__ = [
    "BAD_INPUT",
    "INTERNAL",
    "HANGUP",
    "INTERRUPTED",
    "EXECUTION_REFUSED",
    "JOB_CANCELLED",
    "JOB_NOT_FINISHED",
    "NO_SUCH_JOB",
    "OK",
    "OUTPUT",
    "PROVIDER_FAILED",
    "PUBLICATION_REFUSED",
    "REGRESSION",
    "SHORT",
    "STORAGE",
    "TASKS_FAILED",
    "TERMINATED",
    "USAGE",
    "VERIFICATION_FAILED",
    "for_error",
    "for_kind",
]

OK: Final = 0
TASKS_FAILED: Final = 1
USAGE: Final = 2
BAD_INPUT: Final = 3
VERIFICATION_FAILED: Final = 4
STORAGE: Final = 5
OUTPUT: Final = 6
NO_SUCH_JOB: Final = 7
JOB_CANCELLED: Final = 8
EXECUTION_REFUSED: Final = 9
REGRESSION: Final = 10
PUBLICATION_REFUSED: Final = 11
PROVIDER_FAILED: Final = 12
JOB_NOT_FINISHED: Final = 75
INTERNAL: Final = 70
HANGUP: Final = 129
INTERRUPTED: Final = 130
TERMINATED: Final = 143

SHORT: Final[dict[int, str]] = {
    OK: "success",
    TASKS_FAILED: "failing tasks or no verdict",
    USAGE: "usage error",
    BAD_INPUT: "bad input",
    VERIFICATION_FAILED: "corpus verification failed",
    STORAGE: "storage unavailable",
    OUTPUT: "output cannot be written",
    NO_SUCH_JOB: "no such job",
    JOB_CANCELLED: "job cancelled",
    EXECUTION_REFUSED: "paid execution refused",
    REGRESSION: "regression",
    PUBLICATION_REFUSED: "publication refused",
    PROVIDER_FAILED: "provider failed",
    INTERNAL: "internal error",
    JOB_NOT_FINISHED: "job not finished yet",
    HANGUP: "hung up",
    INTERRUPTED: "interrupted",
    TERMINATED: "terminated",
}
"""Each code's meaning in a few words (``--help`` lists them; the table above and README say more)."""

_BY_KIND: Final = {
    ErrorKind.INPUT: BAD_INPUT,
    ErrorKind.VERIFICATION: VERIFICATION_FAILED,
    ErrorKind.STORAGE: STORAGE,
    ErrorKind.OUTPUT: OUTPUT,
    ErrorKind.REFUSED: EXECUTION_REFUSED,
    ErrorKind.PUBLICATION: PUBLICATION_REFUSED,
    ErrorKind.PROVIDER: PROVIDER_FAILED,
    ErrorKind.INTERNAL: INTERNAL,
}


def for_kind(kind: ErrorKind) -> int:
    """The exit code of a job that failed for ``kind``."""
    return _BY_KIND[kind]


def for_error(error: EcebError) -> int:
    """The exit code of ``error``."""
    return for_kind(ErrorKind.of(error))
