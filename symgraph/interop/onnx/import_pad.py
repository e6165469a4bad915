"""ONNX's Pad (opset 2 on): constant, edge, reflect and wrap padding, negative pads cropping.

As the spec's reference does, the positive pads are applied first (symgraph's ``pad`` for
constant / edge / reflect, ``tile`` and ``slice`` for wrap) and the negative ones then crop
with ``slice``. Pads and the constant value come from attributes (opsets 2-10) or inputs
(11 on, with ``axes`` from 18); they must be known when the graph is built.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.base import DataError
from .context import ImportCtx, first_const, node_label, op_name
from .import_ops import converter, refuse


def _pairs(c: ImportCtx, node: Any, a: dict, rank: int) -> list[tuple[int, int]]:
    """(before, after) for every axis."""
    if c.opset < 11:
        pads, axes = list(a["pads"]), list(range(rank))
    else:
        pads = [int(v) for v in np.asarray(c.const(node.input[1], node)).reshape(-1)]
        given = first_const(c, node, 3)
        axes = (list(range(rank)) if given is None
                else [int(v) % rank for v in np.asarray(given).reshape(-1)])
    if len(pads) != 2 * len(axes):
        raise DataError(f"{node_label(node)}: {len(pads)} pads for {len(axes)} axes")
    pairs = [(0, 0)] * rank
    for k, ax in enumerate(axes):
        pairs[ax] = (int(pads[k]), int(pads[k + len(axes)]))
    return pairs


def _wrap(c: ImportCtx, x: Any, pairs: list, shape: tuple, name: str) -> Any:
    """Wrap padding: the input tiled enough times on each side, then the window cut out."""
    ahead = [-(-b // n) for (b, _), n in zip(pairs, shape)]
    reps = tuple(1 + h + -(-e // n) for h, (_, e), n in zip(ahead, pairs, shape))
    begin = tuple(h * n - b for h, (b, _), n in zip(ahead, pairs, shape))
    end = tuple(s + n + b + e for s, (b, e), n in zip(begin, pairs, shape))
    return c.sym.slice(c.sym.tile(x, reps=reps), begin=begin, end=end, name=f"{name}_wrap")


@converter("Pad")
def _pad(c: ImportCtx, node: Any, a: dict) -> list:
    """Pad, then crop where a pad is negative."""
    mode = a.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    shape = c.static_shape(node.input[0], node)
    pairs = _pairs(c, node, a, len(shape))
    grow = [(max(b, 0), max(e, 0)) for b, e in pairs]
    x, name = c.get(node.input[0]), op_name(node)
    if any(b or e for b, e in grow):
        if mode == "wrap":
            x = _wrap(c, x, grow, shape, name)
        elif mode in ("constant", "edge", "reflect"):
            if mode == "reflect" and any(max(p) >= n for p, n in zip(grow, shape)):
                raise refuse(node, f"reflect pads {pairs} as wide as an axis of {shape}")
            value = a.get("value", 0.0) if c.opset < 11 else first_const(c, node, 2)
            value = 0.0 if value is None else np.asarray(value).reshape(-1)
            fill = float(value[0]) if np.ndim(value) and len(value) else float(value or 0.0)
            x = c.sym.pad(x, mode=mode, pad_width=tuple(v for p in grow for v in p),
                          constant_value=fill, name=f"{name}_pad")
        else:
            raise refuse(node, f"mode={mode}")
    sizes = [n + b + e for n, (b, e) in zip(shape, grow)]
    if min(sizes[k] + min(b, 0) + min(e, 0) for k, (b, e) in enumerate(pairs)) < 1:
        raise refuse(node, f"pads {pairs} that leave an empty axis of {shape}")
    if any(b < 0 or e < 0 for b, e in pairs):
        begin = tuple(max(-b, 0) for b, _ in pairs)
        end = tuple(n - max(-e, 0) for n, (_, e) in zip(sizes, pairs))
        x = c.sym.slice(x, begin=begin, end=end, name=f"{name}_crop")
    return [c.sym.identity(x, name=name)]
