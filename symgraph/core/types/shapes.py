"""Shapes as values: checked conversion of user shapes, and merging partially known ones.

Shared by the inferences (``types/infer_shape``) and the ops' shape rules (``ops/_util``
imports them for the ops).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..base import ShapeError

Shape = tuple[int, ...]


def fmt(shape: Optional[Sequence[int]]) -> str:
    return "unknown" if shape is None else str(tuple(shape))


MAX_ELEMENTS = 1 << 48
"""Larger arrays cannot be allocated anywhere symgraph runs; a shape past this is an error
(it also keeps element counts far from int64 overflow)."""


def as_dim(d: object, what: str) -> int:
    """``d`` as a dimension: an integral, non-negative number (3.5 is refused, not truncated)."""
    ok = isinstance(d, (int, np.integer)) or (isinstance(d, (float, np.floating))
                                              and float(d).is_integer())
    if isinstance(d, (bool, np.bool_)) or not ok:
        raise ShapeError(f"{what}: dimension {d!r} is not an integer")
    if d < 0:
        raise ShapeError(f"{what}: dimension {int(d)} is negative")
    return int(d)


def as_shape(s: object, what: str) -> Shape:
    """``s`` as a shape tuple of non-negative ints, at most ``MAX_ELEMENTS`` elements."""
    if type(s) is tuple and all(type(d) is int and d >= 0 for d in s):
        shape = s  # already one (what most rules return): only the size is left to check
    elif isinstance(s, (str, bytes)) or not isinstance(s, Sequence | np.ndarray):
        raise ShapeError(f"{what}: {s!r} is not a shape (a tuple of integers)")
    else:
        shape = tuple(as_dim(d, what) for d in s)
    size = 1
    for d in shape:
        size *= d
    if size > MAX_ELEMENTS:
        raise ShapeError(f"{what}: shape {shape} has {size} elements, more than the "
                         f"{MAX_ELEMENTS} symgraph can allocate")
    return shape


def merge_dims(a: Shape, b: Shape) -> Optional[Shape]:
    """Two shapes with 0 as an unknown dimension as one; None if they contradict."""
    if len(a) != len(b) or any(x and y and x != y for x, y in zip(a, b)):
        return None
    return tuple(x or y for x, y in zip(a, b))
