"""Where the tests find the checkout and what lies beside it."""

from __future__ import annotations

from pathlib import Path

__all__ = ["EXAMPLES", "REPO", "SHARED"]

REPO = Path(__file__).resolve().parents[2]
"""The checkout."""
EXAMPLES = REPO / "examples"
SHARED = REPO.parent / "shared"
"""``../shared`` beside the checkout: the seeds, the real corpus, the RFC 8785 vectors."""
