"""The provider's strict structured-output rule, checked on an answer
schema before it is frozen."""

from __future__ import annotations

from typing import Any

from eceb_worker.families.paired.answer_schema import strict_schema_problems


def strict(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": sorted(properties), "additionalProperties": False}


def test_a_strict_schema_has_no_problems_at_any_depth() -> None:
    nested: dict[str, Any] = {"type": "string"}
    for _ in range(2000):  # read without recursion
        nested = strict({"inner": nested})
    schema = strict({"claims": {"type": "array", "items": strict({"text": {"type": "string"}})}, "deep": nested})
    assert strict_schema_problems(schema, "answer.schema.json") == []


def test_every_object_schema_is_named_by_its_pointer() -> None:
    loose = {"type": "object", "properties": {"id": {"type": "string"}, "refs": {"type": "string"}}, "required": ["id"]}
    schema = strict(
        {
            "answer": {"anyOf": [loose, {"type": "null"}]},
            "enum": {"enum": [{"properties": {}}]},  # a property named enum is a schema; enum values are data
        }
    )
    schema["$defs"] = {"a/b": {"properties": {"x": {}}, "required": ["x", "y"], "additionalProperties": False}}
    problems = [(p.record, p.field, p.message) for p in strict_schema_problems(schema, "answer.schema.json")]
    assert problems == [
        ("/properties/answer/anyOf/0", "additionalProperties", "must be false"),
        ("/properties/answer/anyOf/0", "required", "must list refs"),
        ("/$defs/a~1b", "required", "names no property y"),
    ]
    assert {p.file for p in strict_schema_problems(schema, "answer.schema.json")} == {"answer.schema.json"}


def test_a_schema_that_is_not_an_object_is_one_problem() -> None:
    assert [p.message for p in strict_schema_problems([], "s.json")] == ["an answer schema must be a JSON object"]
    top = strict_schema_problems({"type": ["object", "null"], "properties": {"a": {}}}, "s.json")
    assert [(p.record, p.field) for p in top] == [("/", "additionalProperties"), ("/", "required")]
