"""Lowering of reductions (``sum``, ``mean``, ``max``, ``norm``...), their gradients and the
sum of a broadcast gradient back to an input's shape; kernels from ``kernels.render_reduce``.
"""
from __future__ import annotations

from math import prod
from typing import Optional, Sequence

from ...core.expr import inp
from ...compiler.ops.tensor import reduce_axes
from .actions import Kernel, Ref, Shape, StepCtx, family
from .codegen import THREADS, grid_for
from .kernels_reduce import (REDUCERS, leading_split, reduce_split, render_column_partials,
                             render_reduce, use_block_per_output)
from .lowering_elementwise import elementwise_actions


def split_chunks(n_out: int, n_red: int, sm_count: int) -> int:
    """Pieces each of ``n_out`` reductions of ``n_red`` elements is cut into for a two-stage
    reduction: enough blocks for about four per SM, none under 4096 elements (1: one stage)."""
    return max(1, min(-(-sm_count * 4 // n_out), n_red // 4096))


def _axes(ctx: StepCtx) -> tuple[int, ...]:
    return reduce_axes(ctx.attrs, len(ctx.in_shapes[-1]))


@family("reduce_backward")
def _reduce_backward(ctx: StepCtx, p: dict) -> list:
    """A reduction's gradient broadcast back over the reduced axes (divided by count if mean)."""
    x_shape = ctx.in_shapes[1]
    axes = _axes(ctx)
    kept = tuple(1 if i in axes else d for i, d in enumerate(x_shape))
    e = inp(0)
    if ctx.attrs["mean"]:
        e = e * (1.0 / max(1, prod(x_shape[i] for i in axes)))
    return elementwise_actions(ctx, "reduce_backward", [e], [kept], [ctx.ins[0]], x_shape,
                               ctx.outs)


def reduce_actions(ctx: StepCtx, shape: Shape, axes: Sequence[int], kind: str,
                   src: Optional[Ref] = None, dst: Optional[Ref] = None) -> list:
    """Reduce ``src`` (default input 0) of ``shape`` over ``axes`` into ``dst`` (output 0)."""
    src, dst = src or ctx.ins[0], dst or ctx.outs[0]
    if not axes:
        return elementwise_actions(ctx, "reduce_noop", [inp(0)], [shape], [src], shape, [dst])
    n_out, n_red = reduce_split(shape, axes)
    rows, cols = leading_split(shape, axes)
    if cols >= 32 and rows >= 64 and use_block_per_output(n_out, n_red, ctx.sm_count):
        return _column_actions(ctx, rows, cols, kind, src, dst)
    block = use_block_per_output(n_out, n_red, ctx.sm_count)
    chunks = split_chunks(n_out, n_red, ctx.sm_count) if block else 1
    stem = f"{kind}_{len(shape)}d"
    x_t, y_t = ctx.dt(src), ctx.dt(dst)
    if chunks > 1:  # too few outputs to fill the device: two stages through a scratch buffer
        part = ctx.new_array(n_out * chunks, "float32")  # partial results stay in float
        first = render_reduce(stem, shape, axes, kind, True, chunks, x_t=x_t)
        second = render_reduce(stem + "_final", (n_out, chunks), (1,), kind, False, 1, n_red,
                               partials=True, y_t=y_t)
        return [Kernel(first, n_out * chunks, THREADS, (part, src), n_out * chunks),
                Kernel(second, grid_for(n_out, ctx.sm_count), THREADS, (dst, part), n_out)]
    kern = render_reduce(stem, shape, axes, kind, block, x_t=x_t, y_t=y_t)
    grid = min(n_out, ctx.sm_count * 16) if block else grid_for(n_out, ctx.sm_count)
    return [Kernel(kern, max(grid, 1), THREADS, (dst, src), n_out)]


def _column_actions(ctx: StepCtx, rows: int, cols: int, kind: str, src: Ref, dst: Ref) -> list:
    """A column reduction (a bias gradient, the sum of a broadcast gradient) in two stages:
    chunks of rows for about 1024 threads per SM, at least 16 rows each, then the chunks."""
    chunks = max(1, min(rows // 16, -(-ctx.sm_count * 1024 // cols), 128))
    part = ctx.new_array(chunks * cols, "float32")
    first = render_column_partials(rows, cols, chunks, kind, ctx.dt(src))
    second = render_reduce(f"{kind}_columns_final", (chunks, cols), (0,), kind, False, 1, rows,
                           partials=True, y_t=ctx.dt(dst))
    return [Kernel(first, grid_for(chunks * cols, ctx.sm_count), THREADS, (part, src),
                   chunks * cols),
            Kernel(second, grid_for(cols, ctx.sm_count), THREADS, (dst, part), cols)]


@family("reduce")
def _reduce(ctx: StepCtx, p: dict) -> list:
    """``p['kind']``: a key of REDUCERS, or a function of the attrs giving one (norm's ``ord``);
    ``p['as_reduce']`` (optional) turns attrs without ``exclude`` into a reduction's (norm)."""
    kind = p["kind"](ctx.attrs) if callable(p["kind"]) else p["kind"]
    assert kind in REDUCERS
    attrs = p["as_reduce"](ctx.attrs) if "as_reduce" in p else ctx.attrs
    return reduce_actions(ctx, ctx.in_shapes[0], reduce_axes(attrs, len(ctx.in_shapes[0])), kind)


@family("sum_to_shape")
def _sum_to_shape(ctx: StepCtx, p: dict) -> list:
    """Sum a broadcast result's gradient back to the shape of input 1."""
    g, like = ctx.in_shapes[0], ctx.in_shapes[1]
    lead = len(g) - len(like)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(like)
                                if d == 1 and g[lead + i] != 1]
    return reduce_actions(ctx, g, axes, "sum")
