"""Correlation (MXNet 1.9.1, FlowNet's correlation layer), NCHW.

For each displacement (dy, dx) of a (2r + 1)^2 grid (r = max_displacement // stride2, steps
of stride2) and each output position (i, j), the mean over channels and a k x k window of
``data1 * data2`` shifted by the displacement (``|data1 - data2|`` without ``is_multiply``).
Positions are MXNet's: both inputs zero-padded by pad_size, the window of output (i, j)
starting at ``(i * stride1 + max_displacement, j * stride1 + max_displacement)``; the output
is (N, (2r + 1)^2, ceil((H + 2 pad - 2 b) / stride1), ...) with b = max_displacement +
(k - 1) // 2.

A composition (``ops/_composite.py``): per displacement, two static slices of the padded
inputs, their product and its channel mean; then one average pooling (k, stride1) over all
displacements at once. Gradients reach both inputs, as in MXNet.

Example::

    corr = sg.sym.Correlation(f1, f2, kernel_size=1, max_displacement=4, pad_size=4)
"""
from __future__ import annotations

from math import ceil
from typing import Any

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import OPAQUE, OpDef, RunCtx, register
from ._composite import COMPOSED, composite_gradient, composite_unroll
from ._util import check_attr, fmt

PARAMS = {
    "kernel_size": Param("int", 1, doc="Side of the window compared (odd)."),
    "max_displacement": Param("int", 1, doc="Largest displacement compared."),
    "stride1": Param("int", 1, doc="Step between output positions."),
    "stride2": Param("int", 1, doc="Step between displacements."),
    "pad_size": Param("int", 0, doc="Zero padding of both inputs."),
    "is_multiply": Param("bool", True, doc="Product (else absolute difference)."),
}


def _geometry(a: Attrs, shape: tuple) -> tuple[int, int, list]:
    """(output height, width, displacements (dy, dx)) for data of ``shape``."""
    for key in ("kernel_size", "stride1", "stride2"):
        check_attr(a[key] >= 1, key, a[key], "must be >= 1")
    # an even window would reach one pixel past the padded input (MXNet reads out of bounds)
    check_attr(a["kernel_size"] % 2 == 1, "kernel_size", a["kernel_size"], "must be odd")
    check_attr(a["max_displacement"] >= 0 and a["pad_size"] >= 0, "max_displacement",
               a["max_displacement"], "max_displacement and pad_size must be >= 0")
    border = a["max_displacement"] + (a["kernel_size"] - 1) // 2
    h, w = (d + 2 * a["pad_size"] - 2 * border for d in shape[2:])
    th, tw = ceil(h / a["stride1"]), ceil(w / a["stride1"])
    if th < 1 or tw < 1:
        raise ShapeError(f"data {fmt(shape)}: no output position with kernel_size="
                         f"{a['kernel_size']}, max_displacement={a['max_displacement']}, "
                         f"pad_size={a['pad_size']} (output {th} x {tw})")
    r = a["max_displacement"] // a["stride2"]
    steps = [(p - r) * a["stride2"] for p in range(2 * r + 1)]
    return th, tw, [(dy, dx) for dy in steps for dx in steps]


def _shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    known = [tuple(s) for s in ins if s is not None]
    if not known:
        return ins, outs
    if len(known[0]) != 4 or any(s != known[0] for s in known):
        raise ShapeError(f"data1 {fmt(ins[0])} and data2 {fmt(ins[1])}: expected two NCHW "
                         f"arrays of one shape")
    th, tw, moves = _geometry(a, known[0])
    return [known[0], known[0]], [(known[0][0], len(moves), th, tw)]


def _window(a: Attrs, th: int, tw: int) -> tuple[int, int]:
    """Rows and columns the output's windows cover (from max_displacement on)."""
    k, s = a["kernel_size"], a["stride1"]
    return (th - 1) * s + k, (tw - 1) * s + k


def _compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    p, m, k, s = a["pad_size"], a["max_displacement"], a["kernel_size"], a["stride1"]
    f1, f2 = (np.pad(x.astype(np.float64), ((0, 0), (0, 0), (p, p), (p, p))) for x in xs)
    th, tw, moves = _geometry(a, xs[0].shape)
    out = np.zeros((xs[0].shape[0], len(moves), th, tw))
    for t, (dy, dx) in enumerate(moves):
        for i in range(th):
            for j in range(tw):
                y, x = i * s + m, j * s + m
                a1 = f1[:, :, y:y + k, x:x + k]
                a2 = f2[:, :, y + dy:y + dy + k, x + dx:x + dx + k]
                v = a1 * a2 if a["is_multiply"] else np.abs(a1 - a2)
                out[:, t, i, j] = v.mean(axis=(1, 2, 3))
    return [out.astype(xs[0].dtype)]


def _abs_diff(S: Any, p: Any, q: Any) -> Any:
    """|p - q| as (p - q) * sign with sign +1 at ties: the gradient MXNet gives (ties are
    common: both inputs are zero in the padding)."""
    d = p - q
    return d * S._minus_scalar(S._greater_equal_scalar(d, scalar=0.0) * 2.0, scalar=1.0)


def _expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    p, m = a["pad_size"], a["max_displacement"]
    th, tw, moves = _geometry(a, tuple(shapes[0]))
    rows, cols = _window(a, th, tw)
    if p:
        xs = [S.Pad(x, mode="constant", pad_width=(0, 0, 0, 0, p, p, p, p)) for x in xs]
    first = S.slice(xs[0], begin=(None, None, m, m), end=(None, None, m + rows, m + cols))
    maps = []
    for dy, dx in moves:
        other = S.slice(xs[1], begin=(None, None, m + dy, m + dx),
                        end=(None, None, m + dy + rows, m + dx + cols))
        v = first * other if a["is_multiply"] else _abs_diff(S, first, other)
        maps.append(S.mean(v, axis=1, keepdims=True))
    out = maps[0] if len(maps) == 1 else S.Concat(*maps, dim=1)
    k, s = a["kernel_size"], a["stride1"]
    if k > 1 or s > 1:
        out = S.Pooling(out, kernel=(k, k), stride=(s, s), pool_type="avg")
    return [out]


register(OpDef(
    "Correlation", PARAMS, ("data1", "data2"), _shape, _compute, composite_gradient(_expand),
    OPAQUE, lowering=COMPOSED, extra={"unroll": composite_unroll(_expand)},
    doc="FlowNet correlation of two NCHW feature maps over a grid of displacements: "
        "(N, (2 * max_displacement // stride2 + 1)^2, H', W')."))
