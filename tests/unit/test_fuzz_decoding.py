"""Fuzzing the pure decoders with hostile bytes (:mod:`tests.support.mutations`):
rules files, registries, benchmarks and runs changed from the enterprise
seed's, decoded in memory. Each either decodes or raises
:class:`~eceb_worker.errors.InputError` whose every problem names the file;
never another exception. The same inputs, read from files by the commands'
functions: ``tests/integration/test_fuzz_inputs.py``."""

from __future__ import annotations

from hypothesis import given

from eceb_worker.core.decoding import decode_document
from eceb_worker.corpus.registry import read_registry
from eceb_worker.corpus.rules import parse_rules
from eceb_worker.errors import InputError
from eceb_worker.families.eceb.benchmark import Benchmark
from eceb_worker.families.eceb.consistency import benchmark_problems
from eceb_worker.families.eceb.run_index import index_run
from eceb_worker.families.eceb.shards import record_problems_of_run
from tests.support.fuzz_inputs import FUZZ, SEED, Inputs, hostile_inputs, rejected

REGISTRY = read_registry((SEED / "registry.jsonl").read_bytes(), "registry.jsonl")


@FUZZ
@given(hostile_inputs(("rules",)))
def test_parse_rules_names_every_problem(case: tuple[Inputs, set[str]]) -> None:
    data = case[0].bytes_of("rules")
    rejected({"rules.toml"}, lambda: parse_rules(data, "rules.toml"))


@FUZZ
@given(hostile_inputs(("registry",)))
def test_read_registry_names_every_problem(case: tuple[Inputs, set[str]]) -> None:
    data = case[0].bytes_of("registry")
    rejected({"registry.jsonl"}, lambda: read_registry(data, "registry.jsonl"))


def _benchmark(data: bytes) -> None:
    benchmark = decode_document(data, Benchmark, file="benchmark.json")
    problems = benchmark_problems(benchmark, REGISTRY.by_id(), REGISTRY.corpus_root, file="benchmark.json")
    if problems:
        raise InputError(problems)


@FUZZ
@given(hostile_inputs(("benchmark",)))
def test_decode_benchmark_names_every_problem(case: tuple[Inputs, set[str]]) -> None:
    data = case[0].bytes_of("benchmark")
    rejected({"benchmark.json"}, lambda: _benchmark(data))


def _run(data: bytes) -> None:
    run = index_run(data, file="run.json")
    problems = [*run.unkeyed, *record_problems_of_run(run, None)]
    if problems:
        raise InputError(problems)


@FUZZ
@given(hostile_inputs(("run",)))
def test_index_run_names_every_problem(case: tuple[Inputs, set[str]]) -> None:
    data = case[0].bytes_of("run")
    rejected({"run.json"}, lambda: _run(data))
