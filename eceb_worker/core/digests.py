"""BLAKE3 digests of source bytes and documents (ECEB-0.1 §5, §16), and
their wire types."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Final

import blake3
import msgspec

__all__ = ["CHECK_READS", "Digest", "HashedBytes", "RecordDigest", "digest_bytes", "digest_chunks", "is_digest"]

HashedBytes = tuple[int, str]
"""``(size_bytes, digest)``: length of the bytes and their BLAKE3-256 in lowercase hex."""

CHECK_READS: Final = 3
"""Reads of one artifact's or input's bytes, the first included, when they
fail a check (the registered digest, or a checksum the store sent) before the
failure is reported: bytes corrupted on their way are read again, never
reported on the first read (see docs/INTERPRETATIONS.md, "Bytes corrupted in
transit")."""

DIGEST_PATTERN: Final = "^[0-9a-f]{64}\\Z"
_DIGEST: Final = re.compile(DIGEST_PATTERN)

Digest = Annotated[
    str,
    msgspec.Meta(
        pattern=DIGEST_PATTERN,
        description="BLAKE3-256 digest, 64 lowercase hexadecimal characters.",
    ),
]

RecordDigest = Annotated[
    str,
    msgspec.Meta(
        min_length=64,
        max_length=64,
        extra_json_schema={"pattern": DIGEST_PATTERN},
        description="BLAKE3-256 digest, 64 lowercase hexadecimal characters.",
    ),
]
"""A digest in a record that occurs millions of times (observations, registry
lines). Decoding checks only its length; the schema states the full pattern,
and the checks use :func:`is_digest` on the distinct values, which is much
cheaper than a regular expression per field while decoding."""


def is_digest(value: str) -> bool:
    """True for 64 lowercase hexadecimal characters."""
    return _DIGEST.fullmatch(value) is not None


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
