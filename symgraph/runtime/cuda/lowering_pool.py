"""Lowering families of Pooling and its backward ops (``ops/pool.py``): one hand-written kernel
each (templates in ``kernels_pool``), for 1-D, 2-D and 3-D windows. Pooling and its backward
may head a fused group: their kernels then apply the group's formula where they store.

The geometry is the node's window (``pool.pool_window``: the object its shape rule made),
passed to the templates as it is.
"""
from __future__ import annotations

from math import prod
from typing import Optional

from ...compiler.ops.geometry import PoolWindow
from ...compiler.ops.pool import pool_window
from ...core.base import BindError, where
from .actions import StepCtx, family, launch
from .kernels_pool import render_pool, render_pool_backward, render_pool_backward_tiles
from .lowering_fused import Epilogue, inline_epilogue


def _pool_kernel(ctx: StepCtx, kern, n: int, epi: Optional[Epilogue]) -> list:
    """One launch over ``n`` threads: (output, the step's inputs, epilogue operands)."""
    operands = epi.operands if epi is not None else ()
    return [launch(ctx, kern, (ctx.outs[0],) + tuple(ctx.ins) + operands, n)]


def _window(ctx: StepCtx, data: int) -> PoolWindow:
    """The node's window over input ``data``; BindError for channels-last data (these
    kernels index NCHW; the compiled CPU backend pools NHWC)."""
    g = pool_window(ctx.attrs, ctx.in_shapes[data])
    if g.channel_last:
        node = ctx.step.node
        raise BindError(f"{where(node.name, node.op)}layout {ctx.attrs['layout']}: the CUDA "
                        f"backend pools channels first (NCHW); transpose the data")
    return g


def _epilogue(epi: Optional[Epilogue]) -> dict:
    """The render functions' epilogue arguments."""
    return {} if epi is None else {"epilogue": epi.expr, "n_epi": len(epi.operands)}


@family("pooling")
def _pooling(ctx: StepCtx, p: dict, epi: Optional[Epilogue] = None) -> list:
    """Input data -> pooled output; ``epi``: a fused group's formula applied by the kernel."""
    g = _window(ctx, 0)
    return _pool_kernel(ctx, render_pool(g, False, **_epilogue(epi), dtype=ctx.storage),
                        prod(ctx.out_shapes[0]), epi)


@family("pooling_backward")
def _pooling_backward(ctx: StepCtx, p: dict, epi: Optional[Epilogue] = None) -> list:
    """Inputs (ograd, data, output) -> gradient w.r.t. data: one thread per tile when windows
    do not overlap (each window searched once), else one per input cell (a gather)."""
    g = _window(ctx, 1)
    dt = ctx.storage
    if g.disjoint:
        kern, n = render_pool_backward_tiles(g, **_epilogue(epi), dtype=dt), \
            g.n * g.c * prod(g.tiles)
    else:
        kern, n = render_pool_backward(g, **_epilogue(epi), dtype=dt), prod(ctx.out_shapes[0])
    return _pool_kernel(ctx, kern, n, epi)


# Both write a fused group's formula in their own store (no scratch, no second pass).
inline_epilogue("pooling")(_pooling)
inline_epilogue("pooling_backward")(_pooling_backward)


@family("pooling_gather")
def _pooling_gather(ctx: StepCtx, p: dict) -> list:
    """Inputs (grad, data, output) -> each window's grad where its output came from."""
    g = _window(ctx, 1)
    return _pool_kernel(ctx, render_pool(g, gather=True, dtype=ctx.storage),
                        prod(ctx.out_shapes[0]), None)
