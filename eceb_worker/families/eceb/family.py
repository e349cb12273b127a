"""ECEB-0.1 as a benchmark family (:class:`~eceb_worker.families.Family`):
the documents it publishes."""

from __future__ import annotations

from typing import Final

import msgspec

from eceb_worker.families import Document
from eceb_worker.families.eceb.benchmark import Benchmark
from eceb_worker.families.eceb.comparison import COMPARISON_SCHEMA, Comparison
from eceb_worker.families.eceb.declarations import DECLARATIONS_SCHEMA, SOURCES_SCHEMA, Declarations, SourcesFile
from eceb_worker.families.eceb.making.profile import RUN_PROFILE_SCHEMA, RunProfile
from eceb_worker.families.eceb.making.protocol import (
    CONTEXT_REQUEST_SCHEMA,
    CONTEXT_RESPONSE_SCHEMA,
    ContextRequest,
    ContextResponse,
)
from eceb_worker.families.eceb.publication import PUBLICATION_SCHEMA, PublicationManifest
from eceb_worker.families.eceb.report import Report
from eceb_worker.families.eceb.run import Run
from eceb_worker.families.eceb.vocabulary import BENCHMARK_SCHEMA, REPORT_SCHEMA, RUN_SCHEMA

__all__ = [
    "COMPARISON",
    "CONTEXT_REQUEST",
    "CONTEXT_RESPONSE",
    "DECLARATIONS",
    "FAMILY",
    "PUBLICATION",
    "RUN_PROFILE",
    "SOURCES",
]


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

RUN_PROFILE: Final = Document("run-profile", RUN_PROFILE_SCHEMA, "run-profile-v0.1.json", RunProfile)
"""What ``eceb run`` makes a run with: model, judge, context system, prompt, limits."""
CONTEXT_REQUEST: Final = Document(
    "context-request", CONTEXT_REQUEST_SCHEMA, "context-request-v0.1.json", ContextRequest
)
"""The context-system protocol's request (one JSON line, or an HTTP body): sent, never read from a file."""
CONTEXT_RESPONSE: Final = Document(
    "context-response", CONTEXT_RESPONSE_SCHEMA, "context-response-v0.1.json", ContextResponse
)
"""The context-system protocol's response: read from the system, never from a file."""
