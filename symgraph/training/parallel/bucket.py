"""Gradient buckets: contiguous runs of gradients, in reverse order of production.

Backward produces the gradients of the last layers first, so the parameters are walked from the
last to the first and cut into buckets of at most ``limit_bytes`` (a gradient larger than the
limit gets a bucket of its own). The first bucket is complete soonest; an all-reduce of it can
start while backward is still computing the earlier layers (DDP's order, 25 MB by default).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ...core.base import AttrError

DEFAULT_BUCKET_BYTES = 25 * 1024 * 1024


@dataclass(frozen=True)
class Bucket:
    """Indices (into the parameter list) of the gradients reduced together, and their bytes."""

    indices: tuple[int, ...]
    nbytes: int


def make_buckets(nbytes: Sequence[int], limit_bytes: int = DEFAULT_BUCKET_BYTES,
                 production_order: Sequence[int] = ()) -> list[Bucket]:
    """Buckets over gradients of ``nbytes[i]`` bytes. ``production_order`` lists the
    gradient indices in the order backward writes them (default: the reverse of the
    parameter order, which is the forward order); buckets follow it."""
    if limit_bytes <= 0:
        raise AttrError(f"bucket size must be positive, got {limit_bytes} bytes")
    order = list(production_order) or list(range(len(nbytes)))[::-1]
    if sorted(order) != list(range(len(nbytes))):
        raise AttrError(f"production order {order} is not a permutation of the "
                        f"{len(nbytes)} gradients")
    buckets: list[Bucket] = []
    current: list[int] = []
    size = 0
    for i in order:
        if current and size + nbytes[i] > limit_bytes:
            buckets.append(Bucket(tuple(current), size))
            current, size = [], 0
        current.append(i)
        size += int(nbytes[i])
    if current:
        buckets.append(Bucket(tuple(current), size))
    return buckets
