"""Fuzzing the commands' inputs: valid benchmarks, runs, registries and rules
files (the enterprise seed, and smaller or odd-but-consistent ones cut from
it) changed in hostile ways (:mod:`tests.support.mutations`), then read by
the functions ``eceb evaluate``, ``eceb validate``, ``eceb corpus
root|verify|register`` call, in this process; and a few of them by the real
``eceb`` command.

Whatever the change, eceb either accepts the input (an evaluation may then
fail its tasks, a corpus may not verify) or raises its bad-input error
(:class:`~eceb_worker.errors.InputError`), every problem naming one of the
input files; then no report or registry is written and the command exits 3.
Never another exception (exit 70).

The examples per property come from the Hypothesis profile: ``ci`` by
default, ``--hypothesis-profile=long`` for many more (tests/conftest.py).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from eceb_cli import exit_codes
from eceb_cli.main import main
from eceb_worker.corpus.rules import parse_rules
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.errors import InputError, VerificationError
from eceb_worker.families.eceb.report import encode_report
from eceb_worker.io.files import read_input
from eceb_worker.pipeline.embedded import evaluate, verify_corpus
from eceb_worker.pipeline.inputs import check_inputs, load_registry
from eceb_worker.pipeline.jobs import ThisProcess
from eceb_worker.pipeline.register import register_corpus
from eceb_worker.pipeline.validation import kind_of, validate_file
from tests.support.fuzz_inputs import FUZZ, NAMES, SEED, Inputs, hostile_inputs, rejected, renamed_task, seed_inputs
from tests.support.mutations import Obj, Raw, plain, tree

CORPUS = SEED / "corpus"


def registry_paths(benchmark: bytes) -> list[str]:
    """Every string a ``path`` key has in ``benchmark``, when it parses as JSON
    (the registry it names, however its keys repeat)."""
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        found.extend(value for key, value in items if key == "path" and isinstance(value, str))
        return dict(items)

    try:
        json.loads(benchmark, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return []
    return found


@contextmanager
def written(inputs: Inputs) -> Iterator[tuple[dict[str, Path], set[str]]]:
    """The inputs written to a fresh directory: their paths by kind, and the
    names a problem may give (the paths as passed, and the registry the
    benchmark names beside it)."""
    with tempfile.TemporaryDirectory(prefix="eceb-fuzz-") as directory:
        paths = inputs.write(Path(directory))
        named = registry_paths(paths["benchmark"].read_bytes())
        yield paths, {str(path) for path in paths.values()} | {str(Path(directory) / path) for path in named}


def command(*args: str) -> int:
    """``eceb ARGS`` in this process, an internal error raised with its
    traceback (ECEB_DEBUG) rather than turned into exit 70."""
    result = CliRunner().invoke(main, list(args), env={"ECEB_DEBUG": "1"}, catch_exceptions=False)
    assert result.exit_code != exit_codes.INTERNAL, result.stderr
    return result.exit_code


def _evaluate(paths: dict[str, Path]) -> None:
    inputs = check_inputs(str(paths["benchmark"]), str(paths["run"]))
    try:
        report, _ = evaluate(inputs, StorageSpec(source=str(CORPUS)), executor=ThisProcess())
    except VerificationError:
        return  # a registry changed consistently may not match the corpus: a normal outcome
    encode_report(report)


@FUZZ
@given(hostile_inputs(("benchmark", "run", "registry")))
def test_evaluate_rejects_bad_inputs_cleanly(case: tuple[Inputs, set[str]]) -> None:
    inputs, _ = case
    with written(inputs) as (paths, names):
        was_rejected = rejected(names, lambda: _evaluate(paths))
        report = paths["benchmark"].parent / "report.json"
        code = command(
            "evaluate", str(paths["benchmark"]), str(paths["run"]), "--corpus", str(CORPUS), "-o", str(report)
        )
        expected = {exit_codes.BAD_INPUT} if was_rejected else {exit_codes.OK, exit_codes.TASKS_FAILED}
        assert code in expected | {exit_codes.VERIFICATION_FAILED}
        assert report.exists() == (code in {exit_codes.OK, exit_codes.TASKS_FAILED})


@FUZZ
@given(hostile_inputs(("benchmark", "run", "registry", "rules")), st.sampled_from(sorted(NAMES)), st.booleans())
def test_validate_rejects_bad_inputs_cleanly(case: tuple[Inputs, set[str]], kind: str, against: bool) -> None:
    inputs, _ = case
    with written(inputs) as (paths, names):
        path = paths[kind]
        benchmark = paths["benchmark"] if against and kind == "run" else None
        rejected(names, lambda: validate_file(path, kind_of(path), benchmark))
        if benchmark is not None:
            # Given as a run, a file is checked as one, unless it names another kind.
            try:
                named = kind_of(path)
            except InputError:
                named = None
            usage = {exit_codes.USAGE} if named not in {None, "run"} else set()
            code = command("validate", str(path), "--benchmark", str(benchmark))
            assert code in {exit_codes.OK, exit_codes.BAD_INPUT} | usage


def _verify(path: Path) -> None:
    registry = load_registry(path)
    verify_corpus(registry, StorageSpec(source=str(CORPUS)), registry_location=str(path))


@FUZZ
@given(hostile_inputs(("registry",)))
def test_corpus_root_and_verify_reject_bad_registries_cleanly(case: tuple[Inputs, set[str]]) -> None:
    inputs, _ = case
    with written(inputs) as (paths, names):
        rejected(names, lambda: _verify(paths["registry"]))


def _register(path: Path) -> None:
    rules = parse_rules(read_input(path), str(path))
    register_corpus(StorageSpec(source=str(CORPUS)), rules, rules_name=str(path))


@FUZZ
@given(hostile_inputs(("rules",)))
def test_corpus_register_rejects_bad_rules_cleanly(case: tuple[Inputs, set[str]]) -> None:
    inputs, _ = case
    with written(inputs) as (paths, names):
        was_rejected = rejected(names, lambda: _register(paths["rules"]))
        out = paths["rules"].parent / "new-registry.jsonl"
        code = command("corpus", "register", str(CORPUS), "--rules", str(paths["rules"]), "-o", str(out))
        assert code == (exit_codes.BAD_INPUT if was_rejected else exit_codes.OK)
        assert out.exists() == (not was_rejected)


def _seed_with(change: Callable[[Inputs], None]) -> Inputs:
    inputs = seed_inputs()
    change(inputs)
    return inputs


def _deep_kind(inputs: Inputs) -> None:
    line = inputs.registry[1]
    line.pairs = [(k, Raw("[" * 500 + "]" * 500) if k == "kind" else v) for k, v in line.pairs]


def _bracket_task(inputs: Inputs) -> None:
    """A task renamed ``t[1x`` everywhere, whose costs add up beyond 2^53 - 1."""
    renamed = renamed_task("disk-full-escalation", "t[1x")
    run = plain(renamed.run)
    for observation in run["observations"]:
        if observation["task_id"] == "t[1x":
            observation["input_cost_micro_usd"] = 2**53 - 1
    inputs.benchmark, inputs.run, inputs.registry = renamed.benchmark, tree(run), renamed.registry


def _surrogate_quality(inputs: Inputs) -> None:
    observation = inputs.run.pairs[[k for k, _ in inputs.run.pairs].index("observations")][1][0]
    observation.pairs = [(k, Raw('"\\ud800"') if k == "quality_milli" else v) for k, v in observation.pairs]


def _nul_registry_path(inputs: Inputs) -> None:
    reference = dict(inputs.benchmark.pairs)["registry"]
    reference.pairs = [(k, "registry\x00.jsonl" if k == "path" else v) for k, v in reference.pairs]


def _alternations(inputs: Inputs) -> None:
    rule = Obj([("glob", "{a,b}" * 10), ("kind", "code")])
    inputs.rules.pairs = [(k, [rule, *v] if k == "rule" else v) for k, v in inputs.rules.pairs]


def _long_integer(inputs: Inputs) -> None:
    inputs.rules.pairs = [(k, Raw("1" * 5000) if k == "schema" else v) for k, v in inputs.rules.pairs]


def _truncated_run(inputs: Inputs) -> None:
    inputs.data["run"] = inputs.bytes_of("run")[:1000]


def _bom_benchmark(inputs: Inputs) -> None:
    inputs.data["benchmark"] = b"\xef\xbb\xbf" + inputs.bytes_of("benchmark")


def _no_tasks(inputs: Inputs) -> None:
    inputs.benchmark.pairs = [(k, [] if k == "tasks" else v) for k, v in inputs.benchmark.pairs]


def _swapped(inputs: Inputs) -> None:
    inputs.data["benchmark"], inputs.data["run"] = inputs.bytes_of("run"), inputs.bytes_of("benchmark")


def _duplicate_quality(inputs: Inputs) -> None:
    observation = inputs.run.pairs[[k for k, _ in inputs.run.pairs].index("observations")][1][0]
    observation.pairs.insert(0, ("quality_milli", 0))


BAD_INPUTS = {
    "registry line nested 500 deep": _deep_kind,
    "task id with a bracket, costs beyond 2^53 - 1": _bracket_task,
    "lone surrogate in an integer field": _surrogate_quality,
    "NUL in the registry path": _nul_registry_path,
    "glob of ten alternations": _alternations,
    "rules integer of 5000 digits": _long_integer,
    "truncated run": _truncated_run,
    "benchmark behind a BOM": _bom_benchmark,
    "benchmark without tasks": _no_tasks,
    "benchmark and run swapped": _swapped,
    "duplicate key in an observation": _duplicate_quality,
}


def eceb(*args: str) -> tuple[int, str]:
    """The installed ``eceb`` command (beside this interpreter), run as a process."""
    import subprocess

    program = Path(sys.executable).with_name("eceb")
    assert program.exists(), f"{program} is missing: install the package (pip install -e '.[dev]')"
    result = subprocess.run([str(program), *args], capture_output=True, text=True, check=False)
    return result.returncode, result.stderr


@pytest.mark.parametrize("change", list(BAD_INPUTS.values()), ids=list(BAD_INPUTS))
def test_eceb_exits_3_and_writes_nothing_for_bad_inputs(change: Callable[[Inputs], None], tmp_path: Path) -> None:
    paths = _seed_with(change).write(tmp_path)
    out = tmp_path / "out.json"
    if change in {_alternations, _long_integer}:
        args = ["corpus", "register", str(CORPUS), "--rules", str(paths["rules"]), "-o", str(out)]
    else:
        args = ["evaluate", str(paths["benchmark"]), str(paths["run"]), "--corpus", str(CORPUS), "-o", str(out)]
    code, stderr = eceb(*args)
    assert (code, out.exists()) == (exit_codes.BAD_INPUT, False), stderr
    assert "internal error" not in stderr
