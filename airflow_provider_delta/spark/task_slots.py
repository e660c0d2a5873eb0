"""Spread groups of work (a file to rewrite, a batch of rows to insert) evenly over a few Spark tasks.

``frame.groupBy(group).applyInArrow(...)`` leaves the placement of the groups to the shuffle: hash
partitioning puts several large groups in one task and none in another, and adaptive execution merges
small partitions, so on two cores one task often runs long after the other finished. Here the driver
assigns each group a *slot* (longest first, to the least loaded slot, by an estimated cost) and the
rows carry the slot's key, an integer chosen so that Spark's partitioning sends it to partition
``slot``: ``frame.repartition(n, SLOT)`` then gives exactly one task per slot (a repartition to a fixed
number is never coalesced), and ``groupBy(SLOT, group)`` needs no second shuffle.

Spark's hash partitioning is ``pmod(murmur3_x86_32(value, seed 42), n)``; :func:`spark_hash_int` is that
hash of an int. Were it ever to differ, only the balance would suffer: rows of one group always share a
slot key, so each group still reaches one task whole.

Example:
    >>> balanced_slots([5, 3, 3, 2], 2)
    [0, 1, 1, 0]
    >>> [spark_hash_int(k) % 2 for k in slot_keys(2)]
    [0, 1]
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["SLOT", "balanced_slots", "slot_keys", "spark_hash_int"]

SLOT = "__delta_task_slot"
"""The column holding a row's slot key (int)."""

_MASK = 0xFFFFFFFF
_SEED = 42  # Spark's HashPartitioning seed (Murmur3Hash's default)


def _rotl(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK


def spark_hash_int(value: int, seed: int = _SEED) -> int:
    """Spark's ``hash(value)`` of an int column (Murmur3 x86 32-bit, signed), as its hash partitioning computes it.

    Example:
        >>> spark_hash_int(0), spark_hash_int(1)
        (933211791, -559580957)
    """
    k1 = (value & _MASK) * 0xCC9E2D51 & _MASK
    k1 = _rotl(k1, 15) * 0x1B873593 & _MASK
    h1 = _rotl(seed & _MASK ^ k1, 13)
    h1 = (h1 * 5 + 0xE6546B64) & _MASK
    h1 ^= 4  # the input's length in bytes
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & _MASK
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def slot_keys(slots: int) -> list[int]:
    """For each slot ``j < slots``, the smallest int >= 0 that Spark's hash partitioning sends to partition ``j``."""
    keys: dict[int, int] = {}
    value = 0
    while len(keys) < slots:
        keys.setdefault(spark_hash_int(value) % slots, value)
        value += 1
    return [keys[j] for j in range(slots)]


def balanced_slots(costs: Sequence[float], slots: int) -> list[int]:
    """Each item's slot: largest cost first, to the slot with the least cost so far (ties: lowest slot)."""
    loads = [(0.0, j) for j in range(max(1, slots))]
    out = [0] * len(costs)
    for item in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        load, slot = heapq.heappop(loads)
        out[item] = slot
        heapq.heappush(loads, (load + costs[item], slot))
    return out
