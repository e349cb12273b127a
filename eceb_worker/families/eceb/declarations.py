"""What a publisher declares beside a run (ECEB-0.1 §15, §16): the corpus's
sources with their licences and redistribution status (a sources file,
``symgliph.eceb/sources-v0.1``), and the controls, exclusions and timeouts
of the evaluation (a declarations file, ``symgliph.eceb/declarations-v0.1``).

Both are small JSON documents written by hand; ``eceb publish`` copies them
into the bundle and binds them by digest. eceb states what they say; it
does not infer a licence's terms: whether a source may be redistributed is
the publisher's declaration (``redistributable``).
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

import msgspec

from eceb_worker.core.arithmetic import SAFE_INTEGER_MAX
from eceb_worker.core.identifiers import Identifier
from eceb_worker.families.eceb.vocabulary import Strategy

__all__ = [
    "DECLARATIONS_SCHEMA",
    "SOURCES_SCHEMA",
    "Declarations",
    "Exclusion",
    "Source",
    "SourcesFile",
    "Timeout",
]

SOURCES_SCHEMA: Final = "symgliph.eceb/sources-v0.1"
DECLARATIONS_SCHEMA: Final = "symgliph.eceb/declarations-v0.1"

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
Positive = Annotated[int, msgspec.Meta(gt=0, le=SAFE_INTEGER_MAX)]


class Source(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One source the corpus was drawn from.

    Fields:
        name: the source, e.g. ``"rust-lang/rfcs"`` (unique in the file).
        url: where it is published, when it is.
        revision: the immutable revision taken (a commit), when there is one.
        license_spdx: its licence, an SPDX licence expression
            (``"MIT OR Apache-2.0"``; ``"LicenseRef-..."`` for others).
        redistributable: the publisher's declaration that the licence allows
            the corpus's copy of it to be redistributed (ECEB-0.1 §16
            "redistribution status").
        note: free text (exceptions, attribution).
    """

    name: Identifier
    url: str = ""
    revision: str = ""
    license_spdx: NonEmpty
    redistributable: bool
    note: str = ""


class SourcesFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A sources file (schema ``symgliph.eceb/sources-v0.1``).

    Fields:
        schema: the schema identifier.
        corpus: the corpus's name.
        description: free text (where the full attribution is kept).
        sources: every source, at least one.
    """

    schema: Literal["symgliph.eceb/sources-v0.1"]
    corpus: NonEmpty
    description: str = ""
    sources: Annotated[tuple[Source, ...], msgspec.Meta(min_length=1)]


class Exclusion(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A task, or a task's observations, left out of the run, and why.

    Fields:
        task_id: the task.
        strategy, budget, repetition: what of it was left out (all absent: the whole task).
        reason: why.
    """

    task_id: Identifier
    strategy: Strategy | None = None
    budget: Positive | None = None
    repetition: Positive | None = None
    reason: NonEmpty


class Timeout(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An attempt that ran out of time while the run was recorded.

    Fields:
        task_id, strategy, budget, repetition: the attempt (budget absent for
            groups without one, repetition when unknown).
        description: what timed out, and what was done about it.
    """

    task_id: Identifier
    strategy: Strategy
    budget: Positive | None = None
    repetition: Positive | None = None
    description: NonEmpty


class Declarations(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A declarations file (schema ``symgliph.eceb/declarations-v0.1``).

    Fields:
        schema: the schema identifier.
        sampling: how tasks and data were sampled (ECEB-0.1 §15); empty: not declared.
        authorization: who authorized the evaluation on this data, and how; empty: not declared.
        reproducibility: the controls that let it be repeated (pinned revisions,
            seeds, escrow); empty: not declared.
        exclusions: everything left out of the run (§16).
        timeouts: every attempt that timed out (§16).
    """

    schema: Literal["symgliph.eceb/declarations-v0.1"]
    sampling: str = ""
    authorization: str = ""
    reproducibility: str = ""
    exclusions: tuple[Exclusion, ...] = ()
    timeouts: tuple[Timeout, ...] = ()
