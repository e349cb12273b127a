"""Reading a run task by task (ECEB-0.1 §8 at scale).

A run of millions of observations is not materialized at once: the file is
decoded into a :class:`~eceb_worker.families.eceb.run.RunEnvelope` whose observations
stay undecoded slices of the file, indexed by task id; each task's
observations are decoded, checked and evaluated in turn, then dropped. Memory
is the file's bytes plus one task's observations.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, TypeVar

import msgspec

from eceb_worker.core.decoding import decode_document, item_problems
from eceb_worker.errors import Problem
from eceb_worker.families.eceb.run import AuxiliaryCost, Observation, Run, RunEnvelope, RunHeader
from eceb_worker.families.eceb.tasks import TaskEvidence
from eceb_worker.families.eceb.verdicts import RecordProblem

if TYPE_CHECKING:
    import mmap

__all__ = ["IndexedRun", "decode_task_evidence", "index_run"]

_ENVELOPE: Final = msgspec.json.Decoder(RunEnvelope)
S = TypeVar("S", bound=msgspec.Struct)


class _TaskKey(msgspec.Struct):
    """Just the task id of a record; other fields are skipped unread."""

    task_id: str


_TASK_KEY: Final = msgspec.json.Decoder(_TaskKey)

Indexed = tuple[int, msgspec.Raw]
"""A record's position in its array, and its undecoded JSON."""


class IndexedRun(msgspec.Struct, frozen=True, kw_only=True):
    """A run's header and its records, undecoded, grouped by task id.

    Fields:
        file: how problems name the run file.
        header: the decoded, schema-valid header.
        observations: task id -> ``(index, raw)`` of its observations.
        auxiliary_costs: task id -> ``(index, raw)`` of its auxiliary costs.
        unkeyed: problems of records without a usable ``task_id``.
    """

    file: str
    header: RunHeader
    observations: Mapping[str, list[Indexed]]
    auxiliary_costs: Mapping[str, list[Indexed]]
    unkeyed: tuple[Problem, ...]

    @property
    def task_ids(self) -> set[str]:
        """Every task id a record names."""
        return set(self.observations) | set(self.auxiliary_costs)

    @property
    def observation_count(self) -> int:
        """How many observations the run holds."""
        return sum(len(items) for items in self.observations.values())


def _group(
    items: tuple[msgspec.Raw, ...], field: str, item_type: type[msgspec.Struct], file: str, problems: list[Problem]
) -> dict[str, list[Indexed]]:
    grouped: dict[str, list[Indexed]] = defaultdict(list)
    for index, raw in enumerate(items):
        try:
            key = _TASK_KEY.decode(raw).task_id
        except (msgspec.DecodeError, RecursionError):
            problems.extend(item_problems(bytes(raw), item_type, Run, file=file, record=f"{field}[{index}]"))
            continue
        grouped[key].append((index, raw))
    return dict(grouped)


def index_run(data: bytes | memoryview | mmap.mmap, *, file: str) -> IndexedRun:
    """Decode a run's header and index its records by task id.

    ``data`` is the file's bytes, or a memory map of it (records keep
    referring to them). Raises
    :class:`~eceb_worker.errors.InputError` with every problem when the
    header, or the shape of the arrays, is invalid (then every record is
    checked too, so all problems come together).
    """
    try:
        envelope = _ENVELOPE.decode(data)
    except (msgspec.DecodeError, RecursionError):
        decode_document(
            bytes(data),
            Run,
            file=file,
            item_fields={"observations": Observation, "auxiliary_costs": AuxiliaryCost},
        )
        raise  # pragma: no cover - decode_document raises for what the envelope refused
    problems: list[Problem] = []
    observations = _group(envelope.observations, "observations", Observation, file, problems)
    auxiliary = _group(envelope.auxiliary_costs, "auxiliary_costs", AuxiliaryCost, file, problems)
    return IndexedRun(
        file=file,
        header=envelope.header(),
        observations=observations,
        auxiliary_costs=auxiliary,
        unkeyed=tuple(problems),
    )


@functools.cache
def _decoders(item_type: type[S]) -> tuple[msgspec.json.Decoder[list[S]], msgspec.json.Decoder[S]]:
    """Decoders of a list of ``item_type`` and of one, built once."""
    return msgspec.json.Decoder(list[item_type]), msgspec.json.Decoder(item_type)  # type: ignore[valid-type]


def _decode_items(
    items: list[Indexed],
    item_type: type[S],
    array: str,
    file: str,
    problems: list[RecordProblem],
) -> list[tuple[int, S]]:
    """Decode records of one array: in one decoder call, or item by item
    (collecting every item's problems) when that call fails."""
    batch_decoder, decoder = _decoders(item_type)
    try:
        batch = batch_decoder.decode(b"[" + b",".join(bytes(raw) for _, raw in items) + b"]")
        return [(index, item) for (index, _), item in zip(items, batch, strict=True)]
    except (msgspec.DecodeError, RecursionError):
        pass
    decoded: list[tuple[int, S]] = []
    for index, raw in items:
        try:
            decoded.append((index, decoder.decode(raw)))
        except (msgspec.DecodeError, RecursionError) as exc:
            problems.extend(
                RecordProblem(array=array, index=index, problem=problem)
                for problem in item_problems(
                    bytes(raw),
                    item_type,
                    Run,
                    file=file,
                    record=f"{array}[{index}]",
                    decode_error=str(exc),
                )
            )
    return decoded


def decode_task_evidence(
    indexed: IndexedRun, task_id: str
) -> tuple[TaskEvidence, list[tuple[int, Observation]], list[tuple[int, AuxiliaryCost]], list[RecordProblem]]:
    """Decode one task's records.

    Returns the evidence, the decoded records with their positions (for
    locating problems), and every schema problem of the task's records.
    """
    problems: list[RecordProblem] = []
    observations = _decode_items(
        indexed.observations.get(task_id, []), Observation, "observations", indexed.file, problems
    )
    auxiliary = _decode_items(
        indexed.auxiliary_costs.get(task_id, []), AuxiliaryCost, "auxiliary_costs", indexed.file, problems
    )
    evidence = TaskEvidence(
        observations=tuple(o for _, o in observations), auxiliary_costs=tuple(a for _, a in auxiliary)
    )
    return evidence, observations, auxiliary, problems
