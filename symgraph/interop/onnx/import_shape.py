"""Importers of ONNX's slicing and layout operators: Slice, Split, Size, ConstantOfShape,
DepthToSpace, SpaceToDepth, CumSum (each per its spec at the model's opset).

Starts, ends, split sizes and shapes must be known when the graph is built; ONNX's clamping
of out-of-range starts and ends is Python's (``slice.indices``), which symgraph's ``slice``
then receives already resolved.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .context import ImportCtx, first_const, onnx_module, op_name
from .import_ops import refuse, converter


def _ints(value: Optional[Any]) -> Optional[list]:
    return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]


@converter("Slice")
def _slice(c: ImportCtx, node: Any, a: dict) -> list:
    """Starts/ends/axes/steps from attributes (opset < 10) or inputs; each axis is resolved
    to Python's (begin, end, step) on the static shape, an end before index 0 as None."""
    shape = c.static_shape(node.input[0], node)
    if c.opset < 10:
        starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
    else:
        starts, ends = _ints(c.const(node.input[1], node)), _ints(c.const(node.input[2], node))
        axes, steps = _ints(first_const(c, node, 3)), _ints(first_const(c, node, 4))
    axes = [v % len(shape) for v in (axes or range(len(starts)))]
    steps = steps or [1] * len(axes)
    if any(s == 0 for s in steps):
        raise refuse(node, "a step of 0")
    n = max(axes) + 1 if axes else 0
    begin: list = [None] * n
    end: list = [None] * n
    step = [1] * n
    for ax, b, e, s in zip(axes, starts, ends, steps):
        b, e, s = slice(int(b), int(e), int(s)).indices(shape[ax])
        begin[ax], end[ax], step[ax] = b, (None if s < 0 and e < 0 else e), s
    return [c.sym.slice(c.get(node.input[0]), begin=tuple(begin), end=tuple(end),
                        step=tuple(step), name=op_name(node))]


@converter("Split")
def _split(c: ImportCtx, node: Any, a: dict) -> list:
    """Sizes from the attribute (< 13) or input; else equal parts, the last one smaller
    when ``num_outputs`` (opset 18) does not divide the axis."""
    shape = c.static_shape(node.input[0], node)
    axis = int(a.get("axis", 0)) % len(shape)
    sizes = a.get("split") or _ints(first_const(c, node, 1))
    if not sizes:
        parts = len(node.output)
        chunk = -(-shape[axis] // parts)
        sizes = [chunk] * (parts - 1) + [shape[axis] - chunk * (parts - 1)]
    x, name, outs, start = c.get(node.input[0]), op_name(node), [], 0
    for k, size in enumerate(sizes):
        outs.append(c.sym.slice_axis(x, axis=axis, begin=start, end=start + int(size),
                                     name=f"{name}_{k}"))
        start += int(size)
    return outs


@converter("Size")
def _size(c: ImportCtx, node: Any, a: dict) -> list:
    return [c.sym.size_array(c.get(node.input[0]), name=op_name(node))]


@converter("ConstantOfShape")
def _constant_of_shape(c: ImportCtx, node: Any, a: dict) -> list:
    """A tensor of the given shape filled with ``value`` (default float32 0)."""
    value = a.get("value")
    fill = (np.zeros(1, np.float32) if value is None
            else onnx_module().numpy_helper.to_array(value).reshape(-1))
    shape = tuple(_ints(c.const(node.input[0], node)) or ())
    if not shape or 0 in shape:
        raise refuse(node, f"shape {shape} (a 0-d or zero-size tensor)")
    return [c.sym._full(shape=shape, value=float(fill[0]), dtype=fill.dtype.name,
                        name=op_name(node))]


@converter("DepthToSpace", "SpaceToDepth")
def _depth_space(c: ImportCtx, node: Any, a: dict) -> list:
    """MXNet's depth_to_space is ONNX's DCR mode (the default); CRD is refused."""
    if a.get("mode", b"DCR") not in (b"DCR", "DCR"):
        raise refuse(node, f"mode={a['mode']!r}")
    fn = c.sym.depth_to_space if node.op_type == "DepthToSpace" else c.sym.space_to_depth
    return [fn(c.get(node.input[0]), block_size=int(a["blocksize"]), name=op_name(node))]


@converter("CumSum")
def _cumsum(c: ImportCtx, node: Any, a: dict) -> list:
    if a.get("exclusive", 0) or a.get("reverse", 0):
        raise refuse(node, "exclusive or reverse CumSum")
    axis = int(np.asarray(c.const(node.input[1], node)).reshape(()))
    return [c.sym.cumsum(c.get(node.input[0]), axis=axis, name=op_name(node))]
