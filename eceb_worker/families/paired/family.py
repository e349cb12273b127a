"""The paired task-context benchmark as a benchmark family
(:class:`~eceb_worker.families.Family`): the documents it publishes."""

from __future__ import annotations

from typing import Final

import msgspec

from eceb_worker.families import Document
from eceb_worker.families.paired.schedule import PLAN_SCHEMA, Plan

__all__ = ["FAMILY", "PairedFamily"]


class PairedFamily(msgspec.Struct, frozen=True):
    """task-context-benchmark-reference.md as a :class:`~eceb_worker.families.Family`."""

    name: str = "paired"
    seed: str = "task-context-benchmark-reference"
    documents: tuple[Document, ...] = (Document("pair plan", PLAN_SCHEMA, "pair-plan-v0.1.json", Plan),)


FAMILY: Final = PairedFamily()
