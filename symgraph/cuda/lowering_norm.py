"""Lowering families of LeakyReLU, BatchNorm and LRN (``ops/activation.py``, ``ops/norm.py``,
``ops/lrn.py``).

LeakyReLU prints the op's own scalar formulas (``LEAKY``) through the elementwise generator,
PReLU's per-channel ``gamma`` laid along axis 1. BatchNorm in training: one pass over the data
sums, per channel, ``x - shift`` and its square in float (two stages: few channels would not
fill the device; the shift, the channel's first value, keeps the one-pass variance from
cancelling), a small kernel gives the mean, the variance and the moving statistics, and the
normalisation is one broadcast kernel; the gradient's sums of dy and dy * xhat take the same
two stages. With channels not last (NCHW) a block sums a chunk of one channel; with channels
last (NHWC, or (N, C): nothing after the channel axis) the data is a (rows, channels) matrix,
the sums are coalesced column sums and the elementwise kernels index that 2-D view. In
inference the moving statistics are copied out and the normalisation uses them. Which of the
two runs is decided by ``RunCtx.is_train`` (a :class:`Switch`).
"""
from __future__ import annotations

from math import prod
from typing import Callable

from .. import expr as E
from ..expr import inp
from .actions import Kernel, Ref, StepCtx, Switch, family, launch
from .codegen import THREADS, Rendered
from .kernels_norm import (render_bn_backward_finish, render_bn_backward_sums,
                           render_bn_column_grad_finish, render_bn_column_stats_finish,
                           render_bn_column_sums, render_bn_stats, render_bn_stats_finish,
                           render_lrn)
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
# Stage one's blocks are as large: as many threads in flight as with 256-thread blocks, but a
# quarter of the partials for the finish's one block to add up (whose serial loop over them was
# most of its time: ResNet-20's bf16 BatchNorm kernels 0.646 -> 0.567 ms per step on the H100).
COLUMN_THREADS = 1024


def _column_chunks(tiles: int, n: int, sm_count: int) -> int:
    """Row chunks of a channel-last column sum with ``tiles`` column tiles of ``n`` elements
    each: about two blocks of COLUMN_THREADS per SM (full occupancy: the sums are
    memory-bound), at least eight elements per thread (the finish reads ``chunks`` rows)."""
    return max(1, min(-(-sm_count * 2 // tiles), n // (COLUMN_THREADS * 8)))


def _column_sums(ctx: StepCtx, rows: int, cols: int, kind: str, srcs: tuple,
                 finish: Callable[[int], Rendered], outs: tuple, extra: tuple = (),
                 eps: float = 0.0) -> list:
    """Coalesced two-stage pair sums per column of a (rows, cols) channel-last matrix:
    ``kernels_norm.render_bn_column_sums`` (``kind``, ``srcs``) into float partials, then
    ``finish(chunks)`` (one of its column finishes) with ``outs``, the partials, ``extra``."""
    lanes = min(cols, COLUMN_THREADS)
    tiles = -(-cols // lanes)
    chunks = _column_chunks(tiles, rows * lanes, ctx.sm_count)
    part = ctx.new_array(2 * chunks * cols, "float32")
    s_t = ctx.dt(srcs[2]) if kind == "grad" else "float32"
    first = render_bn_column_sums(rows, cols, chunks, kind, eps, ctx.dt(srcs[0]), s_t)
    fin_tiles = -(-cols // min(cols, FINISH_THREADS))
    return [Kernel(first, tiles * chunks, COLUMN_THREADS, (part, *srcs), tiles * chunks),
            Kernel(finish(chunks), fin_tiles, FINISH_THREADS, (*outs, part, *extra), fin_tiles)]


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


def _train_stats(ctx: StepCtx, ax: int) -> list:
    """Mean, biased variance and moving statistics of input 0 over every axis but ``ax``."""
    a, x = ctx.attrs, ctx.in_shapes[0]
    _, mean, var, new_mm, new_mv = ctx.outs
    outer, inner = prod(x[:ax]), prod(x[ax + 1:])
    dt, st = ctx.dt(ctx.ins[0]), ctx.dt(mean)  # narrow data keeps float32 statistics
    outs, extra = (mean, var, new_mm, new_mv), (ctx.ins[0], ctx.ins[3], ctx.ins[4])
    if inner == 1:  # channels last: coalesced column sums
        rows = outer
        return _column_sums(ctx, rows, x[ax], "stats", (ctx.ins[0],), lambda chunks:
                            render_bn_column_stats_finish(x[ax], chunks, rows, a["momentum"],
                                                          dt, st), outs, extra)
    return _block_sums(ctx, x[ax], outer * inner, (ctx.ins[0],),
                       lambda chunks: render_bn_stats(outer, x[ax], inner, chunks, dt),
                       lambda chunks: render_bn_stats_finish(x[ax], inner, chunks, outer * inner,
                                                             a["momentum"], dt, st),
                       outs, extra)


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
    train = _train_stats(ctx, ax) + _normalise(ctx, mean, var)
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
        acts = _column_sums(ctx, m, ch, "grad", (dy, data, mean, var), lambda chunks:
                            render_bn_column_grad_finish(ch, chunks, ctx.dt(dgamma)),
                            (dgamma, dbeta), eps=a["eps"])
    else:
        dt, st = ctx.dt(data), ctx.dt(mean)  # narrow data keeps float32 statistics (ops/norm)
        acts = _block_sums(ctx, ch, m, (dy, data, mean, var), lambda chunks:
                           render_bn_backward_sums(outer, ch, inner, chunks, a["eps"], dt, st),
                           lambda chunks: render_bn_backward_finish(ch, chunks, ctx.dt(dgamma)),
                           (dgamma, dbeta))
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
