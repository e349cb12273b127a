"""Valid inputs for the fuzz tests, as trees (:mod:`tests.support.mutations`):
the enterprise seed's benchmark, run, registry and rules, smaller benchmarks
and runs cut from it, and inputs whose task or artifact ids are odd but
consistent (their roots recomputed), all written to a directory."""

from __future__ import annotations

import copy
import functools
import json
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.registry import build_registry, registry_lines
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.benchmark import Abstention, Task, task_root
from tests.support.mutations import (
    ODD_IDS,
    Obj,
    changed_bytes,
    changed_lines,
    changed_tree,
    json_text,
    plain,
    toml_text,
    tree,
)
from tests.support.paths import EXAMPLES

__all__ = [
    "FUZZ",
    "NAMES",
    "SEED",
    "Inputs",
    "hostile_inputs",
    "rejected",
    "renamed_task",
    "seed_inputs",
    "valid_inputs",
]

SEED = EXAMPLES / "enterprise-seed"
NAMES = {"benchmark": "benchmark.json", "run": "run.json", "registry": "registry.jsonl", "rules": "rules.toml"}
"""Each input's file name in the directory :meth:`Inputs.write` fills."""

FUZZ = settings(
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]
)
"""The fuzz properties' settings: the examples drawn come from the profile (tests/conftest.py)."""


def rejected(names: set[str], action: Callable[[], object]) -> bool:
    """Run ``action``; True when it raised :class:`InputError` and each of
    its problems names one of ``names``. Any other exception fails the test."""
    problems: list[Problem] = []
    try:
        action()
    except InputError as error:
        problems = error.problems
    assert all(problem.file in names for problem in problems), problems
    return bool(problems)


class Inputs:
    """One set of inputs as trees (shared, never changed in place: replace
    them); ``data`` holds files given as bytes instead."""

    def __init__(self, benchmark: Any, run: Any, registry: list[Any], rules: Any, data: dict[str, bytes]) -> None:
        self.benchmark, self.run, self.registry, self.rules, self.data = benchmark, run, registry, rules, data

    def copy(self) -> Inputs:
        """The same trees, and a ``data`` of its own."""
        return Inputs(self.benchmark, self.run, self.registry, self.rules, dict(self.data))

    def __repr__(self) -> str:
        """The files that differ from the seed's: each one's changed span
        (from its first to its last changed byte), shortened."""
        seed = _seed()
        parts = []
        for kind in NAMES:
            data, original = self.bytes_of(kind), seed.bytes_of(kind)
            if data == original:
                continue
            head = next((i for i, (a, b) in enumerate(zip(data, original, strict=False)) if a != b), None)
            head = min(len(data), len(original)) if head is None else head
            tail = next((i for i, (a, b) in enumerate(zip(data[::-1], original[::-1], strict=False)) if a != b), None)
            tail = min(len(data), len(original)) - head if tail is None else min(tail, len(data) - head)
            span = data[head : len(data) - tail]
            shown = repr(span) if len(span) <= 400 else f"{span[:200]!r} ... {span[-200:]!r}"
            parts.append(f"{kind}: {len(data)} bytes, bytes {head}-{len(data) - tail} changed to {shown}")
        return "Inputs(" + ("; ".join(parts) or "the seed's") + ")"

    def bytes_of(self, kind: str) -> bytes:
        """The bytes of the file of ``kind`` (a key of :data:`NAMES`)."""
        if kind in self.data:
            return self.data[kind]
        if kind == "registry":
            return b"".join(json_text(line) + b"\n" for line in self.registry)
        if kind == "rules":
            return toml_text(self.rules) if isinstance(self.rules, Obj) else json_text(self.rules)
        return json_text(getattr(self, kind))

    def write(self, directory: Path) -> dict[str, Path]:
        """Write every file into ``directory``; their paths by kind."""
        paths = {kind: directory / name for kind, name in NAMES.items()}
        for kind, path in paths.items():
            path.write_bytes(self.bytes_of(kind))
        return paths


@functools.cache
def _seed() -> Inputs:
    return Inputs(
        benchmark=tree(json.loads((SEED / "benchmark.json").read_bytes())),
        run=tree(json.loads((SEED / "run.json").read_bytes())),
        registry=[tree(json.loads(line)) for line in (SEED / "registry.jsonl").read_bytes().splitlines()],
        rules=tree(tomllib.loads((SEED / "rules.toml").read_text())),
        data={},
    )


def seed_inputs() -> Inputs:
    """The enterprise seed's inputs (a fresh copy)."""
    return copy.deepcopy(_seed())


def _task(fields: dict[str, Any]) -> Task:
    """A task built from its decoded JSON without validating it (the odd
    names drawn here need not be valid ids)."""
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
    if isinstance(values.get("abstention"), dict):
        values["abstention"] = Abstention(refusal_markers=tuple(values["abstention"]["refusal_markers"]))
    return Task(**values)


def _roots(inputs: Inputs) -> Inputs:
    """``inputs`` with the task root and corpus root recomputed from their tasks and artifacts."""
    benchmark, run = plain(inputs.benchmark), plain(inputs.run)
    registry = build_registry([Artifact(**line) for line in map(plain, inputs.registry[1:])])
    corpus_root = registry.corpus_root
    benchmark["registry"]["corpus_root"] = corpus_root
    run["corpus_root"] = corpus_root
    tasks = [_task(t) for t in benchmark["tasks"]]
    run["benchmark"]["task_root"] = task_root(tasks)
    lines = [tree(json.loads(line)) for line in registry_lines(registry)]
    return Inputs(benchmark=tree(benchmark), run=tree(run), registry=lines, rules=inputs.rules, data={})


@functools.lru_cache(maxsize=512)
def _some_tasks(keep: frozenset[str]) -> Inputs:
    inputs = _seed()
    benchmark, run = plain(inputs.benchmark), plain(inputs.run)
    benchmark["tasks"] = [t for t in benchmark["tasks"] if t["task_id"] in keep]
    for array in ("observations", "auxiliary_costs"):
        run[array] = [item for item in run[array] if item["task_id"] in keep]
    return _roots(
        Inputs(benchmark=tree(benchmark), run=tree(run), registry=inputs.registry, rules=inputs.rules, data={})
    )


@functools.lru_cache(maxsize=512)
def _renamed_task(keep: frozenset[str], old: str, new: str) -> Inputs:
    inputs = _some_tasks(keep)
    benchmark, run = plain(inputs.benchmark), plain(inputs.run)
    for item in [*benchmark["tasks"], *run["observations"], *run["auxiliary_costs"]]:
        if item["task_id"] == old:
            item["task_id"] = new
    return _roots(
        Inputs(benchmark=tree(benchmark), run=tree(run), registry=inputs.registry, rules=inputs.rules, data={})
    )


@functools.lru_cache(maxsize=512)
def _renamed_artifact(old: str, new: str) -> Inputs:
    inputs = _seed()
    benchmark, run = plain(inputs.benchmark), plain(inputs.run)
    registry = [plain(line) for line in inputs.registry]
    for line in registry[1:]:
        if line["artifact_id"] == old:
            line["artifact_id"] = new
    for task in benchmark["tasks"]:
        for array in ("required_artifacts", "denied_artifacts"):
            task[array] = [new if a == old else a for a in task.get(array, [])]
    for observation in run["observations"]:
        for selected in observation["selected_artifacts"]:
            if selected["artifact_id"] == old:
                selected["artifact_id"] = new
    lines = [tree(line) for line in registry]
    return _roots(Inputs(benchmark=tree(benchmark), run=tree(run), registry=lines, rules=inputs.rules, data={}))


def renamed_task(old: str, new: str) -> Inputs:
    """The seed with task ``old`` called ``new`` in the benchmark and the run, the task root recomputed."""
    task_ids = frozenset(plain(t)["task_id"] for t in plain(_seed().benchmark)["tasks"])
    return _renamed_task(task_ids, old, new).copy()


_ODD_NAMES = st.sampled_from([*ODD_IDS, "x" * 300]) | st.text(max_size=6)


@st.composite
def valid_inputs(draw: st.DrawFn) -> Inputs:
    """The seed; or a benchmark and run cut down to some of its tasks; or
    with one task's or artifact's id replaced everywhere by an odd one; the
    roots recomputed so that the header checks still hold."""
    task_ids = [plain(t)["task_id"] for t in plain(_seed().benchmark)["tasks"]]
    how = draw(st.sampled_from(["seed", "some", "task", "artifact"]))
    if how == "seed":
        return _seed().copy()
    if how == "some":
        return _some_tasks(frozenset(draw(st.sets(st.sampled_from(task_ids), min_size=1, max_size=3)))).copy()
    if how == "task":
        keep = draw(st.lists(st.sampled_from(task_ids), min_size=1, max_size=2, unique=True))
        return _renamed_task(frozenset(keep), draw(st.sampled_from(keep)), draw(_ODD_NAMES)).copy()
    artifact_ids = [plain(line)["artifact_id"] for line in _seed().registry[1:]]
    return _renamed_artifact(draw(st.sampled_from(artifact_ids)), draw(_ODD_NAMES)).copy()


@st.composite
def hostile_inputs(draw: st.DrawFn, kinds: tuple[str, ...]) -> tuple[Inputs, set[str]]:
    """:func:`valid_inputs` with one or two of the files of ``kinds`` changed:
    their trees (:func:`~tests.support.mutations.changed_tree`, or
    :func:`~tests.support.mutations.changed_lines` for the registry), their
    bytes (:func:`~tests.support.mutations.changed_bytes`), both, or swapped
    for another input's bytes. Returns the inputs and the kinds changed."""
    inputs = draw(valid_inputs())
    changed = draw(st.sets(st.sampled_from(kinds), min_size=1, max_size=min(2, len(kinds))))
    for kind in sorted(changed):
        how = draw(st.sampled_from(["tree", "tree", "tree", "bytes", "both", "swap"]))
        if how == "swap":
            inputs.data[kind] = inputs.bytes_of(draw(st.sampled_from([k for k in NAMES if k != kind])))
            continue
        if how != "bytes":
            if kind == "registry":
                inputs.data[kind] = draw(changed_lines(inputs.registry))
            else:
                setattr(inputs, kind, draw(changed_tree(getattr(inputs, kind))))
        if how != "tree":
            inputs.data[kind] = draw(changed_bytes(inputs.bytes_of(kind)))
    return inputs, changed
