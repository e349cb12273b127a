"""Decoding hostile JSON: deep nesting, lone surrogates and duplicate keys
are bad input named by record and field, never an internal error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eceb_worker.core.decoding import decode_document
from eceb_worker.corpus.registry import read_registry
from eceb_worker.corpus.rules import parse_rules
from eceb_worker.errors import InputError, Problem
from eceb_worker.families.eceb.benchmark import Benchmark
from eceb_worker.families.eceb.run_index import index_run
from eceb_worker.families.eceb.shards import record_problems_of_run
from tests.support.helpers import artifact, registry_bytes
from tests.support.paths import REPO

SEED = REPO / "examples" / "enterprise-seed"


def registry_problems(data: bytes) -> list[Problem]:
    with pytest.raises(InputError) as caught:
        read_registry(data, "reg.jsonl")
    return caught.value.problems


def seed_registry() -> list[bytes]:
    return registry_bytes(artifact("a", content=b"1"), artifact("b", content=b"2")).splitlines(keepends=True)


def located(problems: list[Problem]) -> set[tuple[str, str]]:
    return {(p.record, p.field) for p in problems}


def benchmark_problems(text: str) -> list[Problem]:
    with pytest.raises(InputError) as caught:
        decode_document(text.encode("utf-8", "surrogatepass"), Benchmark, file="b.json")
    return caught.value.problems


def run_problems(text: str) -> list[Problem]:
    """Every problem of a run's header and records (as ``eceb validate`` checks it)."""
    data = text.encode("utf-8", "surrogatepass")
    try:
        run = index_run(data, file="run.json")
    except InputError as exc:
        return exc.problems
    problems = list(run.unkeyed) + record_problems_of_run(run, None)
    assert problems, "the run was accepted"
    return problems


def seed_text(name: str) -> str:
    return (SEED / name).read_text(encoding="utf-8")


def with_observation_field(field: str, value: str, index: int = 0) -> str:
    run = json.loads(seed_text("run.json"))
    text = json.dumps(run["observations"][index])
    changed = text.replace("{", "{" + json.dumps(field) + ": " + value + ", ", 1)
    run["observations"][index] = "@@"
    return json.dumps(run).replace('"@@"', changed)


@pytest.mark.parametrize("depth", [500, 1000, 10000])
def test_deep_nesting_in_a_registry_line_names_line_and_field(depth: int) -> None:
    lines = seed_registry()
    lines[2] = b'{"kind": ' + b"[" * depth + b"]" * depth + b', "artifact_id": "x"}\n'
    problems = registry_problems(b"".join(lines))
    assert ("line 3", "kind") in located(problems)
    assert any("nested too deeply" in p.message for p in problems if p.field == "kind")


@pytest.mark.parametrize("depth", [500, 1000, 10000])
def test_deep_nesting_in_a_benchmark_task_names_task_and_field(depth: int) -> None:
    text = seed_text("benchmark.json").replace(
        '"minimum_quality_milli": 700', '"minimum_quality_milli": ' + "[" * depth + "]" * depth, 1
    )
    problems = benchmark_problems(text)
    assert ("tasks[0]", "minimum_quality_milli") in located(problems)
    assert all(p.record for p in problems)


@pytest.mark.parametrize("depth", [500, 1000, 10000])
def test_deep_nesting_in_an_observation_names_it(depth: int) -> None:
    problems = run_problems(with_observation_field("x", "[" * depth + "]" * depth, index=3))
    assert ("observations[3]", "x") in located(problems)
    assert any("nested too deeply" in p.message for p in problems)


@pytest.mark.parametrize("depth", [500, 1000, 10000])
def test_deep_nesting_in_a_run_header_names_the_field(depth: int) -> None:
    text = seed_text("run.json").replace('"run_id":', '"run_id": ' + '{"a": ' * depth + "1" + "}" * depth + ', "x":', 1)
    problems = run_problems(text)
    assert ("", "run_id") in located(problems)


@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "\\ud800\\u0041", "\\udc80"])
def test_lone_surrogate_in_a_registry_field_names_line_and_field(escape: str) -> None:
    lines = seed_registry()
    lines[1] = lines[1].replace(b'"artifact_id":"', b'"artifact_id":"' + escape.encode(), 1)
    problems = registry_problems(b"".join(lines))
    assert located(problems) == {("line 2", "artifact_id")}
    assert "surrogate" in problems[0].message
    str(InputError(problems)).encode("utf-8")


@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "\\ud800\\u0041"])
def test_lone_surrogate_in_an_integer_field(escape: str) -> None:
    lines = seed_registry()
    lines[1] = lines[1].replace(b'"size_bytes":1', b'"size_bytes":"' + escape.encode() + b'"', 1)
    assert ("line 2", "size_bytes") in located(registry_problems(b"".join(lines)))
    text = seed_text("benchmark.json").replace(
        '"minimum_quality_milli": 700', f'"minimum_quality_milli": "{escape}"', 1
    )
    problems = benchmark_problems(text)
    assert ("tasks[0]", "minimum_quality_milli") in located(problems)
    problems = run_problems(with_observation_field("quality_milli", f'"{escape}"', index=2))
    assert ("observations[2]", "quality_milli") in located(problems)
    for problem in problems:
        str(problem).encode("utf-8")


@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "\\ud800\\u0041"])
def test_lone_surrogate_in_any_string_names_record_and_field(escape: str) -> None:
    text = seed_text("benchmark.json").replace('"query": "', f'"query": "{escape}', 1)
    assert located(benchmark_problems(text)) == {("tasks[0]", "query")}
    text = seed_text("run.json").replace('"run_id": "', f'"run_id": "{escape}', 1)
    assert located(run_problems(text)) == {("", "run_id")}
    run = json.loads(seed_text("run.json"))
    run["observations"][4]["answer"] = "@@"
    text = json.dumps(run).replace('"@@"', f'"an answer {escape}"', 1)
    assert located(run_problems(text)) == {("observations[4]", "answer")}


def test_duplicate_key_in_a_registry_line_is_named_with_the_other_problems() -> None:
    lines = seed_registry()
    lines[1] = lines[1].replace(b'"kind":', b'"kind":"code","kind":', 1)
    lines[2] = lines[2].replace(b'"kind":"runbook"', b'"kind":"wiki"', 1)
    problems = registry_problems(b"".join(lines))
    assert located(problems) == {("line 2", "kind"), ("line 3", "kind")}
    assert "duplicate key" in problems[0].message


def test_duplicate_key_spelled_with_an_escape_is_found() -> None:
    lines = seed_registry()
    lines[2] = lines[2].replace(b'"kind":', b'"\\u006bind":"code","kind":', 1)
    assert located(registry_problems(b"".join(lines))) == {("line 3", "kind")}


def test_duplicate_keys_in_a_large_registry_are_each_found() -> None:
    artifacts = [artifact(f"a{i:05}", content=str(i).encode()) for i in range(20000)]
    lines = registry_bytes(*artifacts).splitlines(keepends=True)
    lines[7] = lines[7].replace(b'"size_bytes":', b'"size_bytes":3,"size_bytes":', 1)
    lines[19000] = lines[19000].replace(b'"path":', b'"path" : "zz", "path":', 1)
    problems = registry_problems(b"".join(lines))
    assert located(problems) == {("line 8", "size_bytes"), ("line 19001", "path")}


def test_duplicate_keys_in_a_benchmark_task_and_at_top_level() -> None:
    text = seed_text("benchmark.json").replace(
        '"minimum_quality_milli": 700', '"minimum_quality_milli": 700, "minimum_quality_milli": 100', 1
    )
    text = text.replace('"benchmark_id":', '"benchmark_id": "other", "benchmark_id":', 1)
    assert located(benchmark_problems(text)) == {("", "benchmark_id"), ("tasks[0]", "minimum_quality_milli")}


def test_a_duplicate_is_reported_with_every_other_problem_of_the_run(tmp_path: Path) -> None:
    text = with_observation_field("quality_milli", "0", index=5)
    text = text.replace('"claim_class": "conformance_seed"', '"claim_class": "nonsense"', 1)
    assert {("observations[5]", "quality_milli"), ("", "claim_class")} <= located(run_problems(text))


def test_duplicate_key_in_an_observation_and_in_the_run_header() -> None:
    text = with_observation_field("quality_milli", "0", index=5)
    assert located(run_problems(text)) == {("observations[5]", "quality_milli")}
    text = with_observation_field("budget", "null", index=0)
    assert located(run_problems(text)) == {("observations[0]", "budget")}
    text = seed_text("run.json").replace('"run_id": ', '"run_id": "x", "run_id": ', 1)
    assert located(run_problems(text)) == {("", "run_id")}
    text = seed_text("run.json").replace('"revision": ', '"revision": "x", "revision": ', 1)
    assert located(run_problems(text)) == {("configurations[0]", "model.revision")}


def test_repeated_optional_key_is_found_beside_a_record_that_omits_it() -> None:
    run = json.loads(seed_text("run.json"))
    first, second = run["observations"][0], run["observations"][1]
    assert first["task_id"] == second["task_id"]
    del second["cached_input_tokens"]
    first["cached_input_tokens"] = "@@"
    text = json.dumps(run).replace('"@@"', '1, "cached_input_tokens": 2', 1)
    problems = run_problems(text)
    assert ("observations[0]", "cached_input_tokens") in located(problems)


def test_an_escaped_quote_in_a_valid_run_is_still_valid() -> None:
    run = json.loads(seed_text("run.json"))
    run["observations"][3]["answer"] = 'say "yes" \\ \u00e9'
    index = index_run(json.dumps(run).encode(), file="run.json")
    assert index.unkeyed == ()
    assert record_problems_of_run(index, None) == []


@pytest.mark.parametrize("depth", [100, 500, 1000, 10000])
def test_deep_nesting_in_a_rules_file_is_bad_input(depth: int) -> None:
    nested = "x = " + "[" * depth + "]" * depth
    text = seed_text("rules.toml").replace('glob = "code/**"', nested + '\nglob = "code/**"', 1)
    with pytest.raises(InputError) as caught:
        parse_rules(text.encode(), "rules.toml")
    assert [p.message for p in caught.value.problems if "nested too deeply" in p.message]
    assert "recursion" not in str(caught.value)


def test_a_key_the_header_repeats_is_reported_with_the_records_problems() -> None:
    text = with_observation_field("quality_milli", "0", index=5).replace('"run_id": ', '"run_id": "x", "run_id": ', 1)
    assert located(run_problems(text)) == {("", "run_id"), ("observations[5]", "quality_milli")}


def test_a_message_repeats_at_most_a_bounded_part_of_the_value() -> None:
    """A document that is one huge array is named briefly, never echoed whole."""
    [problem] = benchmark_problems(json.dumps(list(range(100_000))))
    assert problem.message.endswith(" characters) is not of type 'object'")
    assert problem.message.startswith("[0, 1, 2, 3,")
    assert len(problem.message) < 300


def test_a_container_cut_for_its_depth_is_shown_as_an_ellipsis() -> None:
    """What stands for a container nested too deeply is never shown (it holds a per-process token)."""
    problems = benchmark_problems("[" + "[" * 70 + "]" * 70 + ", 1]")
    assert any("nested too deeply" in p.message for p in problems)
    shown = [p.message for p in problems if "is not of type 'object'" in p.message]
    assert shown and all("'...'" in m and "eceb:" not in m and "\x00" not in m for m in shown)
