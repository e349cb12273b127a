"""JSON Schemas (2020-12) generated from the wire Structs.

The files in ``schema/`` are :func:`render_schema` of the Structs listed in
:mod:`eceb_worker.documents` (``python -m eceb_worker.documents schema``
writes them); a test regenerates them and fails on any drift, so the Structs
and the published schemas cannot disagree. Error reports validate against
the same schemas (:mod:`eceb_worker.core.decoding`).
"""

from __future__ import annotations

import functools
import json
from typing import Any, Final

import msgspec

from eceb_worker.core.identifiers import published_pattern

__all__ = ["json_schema", "render_schema"]

_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"


@functools.cache
def json_schema(struct: type[msgspec.Struct], name: str = "") -> dict[str, Any]:
    """The JSON Schema document of ``struct``.

    Shape: a 2020-12 schema whose root ``$ref`` points into ``$defs``; with
    ``name`` (a file stem such as ``"artifact-v0.1"``) it also carries the
    ``$id`` and ``title`` it is published under. Patterns the Structs end in
    ``\\Z`` are stated as :func:`~eceb_worker.core.identifiers.published_pattern`
    does: ``$`` and no trailing line break.
    """
    named = {"$id": f"urn:symgliph:eceb:schema:{name}", "title": f"symgliph.eceb/{name}"} if name else {}
    generated: dict[str, Any] = published_pattern(msgspec.json.schema(struct))
    return {"$schema": _DIALECT, **named, **generated}


def render_schema(struct: type[msgspec.Struct], name: str) -> str:
    """The exact text of ``schema/<name>.json``: indented JSON, sorted keys, final newline."""
    return json.dumps(json_schema(struct, name), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
