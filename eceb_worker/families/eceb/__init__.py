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
- :mod:`~eceb_worker.families.eceb.shards`: the evaluation plan, map step and reduce.
- :mod:`~eceb_worker.families.eceb.report`: the report and its digests (§12, §15, §16).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from eceb_worker.families import Document
from eceb_worker.families.eceb.benchmark import Benchmark
from eceb_worker.families.eceb.report import Report
from eceb_worker.families.eceb.run import Run
from eceb_worker.families.eceb.vocabulary import BENCHMARK_SCHEMA, REPORT_SCHEMA, RUN_SCHEMA

__all__ = ["FAMILY", "EcebFamily"]


@dataclass(frozen=True)
class EcebFamily:
    """ECEB-0.1 as a :class:`~eceb_worker.families.Family`."""

    name: str = "eceb"
    seed: str = "ECEB-0.1"
    documents: tuple[Document, ...] = (
        Document("benchmark", BENCHMARK_SCHEMA, "benchmark-v0.1.json", Benchmark),
        Document("run", RUN_SCHEMA, "run-v0.1.json", Run),
        Document("report", REPORT_SCHEMA, "report-v0.1.json", Report),
    )


FAMILY: Final = EcebFamily()
