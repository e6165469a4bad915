"""Before the first all-reduce the ranks compare what they are about to sum.

A manifest lists ``(name, shape, dtype)`` of the arrays a collective will reduce or broadcast.
Every rank sends its manifest to every other (as JSON: nothing a peer sends is unpickled) and
compares each with rank 0's, so every rank raises the same :class:`~symgraph.core.base.ShapeError`
naming the first difference and the rank, instead of summing arrays that only agree in their
byte count (a (2, 3) and a (3, 2) gradient, float32 and int32).

Example::

    >>> m = manifest_of(["w"], [np.zeros((2, 3), np.float32)])
    >>> first_difference(m, manifest_of(["w"], [np.zeros((3, 2), np.float32)]))
    'w is (2, 3) float32 on rank 0 and (3, 2) float32 on rank 1'
"""
from __future__ import annotations

import json
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ...core.base import ShapeError

Entry = tuple[str, tuple[int, ...], str]


def manifest_of(names: Sequence[str], arrays: Sequence[Any]) -> list[Entry]:
    """``(name, shape, dtype name)`` of each array."""
    return [(str(n), tuple(int(d) for d in a.shape), np.dtype(a.dtype).name)
            for n, a in zip(names, arrays)]


def encode(manifest: Sequence[Entry]) -> bytes:
    return json.dumps([[n, list(s), d] for n, s, d in manifest]).encode()


def decode(data: bytes, rank: int) -> list[Entry]:
    """A peer's manifest; ShapeError naming ``rank`` when it is not one."""
    try:
        return [(str(n), tuple(int(d) for d in s), str(t)) for n, s, t in json.loads(data)]
    except (ValueError, TypeError) as exc:
        raise ShapeError(f"manifest: rank {rank} sent something that is not a manifest "
                         f"({exc})") from None


def _describe(entry: Entry) -> str:
    return f"{tuple(entry[1])} {entry[2]}"


def first_difference(base: Sequence[Entry], other: Sequence[Entry], rank: int = 1
                     ) -> Optional[str]:
    """How ``other`` (rank ``rank``'s) first differs from ``base`` (rank 0's), or None."""
    for i, (a, b) in enumerate(zip(base, other)):
        if a[0] != b[0]:
            return f"array {i} is {a[0]} on rank 0 and {b[0]} on rank {rank}"
        if a != b:
            return f"{a[0]} is {_describe(a)} on rank 0 and {_describe(b)} on rank {rank}"
    if len(base) != len(other):
        return (f"rank 0 has {len(base)} arrays and rank {rank} has {len(other)} (the first "
                f"extra is {(list(base) + list(other))[min(len(base), len(other))][0]})")
    return None


def check(manifest: Sequence[Entry], allgather: Callable[[bytes], list[bytes]],
          what: str) -> None:
    """Compare every rank's ``manifest`` with rank 0's; the same ShapeError on every rank,
    naming the first difference of the lowest differing rank."""
    parts = allgather(encode(manifest))
    base = decode(parts[0], 0)
    for rank, part in enumerate(parts[1:], 1):
        diff = first_difference(base, decode(part, rank), rank)
        if diff is not None:
            raise ShapeError(f"{what}: the ranks disagree before the first all-reduce: {diff}; "
                             f"they run different models or parameter sets")
