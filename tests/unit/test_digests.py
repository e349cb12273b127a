"""BLAKE3-256 digests of known inputs (official BLAKE3 test vectors)."""

from __future__ import annotations

import pytest

from eceb_worker.core.digests import digest_bytes, digest_chunks


def vector_input(length: int) -> bytes:
    """The official BLAKE3 test-vector input: bytes 0..250 repeating."""
    return bytes(i % 251 for i in range(length))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"),
        (b"abc", "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"),
        (vector_input(1025), "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"),
    ],
)
def test_known_digests(data: bytes, expected: str) -> None:
    assert digest_bytes(data) == expected
    assert digest_chunks([data[:7], data[7:]]) == (len(data), expected)


def test_chunking_does_not_change_the_digest() -> None:
    data = vector_input(300_000)
    chunks = [data[i : i + 4097] for i in range(0, len(data), 4097)]
    assert digest_chunks(chunks) == (len(data), digest_bytes(data))
