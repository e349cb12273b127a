"""The paired task-context benchmark's edges
(``shared/seeds/task-context-benchmark-reference.md``): what it runs and
the files it shares between processes.

- :mod:`~eceb_worker.io.paired.git`: the target repository, through the
  real ``git`` executable.
- :mod:`~eceb_worker.io.paired.executables`: executables found and identified.
- :mod:`~eceb_worker.io.paired.provider`: one provider call (process group,
  timeout, cancellation).
- :mod:`~eceb_worker.io.paired.checks`: a frozen check re-executed on an
  export of the frozen revision.
- :mod:`~eceb_worker.io.paired.ledger`: the execution ledger (SQLite).
"""
