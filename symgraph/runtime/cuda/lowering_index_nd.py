"""Lowering families of the n-d indexing ops (``ops/indexing_nd.py``), rendering
``kernels_index_nd``: gather_nd / scatter_nd / gather_nd's gradient (``nd_index``),
index_copy and fill_element_0index (a copy of the input, then a scatter of the new values),
ravel_multi_index, unravel_index, index_array and arange_like.

Every family moves elements in their own type (float32, float16, bfloat16 and the integer
types each op lists as its lowering's ``dtypes``); only the add form does arithmetic, with
atomicAdd (summation order may differ from numpy's).
"""
from __future__ import annotations

from math import prod

from .actions import Copy, Fill, StepCtx, family, launch
from .kernels_index_nd import (render_arange, render_index_array, render_nd_index,
                               render_ravel, render_unravel)


def _row_strides(shape: tuple) -> list[int]:
    return [prod(shape[j + 1:]) for j in range(len(shape))]


@family("nd_index")
def _nd_index(ctx: StepCtx, p: dict) -> list:
    """Inputs (data, indices (M, Y...)); gather reads an array of data's shape, scatter and add
    write one of the output's shape (zero-filled first)."""
    kind, idx = p["kind"], ctx.in_shapes[1]
    full = ctx.in_shapes[0] if kind == "gather" else ctx.out_shapes[0]
    m, rows = idx[0], prod(idx[1:])
    inner = prod(full[m:])
    kern = render_nd_index(kind, full[:m], _row_strides(full)[:m], rows, inner,
                           ctx.dt(ctx.outs[0]), ctx.dt(ctx.ins[1]))
    acts = [launch(ctx, kern, (ctx.outs[0], ctx.ins[0], ctx.ins[1]), rows * inner)]
    if kind != "gather":
        acts.insert(0, Fill(ctx.outs[0], 0.0, prod(full), ctx.dt(ctx.outs[0])))
    return acts


def _copy_then_scatter(ctx: StepCtx, dims: tuple, strides: list, rows: int, inner: int,
                       row_stride: int, values: int, index: int) -> list:
    """Output = input 0, then input ``values`` scattered at the offsets input ``index`` names."""
    n = prod(ctx.out_shapes[0])
    kern = render_nd_index("scatter", dims, strides, rows, inner, ctx.dt(ctx.outs[0]),
                           ctx.dt(ctx.ins[index]), row_stride)
    return [Copy(ctx.outs[0], ctx.ins[0], n * ctx.dtype_of(ctx.outs[0]).itemsize),
            launch(ctx, kern, (ctx.outs[0], ctx.ins[values], ctx.ins[index]), rows * inner)]


@family("index_copy")
def _index_copy(ctx: StepCtx, p: dict) -> list:
    """Inputs (old, index (J,), new (J, rest...)): rows index[j] of a copy of old <- new[j]."""
    old = ctx.out_shapes[0]
    inner = prod(old[1:])
    return _copy_then_scatter(ctx, old[:1], [inner], ctx.in_shapes[1][0], inner, 0, 2, 1)


@family("fill_element")
def _fill_element(ctx: StepCtx, p: dict) -> list:
    """Inputs (lhs (R, C), mhs (R,), rhs (R,)): element (r, rhs[r]) of a copy of lhs <- mhs[r]."""
    rows, cols = ctx.out_shapes[0]
    return _copy_then_scatter(ctx, (cols,), [1], rows, 1, cols, 1, 2)


@family("ravel")
def _ravel(ctx: StepCtx, p: dict) -> list:
    rows = prod(ctx.out_shapes[0])
    kern = render_ravel(tuple(ctx.attrs["shape"]), rows, ctx.dt(ctx.outs[0]))
    return [launch(ctx, kern, (ctx.outs[0], ctx.ins[0]), rows)]


@family("unravel")
def _unravel(ctx: StepCtx, p: dict) -> list:
    rows = prod(ctx.in_shapes[0])
    shape = tuple(ctx.attrs["shape"])
    kern = render_unravel(shape, rows, ctx.dt(ctx.outs[0]))
    return [launch(ctx, kern, (ctx.outs[0], ctx.ins[0]), rows * len(shape))]


@family("index_array")
def _index_array(ctx: StepCtx, p: dict) -> list:
    shape = ctx.in_shapes[0]
    axes = ctx.attrs["axes"]
    axes = range(len(shape)) if axes is None else [a % len(shape) for a in axes]
    kern = render_index_array(shape, tuple(axes), ctx.dt(ctx.outs[0]))
    return [launch(ctx, kern, (ctx.outs[0],), prod(ctx.out_shapes[0]))]


@family("arange")
def _arange(ctx: StepCtx, p: dict) -> list:
    a = ctx.attrs
    # p["bounds"]: (start, step) as the op reads them (``_arange``'s integer truncation)
    start, step = p["bounds"](a) if "bounds" in p else (a["start"], a["step"])
    kern = render_arange(start, step, a["repeat"], ctx.dt(ctx.outs[0]))
    return [launch(ctx, kern, (ctx.outs[0],), prod(ctx.out_shapes[0]))]
