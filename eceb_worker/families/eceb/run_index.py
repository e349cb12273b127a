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
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

import msgspec

from eceb_worker.core.decoding import decode_document, item_problems, json_path, split_location
from eceb_worker.core.lenient import ITEM_DEPTH, decode_lenient, value_defects
from eceb_worker.core.repeats import StringLayout, string_layout, unrepeated
from eceb_worker.errors import Problem
from eceb_worker.families.eceb.run import AuxiliaryCost, Observation, Run, RunEnvelope, RunHeader
from eceb_worker.families.eceb.tasks import TaskEvidence
from eceb_worker.families.eceb.verdicts import RecordProblem

if TYPE_CHECKING:
    import mmap

__all__ = ["IndexedRun", "RunPart", "decode_task_evidence", "detach_tasks", "index_run", "task_answers"]

_ENVELOPE: Final = msgspec.json.Decoder(RunEnvelope)
S = TypeVar("S", bound=msgspec.Struct)


@functools.cache
def _key_decoder(item_type: type[msgspec.Struct]) -> tuple[StringLayout, msgspec.json.Decoder[Any]]:
    """The string layout of ``item_type`` and a decoder of a record's task id
    and optional fields (which it names); the other fields are skipped unread."""
    layout = string_layout(item_type)
    assert layout is not None
    return layout, msgspec.json.Decoder(layout.keys_struct([("task_id", str)]))


Indexed = tuple[int, msgspec.Raw]
"""A record's position in its array, and its undecoded JSON."""


class IndexedRun(msgspec.Struct, frozen=True, kw_only=True):
    """A run's header and its records, undecoded, grouped by task id.

    Fields:
        file: how problems name the run file.
        header: the decoded, schema-valid header.
        observations: task id -> ``(index, raw)`` of its observations.
        auxiliary_costs: task id -> ``(index, raw)`` of its auxiliary costs.
        unkeyed: problems of the file beyond each task's records: keys its
            header repeats, records without a usable ``task_id``.
        observation_strings, auxiliary_strings: task id -> the strings the
            optional fields of its records hold
            (:meth:`~eceb_worker.core.repeats.StringLayout.present`, summed).
    """

    file: str
    header: RunHeader
    observations: Mapping[str, list[Indexed]]
    auxiliary_costs: Mapping[str, list[Indexed]]
    unkeyed: tuple[Problem, ...]
    observation_strings: Mapping[str, int] = msgspec.field(default_factory=dict)
    auxiliary_strings: Mapping[str, int] = msgspec.field(default_factory=dict)

    @property
    def task_ids(self) -> set[str]:
        """Every task id a record names."""
        return set(self.observations) | set(self.auxiliary_costs)

    @property
    def observation_count(self) -> int:
        """How many observations the run holds."""
        return sum(len(items) for items in self.observations.values())


class RunPart(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Some tasks' records of an indexed run, detached from the run's file:
    what another process evaluates them from (the records' own bytes, as
    this process read and indexed them; the file is not read again).

    Fields:
        file: how problems name the run file.
        header: the run's decoded header.
        observations, auxiliary_costs: task id -> the positions of its
            records in their array of the whole run, and the records
            themselves as one JSON array (their exact bytes, joined by commas).
        observation_strings, auxiliary_strings: as :class:`IndexedRun`'s, for these tasks.
    """

    file: str
    header: RunHeader
    observations: dict[str, tuple[list[int], bytes]]
    auxiliary_costs: dict[str, tuple[list[int], bytes]]
    observation_strings: dict[str, int]
    auxiliary_strings: dict[str, int]

    def indexed(self) -> IndexedRun:
        """The part as an :class:`IndexedRun` of its tasks, each record the
        same bytes as in the run. Raises ValueError when an array does not
        hold as many records as it has positions (a part not made by
        :func:`detach_tasks`)."""

        def split(grouped: dict[str, tuple[list[int], bytes]]) -> dict[str, list[Indexed]]:
            indexed: dict[str, list[Indexed]] = {}
            for task_id, (positions, joined) in grouped.items():
                records = _RECORDS.decode(joined)
                if len(records) != len(positions):
                    raise ValueError(f"task {task_id!r}: {len(records)} records for {len(positions)} positions")
                indexed[task_id] = list(zip(positions, records, strict=True))
            return indexed

        return IndexedRun(
            file=self.file,
            header=self.header,
            observations=split(self.observations),
            auxiliary_costs=split(self.auxiliary_costs),
            unkeyed=(),
            observation_strings=self.observation_strings,
            auxiliary_strings=self.auxiliary_strings,
        )


_RECORDS: Final = msgspec.json.Decoder(list[msgspec.Raw])


def detach_tasks(indexed: IndexedRun, task_ids: Iterable[str]) -> RunPart:
    """The records of ``task_ids`` (those ``indexed`` has; others have none)
    as a :class:`RunPart`."""
    wanted = list(task_ids)

    def joined(grouped: Mapping[str, list[Indexed]]) -> dict[str, tuple[list[int], bytes]]:
        parts = {}
        for task_id in wanted:
            items = grouped.get(task_id)
            if items is not None:
                parts[task_id] = ([i for i, _ in items], b"[" + b",".join([raw for _, raw in items]) + b"]")
        return parts

    def counts(strings: Mapping[str, int]) -> dict[str, int]:
        return {t: strings[t] for t in wanted if t in strings}

    return RunPart(
        file=indexed.file,
        header=indexed.header,
        observations=joined(indexed.observations),
        auxiliary_costs=joined(indexed.auxiliary_costs),
        observation_strings=counts(indexed.observation_strings),
        auxiliary_strings=counts(indexed.auxiliary_strings),
    )


def _group(
    items: tuple[msgspec.Raw, ...], field: str, item_type: type[msgspec.Struct], file: str, problems: list[Problem]
) -> tuple[dict[str, list[Indexed]], dict[str, int]]:
    """The records by task id, and the strings their optional fields hold by task id."""
    layout, decoder = _key_decoder(item_type)
    uniform, unset, as_tuple = layout.uniform, msgspec.UNSET, msgspec.structs.astuple
    grouped: dict[str, list[Indexed]] = defaultdict(list)
    strings: dict[str, int] = defaultdict(int)  # of the optional fields; absent ones when uniform
    for index, raw in enumerate(items):
        try:
            keys = decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            problems.extend(item_problems(bytes(raw), item_type, Run, file=file, record=f"{field}[{index}]"))
            continue
        grouped[keys.task_id].append((index, raw))
        strings[keys.task_id] += as_tuple(keys).count(unset) if uniform else layout.present(keys)
    if uniform:  # the fields present: as many per record as there are, less those absent
        fields = len(layout.optional)
        return dict(grouped), {t: uniform * (fields * len(grouped[t]) - strings[t]) for t in grouped}
    return dict(grouped), {t: strings[t] for t in grouped}


def _header_problems(data: bytes | memoryview | mmap.mmap, envelope: RunEnvelope, file: str) -> list[Problem]:
    """The keys the run's header repeats (at any depth), read strictly from
    the file without its records: the bytes from the first record to the
    last of each array are cut out, found by their own bytes. Nothing when
    what is left is not the header (then the records have problems)."""
    source = data if not isinstance(data, memoryview) else bytes(data)
    spans = []
    for items in (envelope.observations, envelope.auxiliary_costs):
        if items:
            start = source.find(bytes(items[0]))
            end = source.rfind(bytes(items[-1]))
            if start < 0 or end < start:
                return []
            spans.append((start, end + len(items[-1])))
    pieces: list[bytes] = []
    at = 0
    for start, end in sorted(spans):
        if start < at:
            return []
        pieces.append(bytes(source[at:start]))
        at = end
    pieces.append(bytes(source[at:]))
    value, error = decode_lenient(b"".join(pieces))
    if error or not isinstance(value, dict):
        return []
    defects, _ = value_defects(value, utf8=True)
    located = [(*split_location(json_path(path)), message) for path, message in defects]
    return [Problem(file=file, record=record, field=field, message=message) for record, field, message in located]


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
    problems = _header_problems(data, envelope, file)
    observations, observation_strings = _group(envelope.observations, "observations", Observation, file, problems)
    auxiliary, auxiliary_strings = _group(envelope.auxiliary_costs, "auxiliary_costs", AuxiliaryCost, file, problems)
    return IndexedRun(
        file=file,
        header=envelope.header(),
        observations=observations,
        auxiliary_costs=auxiliary,
        unkeyed=tuple(problems),
        observation_strings=observation_strings,
        auxiliary_strings=auxiliary_strings,
    )


@functools.cache
def _decoders(item_type: type[S]) -> tuple[msgspec.json.Decoder[list[S]], msgspec.json.Decoder[S]]:
    """Decoders of a list of ``item_type`` and of one, built once."""
    return msgspec.json.Decoder(list[item_type]), msgspec.json.Decoder(item_type)  # type: ignore[valid-type]


def _decode_items(
    indexed: IndexedRun, task_id: str, item_type: type[S], array: str, problems: list[RecordProblem]
) -> list[tuple[int, S]]:
    """Decode the records of one task in one array (``observations`` or
    ``auxiliary_costs``): in one decoder call, or item by item (collecting
    every item's problems) when that call fails. Records that decode are
    checked for repeated keys (:mod:`eceb_worker.core.repeats`)."""
    file = indexed.file
    items: list[Indexed] = getattr(indexed, array).get(task_id, [])
    strings = (indexed.observation_strings if array == "observations" else indexed.auxiliary_strings).get(task_id)
    batch_decoder, decoder = _decoders(item_type)
    joined = b"[" + b",".join([raw for _, raw in items]) + b"]"
    try:
        batch = batch_decoder.decode(joined)
    except (msgspec.DecodeError, RecursionError):
        pass
    else:
        layout = string_layout(item_type)
        if layout is None or strings is None or not unrepeated(joined, layout, batch, strings):
            for index, raw in items:
                value, _ = decode_lenient(bytes(raw), depth=ITEM_DEPTH)
                if value_defects(value, depth=ITEM_DEPTH)[0]:
                    problems.extend(
                        RecordProblem(array=array, index=index, problem=problem)
                        for problem in item_problems(bytes(raw), item_type, Run, file=file, record=f"{array}[{index}]")
                    )
        return [(index, item) for (index, _), item in zip(items, batch, strict=True)]
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
    observations = _decode_items(indexed, task_id, Observation, "observations", problems)
    auxiliary = _decode_items(indexed, task_id, AuxiliaryCost, "auxiliary_costs", problems)
    evidence = TaskEvidence(
        observations=tuple(o for _, o in observations), auxiliary_costs=tuple(a for _, a in auxiliary)
    )
    return evidence, observations, auxiliary, problems


class _Answer(msgspec.Struct):
    """An observation's answer alone (its other fields skipped unread)."""

    answer: str = ""


_ANSWERS: Final = msgspec.json.Decoder(list[_Answer])
_ANSWER: Final = msgspec.json.Decoder(_Answer)


def task_answers(indexed: IndexedRun, task_id: str) -> list[str]:
    """The answers of one task's observations, in record order, decoded
    without checks (a record whose answer is not a string is left out: the
    run's checks name it)."""
    items = indexed.observations.get(task_id, [])
    try:
        return [a.answer for a in _ANSWERS.decode(b"[" + b",".join([raw for _, raw in items]) + b"]")]
    except (msgspec.DecodeError, RecursionError):
        answers = []
        for _, raw in items:
            try:
                answers.append(_ANSWER.decode(raw).answer)
            except (msgspec.DecodeError, RecursionError):
                continue
        return answers
