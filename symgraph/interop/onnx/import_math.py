"""Importers of ONNX's Round, Mod, OneHot, TopK and GatherND, each composed from
symgraph ops that compute exactly what the spec says at the model's opset.

Inputs that carry a count or a size (TopK's K, OneHot's depth and values) must be known when
the graph is built: constants, or values the backend was given.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.base import DataError
from .context import ImportCtx, first_const, node_label, op_name
from .import_ops import converter, refuse


def _scalar(c: ImportCtx, node: Any, index: int) -> float:
    """Input ``index`` as one number (a 0-d or one-element constant)."""
    value = np.asarray(c.const(node.input[index], node))
    if value.size != 1:
        raise DataError(f"{node_label(node)}: input {node.input[index]!r} must hold one value, "
                        f"it has shape {value.shape}")
    return value.reshape(()).item()


@converter("Round")
def _round(c: ImportCtx, node: Any, a: dict) -> list:
    """Halves to even (numpy's rint), from floor: f + 1 above one half, f + (f mod 2) at one
    half exactly (x - floor(x) is exact in floating point). NaN and inf pass through."""
    x, name = c.get(node.input[0]), op_name(node)
    down = c.sym.floor(x, name=f"{name}_floor")
    frac = c.sym.elemwise_sub(x, down)
    up = c.sym.where(c.sym._greater_scalar(frac, scalar=0.5), c.sym._plus_scalar(down, scalar=1.0),
                     down)
    even = c.sym.elemwise_add(down, c.sym._mod_scalar(down, scalar=2.0))
    return [c.sym.where(c.sym._equal_scalar(frac, scalar=0.5), even, up, name=name)]


@converter("Mod")
def _mod(c: ImportCtx, node: Any, a: dict) -> list:
    """fmod=0: the divisor's sign (numpy's mod, MXNet's broadcast_mod); fmod=1: the dividend's
    (C's fmod), as sign(a) * mod(|a|, |b|). A float zero divisor gives NaN as numpy's does
    (MXNet's mod gives 0): 0 / b is added, NaN there and a signed zero elsewhere."""
    a_sym, b_sym, name = c.get(node.input[0]), c.get(node.input[1]), op_name(node)
    if a.get("fmod", 0):
        rem = c.sym.broadcast_mul(c.sym.sign(a_sym), c.sym.broadcast_mod(c.sym.abs(a_sym),
                                                                         c.sym.abs(b_sym)))
    else:
        rem = c.sym.broadcast_mod(a_sym, b_sym)
    if not np.issubdtype(c.dtypes.get(node.input[0], np.dtype(np.float32)), np.inexact):
        return [c.sym.identity(rem, name=name)]
    return [c.sym.broadcast_add(rem, c.sym._rdiv_scalar(b_sym, scalar=0.0), name=name)]


@converter("OneHot")
def _one_hot(c: ImportCtx, node: Any, a: dict) -> list:
    """``values = [off, on]``; a negative index counts from the end of depth, one outside
    [-depth, depth) gives a row of ``off``; the new axis goes to ``axis`` (default last)."""
    depth = int(_scalar(c, node, 1))
    values = np.asarray(c.const(node.input[2], node)).reshape(-1)
    if values.size != 2:
        raise DataError(f"{node_label(node)}: values must be [off, on], got {values.size} values")
    rank = c.rank(node.input[0], node)
    axis = int(a.get("axis", -1)) % (rank + 1)
    idx, name = c.get(node.input[0]), op_name(node)
    shift = c.sym._mul_scalar(c.sym._lesser_scalar(idx, scalar=0.0), scalar=float(depth))
    y = c.sym.one_hot(c.sym.elemwise_add(idx, shift), depth=depth, on_value=float(values[1]),
                      off_value=float(values[0]), dtype=values.dtype.name, name=f"{name}_last")
    if axis == rank:
        return [c.sym.identity(y, name=name)]
    order = tuple(range(axis)) + (rank,) + tuple(range(axis, rank))
    return [c.sym.transpose(y, axes=order, name=name)]


@converter("TopK")
def _top_k(c: ImportCtx, node: Any, a: dict) -> list:
    """Values and int64 indices of the K largest (``largest=0``: smallest) along ``axis``,
    sorted, equal values in index order as the spec asks (sorted=0 leaves the order free)."""
    k = int(a["k"]) if c.opset < 10 else int(_scalar(c, node, 1))
    if k < 1:
        raise refuse(node, f"K={k} (an empty result)")
    y = c.sym.topk(c.get(node.input[0]), axis=int(a.get("axis", -1)), k=k, ret_typ="both",
                   is_ascend=not a.get("largest", 1), dtype="int64", name=op_name(node))
    return [y[0], y[1]]


@converter("GatherND")
def _gather_nd(c: ImportCtx, node: Any, a: dict) -> list:
    """ONNX's indices are (..., M), symgraph's (M, ...): the last axis moves to the front.
    ``batch_dims`` b prepends, per leading index axis, its own position (a constant), so the
    first b data axes are read in step with the indices'. Negative indices count from the end;
    one still out of range is a DataError on the CPU."""
    shape = c.static_shape(node.input[1], node)
    b, name = int(a.get("batch_dims", 0)), op_name(node)
    idx = c.get(node.input[1])
    front = c.sym.transpose(idx, axes=(len(shape) - 1,) + tuple(range(len(shape) - 1)),
                            name=f"{name}_indices")
    if b:
        dtype = c.dtypes.get(node.input[1], np.dtype(np.int64))
        grid = np.indices(shape[:-1], dtype=dtype)[:b]
        pos = c.param(f"{name}_batch_positions", grid)
        front = c.sym.Concat(pos, front, dim=0, num_args=2)
    return [c.sym.gather_nd(c.get(node.input[0]), front, name=name)]
