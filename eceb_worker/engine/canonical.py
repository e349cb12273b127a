"""Canonical JSON (RFC 8785, JSON Canonicalization Scheme).

eceb does not write its own canonicalizer: it delegates to the ``rfc8785``
package, which the test suite checks against the RFC's official vectors.
"""

from __future__ import annotations

from typing import Any

import rfc8785

from eceb_worker.errors import InputError, Problem

__all__ = ["canonical_json"]


def canonical_json(value: Any, *, where: str = "value") -> bytes:
    """Return the RFC 8785 canonical UTF-8 bytes of a JSON-compatible value.

    ``value`` is built of dict (str keys), list, str, int, float, bool, None.
    Raises :class:`InputError` naming ``where`` when the value cannot be
    canonicalized (a lone surrogate in a string, a non-finite float, an
    integer beyond the IEEE 754 safe range, a non-str key).
    """
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, UnicodeEncodeError, TypeError) as exc:
        raise InputError([Problem(file=where, message=f"cannot canonicalize: {exc}")]) from exc
