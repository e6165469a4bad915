"""Lowering families of the CNN ops (Convolution and Pooling, registered by ``ops/conv.py`` and
``ops/pool.py``): cuDNN convolution (algorithm measured once per shape) with an im2col + cuBLAS
fallback used when cuDNN cannot be loaded, and hand-written 2-D pooling kernels.

1-D layers run as 2-D ones with a height of 1. 3-D layers and grouped convolutions take the host
path for now (listed as not done). Geometry comes from the ops' own helpers so that the GPU and
numpy shapes can never disagree.
"""
from __future__ import annotations

from math import prod
from typing import Optional

from .codegen import THREADS, grid_for
from .kernels_nn import (Conv2d, Pool2d, render_col2im, render_im2col, render_pool,
                         render_pool_backward, render_swap01)
from ..expr import inp
from .lowering import Choice, ConvCall, Gemm, Host, Kernel, StepCtx, elementwise_actions, family


def _launch(ctx: StepCtx, kern, args: tuple, n: int) -> Kernel:
    return Kernel(kern, grid_for(n, ctx.sm_count), THREADS, args, n)


def conv_geometry(ctx: StepCtx, x_shape: tuple) -> Optional[Conv2d]:
    """The 2-D view of a Convolution-like step, or None when it needs the host path."""
    from ..ops.conv import geometry
    g = geometry(ctx.attrs)
    if len(g.kernel) not in (1, 2) or g.groups != 1:
        return None
    out = g.out(x_shape[2:])
    if len(g.kernel) == 1:
        return Conv2d(x_shape[0], x_shape[1], 1, x_shape[2], 1, g.kernel[0], 1, g.stride[0],
                      0, g.pad[0], 1, g.dilate[0], 1, out[0])
    return Conv2d(x_shape[0], x_shape[1], *x_shape[2:], *g.kernel, *g.stride, *g.pad,
                  *g.dilate, *out)


@family("convolution")
def _convolution(ctx: StepCtx, p: dict) -> list:
    """y(N,F,P) = swap(W(F,CKK) @ col(CKK,NP)) + bias: im2col, one GEMM, one epilogue kernel."""
    g = conv_geometry(ctx, ctx.in_shapes[0])
    if g is None:
        return [Host(ctx.step)]
    f, pix = ctx.attrs["num_filter"], g.oh * g.ow
    col, tmp = ctx.new_scratch(4 * g.ckk * g.cols), ctx.new_scratch(4 * f * g.cols)
    bias = not ctx.attrs["no_bias"]
    epi = render_swap01(f, g.n, pix, bias)
    fallback = (_launch(ctx, render_im2col(g), (col, ctx.ins[0]), g.ckk * g.cols),
                Gemm(False, False, f, g.cols, g.ckk, ctx.ins[1], col, tmp),
                _launch(ctx, epi, (ctx.outs[0], tmp) + ((ctx.ins[2],) if bias else ()),
                        f * g.cols))
    primary = [ConvCall("fwd", g, f, ctx.ins[0], ctx.ins[1], ctx.outs[0])]
    if bias:  # the bias epilogue: one broadcast kernel over y, in place
        y = ctx.out_shapes[0]
        primary += elementwise_actions(ctx, "conv_bias", [inp(0) + inp(1)],
                                       [y, (1, f) + (1,) * (len(y) - 2)],
                                       [ctx.outs[0], ctx.ins[2]], y, ctx.outs)
    return [Choice(tuple(primary), fallback)]


@family("convolution_backward_data")
def _convolution_backward_data(ctx: StepCtx, p: dict) -> list:
    """dx = col2im(W^T @ dy(F,NP)); inputs (ograd, weight, data)."""
    g = conv_geometry(ctx, ctx.in_shapes[2])
    if g is None:
        return [Host(ctx.step)]
    f, pix = ctx.attrs["num_filter"], g.oh * g.ow
    dy_t, dcol = ctx.new_scratch(4 * f * g.cols), ctx.new_scratch(4 * g.ckk * g.cols)
    fallback = (_launch(ctx, render_swap01(g.n, f, pix, False), (dy_t, ctx.ins[0]), f * g.cols),
                Gemm(True, False, g.ckk, g.cols, f, ctx.ins[1], dy_t, dcol),
                _launch(ctx, render_col2im(g), (ctx.outs[0], dcol), prod(ctx.out_shapes[0])))
    return [Choice((ConvCall("data", g, f, ctx.ins[1], ctx.ins[0], ctx.outs[0]),), fallback)]


@family("convolution_backward_weight")
def _convolution_backward_weight(ctx: StepCtx, p: dict) -> list:
    """dW(F,CKK) = dy(F,NP) @ col(CKK,NP)^T; inputs (ograd, data)."""
    g = conv_geometry(ctx, ctx.in_shapes[1])
    if g is None:
        return [Host(ctx.step)]
    f, pix = ctx.attrs["num_filter"], g.oh * g.ow
    col, dy_t = ctx.new_scratch(4 * g.ckk * g.cols), ctx.new_scratch(4 * f * g.cols)
    fallback = (_launch(ctx, render_im2col(g), (col, ctx.ins[1]), g.ckk * g.cols),
                _launch(ctx, render_swap01(g.n, f, pix, False), (dy_t, ctx.ins[0]), f * g.cols),
                Gemm(False, True, f, g.ckk, g.cols, dy_t, col, ctx.outs[0]))
    return [Choice((ConvCall("filter", g, f, ctx.ins[1], ctx.ins[0], ctx.outs[0]),), fallback)]


def pool_geometry(ctx: StepCtx, x_shape: tuple) -> Optional[Pool2d]:
    from ..ops.pool import _geometry  # the op's own rule: shapes cannot drift apart
    kernel, stride, pad, out = _geometry(ctx.attrs, x_shape)
    a = ctx.attrs
    if len(kernel) == 1:
        return Pool2d(x_shape[0], x_shape[1], 1, x_shape[2], 1, kernel[0], 1, stride[0], 0,
                      pad[0], 1, out[0], a["pool_type"], a["count_include_pad"])
    if len(kernel) == 2:
        return Pool2d(*x_shape, *kernel, *stride, *pad, *out, a["pool_type"],
                      a["count_include_pad"])
    return None


@family("pooling")
def _pooling(ctx: StepCtx, p: dict) -> list:
    g = pool_geometry(ctx, ctx.in_shapes[0])
    if g is None:
        return [Host(ctx.step)]
    n = prod(ctx.out_shapes[0])
    return [_launch(ctx, render_pool(g, gather=False), (ctx.outs[0], ctx.ins[0]), n)]


@family("pooling_backward")
def _pooling_backward(ctx: StepCtx, p: dict) -> list:
    """Inputs (ograd, data, output) -> gradient w.r.t. data."""
    g = pool_geometry(ctx, ctx.in_shapes[1])
    if g is None:
        return [Host(ctx.step)]
    n = prod(ctx.out_shapes[0])
    return [_launch(ctx, render_pool_backward(g), (ctx.outs[0],) + tuple(ctx.ins), n)]


@family("pooling_gather")
def _pooling_gather(ctx: StepCtx, p: dict) -> list:
    """Inputs (grad, data, output) -> each window's grad where its output came from."""
    g = pool_geometry(ctx, ctx.in_shapes[1])
    if g is None:
        return [Host(ctx.step)]
    n = prod(ctx.out_shapes[0])
    return [_launch(ctx, render_pool(g, gather=True), (ctx.outs[0],) + tuple(ctx.ins), n)]
