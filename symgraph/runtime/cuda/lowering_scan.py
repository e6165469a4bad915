"""Lowering families of ``ops/math_extra.py``: cumsum (``scan``), allclose and div_sqrt_dim.

* ``scan``: one thread per line along the axis (``kernels_scan.render_scan``); lines are
  independent, so a launch covers outer * inner of them.
* ``allclose``: the result byte set to 1, then one kernel over the elements clearing it at
  the first element found not close.
* ``div_sqrt_dim``: the elementwise kernel of x * (1 / sqrt(last dimension)), its constant
  read from the step's shape.
"""
from __future__ import annotations

from math import prod

from ...core.expr import inp
from ...compiler.ops.math_extra import div_sqrt_dim_scale
from .actions import StepCtx, Upload, family, launch
from .kernels_scan import render_allclose, render_scan
from .lowering_elementwise import elementwise_actions


@family("scan")
def _scan(ctx: StepCtx, p: dict) -> list:
    shape, axis = ctx.in_shapes[0], ctx.attrs["axis"]
    if axis is None:
        outer, n, inner = 1, prod(shape), 1
    else:
        ax = axis % len(shape)
        outer, n, inner = prod(shape[:ax]), shape[ax], prod(shape[ax + 1:])
    kern = render_scan(n, inner, ctx.dt(ctx.ins[0]), ctx.dt(ctx.outs[0]))
    return [launch(ctx, kern, (ctx.outs[0], ctx.ins[0]), outer * inner)]


@family("allclose")
def _allclose(ctx: StepCtx, p: dict) -> list:
    a = ctx.attrs
    kern = render_allclose(a["rtol"], a["atol"], a["equal_nan"], ctx.dt(ctx.ins[0]))
    return [Upload(ctx.outs[0], b"\x01"),
            launch(ctx, kern, (ctx.outs[0], ctx.ins[0], ctx.ins[1]), prod(ctx.in_shapes[0]))]


@family("div_sqrt_dim")
def _div_sqrt_dim(ctx: StepCtx, p: dict) -> list:
    x = ctx.in_shapes[0]
    return elementwise_actions(ctx, "div_sqrt_dim", [inp(0) * div_sqrt_dim_scale(x)], [x],
                               ctx.ins[:1], x, ctx.outs)
