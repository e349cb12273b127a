"""Ids and exact patterns: control and invisible format characters refused
in every id, a trailing line break refused by every pattern, both by eceb's
own decoding and by the published schemas under the ``jsonschema`` library
``eceb validate`` uses; JSON syntax errors located by line and column."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator

from eceb_worker.core.decoding import decode_document, record_problems
from eceb_worker.core.identifiers import (
    ID_PATTERN,
    identifier_problem,
    is_identifier,
    published_pattern,
)
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.errors import InputError
from eceb_worker.families.eceb.benchmark import Benchmark
from eceb_worker.families.eceb.consistency import task_record_problems
from eceb_worker.families.eceb.declarations import Declarations
from eceb_worker.families.eceb.run import Observation
from tests.support.paths import REPO

SEED = REPO / "examples" / "enterprise-seed"
SCHEMAS = REPO / "schema"
TERMINAL_ESCAPES = "T-1\x1b]0;owned\x07\x1b[2K\x1b[1A\r"
REFUSED = [TERMINAL_ESCAPES, "a\x00b", "a\x7f", "a\x9bb", "evil\u202egnp.exe", "a\u2028b", "a\u200bb", "\ufeffa", "a\n"]
ACCEPTED = ["T-1", "tâche ü 1", "docs/runbook db.md", "数据-1", "a b"]
DIGEST = "0" * 64


def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((SCHEMAS / name).read_text(encoding="utf-8")))


def _seed_benchmark() -> dict[str, Any]:
    value: dict[str, Any] = json.loads((SEED / "benchmark.json").read_text(encoding="utf-8"))
    return value


@pytest.mark.parametrize("value", REFUSED)
def test_an_id_with_a_control_or_format_character_is_refused_everywhere(value: str) -> None:
    assert not is_identifier(value)
    assert identifier_problem(value) or value.endswith("\n")
    benchmark = _seed_benchmark()
    benchmark["tasks"][2]["task_id"] = value
    data = json.dumps(benchmark).encode()
    with pytest.raises(InputError) as caught:
        decode_document(data, Benchmark, file="benchmark.json")
    [problem] = caught.value.problems
    assert (problem.file, problem.record, problem.field) == ("benchmark.json", "tasks[2]", "task_id")
    assert not any(c in problem.message for c in value if not c.isprintable())  # shown escaped
    assert list(_validator("benchmark-v0.1.json").iter_errors(benchmark))


@pytest.mark.parametrize("value", ACCEPTED)
def test_ids_of_any_printable_text_are_accepted(value: str) -> None:
    assert is_identifier(value) and identifier_problem(value) == ""
    benchmark = _seed_benchmark()
    benchmark["tasks"][2]["task_id"] = value
    assert decode_document(json.dumps(benchmark).encode(), Benchmark, file="b").tasks[2].task_id == value
    assert not list(_validator("benchmark-v0.1.json").iter_errors(benchmark))


def test_the_message_names_the_character_escaped_and_where() -> None:
    benchmark = _seed_benchmark()
    benchmark["tasks"][2]["task_id"] = TERMINAL_ESCAPES
    with pytest.raises(InputError) as caught:
        decode_document(json.dumps(benchmark).encode(), Benchmark, file="benchmark.json")
    message = caught.value.problems[0].message
    assert "'\\x1b' (U+001B) at character 4 (and 4 more)" in message
    assert "\x1b" not in message and "\r" not in message and "\x07" not in message
    assert "'\\u202e' (U+202E) at character 5" in identifier_problem("evil\u202egnp")


def test_every_id_field_of_a_benchmark_refuses_a_control_character() -> None:
    benchmark = _seed_benchmark()
    benchmark["benchmark_id"] = "b\x1b"
    benchmark["tasks"][0]["required_artifacts"][0] = "a\x1b"
    benchmark["tasks"][1]["denied_artifacts"] = ["a\r"]
    benchmark["secret_spans"] = [{"artifact_id": "s\x07", "start": 0, "end": 1}]
    with pytest.raises(InputError) as caught:
        decode_document(json.dumps(benchmark).encode(), Benchmark, file="b")
    found = {(p.record, p.field) for p in caught.value.problems}
    assert found == {
        ("", "benchmark_id"),
        ("tasks[0]", "required_artifacts[0]"),
        ("tasks[1]", "denied_artifacts[0]"),
        ("secret_spans[0]", "artifact_id"),
    }


def test_declarations_refuse_a_control_character_in_a_task_id() -> None:
    data = {
        "schema": "symgliph.eceb/declarations-v0.1",
        "exclusions": [{"task_id": "t\x1b[2K", "reason": "r"}],
        "timeouts": [{"task_id": "t\u2029", "strategy": "compiled", "description": "d"}],
    }
    with pytest.raises(InputError) as caught:
        decode_document(json.dumps(data).encode(), Declarations, file="d")
    assert {(p.record, p.field, p.message.split(" holds ")[1][:8]) for p in caught.value.problems} == {
        ("exclusions[0]", "task_id", "'\\x1b' ("),
        ("timeouts[0]", "task_id", "'\\u2029'"),
    }


def test_registry_lines_refuse_a_control_character_in_an_artifact_id() -> None:
    from eceb_worker.corpus.lines import artifact_line

    line = {
        "artifact_id": "a\x1b[1A",
        "path": "a.md",
        "kind": "code",
        "classification": "public",
        "source_digest": DIGEST,
        "size_bytes": 1,
    }
    _, problems = artifact_line(json.dumps(line).encode() + b"\n", 7, "registry.jsonl")
    [problem] = problems
    assert (problem.record, problem.field) == ("line 7", "artifact_id")
    assert "'\\x1b' (U+001B) at character 2" in problem.message
    assert list(_validator("artifact-v0.1.json").iter_errors(line))


def test_observation_ids_are_checked_once_per_distinct_value() -> None:
    run = json.loads((SEED / "run.json").read_text(encoding="utf-8"))
    observation = {**run["observations"][0], "task_id": "t\x1b"}
    observation["selected_artifacts"][1]["artifact_id"] = "x\r"
    decoded = msgspec.convert(observation, Observation)
    found = task_record_problems("t\x1b", None, [(0, decoded)], [], {}, file="run.json", benchmark_known=False)
    fields = {(p.problem.record, p.problem.field) for p in found if "U+" in p.problem.message}
    assert fields == {("observations[0]", "task_id"), ("observations[0]", "selected_artifacts[1].artifact_id")}
    run_schema = json.loads((SCHEMAS / "run-v0.1.json").read_text(encoding="utf-8"))
    checker = Draft202012Validator({"$ref": "#/$defs/Observation", "$defs": run_schema["$defs"]})
    assert {tuple(e.absolute_path) for e in checker.iter_errors(observation)} == {
        ("task_id",),
        ("selected_artifacts", 1, "artifact_id"),
    }


@pytest.mark.parametrize(
    ("schema", "path", "value"),
    [
        ("benchmark-v0.1.json", ("registry", "corpus_root"), DIGEST + "\n"),
        ("benchmark-v0.1.json", ("tasks", 0, "task_id"), "T-1\n"),
        ("benchmark-v0.1.json", ("benchmark_id",), "b\n"),
    ],
)
def test_a_trailing_line_break_is_refused_by_decoding_and_by_the_published_schema(
    schema: str, path: tuple[str | int, ...], value: str
) -> None:
    benchmark = _seed_benchmark()
    node: Any = benchmark
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    errors = list(_validator(schema).iter_errors(benchmark))
    assert [tuple(e.absolute_path) for e in errors] == [path]
    with pytest.raises(InputError) as caught:
        decode_document(json.dumps(benchmark).encode(), Benchmark, file="b")
    [problem] = caught.value.problems
    assert problem.message.endswith("ends with a line break")


def test_paired_patterns_refuse_a_trailing_line_break() -> None:
    from eceb_worker.families.paired.records import GitId
    from eceb_worker.families.paired.specs import Identifier as PairId

    for kind, good in ((PairId, "pair-1"), (GitId, "a" * 40)):
        assert msgspec.convert(good, kind) == good
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert(good + "\n", kind)
    schema = json.loads((SCHEMAS / "pair-benchmark-v0.1.json").read_text(encoding="utf-8"))
    checker = Draft202012Validator(schema["$defs"]["PairBenchmark"]["properties"]["id"])
    assert not list(checker.iter_errors("pair-1")) and list(checker.iter_errors("pair-1\n"))


def _unanchored(node: Any) -> list[Any]:
    """The schemas under ``node`` stating a pattern without refusing a trailing line break."""
    if isinstance(node, list):
        return [found for value in node for found in _unanchored(value)]
    if not isinstance(node, dict):
        return []
    found = [found for value in node.values() for found in _unanchored(value)]
    stated = node.get("pattern")
    if isinstance(stated, str) and stated != "\n$" and node.get("not") != {"type": "string", "pattern": "\n$"}:
        found.append(node)
    return found


def test_every_published_pattern_is_exact_in_python_and_refuses_a_trailing_line_break() -> None:
    for path in sorted(SCHEMAS.glob("*.json")):
        text = path.read_text(encoding="utf-8")
        assert "\\\\Z" not in text, path.name  # no Python-only anchor is published
        assert _unanchored(json.loads(text)) == [], path.name


def test_published_pattern_states_an_exact_pattern_for_any_validator() -> None:
    stated = published_pattern({"type": "string", "pattern": "^[a-z]+\\Z", "items": [{"pattern": "^x\\Z"}]})
    assert stated == {
        "type": "string",
        "pattern": "^[a-z]+$",
        "not": {"type": "string", "pattern": "\n$"},
        "items": [{"pattern": "^x$", "not": {"type": "string", "pattern": "\n$"}}],
    }
    checker = Draft202012Validator(published_pattern({"pattern": ID_PATTERN}))
    assert not list(checker.iter_errors("ok")) and not list(checker.iter_errors(7))
    assert list(checker.iter_errors("ok\n")) and list(checker.iter_errors("o\x1bk"))


def test_a_syntax_error_is_located_by_byte_line_and_column() -> None:
    lines = (SEED / "benchmark.json").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[17] = lines[17].replace('"', "", 1)
    data = "".join(lines).encode()
    with pytest.raises(InputError) as caught:
        decode_document(data, Benchmark, file="benchmark.json")
    [problem] = caught.value.problems
    column = len(lines[17]) - len(lines[17].lstrip()) + 1
    byte = len("".join(lines[:17]).encode()) + column - 1
    assert problem.message.startswith(f"invalid JSON at byte {byte} (line 18, column {column}): Expecting")
    assert "other checks wait until it is valid JSON" in problem.message


def test_a_syntax_error_in_a_json_lines_record_names_the_file_line_and_column() -> None:
    [problem] = record_problems(b'{"artifact_id": x}\n', Artifact, file="registry.jsonl", record="line 12", line=12)
    assert problem.message == "invalid JSON at line 12, column 17: Expecting value"
