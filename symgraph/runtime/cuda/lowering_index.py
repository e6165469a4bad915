"""Lowering families of the indexing ops (``ops/indexing.py``): argmax/argmin, one_hot, take,
Embedding and take's gradient.

Indices arrive as floats (the ops' convention) and are truncated like ``astype(int64)``; take
clips or wraps them as its ``mode`` says (``raise`` clips: see ``kernels_index``). The gradient of take scatters with ``atomicAdd`` into a
zero-filled result (summation order may differ from numpy's; well within float32 tolerance).
"""
from __future__ import annotations

from math import prod


from .actions import Fill, StepCtx, family, launch
from .kernels_index import (render_arg_reduce, render_one_hot, render_take,
                            render_take_backward)


@family("arg_reduce")
def _arg_reduce(ctx: StepCtx, p: dict) -> list:
    """Index (as a float) of the first max / min along ``axis`` (None: flattened)."""
    shape = ctx.in_shapes[0]
    if p.get("channel"):  # argmax_channel: axis 1, or all of a 1-D input
        axis = 1 if len(shape) >= 2 else None
    else:
        axis = ctx.attrs["axis"]
    axes = list(range(len(shape))) if axis is None else [axis % len(shape)]
    kept = [d for d in range(len(shape)) if d not in axes]
    n_red = prod(shape[d] for d in axes)
    n_out = prod(shape) // max(n_red, 1)
    kern = render_arg_reduce(p["kind"], shape, axes, kept, n_red, ctx.dt(ctx.ins[0]),
                             ctx.dt(ctx.outs[0]))
    return [launch(ctx, kern, (ctx.outs[0], ctx.ins[0]), n_out)]


@family("one_hot")
def _one_hot(ctx: StepCtx, p: dict) -> list:
    a = ctx.attrs
    # indices: a float type, or an integer read as it is (INDEX_INPUTS)
    kern = render_one_hot(a["depth"], a["on_value"], a["off_value"], ctx.dt(ctx.ins[0]),
                          ctx.dt(ctx.outs[0]))
    return [launch(ctx, kern, (ctx.outs[0], ctx.ins[0]), prod(ctx.out_shapes[0]))]


def _take_geometry(data: tuple, n_idx: int, axis: int) -> tuple[int, int, int, int]:
    ax = axis % len(data)
    return prod(data[:ax]), data[ax], prod(data[ax + 1:]), n_idx


@family("take")
def _take(ctx: StepCtx, p: dict) -> list:
    """y[o, j, in] = data[o, idx[j], in]; ``p['data']`` / ``p['indices']`` are input positions
    (Embedding has them the other way round, axis 0, clip)."""
    di, ii = p.get("data", 0), p.get("indices", 1)
    axis = ctx.attrs.get("axis", 0) if "axis" in ctx.attrs else 0
    wrap = ctx.attrs.get("mode", "clip") == "wrap" if "mode" in ctx.attrs else False
    outer, n, inner, m = _take_geometry(ctx.in_shapes[di], prod(ctx.in_shapes[ii]), axis)
    kern = render_take(outer, n, inner, m, wrap, ctx.dt(ctx.ins[di]), ctx.dt(ctx.ins[ii]))
    return [launch(ctx, kern, (ctx.outs[0], ctx.ins[di], ctx.ins[ii]),
                   prod(ctx.out_shapes[0]))]


@family("take_backward")
def _take_backward(ctx: StepCtx, p: dict) -> list:
    """Inputs (ograd, indices, data): zeros, then each ograd slice added to its row."""
    a = ctx.attrs
    outer, n, inner, m = _take_geometry(ctx.in_shapes[2], prod(ctx.in_shapes[1]), a["axis"])
    kern = render_take_backward(outer, n, inner, m, a["mode"], ctx.dt(ctx.ins[0]),
                                ctx.dt(ctx.ins[1]))
    return [Fill(ctx.outs[0], 0.0, prod(ctx.out_shapes[0]), ctx.dt(ctx.outs[0])),
            launch(ctx, kern, (ctx.outs[0], ctx.ins[0], ctx.ins[1]), prod(ctx.in_shapes[0]))]
