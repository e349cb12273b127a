"""Benchmark families: one package a family, behind one interface.

A family implements one seed specification: its documents (wire Structs
whose JSON Schemas are published in ``schema/``), its checks and its
evaluation, all pure. What every family shares lives in
:mod:`eceb_worker.core` (canonical JSON, digests, integer arithmetic,
problems and decoding, schemas, plans) and :mod:`eceb_worker.corpus`; what
runs a family's work (reading inputs, executors, the cluster) lives in
:mod:`eceb_worker.pipeline` and below it.

- :mod:`eceb_worker.families.eceb`: the Enterprise Context Efficiency
  Benchmark (ECEB-0.1): benchmark, run, consistency checks, gates,
  evaluation and report.
- :mod:`eceb_worker.families.paired`: the paired task-context benchmark
  (task-context-benchmark-reference.md), the next family.

The interface is :class:`Family`: a name, the seed it implements and the
documents it publishes (:class:`Document`). :data:`eceb_worker.documents.DOCUMENTS`
lists every published document, the corpus's and each family's; schema
generation and ``eceb validate`` read that one table.
"""

from __future__ import annotations

from typing import Protocol

import msgspec

__all__ = ["Document", "Family"]


class Document(msgspec.Struct, frozen=True):
    """One kind of document eceb reads or writes.

    Attributes:
        kind: its name on the command line (``eceb validate`` prints it), e.g. ``"benchmark"``.
        schema_id: the value of its ``schema`` field, e.g. ``"symgliph.eceb/benchmark-v0.1"``.
        schema_file: its JSON Schema's file name in ``schema/``, e.g. ``"benchmark-v0.1.json"``.
        struct: the frozen Struct that decodes it and whose schema is published.
    """

    kind: str
    schema_id: str
    schema_file: str
    struct: type[msgspec.Struct]

    @property
    def schema_name(self) -> str:
        """The schema file's stem (its ``$id`` and ``title`` end with it)."""
        return self.schema_file.removesuffix(".json")


class Family(Protocol):
    """A benchmark family (one seed specification)."""

    @property
    def name(self) -> str:
        """A short name, e.g. ``"eceb"``."""
        ...

    @property
    def seed(self) -> str:
        """The specification it implements, e.g. ``"ECEB-0.1"``."""
        ...

    @property
    def documents(self) -> tuple[Document, ...]:
        """The documents it publishes."""
        ...
