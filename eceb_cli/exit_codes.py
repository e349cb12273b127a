"""Exit codes of the ``eceb`` commands (documented in README.md, "Exit codes").

======  ==========================================================
code    meaning
======  ==========================================================
0       success: the corpus verified / all tasks pass
1       evaluated, with failing tasks (``eceb evaluate``)
2       usage error: unknown option, missing argument (click)
3       bad input: a registry, rules, benchmark or run file is invalid
4       corpus verification failed: missing, stale, unreadable or
        escaping artifacts
5       storage unavailable: the corpus could not be read at all;
        (eceb-dist) an unreachable broker, a shard the cluster could not
        complete, a report gone or replaced since its job wrote it
6       output cannot be written (checked before the work starts)
7       no such job (``eceb-dist``: unknown or expired job id)
8       the job was cancelled (``eceb-dist wait`` / ``result``)
70      internal error (a bug: please report it)
75      the job has not finished yet (``eceb-dist wait --timeout`` passed,
        ``eceb-dist result`` asked too early); try again later
130     interrupted (Ctrl-C); 143: terminated (SIGTERM)
======  ==========================================================
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "BAD_INPUT",
    "INTERNAL",
    "INTERRUPTED",
    "JOB_CANCELLED",
    "JOB_NOT_FINISHED",
    "NO_SUCH_JOB",
    "OK",
    "OUTPUT",
    "STORAGE",
    "TASKS_FAILED",
    "TERMINATED",
    "USAGE",
    "VERIFICATION_FAILED",
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
JOB_NOT_FINISHED: Final = 75
INTERNAL: Final = 70
INTERRUPTED: Final = 130
TERMINATED: Final = 143
