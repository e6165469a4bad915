"""Lowering family ``detection_nms``: box_nms and bipartite_matching as a block per batch item
(``kernels_detection_nms``), with their orders and flags in scratch; ``blocks`` is the launch
the multibox and proposal families share.
"""
from __future__ import annotations

from math import prod
from typing import Any

from .actions import Kernel, StepCtx, family
from .kernels_detection_nms import render_box_nms, render_matching

BLOCK = 256


def blocks(ctx: StepCtx, kern: Any, items: int, args: tuple, threads: int = BLOCK) -> list:
    """One block of ``threads`` per batch item (grid-strided over at most 8 per SM)."""
    grid = max(1, min(items, ctx.sm_count * 8))
    return [Kernel(kern, grid, threads, args, items)]


def _box_nms(ctx: StepCtx) -> list:
    shape = ctx.in_shapes[0]
    items, n, width = prod(shape[:-2]), shape[-2], shape[-1]
    kern = render_box_nms(dict(ctx.attrs), items, n, width, ctx.storage)
    scratch = (ctx.new_array(items * n, "int32"), ctx.new_array(items * n, "int32"))
    return blocks(ctx, kern, items, (*ctx.outs, ctx.ins[0], *scratch))


def _matching(ctx: StepCtx) -> list:
    shape, a = ctx.in_shapes[0], ctx.attrs
    items, rows, cols = prod(shape[:-2]), shape[-2], shape[-1]
    kern = render_matching(items, rows, cols, a["is_ascend"], a["threshold"], a["topk"],
                           ctx.storage)
    order = ctx.new_array(items * rows * cols, "int32")
    return blocks(ctx, kern, items, (*ctx.outs, ctx.ins[0], order))


_BLOCKS = {"box_nms": _box_nms, "matching": _matching}


@family("detection_nms")
def _detection_nms(ctx: StepCtx, p: dict) -> list:
    """A block per batch item of the op named by ``p['kind']``."""
    return _BLOCKS[p["kind"]](ctx)
