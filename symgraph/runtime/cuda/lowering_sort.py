"""Lowering families of ``ops/sorting.py``: sort/argsort/topk by ranks, and the axis gather
(pick, ``_gather_axis``) and its scatter; one kernel each (``kernels_sort``), a scatter after
zeroing its output.
"""
from __future__ import annotations

from math import prod

from ...core.attrs import Attrs
from .actions import ALL_FLOATS, Fill, StepCtx, family, launch
from .kernels_sort import render_axis_gather, render_rank


def _row_geometry(shape: tuple, axis) -> tuple[int, int, int]:
    if axis is None:  # the flattened array is one row
        return 1, prod(shape), 1
    ax = axis % len(shape)
    return prod(shape[:ax]), shape[ax], prod(shape[ax + 1:])


def _topk_k(a: Attrs, n: int) -> int:
    return n if a["k"] <= 0 else a["k"]


# Integer data sorts in its own type; integer outputs take indices as they are.
INTEGERS = frozenset({"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"})


@family("rank_sort", ALL_FLOATS | INTEGERS)
def _rank_sort(ctx: StepCtx, p: dict) -> list:
    """``p['mode']``: value (sort), indices (argsort) or topk (ret_typ from the attrs)."""
    a = ctx.attrs
    outer, n, inner = _row_geometry(ctx.in_shapes[0], a["axis"])
    kind = a["ret_typ"] if p["mode"] == "topk" else p["mode"]
    k = _topk_k(a, n) if p["mode"] == "topk" else n
    outs = ctx.outs[:2] if kind == "both" else ctx.outs[:1]
    kern = render_rank(kind, outer, n, inner, k, a["is_ascend"], [ctx.dt(o) for o in outs],
                       ctx.dt(ctx.ins[0]))
    return [launch(ctx, kern, (*outs, ctx.ins[0]), prod(ctx.in_shapes[0]))]


@family("axis_gather")
def _axis_gather(ctx: StepCtx, p: dict) -> list:
    """Gather ``out[o, j, in] = data[o, idx[o, j, in], in]`` (pick: j has one value), or with
    ``p['scatter']`` its adjoint: zeros, then ``atomicAdd`` of each ograd element."""
    a = {**ctx.attrs, **{k: p[k] for k in ("axis", "mode") if k in p}}  # batch_take: fixed
    data = ctx.in_shapes[2] if p["scatter"] else ctx.in_shapes[0]
    outer, n, inner = _row_geometry(data, a["axis"])
    m = prod(ctx.in_shapes[1]) // max(1, outer * inner)  # index entries per row
    kern = render_axis_gather(p["scatter"], outer, n, inner, m, a["mode"] == "wrap",
                              ctx.dt(ctx.outs[0]), ctx.dt(ctx.ins[0]), ctx.dt(ctx.ins[1]))
    run = launch(ctx, kern, (ctx.outs[0], ctx.ins[0], ctx.ins[1]), prod(ctx.in_shapes[1]))
    if p["scatter"]:
        return [Fill(ctx.outs[0], 0.0, prod(data), ctx.dt(ctx.outs[0])), run]
    return [run]
