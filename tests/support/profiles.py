"""How many examples a costly property draws, by Hypothesis profile.

The default profile ``ci`` keeps the quick tier quick: a property whose
every example evaluates a whole run draws a few deterministic examples
there, and its full count under any other profile (``pytest
--hypothesis-profile=long``). The profile is loaded before the test modules
are imported (``tests/conftest.py``, then the Hypothesis plugin), so a
module reads it when it is imported.
"""

from __future__ import annotations

from hypothesis import settings

__all__ = ["examples"]


def examples(ci: int, long: int) -> int:
    """``ci`` under the default profile ``ci``, ``long`` under any other
    (both positive counts of examples, for ``settings(max_examples=...)``)."""
    return ci if settings.get_current_profile_name() == "ci" else long
