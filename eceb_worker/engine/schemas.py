"""JSON Schemas (2020-12) generated from the wire Structs.

The files in ``schema/`` are the output of :func:`write_schemas`
(``python -m eceb_worker.engine.schemas schema/``); a test regenerates them and
fails on any drift, so the Structs and the published schemas cannot disagree.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, Final

import msgspec

from eceb_worker.engine.artifacts import Artifact, RegistryHeader

__all__ = ["SCHEMA_FILES", "schema_for", "write_schemas"]

_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"

SCHEMA_FILES: Final[dict[str, type[msgspec.Struct]]] = {
    "artifact-v0.1.json": Artifact,
    "registry-header-v0.1.json": RegistryHeader,
}
"""File name in ``schema/`` -> the Struct it describes."""


def _register_extra() -> None:
    """Import the modules whose Structs also publish schemas (kept lazy to avoid cycles)."""
    from eceb_worker.engine.benchmark import Benchmark
    from eceb_worker.engine.report import Report
    from eceb_worker.engine.rules import RulesFile
    from eceb_worker.engine.run import Run
    from eceb_worker.engine.verification import VerificationReport

    SCHEMA_FILES.setdefault("benchmark-v0.1.json", Benchmark)
    SCHEMA_FILES.setdefault("report-v0.1.json", Report)
    SCHEMA_FILES.setdefault("rules-v0.1.json", RulesFile)
    SCHEMA_FILES.setdefault("run-v0.1.json", Run)
    SCHEMA_FILES.setdefault("verification-v0.1.json", VerificationReport)


@functools.cache
def schema_for(file_name: str) -> dict[str, Any]:
    """The JSON Schema document published as ``schema/<file_name>``.

    Shape: a 2020-12 schema whose root ``$ref`` points into ``$defs``.
    Raises KeyError for an unknown file name.
    """
    _register_extra()
    struct = SCHEMA_FILES[file_name]
    generated = msgspec.json.schema(struct)
    stem = file_name.removesuffix(".json")
    return {
        "$schema": _DIALECT,
        "$id": f"urn:symgliph:eceb:schema:{stem}",
        "title": f"symgliph.eceb/{stem}",
        **generated,
    }


def render(file_name: str) -> str:
    """The exact text of ``schema/<file_name>``: indented JSON, sorted keys, final newline."""
    return json.dumps(schema_for(file_name), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_schemas(directory: Path) -> list[Path]:
    """Write every published schema into ``directory``; returns the paths written."""
    _register_extra()
    written = []
    for name in sorted(SCHEMA_FILES):
        target = directory / name
        target.write_text(render(name), encoding="utf-8")
        written.append(target)
    return written


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    for path in write_schemas(Path(sys.argv[1] if len(sys.argv) > 1 else "schema")):
        print(path)
