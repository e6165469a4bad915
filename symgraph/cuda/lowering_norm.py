"""Lowering families of LeakyReLU, BatchNorm and LRN (``ops/activation.py``, ``ops/norm.py``,
``ops/lrn.py``).

LeakyReLU prints the op's own scalar formulas (``LEAKY``) through the elementwise generator, PReLU's
per-channel ``gamma`` laid along axis 1. BatchNorm in training: one pass over the data sums,
per channel, ``x - shift`` and its square in float (two stages: few channels would not fill the
device; the shift, the channel's first value, keeps the one-pass variance from cancelling), a
small kernel gives the mean, the variance and the moving statistics, and the normalisation is
one broadcast kernel; in inference the moving statistics are copied out and the normalisation
uses them. Which of the two runs is decided by
``RunCtx.is_train`` (a :class:`Switch`).
"""
from __future__ import annotations

from math import prod

from .. import expr as E
from ..expr import inp
from .actions import Kernel, StepCtx, Switch, family, launch
from .codegen import THREADS
from .kernels_norm import (render_bn_backward_finish, render_bn_backward_sums, render_bn_stats,
                           render_bn_stats_finish, render_lrn)
from .lowering_elementwise import copy_actions, elementwise_actions
from .lowering_reduce import split_chunks
@family("leaky_relu")
def _leaky_relu(ctx: StepCtx, p: dict) -> list:
    from ..ops.activation import LEAKY, prelu_gamma_shape
    a, x = ctx.attrs, ctx.in_shapes[0]
    if a["act_type"] == "prelu":
        g_shape = prelu_gamma_shape(ctx.in_shapes[1], x)
        e, shapes = LEAKY["prelu"](inp(0), inp(1)), [x, g_shape]
    else:
        e, shapes = LEAKY[a["act_type"]](inp(0), E.const(a["slope"])), [x]
    return elementwise_actions(ctx, f"LeakyReLU_{a['act_type']}", [e], shapes, ctx.ins, x,
                               ctx.outs)


def _normalise(ctx: StepCtx, vec: tuple, mean, var) -> list:
    """y = (x - mean) * gamma / sqrt(var + eps) + beta, vectors laid along the channel axis."""
    a, x = ctx.attrs, ctx.in_shapes[0]
    gamma = E.const(1.0) if a["fix_gamma"] else inp(1)
    e = (inp(0) - inp(3)) * (gamma / E.call("sqrt", inp(4) + a["eps"])) + inp(2)
    return elementwise_actions(ctx, "BatchNorm", [e], [x, vec, vec, vec, vec],
                               [ctx.ins[0], ctx.ins[1], ctx.ins[2], mean, var], x, ctx.outs[:1])


@family("batch_norm")
def _batch_norm(ctx: StepCtx, p: dict) -> list:
    """Outputs (y, mean, var, new moving mean, new moving var); inputs (x, gamma, beta, mm, mv)."""
    a, x = ctx.attrs, ctx.in_shapes[0]
    ax = a["axis"] % len(x)
    vec = tuple(d if i == ax else 1 for i, d in enumerate(x))
    y, mean, var, new_mm, new_mv = ctx.outs
    pairs = ((mean, ctx.ins[3]), (var, ctx.ins[4]), (new_mm, ctx.ins[3]), (new_mv, ctx.ins[4]))
    infer = [a for dst, src in pairs for a in copy_actions(ctx, dst, src, (x[ax],))]
    infer += _normalise(ctx, vec, ctx.ins[3], ctx.ins[4])
    if a["use_global_stats"]:
        return infer
    outer, inner = prod(x[:ax]), prod(x[ax + 1:])
    chunks = split_chunks(x[ax], outer * inner, ctx.sm_count)
    part = ctx.new_array(2 * x[ax] * chunks, "float32")
    dt, st = ctx.dt(ctx.ins[0]), ctx.dt(mean)  # narrow data keeps float32 statistics
    train = [Kernel(render_bn_stats(outer, x[ax], inner, chunks, dt), x[ax] * chunks, THREADS,
                    (part, ctx.ins[0]), x[ax] * chunks),
             launch(ctx, render_bn_stats_finish(x[ax], inner, chunks, outer * inner,
                                                a["momentum"], dt, st),
                    (mean, var, new_mm, new_mv, part, ctx.ins[0], ctx.ins[3], ctx.ins[4]), x[ax])]
    train += _normalise(ctx, vec, mean, var)
    return [Switch(tuple(train), tuple(infer))]


@family("formula_of_input0")
def _formula_of_input0(ctx: StepCtx, p: dict) -> list:
    """Output = ``p['formula'](x)`` of input 0 only (regression outputs' forward)."""
    x = ctx.in_shapes[0]
    return elementwise_actions(ctx, ctx.stem, [p["formula"](inp(0))], [x], ctx.ins[:1], x,
                               ctx.outs)


@family("regression_backward")
def _regression_backward(ctx: StepCtx, p: dict) -> list:
    """(output - label) (its sign if mae) * grad_scale / outputs per sample."""
    out, label = ctx.in_shapes
    per_sample = max(1, prod(label) // label[0]) if label else 1
    d = inp(0) - inp(1)
    e = (E.call("sign", d) if ctx.attrs["mae"] else d) * (ctx.attrs["grad_scale"] / per_sample)
    return elementwise_actions(ctx, "regression_grad", [e], [out, out], ctx.ins, out, ctx.outs)


@family("lrn")
def _lrn(ctx: StepCtx, p: dict) -> list:
    """LRN's output and its hidden normaliser ``tmp_norm``, one kernel (``kernels_norm``)."""
    a, x = ctx.attrs, ctx.in_shapes[0]
    kern = render_lrn(x[1], prod(x[2:]), a["nsize"], a["alpha"], a["beta"], a["knorm"],
                      ctx.dt(ctx.ins[0]))
    return [launch(ctx, kern, (ctx.outs[0], ctx.outs[1], ctx.ins[0]), prod(x))]


@family("batch_norm_backward")
def _batch_norm_backward(ctx: StepCtx, p: dict) -> list:
    """(dx, dgamma, dbeta) from (dy, x, gamma, mean, var): the two per-channel sums in one
    pass over dy and x (two stages: few channels would not fill the device), then dx as one
    elementwise kernel over the sums."""
    a, x = ctx.attrs, ctx.in_shapes[1]
    ax = a["axis"] % len(x)
    outer, ch, inner = prod(x[:ax]), x[ax], prod(x[ax + 1:])
    dy, data, gamma, mean, var = ctx.ins
    dx, dgamma, dbeta = ctx.outs
    m = outer * inner
    chunks = split_chunks(ch, m, ctx.sm_count)
    part = ctx.new_array(2 * ch * chunks, "float32")
    dt, st = ctx.dt(data), ctx.dt(mean)  # narrow data keeps float32 statistics (ops/norm.py)
    acts = [Kernel(render_bn_backward_sums(outer, ch, inner, chunks, a["eps"], dt, st),
                   ch * chunks, THREADS, (part, dy, data, mean, var), ch * chunks),
            launch(ctx, render_bn_backward_finish(ch, chunks, ctx.dt(dgamma)),
                   (dgamma, dbeta, part), ch)]
    vec = tuple(d if i == ax else 1 for i, d in enumerate(x))
    rstd = E.const(1.0) / E.call("sqrt", inp(4) + a["eps"])
    scale = rstd if a["fix_gamma"] else inp(2) * rstd
    if a["use_global_stats"]:
        e = inp(0) * scale
    else:
        xhat = (inp(1) - inp(3)) * rstd
        e = (inp(0) - inp(5) * (1.0 / m) - xhat * (inp(6) * (1.0 / m))) * scale
    return acts + elementwise_actions(ctx, "bn_backward_dx", [e], [x, x] + [vec] * 5,
                                      [dy, data, gamma, mean, var, dbeta, dgamma], x, [dx])
