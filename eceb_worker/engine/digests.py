"""BLAKE3 digests of source bytes (ECEB-0.1 §5)."""

from __future__ import annotations

from collections.abc import Iterable

import blake3

__all__ = ["HashedBytes", "digest_bytes", "digest_chunks"]

HashedBytes = tuple[int, str]
"""``(size_bytes, digest)``: length of the bytes and their BLAKE3-256 in lowercase hex."""


def digest_bytes(data: bytes | memoryview) -> str:
    """BLAKE3-256 of ``data``, 64 lowercase hex characters."""
    return blake3.blake3(data).hexdigest()


def digest_chunks(chunks: Iterable[bytes | memoryview]) -> HashedBytes:
    """Hash a stream of chunks in constant memory; returns ``(size_bytes, digest)``."""
    hasher = blake3.blake3()
    size = 0
    for chunk in chunks:
        hasher.update(chunk)
        size += len(chunk)
    return size, hasher.hexdigest()
