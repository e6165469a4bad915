"""Lowering families of the rearranging ops (``ops/rearrange.py``) that are not one fixed
view family: diag (a gather of the diagonal, or for 1-D data a scatter onto it, through the
``gather_views`` / ``scatter_views`` families of ``lowering_views``) and im2col / col2im
(``columns``: the convolution's column kernels of ``kernels_conv`` plus one swap between their
(C*K, N, L) layout and MXNet's (N, C*K, L)).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...compiler.ops.rearrange import column_window, diagonal
from .actions import FAMILIES, StepCtx, family, launch
from .kernels_conv import render_col2im, render_im2col, render_swap01


@family("diag")
def _diag(ctx: StepCtx, p: dict) -> list:
    """diag: the (axis1, axis2) diagonal of the data, or a 1-D data onto the diagonal of a
    zero matrix; ``p['backward']`` (inputs ograd, data): the adjoint of each."""
    data = ctx.in_shapes[1 if p["backward"] else 0]
    vector = len(data) == 1
    gathers = vector == p["backward"]  # forward of n-d data, or backward of 1-D data

    def views(a: Any, x: np.ndarray, s: list) -> list:
        return [diagonal(a, x, vector)]
    if gathers:
        return FAMILIES["gather_views"](ctx, {"views": views, "input": 0})
    return FAMILIES["scatter_views"](ctx, {"views": views, "zero": True, "inputs": (0,)})


@family("columns")
def _columns(ctx: StepCtx, p: dict) -> list:
    """im2col: columns (C*K, N*L) into scratch, then swapped to (N, C*K, L); col2im
    (``p['inverse']``): the swap back, then the sum of each cell's column entries."""
    image = ctx.out_shapes[0] if p["inverse"] else ctx.in_shapes[0]
    g = column_window(ctx.attrs, image)
    dt = ctx.storage
    tmp = ctx.new_array(g.ckk * g.cols, dt)
    if p["inverse"]:
        return [launch(ctx, render_swap01(g.n, g.ckk, g.pix, False, dt), (tmp, ctx.ins[0]),
                       g.ckk * g.cols),
                launch(ctx, render_col2im(g, dt), (ctx.outs[0], tmp), g.n * g.c * g.cells)]
    return [launch(ctx, render_im2col(g, dt), (tmp, ctx.ins[0]), g.ckk * g.cols),
            launch(ctx, render_swap01(g.ckk, g.n, g.pix, False, dt), (ctx.outs[0], tmp),
                   g.ckk * g.cols)]
