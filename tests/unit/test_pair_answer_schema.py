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


def test_a_schema_the_runner_could_not_use_is_refused_before_it_is_frozen() -> None:
    """Freeze refuses what would only fail once an execution is paid: a
    reference that resolves nowhere or is remote, nesting past the limit,
    repeated keys, a document the metaschema rejects."""
    import json

    from eceb_worker.families.paired.answer_schema import usable_schema_problems
    from eceb_worker.families.paired.outcome import answer_problems

    def problems(data: bytes) -> list[str]:
        return [f"{p.record} {p.field}: {p.message}".strip() for p in usable_schema_problems(data, "s.json")[1]]

    dangling = json.dumps(
        {"type": "object", "properties": {"claims": {"$ref": "#/$defs/nope"}}, "required": ["claims"]}
    ).encode()
    assert problems(dangling) == ["/properties/claims $ref: '#/$defs/nope' resolves to nothing in the schema"]
    assert answer_problems('{"claims": 1}', dangling)[0].startswith("answer: the captured answer schema cannot check")
    assert problems(b'{"$ref": "https://example.com/s.json"}') == ["/ $ref: must be local (#/...)"]
    resolving = b'{"$defs": {"c": {"type": "string"}}, "properties": {"$ref": {"$ref": "#/$defs/c"}}}'
    assert problems(resolving) == []
    assert problems(b'{"type": "objekt"}')[0].startswith("/type : not a JSON Schema 2020-12")
    deep = b'{"items":' * 5000 + b"{}" + b"}" * 5000
    assert any("nested too deeply" in problem for problem in problems(deep))
    assert any("more than once" in problem or "repeated" in problem for problem in problems(b'{"a": 1, "a": 2}'))
    assert answer_problems("{}", deep)[0].startswith("answer: the captured answer schema is not JSON")


def test_what_the_validator_itself_cannot_take_is_a_problem_never_a_crash() -> None:
    """A reference to a value that is no schema, a pattern the regex engine
    refuses, and an answer integer too large for ``multipleOf``'s float: each
    is named, at freeze and when an answer is checked."""
    import json

    from eceb_worker.families.paired.answer_schema import usable_schema_problems
    from eceb_worker.families.paired.outcome import answer_problems

    properties = {"a": {"$ref": "#/required"}}
    to_a_list = json.dumps(
        {"type": "object", "properties": properties, "required": ["a"], "additionalProperties": False}
    ).encode()
    [problem] = usable_schema_problems(to_a_list, "s.json")[1]
    assert (problem.record, problem.field) == ("/properties/a", "$ref") and "a list, not a schema" in problem.message
    assert answer_problems('{"a": 1}', to_a_list)[0].startswith("answer: the captured answer schema cannot check it")
    overflowing = b'{"type": "string", "pattern": "a{99999999999}"}'
    assert any("cannot be checked" in p.message for p in usable_schema_problems(overflowing, "s.json")[1])
    assert answer_problems('"a"', overflowing)[0].startswith("answer: the captured answer schema cannot be checked")
    multiple = b'{"type": "integer", "multipleOf": 1.5}'
    assert usable_schema_problems(multiple, "s.json")[1] == []
    assert answer_problems("9" * 400, multiple)[0].startswith("answer: the captured answer schema cannot check it")
