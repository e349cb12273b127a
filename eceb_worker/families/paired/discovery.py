"""The success evidence of a discovery task: exactly the IDs and references
its declared selector derives from the repository at the frozen revision
(task-context-benchmark-reference.md, "Original task specifications":
"Exact selector-derived required IDs and references").

:func:`derive` applies a :class:`~eceb_worker.families.paired.specs.Selector`
to the files it names (their bytes at the frozen revision, given by the
caller): every match of its pattern is a required ID, and each match's
``path:line`` a required reference. :func:`discovery_problems` compares an
answer (``{"ids": [...], "references": [{"id", "path", "line"}]}``) with
that derivation: the answer passes only when both sets are equal, no more,
no fewer. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec

from eceb_worker.families.paired.specs import Selector

__all__ = ["Derived", "Reference", "derive", "discovery_problems", "selected"]


class Reference(msgspec.Struct, frozen=True, order=True):
    """One required reference: ``id`` found in file ``path`` (repository
    path) at ``line`` (1-based)."""

    id: str
    path: str
    line: int


class Derived(msgspec.Struct, frozen=True, kw_only=True):
    """What a selector derives: the required ``ids`` and ``references``, sorted."""

    ids: tuple[str, ...]
    references: tuple[Reference, ...]


def selected(selector: Selector, paths: list[str]) -> list[str]:
    """The repository files (from ``paths``, every file path at the frozen
    revision) the selector searches: each one equal to, or under, one of
    its ``paths``; sorted."""
    roots = [path.rstrip("/") for path in selector.paths]
    return sorted(p for p in paths if any(root in (".", "") or p == root or p.startswith(f"{root}/") for root in roots))


def derive(selector: Selector, files: Mapping[str, bytes]) -> Derived:
    """The required IDs and references of ``selector`` over ``files``
    (repository path to bytes, the selected files at the frozen revision).
    Bytes are read as UTF-8 with invalid bytes replaced; lines are split on
    ``\\n``. Raises ``re.error`` for a pattern Python cannot compile (the
    freeze refuses such a task)."""
    pattern = re.compile(selector.pattern)
    references: set[Reference] = set()
    for path, data in files.items():
        for number, line in enumerate(data.decode("utf-8", "replace").split("\n"), 1):
            for found in pattern.finditer(line):
                if found.group():
                    references.add(Reference(found.group(), path, number))
    ordered = tuple(sorted(references))
    return Derived(ids=tuple(sorted({reference.id for reference in ordered})), references=ordered)


def _answer_references(value: Any) -> set[Reference] | None:
    if not isinstance(value, list):
        return None
    found: set[Reference] = set()
    for item in value:
        if not isinstance(item, dict):
            return None
        id_, path, line = item.get("id"), item.get("path"), item.get("line")
        if not (isinstance(id_, str) and isinstance(path, str) and type(line) is int):
            return None
        found.add(Reference(id_, path, line))
    return found


def discovery_problems(answer: Any, derived: Derived) -> tuple[str, ...]:
    """Why ``answer`` (the decoded answer) is not exactly ``derived``; empty
    when it is. Names every missing and every extra ID and reference."""
    if not isinstance(answer, dict) or not isinstance(answer.get("ids"), list):
        return ("the answer has no list of ids",)
    ids = answer["ids"]
    if not all(isinstance(i, str) for i in ids):
        return ("the answer's ids are not all strings",)
    references = _answer_references(answer.get("references"))
    if references is None:
        return ("the answer's references are not a list of {id, path, line}",)
    problems = []
    wanted_ids, given_ids = set(derived.ids), set(ids)
    problems += [f"missing id {i}" for i in sorted(wanted_ids - given_ids)]
    problems += [f"id {i} is not required" for i in sorted(given_ids - wanted_ids)]
    wanted, given = set(derived.references), references
    problems += [f"missing reference {r.id} at {r.path}:{r.line}" for r in sorted(wanted - given)]
    problems += [f"reference {r.id} at {r.path}:{r.line} is not required" for r in sorted(given - wanted)]
    return tuple(problems)
