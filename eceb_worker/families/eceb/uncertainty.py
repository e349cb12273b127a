"""Seeded bootstrap percentile intervals of savings (ECEB-0.1 §16, §18), in
integers only.

ECEB-0.1 §16 asks a report for "uncertainty or a statement that it was not
estimated"; §18 leaves confidence intervals unstandardized. eceb's choice,
exact and reproducible from the run alone:

* **Stream.** A 32-byte seed keys BLAKE3 in counter mode: block ``i`` (``i =
  0, 1, 2, ...``) is the first :data:`BLOCK_BYTES` bytes of the keyed BLAKE3
  extendable output of the 8-byte little-endian ``i``; the stream is the
  blocks in order, read as unsigned 64-bit little-endian words.
* **Draws.** A draw below ``n`` takes the next word ``w`` and returns ``w mod
  n`` unless ``w >= 2^64 - (2^64 mod n)``, when it discards ``w`` and takes
  the next (rejection sampling: every value below ``n`` is equally likely).
* **Seeds.** A task's seed is BLAKE3 in key-derivation mode, context
  :data:`TASK_SEED_CONTEXT`, of the canonical JSON array ``[task_id,
  records_digest]`` (the task's records digest, of which the run digest is
  made: known to the shard that evaluates the task, whatever the shard).
  A summary figure's seed is the same, context :data:`SUMMARY_SEED_CONTEXT`,
  of ``[run_digest, figure]`` with ``figure`` ``"token"`` or ``"cost"``.
* **Task resamples.** ``B`` = :data:`RESAMPLES` resamples of the baseline
  group's ``n`` repetitions with replacement (the stream's first ``B × n``
  draws below ``n``, resample ``b`` the draws ``b × n .. b × n + n − 1``), then
  ``B`` of the compiled group's ``m`` (the next ``B × m`` draws below ``m``);
  resample ``b`` of the task pairs baseline resample ``b`` with compiled
  resample ``b``, a repetition's tokens and cost drawn together. Each
  recomputes the figures as the report does (floored means of prompt
  tokens; of cost, the group's auxiliary cost added to the sum before the
  division, as in
  :class:`~eceb_worker.families.eceb.verdicts.GroupResult`), then
  :func:`~eceb_worker.core.arithmetic.savings_bps`, which saturates at 0.
* **Summary resamples.** ``B`` resamples of the ``k`` passing tasks'
  reported savings (in task id order) with replacement (``B × k`` draws
  below ``k``, cut likewise), each the floored mean of its ``k`` values.
* **Interval.** The resampled values sorted ascending, ``v``; the interval
  is ``[v[lower], v[upper]]`` with ``lower = floor(B × 250 / 10,000)`` and
  ``upper = ceil(B × 9,750 / 10,000) − 1`` (:func:`percentile_interval`):
  ``v[25]`` and ``v[974]`` for ``B`` = 1,000, a 95 % interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

import blake3
import msgspec
import numpy as np
import numpy.typing as npt

from eceb_worker.core.arithmetic import BPS, savings_bps
from eceb_worker.core.canonical import canonical_json

__all__ = [
    "BLOCK_BYTES",
    "NOT_ESTIMATED",
    "DrawStream",
    "Interval",
    "Repetitions",
    "Uncertainty",
    "UncertaintyMode",
    "bootstrap_uncertainty",
    "mean_interval",
    "percentile_interval",
    "summary_seed",
    "task_intervals",
    "task_seed",
]

RESAMPLES: Final = 1_000
"""Bootstrap resamples ``B`` of every interval."""

CONFIDENCE_BPS: Final = 9_500
"""Coverage of every interval, in basis points (95 %)."""

BLOCK_BYTES: Final = 4096
"""Bytes of one counter block of the stream (512 words)."""

TASK_SEED_CONTEXT: Final = "symgliph.eceb 0.1 bootstrap seed of a task"
SUMMARY_SEED_CONTEXT: Final = "symgliph.eceb 0.1 bootstrap seed of a summary figure"

_TWO_64: Final = 1 << 64
_INT64_BOUND: Final = 1 << 63

Interval = tuple[int, int]
"""``(lower, upper)`` basis points, ``lower <= upper``."""

UncertaintyMode = Literal["bootstrap", "none"]
"""What ``eceb evaluate --uncertainty`` asks for: estimate, or state that it was not."""

Method = Literal["bootstrap_percentile", "not_estimated"]


class Uncertainty(msgspec.Struct, frozen=True, kw_only=True):
    """How a report's intervals were estimated (ECEB-0.1 §16).

    Fields:
        method: ``bootstrap_percentile`` (this module), or ``not_estimated``
            (the report states that uncertainty was not estimated; every
            interval is ``null``).
        resamples: bootstrap resamples per interval; 0 when not estimated.
        confidence_bps: coverage in basis points (9,500); 0 when not estimated.
        seed: the 32-byte seed of the summary's token interval, hex
            (:func:`summary_seed`, from the run digest), so a reader can
            check the derivation; ``None`` when not estimated.
    """

    method: Method
    resamples: int
    confidence_bps: int
    seed: str | None


NOT_ESTIMATED: Final = Uncertainty(method="not_estimated", resamples=0, confidence_bps=0, seed=None)
"""The statement that uncertainty was not estimated (and what a report without the field means)."""


def bootstrap_uncertainty(run_digest: str) -> Uncertainty:
    """The :class:`Uncertainty` of a report estimated with this module."""
    return Uncertainty(
        method="bootstrap_percentile",
        resamples=RESAMPLES,
        confidence_bps=CONFIDENCE_BPS,
        seed=summary_seed(run_digest, "token").hex(),
    )


def task_seed(task_id: str, records_digest: str) -> bytes:
    """The 32-byte seed of a task's intervals (see the module docstring)."""
    return bytes(
        blake3.blake3(canonical_json([task_id, records_digest]), derive_key_context=TASK_SEED_CONTEXT).digest()
    )


def summary_seed(run_digest: str, figure: Literal["token", "cost"]) -> bytes:
    """The 32-byte seed of a summary figure's interval (see the module docstring)."""
    material = canonical_json([run_digest, figure])
    return bytes(blake3.blake3(material, derive_key_context=SUMMARY_SEED_CONTEXT).digest())


class DrawStream:
    """Uniform integer draws from a seed: keyed BLAKE3 in counter mode, with
    rejection sampling (see the module docstring). Deterministic: the same
    seed gives the same draws on every platform."""

    def __init__(self, seed: bytes) -> None:
        if len(seed) != 32:
            raise ValueError(f"a seed is 32 bytes, got {len(seed)}")
        self._seed = seed
        self._counter = 0
        self._block = b""
        self._position = 0

    def _take(self, count: int) -> npt.NDArray[np.uint64]:
        """The next ``count`` words of the stream (64-bit little-endian)."""
        need = 8 * count
        left = len(self._block) - self._position
        if need <= left:
            taken = self._block[self._position : self._position + need]
            self._position += need
        else:
            blocks = -(-(need - left) // BLOCK_BYTES)
            fresh = b"".join(
                blake3.blake3(counter.to_bytes(8, "little"), key=self._seed).digest(length=BLOCK_BYTES)
                for counter in range(self._counter, self._counter + blocks)
            )
            self._counter += blocks
            taken = self._block[self._position :] + fresh[: need - left]
            self._block = fresh[-BLOCK_BYTES:]
            self._position = need - left - (blocks - 1) * BLOCK_BYTES
        return np.frombuffer(taken, dtype="<u8")

    def indices(self, n: int, count: int) -> npt.NDArray[np.uint64]:
        """The next ``count`` uniform integers in ``0..n-1``, in stream order,
        as an array (exact unsigned 64-bit arithmetic). Raises ValueError
        unless ``1 <= n <= 2^64``."""
        if not 1 <= n <= _TWO_64:
            raise ValueError(f"draws are below 1..2^64, not {n}")
        if n == _TWO_64:
            return self._take(count)
        divisor = np.uint64(n)
        rejected = _TWO_64 % n  # 0 when n divides 2^64: no word is rejected
        limit = np.uint64(_TWO_64 - rejected) if rejected else None
        parts: list[npt.NDArray[np.uint64]] = []
        drawn = 0
        while drawn < count:  # a rejected word is skipped; the next words replace it
            words = self._take(count - drawn)
            if limit is not None and bool((words >= limit).any()):
                words = words[words < limit]
            parts.append(words % divisor)
            drawn += len(words)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def draws(self, n: int, count: int) -> list[int]:
        """The next ``count`` uniform integers in ``0..n-1``, in stream order
        (:meth:`indices` as Python integers). Raises ValueError unless ``1 <= n <= 2^64``."""
        drawn: list[int] = self.indices(n, count).tolist()
        return drawn

    def below(self, n: int) -> int:
        """The next uniform integer in ``0..n-1`` (see :meth:`draws`)."""
        return self.draws(n, 1)[0]


def percentile_interval(values: Sequence[int], confidence_bps: int = CONFIDENCE_BPS) -> Interval:
    """The percentile interval of ``B = len(values)`` resampled values:
    sorted ascending, ``[v[floor(B × t / 10,000)], v[ceil(B × (10,000 − t) / 10,000) − 1]]``
    with the tail ``t = (10,000 − confidence_bps) / 2`` (250 for 95 %).
    Raises ValueError for no values or an odd tail."""
    if not values:
        raise ValueError("an interval of no values")
    if (BPS - confidence_bps) % 2 or not 0 < confidence_bps < BPS:
        raise ValueError(f"confidence {confidence_bps} bps leaves no even tail")
    ordered = sorted(values)
    count, tail = len(ordered), (BPS - confidence_bps) // 2
    lower = count * tail // BPS
    upper = -(-count * (BPS - tail) // BPS) - 1
    return ordered[lower], ordered[upper]


class Repetitions(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One group's per-repetition figures, in repetition order.

    Fields:
        tokens: provider-reported prompt tokens of each repetition.
        costs: input + output cost of each repetition, micro-USD.
        auxiliary: the group's auxiliary cost, micro-USD, added to every
            resample's cost sum (as the group's cost figure adds it).
    """

    tokens: tuple[int, ...]
    costs: tuple[int, ...]
    auxiliary: int = 0


def _mean_positive(values: Sequence[int], extra: int) -> bool:
    """Whether every resample of ``values`` has a positive floored mean of
    ``(sum + extra) / n``: the smallest possible one, ``n × min + extra``, is."""
    count = len(values)
    return (count * min(values) + extra) // count > 0


def task_intervals(
    seed: bytes, baseline: Repetitions, compiled: Repetitions, *, cost: bool, resamples: int = RESAMPLES
) -> tuple[Interval | None, Interval | None]:
    """The bootstrap percentile intervals of a passing task's token and cost
    savings, basis points (see the module docstring).

    ``cost`` says whether the task has a cost saving (a positive baseline
    cost). Each interval is ``None`` (not estimated) when a group has a
    single repetition (its variation cannot be seen), and the figure's when
    some resample's baseline mean could be 0 (no saving is defined against
    it). Raises ValueError when a group has no repetition.
    """
    n, m = len(baseline.tokens), len(compiled.tokens)
    if n == 0 or m == 0:
        raise ValueError("a bootstrap needs repetitions in both groups")
    if n == 1 or m == 1:
        return None, None
    want_tokens = _mean_positive(baseline.tokens, 0)
    want_cost = cost and _mean_positive(baseline.costs, baseline.auxiliary)
    if not want_tokens and not want_cost:
        return None, None
    varies = any(len(set(values)) > 1 for values in (baseline.tokens, baseline.costs, compiled.tokens, compiled.costs))
    if not varies:  # every resample is the point estimate: no draw changes it
        token = savings_bps(baseline.tokens[0], compiled.tokens[0]) if want_tokens else None
        full = (n * baseline.costs[0] + baseline.auxiliary) // n
        part = (m * compiled.costs[0] + compiled.auxiliary) // m
        saved = savings_bps(full, part) if want_cost else None
        return (
            None if token is None else (token, token),
            None if saved is None else (saved, saved),
        )
    draws = DrawStream(seed)
    full_tokens, full_cost = _resampled_sums(draws, resamples, baseline.tokens, baseline.costs)
    part_tokens, part_cost = _resampled_sums(draws, resamples, compiled.tokens, compiled.costs)
    tokens = (
        percentile_interval([savings_bps(f // n, p // m) for f, p in zip(full_tokens, part_tokens, strict=True)])
        if want_tokens
        else None
    )
    spent: Interval | None = None
    if want_cost:
        extra_full, extra_part = baseline.auxiliary, compiled.auxiliary
        spent = percentile_interval(
            [
                savings_bps((f + extra_full) // n, (p + extra_part) // m)
                for f, p in zip(full_cost, part_cost, strict=True)
            ]
        )
    return tokens, spent


def _resampled_sums(
    draws: DrawStream, resamples: int, values: Sequence[int], paired: Sequence[int] = ()
) -> tuple[list[int], list[int]]:
    """The sums of ``resamples`` resamples of ``values`` (and of ``paired``,
    the same repetitions drawn), each the next ``len(values)`` draws below
    ``len(values)``: one resample's draws held at a time, not all of them."""
    size = len(values)
    sums: list[int] = []
    paired_sums: list[int] = []
    largest = max(map(abs, [*values, *paired]))
    if largest * size < _INT64_BOUND:  # every sum fits a signed 64-bit integer: summed exactly in C
        held = np.asarray(values, dtype=np.int64)
        held_paired = np.asarray(paired, dtype=np.int64)
        for _ in range(resamples):
            picks = draws.indices(size, size)
            sums.append(int(held[picks].sum()))
            if paired:
                paired_sums.append(int(held_paired[picks].sum()))
        return sums, paired_sums
    for _ in range(resamples):
        chosen = draws.draws(size, size)
        sums.append(sum(map(values.__getitem__, chosen)))
        if paired:
            paired_sums.append(sum(map(paired.__getitem__, chosen)))
    return sums, paired_sums


def mean_interval(seed: bytes, values: Sequence[int], *, resamples: int = RESAMPLES) -> Interval | None:
    """The bootstrap percentile interval of the floored mean of ``values``
    (passing tasks' savings, basis points, in task id order): ``k`` draws
    below ``k`` per resample. ``None`` (not estimated) for fewer than two
    values: one task shows no variation between tasks."""
    count = len(values)
    if count < 2:
        return None
    if len(set(values)) == 1:  # every resample is the point estimate
        return values[0], values[0]
    means = [total // count for total in _resampled_sums(DrawStream(seed), resamples, values)[0]]
    return percentile_interval(means)
