"""Lowering families of LeakyReLU, BatchNorm and LRN (``ops/activation.py``, ``ops/norm.py``,
``ops/lrn.py``).

LeakyReLU prints the op's own scalar formulas (``LEAKY``) through the elementwise generator,
PReLU's per-channel ``gamma`` laid along axis 1. BatchNorm in training sums, per channel, ``x -
shift`` and its square in float in one pass over the data (the shift, the channel's first
value, keeps the one-pass variance from cancelling); the gradient sums dy and dy * xhat. With
channels not last (NCHW) that is two stages (a block per chunk of a channel, then a small
kernel for the mean, the variance and the moving statistics, or dgamma and dbeta), and the
normalisation or dx is one broadcast kernel. With channels last (NHWC, or (N, C): nothing after
the channel axis) the data is a (rows, channels) matrix, and each direction is one kernel of
coalesced column sums, a grid-wide barrier, and the elementwise part (``lowering_bn_column``).
In inference the moving statistics are copied out and the normalisation uses them. Which of the two runs is decided by
``RunCtx.is_train`` (a :class:`Switch`).
"""
from __future__ import annotations

from math import prod
from typing import Callable, Optional

from ...core import expr as E
from ...core.expr import inp, substitute
from .actions import Fill, Kernel, Ref, StepCtx, Switch, family, launch
from .codegen import THREADS, Rendered, grid_for
from .kernels_norm import (render_bn_backward_finish, render_bn_backward_sums, render_bn_stats,
                           render_bn_stats_finish, render_lrn)
from .kernels_random_draw import render_random_draw
from .lowering_bn_column import column_backward, column_train
from .lowering_elementwise import copy_actions, elementwise_actions
from .lowering_fused import Epilogue, inline_epilogue
from .lowering_reduce import split_chunks
@family("leaky_relu")
def _leaky_relu(ctx: StepCtx, p: dict) -> list:
    from ...compiler.ops.activation import LEAKY, prelu_gamma_shape
    a, x = ctx.attrs, ctx.in_shapes[0]
    if a["act_type"] == "rrelu":
        return _rrelu(ctx, x)
    if a["act_type"] == "prelu":
        g_shape = prelu_gamma_shape(ctx.in_shapes[1], x)
        e, shapes = LEAKY["prelu"](inp(0), inp(1)), [x, g_shape]
    else:
        e, shapes = LEAKY[a["act_type"]](inp(0), E.const(a["slope"])), [x]
    return elementwise_actions(ctx, f"LeakyReLU_{a['act_type']}", [e], shapes, ctx.ins, x,
                               ctx.outs)


def _rrelu(ctx: StepCtx, x: tuple) -> list:
    """Slopes (hidden output 1): a Philox draw from U[lower, upper) in training, their mean in
    inference; then y = x > 0 ? x : slope * x, one elementwise kernel."""
    from ...compiler.ops.activation import LEAKY
    a, (y, mask), n = ctx.attrs, ctx.outs, prod(x)
    apply = elementwise_actions(ctx, "LeakyReLU_rrelu", [LEAKY["rrelu"](inp(0), inp(1))],
                                [x, x], [ctx.ins[0], mask], x, [y])
    if not n:
        return []
    draw = Kernel(render_random_draw("uniform", n, 1, [a["lower_bound"], a["upper_bound"]],
                                     dtype=ctx.dt(mask)),
                  grid_for(n, ctx.sm_count), THREADS, (mask, ctx.new_key()), n)
    mean = Fill(mask, (a["lower_bound"] + a["upper_bound"]) / 2.0, n, ctx.dt(mask))
    return [Switch(tuple([draw] + apply), tuple([mean] + apply))]


def _views(x: tuple, ax: int) -> tuple[tuple, tuple]:
    """(data, vector) shapes the elementwise kernels index by: x and the channel vector laid
    along ``ax``; with channels last (rows, C) and (1, C), so that a broadcast kernel splits
    each index into two coordinates, not one per axis."""
    if prod(x[ax + 1:]) == 1:
        return (prod(x) // x[ax], x[ax]), (1, x[ax])
    return x, tuple(d if i == ax else 1 for i, d in enumerate(x))


def _normalise(ctx: StepCtx, mean: Ref, var: Ref, epi: Optional[Epilogue] = None) -> list:
    """y = (x - mean) * gamma / sqrt(var + eps) + beta, vectors laid along the channel axis;
    through ``epi`` (a fused group's formula over y and operands of x's shape) when given."""
    a = ctx.attrs
    x, vec = _views(ctx.in_shapes[0], a["axis"] % len(ctx.in_shapes[0]))
    gamma = E.const(1.0) if a["fix_gamma"] else inp(1)
    e = (inp(0) - inp(3)) * (gamma / E.call("sqrt", inp(4) + a["eps"])) + inp(2)
    operands: tuple = ()
    if epi is not None:
        operands = epi.operands
        e = substitute(epi.expr, [e] + [inp(4 + k) for k in range(1, len(operands) + 1)])
    return elementwise_actions(ctx, "BatchNorm", [e], [x, vec, vec, vec, vec]
                               + [x] * len(operands),
                               [ctx.ins[0], ctx.ins[1], ctx.ins[2], mean, var, *operands], x,
                               ctx.outs[:1])


def _block_sums(ctx: StepCtx, channels: int, n: int, srcs: tuple,
                first: Callable[[int], Rendered], finish: Callable[[int], Rendered],
                outs: tuple, extra: tuple = ()) -> list:
    """Two-stage pair sums with a block per chunk of a channel (channels not last; each of
    ``n`` elements): ``first(chunks)`` reads ``srcs`` into float partials, ``finish(chunks)``,
    one thread per channel, writes ``outs`` from them and ``extra``. The counterpart of
    ``_column_sums``."""
    chunks = split_chunks(channels, n, ctx.sm_count)
    part = ctx.new_array(2 * channels * chunks, "float32")
    return [Kernel(first(chunks), channels * chunks, THREADS, (part, *srcs), channels * chunks),
            launch(ctx, finish(chunks), (*outs, part, *extra), channels)]


def _train_stats(ctx: StepCtx, ax: int, epi: Optional[Epilogue]) -> list:
    """Mean, biased variance and moving statistics of input 0 over every axis but ``ax``, and
    the normalisation with them."""
    a, x = ctx.attrs, ctx.in_shapes[0]
    _, mean, var, new_mm, new_mv = ctx.outs
    outer, inner = prod(x[:ax]), prod(x[ax + 1:])
    dt, st = ctx.dt(ctx.ins[0]), ctx.dt(mean)  # narrow data keeps float32 statistics
    if inner == 1:  # channels last: one kernel
        return column_train(ctx, outer, x[ax], epi)
    return _block_sums(ctx, x[ax], outer * inner, (ctx.ins[0],),
                       lambda chunks: render_bn_stats(outer, x[ax], inner, chunks, dt),
                       lambda chunks: render_bn_stats_finish(x[ax], inner, chunks, outer * inner,
                                                             a["momentum"], dt, st),
                       (mean, var, new_mm, new_mv), (ctx.ins[0], ctx.ins[3], ctx.ins[4])) \
        + _normalise(ctx, mean, var, epi)


@inline_epilogue("batch_norm")
@family("batch_norm")
def _batch_norm(ctx: StepCtx, p: dict, epi: Optional[Epilogue] = None) -> list:
    """Outputs (y, mean, var, new moving mean, new moving var); inputs (x, gamma, beta, mm, mv).
    ``epi``: a fused group's formula applied to y where it is stored (``_fused`` with this
    head: ``passes/fuse_bn_epilogue``), in training and in inference."""
    a, x = ctx.attrs, ctx.in_shapes[0]
    ax = a["axis"] % len(x)
    _, mean, var, new_mm, new_mv = ctx.outs
    pairs = ((mean, ctx.ins[3]), (var, ctx.ins[4]), (new_mm, ctx.ins[3]), (new_mv, ctx.ins[4]))
    infer = [a for dst, src in pairs for a in copy_actions(ctx, dst, src, (x[ax],))]
    infer += _normalise(ctx, ctx.ins[3], ctx.ins[4], epi)
    if a["use_global_stats"]:
        return infer
    train = _train_stats(ctx, ax, epi)
    return [Switch(tuple(train), tuple(infer))]


@family("batch_norm_relu")
def _batch_norm_relu(ctx: StepCtx, p: dict) -> list:
    """BatchNormWithReLU: BatchNorm's kernels, relu applied where y is stored."""
    return _batch_norm(ctx, p, Epilogue(E.call("max", inp(0), 0.0), ()))


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
    if inner == 1:  # channels last: one kernel
        return column_backward(ctx, m, ch)
    dt, st = ctx.dt(data), ctx.dt(mean)  # narrow data keeps float32 statistics (ops/norm)
    acts = _block_sums(ctx, ch, m, (dy, data, mean, var), lambda chunks:
                       render_bn_backward_sums(outer, ch, inner, chunks, a["eps"], dt, st),
                       lambda chunks: render_bn_backward_finish(ch, chunks, ctx.dt(dgamma)),
                       (dgamma, dbeta))
    rstd = E.const(1.0) / E.call("sqrt", inp(4) + a["eps"])
    scale = rstd if a["fix_gamma"] else inp(2) * rstd
    if a["use_global_stats"]:
        e = inp(0) * scale
    else:
        xhat = (inp(1) - inp(3)) * rstd
        e = (inp(0) - inp(5) * (1.0 / m) - xhat * (inp(6) * (1.0 / m))) * scale
    vec = tuple(d if i == ax else 1 for i, d in enumerate(x))
    return acts + elementwise_actions(ctx, "bn_backward_dx", [e], [x, x] + [vec] * 5,
                                      [dy, data, gamma, mean, var, dbeta, dgamma], x, [dx])
