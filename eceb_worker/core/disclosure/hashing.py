"""Hashes of tokens and of windows of tokens, in bulk (numpy), for the
disclosure check's lookups (ECEB-0.1 §1, §17).

A *zero-separated* buffer holds normalised tokens (:mod:`.text`) as bytes,
every other byte 0: a NUL byte before the first token and at least
:data:`PAD` NUL bytes after the last (so that an 8-byte load at any token
start stays inside it). A token's hash depends on its bytes only (its
length, its first 8 bytes and its last 8: every byte of a token of up to
16), a window's on its tokens' hashes in order, so the same tokens give the
same hash wherever they are.
Hashes only find candidates: every candidate is compared byte for byte
before it counts (equal hashes of different windows cost time, never a
finding).

All arithmetic is modulo 2**64 on numpy ``uint64`` arrays (which wrap).
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["ASCII_FOLD", "Hashes", "Positions", "padded", "token_bounds", "token_hashes", "window_hashes"]

Hashes = npt.NDArray[np.uint64]
Positions = npt.NDArray[np.int64]

PAD: Final = 16
"""NUL bytes a zero-separated buffer ends with."""


def _ascii_fold() -> bytes:
    table = bytearray(range(256))
    for code in range(128):
        char = chr(code)
        table[code] = ord(char.lower()) if char.isalnum() else 0
    return bytes(table)


ASCII_FOLD: Final = _ascii_fold()
"""``bytes.translate`` table: an ASCII letter to its lower case, an ASCII
digit to itself, any other ASCII byte to 0 (a separator), a byte from 0x80
on to itself (never a separator: the caller handles non-ASCII text)."""

_MASKS: Final = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
_K0: Final = np.uint64(0x9E3779B97F4A7C15)
_K1: Final = np.uint64(0xBF58476D1CE4E5B9)
_K2: Final = np.uint64(0x94D049BB133111EB)
_K3: Final = np.uint64(0xC2B2AE3D27D4EB4F)
_BASE: Final = 0x100000001B3
"""The odd base of the window polynomial."""


def _inverse(value: int) -> int:
    """The inverse of odd ``value`` modulo 2**64 (Newton's iteration)."""
    inverse = 1
    for _ in range(7):
        inverse = (inverse * (2 - value * inverse)) % (1 << 64)
    return inverse


def _powers(value: int, size: int) -> Hashes:
    """``value**k`` modulo 2**64 for k in ``0..size-1``."""
    powers = np.ones(size, dtype=np.uint64)
    np.cumprod(np.full(size - 1, value, dtype=np.uint64), dtype=np.uint64, out=powers[1:])
    return powers


class _Powers:
    """``base**k`` and ``base**-k`` modulo 2**64 for k up to a length, grown
    on demand (replaced whole, so a reader on another thread sees either
    the old pair or the new one)."""

    def __init__(self) -> None:
        self.pair = (_powers(_BASE, 1 << 16), _powers(_inverse(_BASE), 1 << 16))

    def upto(self, length: int) -> tuple[Hashes, Hashes]:
        up, down = self.pair
        if len(up) < length:
            size = max(length, 2 * len(up))
            up, down = self.pair = (_powers(_BASE, size), _powers(_inverse(_BASE), size))
        return up[:length], down[:length]


_POWERS: Final = _Powers()


def padded(stream: bytes) -> bytes:
    """``stream`` (tokens and separators, separators 0) as a zero-separated buffer."""
    return b"\0" + stream + b"\0" * PAD


def token_bounds(buffer: bytes) -> tuple[Positions, Positions]:
    """The ``[start, end)`` of every token of a zero-separated ``buffer``,
    as offsets into it, in order."""
    nonzero = np.frombuffer(buffer, dtype=np.uint8) != 0
    edges = np.flatnonzero(nonzero[1:] != nonzero[:-1]) + 1
    return edges[0::2], edges[1::2]


def token_hashes(buffer: bytes, starts: Positions, ends: Positions) -> Hashes:
    """The hash of each token ``buffer[starts[i]:ends[i]]`` of a
    zero-separated ``buffer``: of its length, its first 8 bytes and its last 8."""
    if not len(starts):
        return np.zeros(0, dtype=np.uint64)
    words = np.ndarray(shape=(len(buffer) - 7,), dtype="<u8", buffer=buffer, strides=(1,))
    lengths = ends - starts
    hashes = (words[starts] & _MASKS[np.minimum(lengths, 8)]) ^ (lengths.astype(np.uint64) * _K0)
    hashes *= _K1
    long = np.flatnonzero(lengths > 8)
    if len(long):  # with the first 8, the last 8 bytes cover a token of up to 16 whole
        hashes[long] ^= words[ends[long] - 8] * _K3
    hashes ^= hashes >> np.uint64(31)
    hashes *= _K2
    hashes ^= hashes >> np.uint64(29)
    mixed: Hashes = hashes
    return mixed


def window_hashes(hashes: Hashes, n: int) -> Hashes:
    """The hash of every window of ``n`` consecutive tokens, from their
    tokens' ``hashes`` (``len(hashes) - n + 1`` of them, none when fewer
    than ``n``): ``sum(hashes[t + m] * base**m)`` over ``m < n``."""
    count = len(hashes) - n + 1
    if count <= 0:
        return np.zeros(0, dtype=np.uint64)
    up, down = _POWERS.upto(len(hashes) + 1)
    prefix = np.zeros(len(hashes) + 1, dtype=np.uint64)
    np.cumsum(hashes * up[: len(hashes)], out=prefix[1:])
    return (prefix[n:] - prefix[:count]) * down[:count]
