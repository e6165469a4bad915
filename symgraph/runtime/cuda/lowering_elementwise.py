"""Lowering of the elementwise families: one generated grid-stride kernel per step (formula
from ``OpDef.expr``, rendered by ``codegen.render_elementwise``), plus the byte-moving families
(``copy``, ``constant``, ``fill``) and the host/callback stopgaps.
"""
from __future__ import annotations

from math import prod
from typing import Sequence

import numpy as np

from ...core.expr import Expr, inp
from ...compiler.ops.indexing import rows_condition
from ...core.registry import get_op
from .actions import (ALL_FLOATS, Callback, Copy, Fill, Host, Kernel, Ref, Shape, StepCtx,
                      Upload, family)
from .codegen import THREADS, grid_for, render_elementwise


def elementwise_actions(ctx: StepCtx, stem: str, exprs: Sequence[Expr], in_shapes: Sequence[Shape],
                        ins: Sequence[Ref], out_shape: Shape, outs: Sequence[Ref]) -> list:
    """One elementwise kernel: ``exprs`` over ``ins`` (shapes ``in_shapes``) into ``outs``, each
    buffer in its own dtype (``ctx.dt``)."""
    kern, used = render_elementwise(stem, exprs, in_shapes, out_shape,
                                    [ctx.dt(r) for r in ins], [ctx.dt(r) for r in outs])
    n = prod(out_shape)
    per = kern.per_thread
    grid = grid_for((n + per - 1) // per, ctx.sm_count)
    return [Kernel(kern, grid, THREADS, tuple(outs) + tuple(ins[i] for i in used), n)]


def copy_actions(ctx: StepCtx, dst: Ref, src: Ref, shape: Shape) -> list:
    """``dst`` = ``src`` of ``shape``: a byte copy, or a converting kernel when their dtypes
    differ (a float32 statistic into a float16 output...)."""
    if ctx.dtype_of(dst) != ctx.dtype_of(src):
        return elementwise_actions(ctx, "convert", [inp(0)], [shape], [src], shape, [dst])
    nbytes = prod(shape) * ctx.dtype_of(dst).itemsize
    return [Copy(dst, src, nbytes)] if nbytes else []


@family("host")
def _host(ctx: StepCtx, p: dict) -> list:
    return [Host(ctx.step)]


@family("callback")
def _callback(ctx: StepCtx, p: dict) -> list:
    return [Callback(ctx.step, p["run"])]


@family("elementwise")
def _elementwise(ctx: StepCtx, p: dict) -> list:
    op = get_op(ctx.step.node.op)
    e = op.expr(ctx.attrs, *(inp(i) for i in range(len(ctx.ins))))
    return elementwise_actions(ctx, ctx.stem, [e], ctx.in_shapes, ctx.ins, ctx.out_shapes[0],
                               ctx.outs)


@family("where")
def _where(ctx: StepCtx, p: dict) -> list:
    """``where``: the elementwise kernel of its formula; a 1-D condition picking rows is read
    as (rows, 1, ...), which the kernel broadcasts over the data (fusion never sees this form:
    simplify rewrites it)."""
    cond, data = ctx.in_shapes[0], ctx.in_shapes[1]
    shapes = list(ctx.in_shapes)
    if rows_condition(cond, data):
        shapes[0] = tuple(cond) + (1,) * (len(data) - 1)
    e = get_op(ctx.step.node.op).expr(ctx.attrs, *(inp(i) for i in range(3)))
    return elementwise_actions(ctx, ctx.stem, [e], shapes, ctx.ins, ctx.out_shapes[0], ctx.outs)


@family("copy")
def _copy(ctx: StepCtx, p: dict) -> list:
    """Reshape, identity, BlockGrad...: the bytes of input 0, unchanged."""
    nbytes = prod(ctx.out_shapes[0]) * np.dtype(ctx.dtypes[-1]).itemsize
    return [Copy(ctx.outs[0], ctx.ins[0], nbytes)] if nbytes else []


@family("constant")
def _constant(ctx: StepCtx, p: dict) -> list:
    """A literal array (``_constant``, made by constant folding): uploaded every run, since
    the memory plan may lend its bytes to other slots in between."""
    return [Upload(ctx.outs[0], ctx.attrs["value"][0])] if ctx.attrs["value"][0] else []


@family("fill")
def _fill(ctx: StepCtx, p: dict) -> list:
    """``p['value']``: the fill value, or a function of the attrs giving it (``_full``)."""
    value = p["value"](ctx.attrs) if callable(p["value"]) else p["value"]
    dtype = np.dtype(ctx.dtypes[-1])
    if dtype.name not in ALL_FLOATS:  # its bytes, uploaded as constants are
        return [Upload(ctx.outs[0], np.full(ctx.out_shapes[0], value, dtype).tobytes())]
    return [Fill(ctx.outs[0], float(value), prod(ctx.out_shapes[0]), dtype.name)]


@family("shape_constant")
def _shape_constant(ctx: StepCtx, p: dict) -> list:
    """A value known from the input shapes alone (shape_array): uploaded every run, like
    ``constant``. ``p['value']``: a function of the input shapes giving the numpy array."""
    return [Upload(ctx.outs[0], np.ascontiguousarray(p["value"](ctx.in_shapes)).tobytes())]


@family("scale_by_batch")
def _scale_by_batch(ctx: StepCtx, p: dict) -> list:
    e = inp(0) * (1.0 / ctx.in_shapes[0][0])
    return elementwise_actions(ctx, "scale_by_batch", [e], ctx.in_shapes, ctx.ins,
                               ctx.out_shapes[0], ctx.outs)


@family("broadcast_to")
def _broadcast_to(ctx: StepCtx, p: dict) -> list:
    """Input ``p['input']`` (default 0) broadcast to the output shape (broadcast_like)."""
    i = p.get("input", 0)
    return elementwise_actions(ctx, ctx.stem, [inp(0)], [ctx.in_shapes[i]], [ctx.ins[i]],
                               ctx.out_shapes[0], ctx.outs)
