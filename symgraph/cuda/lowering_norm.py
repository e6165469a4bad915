"""Lowering families of LeakyReLU, BatchNorm and LRN (``ops/activation.py``, ``ops/norm.py``,
``ops/lrn.py``).

LeakyReLU prints the op's own scalar formulas (``LEAKY``) through the elementwise generator,
PReLU's per-channel ``gamma`` laid along axis 1. BatchNorm in training: per-channel mean (in
float), variance as the mean of the centred squares (the two-pass form the numpy reference
computes), the normalisation as one broadcast kernel, and the moving statistics. With channels
not last (NCHW) the statistics are block-per-channel reductions (``lowering_reduce``) with the
centred squares in the step's workspace, and each moving statistic is one small kernel. With
channels last (NHWC, or (N, C): nothing after the channel axis) the data is a (rows, channels)
matrix and both statistics are coalesced two-stage column sums (``kernels_norm``), whose finish
kernels also write the moving statistics; the gradient's sums of dy and dy * xhat take the same
kernels. In inference the moving statistics are copied out and the normalisation uses them.
Which of the two runs is decided by ``RunCtx.is_train`` (a :class:`Switch`).
"""
from __future__ import annotations

from math import prod
from typing import Optional

from .. import expr as E
from ..expr import inp
from .actions import Kernel, Ref, StepCtx, Switch, family, launch
from .codegen import THREADS
from .kernels_norm import (COLUMN_SUM_KINDS, render_bn_backward_finish, render_bn_backward_sums,
                           render_bn_column_finish, render_bn_column_partials, render_lrn)
from .lowering_elementwise import copy_actions, elementwise_actions
from .lowering_reduce import reduce_actions, split_chunks
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


def _views(x: tuple, ax: int) -> tuple[tuple, tuple]:
    """(data, vector) shapes the elementwise kernels index by: x and the channel vector laid
    along ``ax``; with channels last (rows, C) and (1, C), so that a broadcast kernel splits
    each index into two coordinates, not one per axis."""
    if prod(x[ax + 1:]) == 1:
        return (prod(x) // x[ax], x[ax]), (1, x[ax])
    return x, tuple(d if i == ax else 1 for i, d in enumerate(x))


def _normalise(ctx: StepCtx, mean: Ref, var: Ref) -> list:
    """y = (x - mean) * gamma / sqrt(var + eps) + beta, vectors laid along the channel axis."""
    a = ctx.attrs
    x, vec = _views(ctx.in_shapes[0], a["axis"] % len(ctx.in_shapes[0]))
    gamma = E.const(1.0) if a["fix_gamma"] else inp(1)
    e = (inp(0) - inp(3)) * (gamma / E.call("sqrt", inp(4) + a["eps"])) + inp(2)
    return elementwise_actions(ctx, "BatchNorm", [e], [x, vec, vec, vec, vec],
                               [ctx.ins[0], ctx.ins[1], ctx.ins[2], mean, var], x, ctx.outs[:1])


FINISH_THREADS = 1024  # one block sums the partials of up to 1024 columns: all of its threads


def _moving_stat(momentum: float, old: E.Expr, stat: E.Expr) -> E.Expr:
    """The moving statistic after a training batch (MXNet's formula)."""
    return old * momentum + stat * (1.0 - momentum)


def _column_chunks(tiles: int, n: int, sm_count: int) -> int:
    """Row chunks of a channel-last column sum with ``tiles`` column tiles of ``n`` elements
    each: about eight blocks of THREADS per SM (full occupancy: the sums are memory-bound), at
    least eight elements per thread (the finish reads ``chunks`` rows)."""
    return max(1, min(-(-sm_count * 8 // tiles), n // (THREADS * 8)))


def _column_sums(ctx: StepCtx, rows: int, cols: int, kind: str, srcs: tuple,
                       dsts: tuple, scale: float, keep: Optional[Ref] = None,
                       update: Optional[tuple] = None, eps: float = 0.0) -> list:
    """Coalesced two-stage column sums of a (rows, cols) channel-last matrix
    (``kernels_norm.render_bn_column_partials``, ``kind`` and ``srcs`` as there), times
    ``scale``, into ``dsts`` (one per sum), into the float vector ``keep`` if given, and
    through ``update`` = (formula of (sum, old), new, old) into ``new`` if given."""
    lanes = min(cols, THREADS)
    tiles = -(-cols // lanes)
    chunks = _column_chunks(tiles, rows * lanes, ctx.sm_count)
    nsum = COLUMN_SUM_KINDS[kind]
    part = ctx.new_array(chunks * nsum * cols, "float32")
    s_t = ctx.dt(srcs[2]) if kind == "grad" else "float32"
    first = render_bn_column_partials(rows, cols, chunks, kind, eps, ctx.dt(srcs[0]), s_t)
    upd = (update[0], ctx.dt(update[1])) if update else None
    second = render_bn_column_finish(chunks, cols, scale, tuple(ctx.dt(d) for d in dsts),
                                     keep is not None, upd)
    extra = ((keep,) if keep is not None else ()) + (tuple(update[1:]) if update else ())
    width = nsum * cols
    fin_tiles = -(-width // min(width, FINISH_THREADS))
    return [Kernel(first, tiles * chunks, THREADS, (part, *srcs), tiles * chunks),
            Kernel(second, fin_tiles, FINISH_THREADS, (*dsts, *extra, part), fin_tiles)]


def _channel_last_train(ctx: StepCtx, ax: int) -> list:
    """Training forward of input 0 seen as (rows, channels), channels last: the mean, then the
    biased variance as the mean of squares centred on the unrounded float mean (the two-pass
    form of the numpy reference), each finish also updating its moving statistic; then y."""
    x = ctx.in_shapes[0]
    rows, cols = prod(x) // x[ax], x[ax]
    _, mean, var, new_mm, new_mv = ctx.outs
    mu = ctx.new_array(cols, "float32")
    upd = _moving_stat(ctx.attrs["momentum"], inp(1), inp(0))  # 0: batch statistic, 1: old
    acts = _column_sums(ctx, rows, cols, "sum", (ctx.ins[0],), (mean,), 1.0 / rows,
                              keep=mu, update=(upd, new_mm, ctx.ins[3]))
    acts += _column_sums(ctx, rows, cols, "centred_square", (ctx.ins[0], mu), (var,),
                               1.0 / rows, update=(upd, new_mv, ctx.ins[4]))
    return acts + _normalise(ctx, mean, var)


def _blocked_train(ctx: StepCtx, ax: int) -> list:
    """Training forward with channels not last: block-per-channel mean, the centred squares
    into float scratch, their mean, y, then the moving statistics one kernel each."""
    x = ctx.in_shapes[0]
    _, vec = _views(x, ax)
    red = [i for i in range(len(x)) if i != ax]
    _, mean, var, new_mm, new_mv = ctx.outs
    sq = ctx.new_array(prod(x), "float32")  # centred squares in float: var is their mean
    acts = reduce_actions(ctx, x, red, "mean", ctx.ins[0], mean)
    acts += elementwise_actions(ctx, "centred_square", [(inp(0) - inp(1)) * (inp(0) - inp(1))],
                                [x, vec], [ctx.ins[0], mean], x, [sq])
    acts += reduce_actions(ctx, x, red, "mean", sq, var)
    acts += _normalise(ctx, mean, var)
    for stat, old, new in ((mean, ctx.ins[3], new_mm), (var, ctx.ins[4], new_mv)):
        acts += elementwise_actions(ctx, "moving_stat",
                                    [_moving_stat(ctx.attrs["momentum"], inp(0), inp(1))],
                                    [(x[ax],), (x[ax],)], [old, stat], (x[ax],), [new])
    return acts


@family("batch_norm")
def _batch_norm(ctx: StepCtx, p: dict) -> list:
    """Outputs (y, mean, var, new moving mean, new moving var); inputs (x, gamma, beta, mm, mv)."""
    a, x = ctx.attrs, ctx.in_shapes[0]
    ax = a["axis"] % len(x)
    y, mean, var, new_mm, new_mv = ctx.outs
    pairs = ((mean, ctx.ins[3]), (var, ctx.ins[4]), (new_mm, ctx.ins[3]), (new_mv, ctx.ins[4]))
    infer = [a for dst, src in pairs for a in copy_actions(ctx, dst, src, (x[ax],))]
    infer += _normalise(ctx, ctx.ins[3], ctx.ins[4])
    if a["use_global_stats"]:
        return infer
    # channels last (NHWC, (N, C)): coalesced column sums, else a block per channel
    train = (_channel_last_train if prod(x[ax + 1:]) == 1 else _blocked_train)(ctx, ax)
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
    if inner == 1:  # channels last: coalesced column sums
        acts = _column_sums(ctx, m, ch, "grad", (dy, data, mean, var), (dbeta, dgamma), 1.0,
                            eps=a["eps"])
    else:
        chunks = split_chunks(ch, m, ctx.sm_count)
        part = ctx.new_array(2 * ch * chunks, "float32")
        dt, st = ctx.dt(data), ctx.dt(mean)  # narrow data keeps float32 statistics (ops/norm)
        acts = [Kernel(render_bn_backward_sums(outer, ch, inner, chunks, a["eps"], dt, st),
                       ch * chunks, THREADS, (part, dy, data, mean, var), ch * chunks),
                launch(ctx, render_bn_backward_finish(ch, chunks, ctx.dt(dgamma)),
                       (dgamma, dbeta, part), ch)]
    x, vec = _views(x, ax)
    rstd = E.const(1.0) / E.call("sqrt", inp(4) + a["eps"])
    scale = rstd if a["fix_gamma"] else inp(2) * rstd
    if a["use_global_stats"]:
        e = inp(0) * scale
    else:
        xhat = (inp(1) - inp(3)) * rstd
        e = (inp(0) - inp(5) * (1.0 / m) - xhat * (inp(6) * (1.0 / m))) * scale
    return acts + elementwise_actions(ctx, "bn_backward_dx", [e], [x, x] + [vec] * 5,
                                      [dy, data, gamma, mean, var, dbeta, dgamma], x, [dx])
