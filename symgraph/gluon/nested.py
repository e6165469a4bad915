"""Nested block arguments and results (an RNN layer's ``(x, [h, c])``, a bidirectional
unroll's ``(outputs, [states...])``): flattened to a list of leaves for tracing, and the
leaves regrouped afterwards.

A format is ``None`` for a leaf, else a tuple of formats, one per item (lists come back as
lists, as MXNet's ``_regroup`` gives them).

Example::

    leaves, fmt = flatten((x, [h, c]))   # [x, h, c], (None, (None, None))
    regroup(leaves, fmt)                 # [x, [h, c]]
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

Format = Optional[tuple]


def flatten(obj: Any) -> tuple[list, Format]:
    """The leaves of ``obj`` (nested lists and tuples), depth first, and its format."""
    if not isinstance(obj, (list, tuple)):
        return [obj], None
    leaves: list = []
    fmts = []
    for item in obj:
        sub, fmt = flatten(item)
        leaves.extend(sub)
        fmts.append(fmt)
    return leaves, tuple(fmts)


def regroup(leaves: Sequence[Any], fmt: Format) -> Any:
    """The nesting ``fmt`` of :func:`flatten` rebuilt from ``leaves``."""
    it = iter(leaves)

    def build(f: Format) -> Any:
        return next(it) if f is None else [build(g) for g in f]
    return build(fmt)
