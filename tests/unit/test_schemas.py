"""Published JSON Schemas: generated from the Structs, valid 2020-12, and matching the example files."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from eceb_worker.core.schemas import json_schema
from eceb_worker.documents import DOCUMENTS, render
from eceb_worker.families import Document
from tests.support.paths import REPO

SCHEMA_DIR = REPO / "schema"


def published() -> list[str]:
    return sorted(d.schema_file for d in DOCUMENTS)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: d.schema_file)
def test_schema_file_is_generated_from_the_structs(document: Document) -> None:
    name = document.schema_file
    assert (SCHEMA_DIR / name).read_text(encoding="utf-8") == render(document), (
        f"schema/{name} drifted: run `python -m eceb_worker.documents schema`"
    )


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda d: d.schema_file)
def test_errors_are_checked_against_the_published_schema(document: Document) -> None:
    """Error reports validate against the same schema, bar its name."""
    published = json.loads((SCHEMA_DIR / document.schema_file).read_text(encoding="utf-8"))
    assert {k: v for k, v in published.items() if k not in ("$id", "title")} == json.loads(
        json.dumps(json_schema(document.struct))
    )


@pytest.mark.parametrize("name", published())
def test_schema_is_valid_2020_12(name: str) -> None:
    document = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(document)


def test_no_stray_schema_files() -> None:
    assert sorted(p.name for p in SCHEMA_DIR.glob("*.json")) == published()


def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8")))


@pytest.mark.parametrize("registry", sorted(REPO.glob("examples/*/registry.jsonl")), ids=lambda p: p.parent.name)
def test_example_registries_validate(registry: Path) -> None:
    header, *artifacts = registry.read_text(encoding="utf-8").splitlines()
    validator("registry-header-v0.1.json").validate(json.loads(header))
    artifact = validator("artifact-v0.1.json")
    for line in artifacts:
        artifact.validate(json.loads(line))


@pytest.mark.parametrize("rules", sorted(REPO.glob("examples/*/rules.toml")), ids=lambda p: p.parent.name)
def test_example_rules_validate(rules: Path) -> None:
    validator("rules-v0.1.json").validate(tomllib.loads(rules.read_text(encoding="utf-8")))


def _documents_of_examples() -> list[tuple[Path, str]]:
    """Every JSON file under examples/ whose ``schema`` field names a published document, with its schema file."""
    schema_files = {document.schema_id: document.schema_file for document in DOCUMENTS}
    found = []
    for path in sorted(REPO.glob("examples/**/*.json")):
        value = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(value, dict) and value.get("schema") in schema_files:
            found.append((path, schema_files[value["schema"]]))
    return found


@pytest.mark.parametrize(
    ("example", "schema_file"),
    _documents_of_examples(),
    ids=lambda value: value if isinstance(value, str) else str(value.relative_to(REPO / "examples")),
)
def test_example_documents_validate(example: Path, schema_file: str) -> None:
    validator(schema_file).validate(json.loads(example.read_text(encoding="utf-8")))


def test_paired_example_documents_are_all_checked() -> None:
    checked = {schema for _, schema in _documents_of_examples()}
    assert {
        "pair-benchmark-v0.1.json",
        "pair-declaration-v0.1.json",
        "pair-explanation-v0.1.json",
        "pair-discovery-v0.1.json",
        "pair-verification-v0.1.json",
    } <= checked


def test_every_published_document_schema_has_an_example() -> None:
    names = {p.name for p in REPO.glob("examples/*/*.json")}
    assert {"benchmark.json", "run.json"} <= names
