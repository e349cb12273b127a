"""Every document eceb reads or writes, in one table: the corpus's and each
benchmark family's (:class:`~eceb_worker.families.Document`).

Schema generation, ``eceb validate``'s recognition of a file's kind and the
schema tests read this table. Regenerate ``schema/`` after changing a
Struct with ``python -m eceb_worker.documents schema`` (a test fails on drift).
"""

from __future__ import annotations

import mmap
import re
import sys
from pathlib import Path
from typing import Final

import msgspec

from eceb_worker.core.schemas import render_schema
from eceb_worker.corpus.artifacts import REGISTRY_SCHEMA, RULES_SCHEMA, VERIFICATION_SCHEMA, Artifact, RegistryHeader
from eceb_worker.corpus.diff import CORPUS_DIFF_SCHEMA, CorpusDiff
from eceb_worker.corpus.incremental import LISTING_SCHEMA, ListingEntry, ListingHeader
from eceb_worker.corpus.rules import RulesFile
from eceb_worker.corpus.verification import VerificationReport
from eceb_worker.errors import Problem
from eceb_worker.families import Document
from eceb_worker.families.eceb.family import (
    COMPARISON,
    CONTEXT_REQUEST,
    CONTEXT_RESPONSE,
    DECLARATIONS,
    PUBLICATION,
    RUN_PROFILE,
    SOURCES,
)
from eceb_worker.families.eceb.family import FAMILY as ECEB
from eceb_worker.families.paired.family import FAMILY as PAIRED

__all__ = [
    "ARTIFACT",
    "CORPUS_DIFF",
    "DOCUMENTS",
    "FILES",
    "LISTING",
    "LISTING_ENTRY",
    "REGISTRY",
    "RULES",
    "VERIFICATION",
    "a_file_of",
    "named_document",
    "wrong_kind",
    "render",
]

REGISTRY: Final = Document("registry", REGISTRY_SCHEMA, "registry-header-v0.1.json", RegistryHeader)
"""A registry: a header line (its ``schema`` field names the file), then artifact lines."""
ARTIFACT: Final = Document("artifact", REGISTRY_SCHEMA, "artifact-v0.1.json", Artifact)
"""One artifact line of a registry (not a file of its own)."""
VERIFICATION: Final = Document("verification", VERIFICATION_SCHEMA, "verification-v0.1.json", VerificationReport)
RULES: Final = Document("rules", RULES_SCHEMA, "rules-v0.1.json", RulesFile)
LISTING: Final = Document("listing", LISTING_SCHEMA, "listing-header-v0.1.json", ListingHeader)
"""A registry's listing snapshot (``REGISTRY_STEM.listing.jsonl``): a header line, then entry lines."""
LISTING_ENTRY: Final = Document("listing-entry", LISTING_SCHEMA, "listing-entry-v0.1.json", ListingEntry)
"""One entry line of a listing snapshot (not a file of its own)."""
CORPUS_DIFF: Final = Document("corpus-diff", CORPUS_DIFF_SCHEMA, "corpus-diff-v0.1.json", CorpusDiff)
"""What ``eceb corpus diff --json`` prints: two registries compared (not a file eceb reads)."""

FILES: Final[tuple[Document, ...]] = (
    REGISTRY,
    *ECEB.documents,
    VERIFICATION,
    RULES,
    PUBLICATION,
    SOURCES,
    DECLARATIONS,
    RUN_PROFILE,
)
"""Every kind of file, in the order ``eceb validate`` names them."""

DOCUMENTS: Final[tuple[Document, ...]] = (
    *FILES,
    ARTIFACT,
    LISTING,
    LISTING_ENTRY,
    CORPUS_DIFF,
    COMPARISON,
    CONTEXT_REQUEST,
    CONTEXT_RESPONSE,
    *PAIRED.documents,
)
"""Every published document, with its schema file in ``schema/``."""


def document_of_schema(schema_id: str) -> Document | None:
    """The kind of file whose ``schema`` field holds ``schema_id`` (for a
    registry, its header line), or None."""
    return next((d for d in FILES if d.schema_id == schema_id), None)


class _SchemaField(msgspec.Struct):
    """Only a document's ``schema`` field; everything else is skipped unread."""

    schema: str = ""


_SCHEMA_JSON: Final = re.compile(rb'"schema"\s*:\s*"([^"\\]{1,200})"')
_SCHEMA_TOML: Final = re.compile(rb'^[ \t]*schema[ \t]*=[ \t]*"([^"\\]{1,200})"', re.MULTILINE)
HEAD_BYTES: Final = 64 * 1024
"""How much of the start of a file :func:`named_document` reads when it cannot read the file whole."""


def named_document(data: bytes | mmap.mmap) -> Document | None:
    """The kind of file ``data`` (a whole file, or its first bytes) names in
    its ``schema`` field: of the whole JSON document, of its first line (a
    registry), or else the first ``"schema": "..."`` or TOML ``schema =
    "..."`` in its first :data:`HEAD_BYTES` (a file that is not valid JSON
    may still say what it is). ``None`` when it names no kind eceb knows."""
    end = data.find(b"\n")
    for document in (data, data[:end] if end >= 0 else b""):
        try:
            found = document_of_schema(msgspec.json.decode(document, type=_SchemaField).schema)
        except (msgspec.DecodeError, RecursionError):
            continue
        if found is not None:
            return found
    head = data[:HEAD_BYTES]
    for pattern in (_SCHEMA_JSON, _SCHEMA_TOML):
        match = pattern.search(head)
        if match and (found := document_of_schema(match.group(1).decode("utf-8", "replace"))) is not None:
            return found
    return None


def wrong_kind(name: str, data: bytes, expected: str) -> Problem | None:
    """The one problem of file ``name`` (``data``: its bytes, or its first
    ones) when it names another kind than ``expected`` (:func:`named_document`),
    else ``None``."""
    found = named_document(data)
    if found is None or found.kind == expected:
        return None
    return Problem(
        file=name, message=f"is {a_file_of(found.kind)} (schema {found.schema_id!r}), not {a_file_of(expected)}"
    )


_NOUNS: Final = {
    "rules": "rules file",
    "verification": "verification report",
    "publication": "publication manifest",
    "sources": "sources file",
    "declarations": "declarations file",
}


def a_file_of(kind: str) -> str:
    """How messages name a file of ``kind`` (a :class:`Document` kind), with
    its article: ``"a benchmark"``, ``"a rules file"``, ``"an artifact"``."""
    noun = _NOUNS.get(kind, kind)
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def render(document: Document) -> str:
    """The exact text of ``schema/<document.schema_file>``."""
    return render_schema(document.struct, document.schema_name)


def write_schemas(directory: Path) -> list[Path]:
    """Write every published schema into ``directory``; returns the paths written."""
    written = []
    for document in sorted(DOCUMENTS, key=lambda d: d.schema_file):
        target = directory / document.schema_file
        target.write_text(render(document), encoding="utf-8")
        written.append(target)
    return written


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    for path in write_schemas(Path(sys.argv[1] if len(sys.argv) > 1 else "schema")):
        print(path)
