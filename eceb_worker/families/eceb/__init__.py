"""The Enterprise Context Efficiency Benchmark, ECEB-0.1 (``shared/seeds/ECEB-0.1.md``).

- :mod:`~eceb_worker.families.eceb.vocabulary`: strategies, claim classes, schema identifiers.
- :mod:`~eceb_worker.families.eceb.benchmark`: benchmark, tasks, task root (§4, §6).
- :mod:`~eceb_worker.families.eceb.run`: recorded runs and observations (§7, §8).
- :mod:`~eceb_worker.families.eceb.run_index`: a run indexed by task, decoded task by task.
- :mod:`~eceb_worker.families.eceb.consistency`: a benchmark against its registry, a run
  against its benchmark (§6-§8, §13).
- :mod:`~eceb_worker.families.eceb.gates`: every gate and task-level check, in one table (§10-§14).
- :mod:`~eceb_worker.families.eceb.tasks`: one task's evaluation: baseline, floor,
  ladder walk, minimum viable budget, savings (§10-§12).
- :mod:`~eceb_worker.families.eceb.composition`: what a task's baseline selected against
  what the task permits, and the registry's totals it is counted from (§7).
- :mod:`~eceb_worker.families.eceb.shards`: the evaluation plan, map step and reduce.
- :mod:`~eceb_worker.families.eceb.report`: the report and its digests (§12, §15, §16).
- :mod:`~eceb_worker.families.eceb.family`: the family's documents, as
  :class:`~eceb_worker.families.Family`.
"""
