"""The evidence of an explanation task that can be checked without an
assessor: its claims are cited, and every citation exists at the frozen
revision (task-context-benchmark-reference.md, "Original task
specifications": "Accurate cited claims and a bound independent
assessment"; whether the claims are accurate is the assessment's).

An answer is ``{"claims": [{"text", "citations": [{"path", "line"}]}]}``.
:func:`citation_problems` names a claim without text or citation, a
citation of a file that is not at the frozen revision, and a line that
file does not have; and an answer with fewer claims than the task's
``min_claims``. Pure: the caller gives the cited files' bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["cited_paths", "citation_problems"]


def _claims(answer: Any) -> list[Any] | None:
    claims = answer.get("claims") if isinstance(answer, dict) else None
    return claims if isinstance(claims, list) else None


def cited_paths(answer: Any) -> list[str]:
    """Every path the answer cites (to be read at the frozen revision), sorted, once each."""
    paths = set()
    for claim in _claims(answer) or []:
        for citation in claim.get("citations", []) if isinstance(claim, dict) else []:
            if isinstance(citation, dict) and isinstance(citation.get("path"), str):
                paths.add(citation["path"])
    return sorted(paths)


def citation_problems(answer: Any, files: Mapping[str, bytes | None], min_claims: int) -> tuple[str, ...]:
    """Why the answer's claims are not all cited with citations that exist;
    empty when they are. ``files``: each cited path's bytes at the frozen
    revision, ``None`` when it is no file there."""
    claims = _claims(answer)
    if claims is None:
        return ("the answer has no list of claims",)
    problems = []
    if len(claims) < min_claims:
        problems.append(f"{len(claims)} claims, fewer than the task's {min_claims}")
    for index, claim in enumerate(claims):
        where = f"claim {index + 1}"
        if not isinstance(claim, dict) or not isinstance(claim.get("text"), str) or not claim["text"].strip():
            problems.append(f"{where} has no text")
            continue
        citations = claim.get("citations")
        if not isinstance(citations, list) or not citations:
            problems.append(f"{where} cites nothing")
            continue
        for citation in citations:
            path = citation.get("path") if isinstance(citation, dict) else None
            line = citation.get("line") if isinstance(citation, dict) else None
            if not isinstance(path, str) or type(line) is not int:
                problems.append(f"{where} has a citation without a path and a line")
                continue
            data = files.get(path)
            if data is None:
                problems.append(f"{where} cites {path}, which is not a file at the frozen revision")
                continue
            count = len(data.decode("utf-8", "replace").split("\n")) - (1 if data.endswith(b"\n") else 0)
            if not 1 <= line <= count:
                problems.append(f"{where} cites {path}:{line}, which has {count} lines")
    return tuple(problems)
