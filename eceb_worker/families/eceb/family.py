"""ECEB-0.1 as a benchmark family (:class:`~eceb_worker.families.Family`):
the documents it publishes."""

from __future__ import annotations

from typing import Final

import msgspec

from eceb_worker.families import Document
from eceb_worker.families.eceb.benchmark import Benchmark
from eceb_worker.families.eceb.comparison import COMPARISON_SCHEMA, Comparison
from eceb_worker.families.eceb.declarations import DECLARATIONS_SCHEMA, SOURCES_SCHEMA, Declarations, SourcesFile
from eceb_worker.families.eceb.publication import PUBLICATION_SCHEMA, PublicationManifest
from eceb_worker.families.eceb.report import Report
from eceb_worker.families.eceb.run import Run
from eceb_worker.families.eceb.vocabulary import BENCHMARK_SCHEMA, REPORT_SCHEMA, RUN_SCHEMA

__all__ = ["COMPARISON", "DECLARATIONS", "FAMILY", "PUBLICATION", "SOURCES"]


class EcebFamily(msgspec.Struct, frozen=True):
    """ECEB-0.1 as a :class:`~eceb_worker.families.Family`."""

    name: str = "eceb"
    seed: str = "ECEB-0.1"
    documents: tuple[Document, ...] = (
        Document("benchmark", BENCHMARK_SCHEMA, "benchmark-v0.1.json", Benchmark),
        Document("run", RUN_SCHEMA, "run-v0.1.json", Run),
        Document("report", REPORT_SCHEMA, "report-v0.1.json", Report),
    )


FAMILY: Final = EcebFamily()

COMPARISON: Final = Document("comparison", COMPARISON_SCHEMA, "comparison-v0.1.json", Comparison)
"""Two reports compared (``eceb compare --json``): written, never read back,
so not one of the files ``eceb validate`` recognizes; its schema is published."""

PUBLICATION: Final = Document("publication", PUBLICATION_SCHEMA, "publication-v0.1.json", PublicationManifest)
"""A publication bundle's manifest (``eceb publish``), read back by ``eceb publish --check``."""
SOURCES: Final = Document("sources", SOURCES_SCHEMA, "sources-v0.1.json", SourcesFile)
"""A corpus's sources, licences and redistribution status (``eceb publish --sources``)."""
DECLARATIONS: Final = Document("declarations", DECLARATIONS_SCHEMA, "declarations-v0.1.json", Declarations)
"""Declared controls, exclusions and timeouts (``eceb publish --declarations``)."""
