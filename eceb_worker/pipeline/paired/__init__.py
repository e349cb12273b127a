"""The paired task-context benchmark's commands over an experiment
directory (``shared/seeds/task-context-benchmark-reference.md``): the
steps that read and write its records, call git, the provider CLI and the
ledger, around the pure core in :mod:`eceb_worker.families.paired`.

- :mod:`~eceb_worker.pipeline.paired.experiment`: an experiment directory
  and its records, read and written in one place.
- :mod:`~eceb_worker.pipeline.paired.freeze`,
  :mod:`~eceb_worker.pipeline.paired.approvals`,
  :mod:`~eceb_worker.pipeline.paired.prepare`: ``eceb pair freeze``, the
  authorization, approvals and stops, ``eceb pair prepare``.
- :mod:`~eceb_worker.pipeline.paired.checks`,
  :mod:`~eceb_worker.pipeline.paired.attempt`,
  :mod:`~eceb_worker.pipeline.paired.run`,
  :mod:`~eceb_worker.pipeline.paired.status`: ``eceb pair run`` (its checks,
  one attempt and its journal) and ``eceb pair status``.
- :mod:`~eceb_worker.pipeline.paired.evidence`,
  :mod:`~eceb_worker.pipeline.paired.outcomes`,
  :mod:`~eceb_worker.pipeline.paired.summary_attempt`,
  :mod:`~eceb_worker.pipeline.paired.summary`: ``eceb pair summary`` (the
  evidence read, an attempt's outcome, one attempt, the whole summary).
"""
