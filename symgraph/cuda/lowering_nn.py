"""Lowering families of the CNN ops (Convolution, Deconvolution and Pooling, registered by
``ops/conv.py``, ``ops/deconv.py`` and ``ops/pool.py``): cuDNN convolution (algorithm measured
once per shape) with an im2col + cuBLAS fallback, and hand-written 2-D pooling kernels.

1-D layers run as 2-D ones with a height of 1; grouped convolutions are cuDNN's group count or
one strided-batched GEMM over the groups (their rows of the column matrix, the weight and the
output are contiguous blocks). A Deconvolution is the data gradient of a convolution (and its
gradients that convolution's forward and weight gradient), so it reuses the same three
lowerings. 3-D layers take the host path for now (listed as not done). Geometry comes from the
ops' own helpers so that the GPU and numpy shapes can never disagree.
"""
from __future__ import annotations

from math import prod
from typing import Optional

from .codegen import THREADS, grid_for
from .kernels_nn import (Conv2d, Pool2d, render_col2im, render_im2col, render_pool,
                         render_pool_backward, render_swap01)
from ..expr import inp
from .lowering import (Choice, ConvCall, Gemm, Host, Kernel, Ref, StepCtx, elementwise_actions,
                       family)


def _launch(ctx: StepCtx, kern, args: tuple, n: int) -> Kernel:
    return Kernel(kern, grid_for(n, ctx.sm_count), THREADS, args, n)


def conv2d(g, x_shape: tuple, out: tuple) -> Optional[Conv2d]:
    """The 2-D view of a convolution of ``x_shape`` with spatial output ``out`` (an op's
    ``Geometry``), or None when it needs the host path (3-D)."""
    if len(g.kernel) == 1:
        return Conv2d(x_shape[0], x_shape[1], 1, x_shape[2], 1, g.kernel[0], 1, g.stride[0],
                      0, g.pad[0], 1, g.dilate[0], 1, out[0], g.groups)
    if len(g.kernel) == 2:
        return Conv2d(x_shape[0], x_shape[1], *x_shape[2:], *g.kernel, *g.stride, *g.pad,
                      *g.dilate, *out, g.groups)
    return None


def conv_forward(ctx: StepCtx, g: Conv2d, f: int, x: Ref, w: Ref, y: Ref,
                 bias: Optional[Ref]) -> list:
    """y(N,F,P) = conv(x, w) (+ bias): cuDNN, or im2col, one GEMM per group (one batched call)
    and the (F,N,P) -> (N,F,P) swap with the bias as its epilogue."""
    k, pix = g.ckk // g.groups, g.oh * g.ow
    col, tmp = ctx.new_scratch(4 * g.ckk * g.cols), ctx.new_scratch(4 * f * g.cols)
    fallback = (_launch(ctx, render_im2col(g), (col, x), g.ckk * g.cols),
                Gemm(False, False, f // g.groups, g.cols, k, w, col, tmp, batch=g.groups),
                _launch(ctx, render_swap01(f, g.n, pix, bias is not None),
                        (y, tmp) + ((bias,) if bias is not None else ()), f * g.cols))
    primary = [ConvCall("fwd", g, f, x, w, y)] + _bias_epilogue(ctx, y, bias)
    return [Choice(tuple(primary), fallback)]


def _bias_epilogue(ctx: StepCtx, y: Ref, bias: Optional[Ref]) -> list:
    """y (the step's output) += bias laid along the channel axis: one broadcast kernel."""
    if bias is None:
        return []
    shape = ctx.out_shapes[0]
    vec = (1, shape[1]) + (1,) * (len(shape) - 2)
    return elementwise_actions(ctx, "conv_bias", [inp(0) + inp(1)], [shape, vec], [y, bias],
                               shape, [y])


def conv_backward_data(ctx: StepCtx, g: Conv2d, f: int, w: Ref, dy: Ref, dx: Ref) -> list:
    """dx = col2im(W^T @ dy(F,NP)), per group; cuDNN's backward-data when it is faster."""
    k, pix = g.ckk // g.groups, g.oh * g.ow
    dy_t, dcol = ctx.new_scratch(4 * f * g.cols), ctx.new_scratch(4 * g.ckk * g.cols)
    fallback = (_launch(ctx, render_swap01(g.n, f, pix, False), (dy_t, dy), f * g.cols),
                Gemm(True, False, k, g.cols, f // g.groups, w, dy_t, dcol, batch=g.groups),
                _launch(ctx, render_col2im(g), (dx, dcol), g.n * g.c * g.h * g.w))
    return [Choice((ConvCall("data", g, f, w, dy, dx),), fallback)]


def conv_backward_weight(ctx: StepCtx, g: Conv2d, f: int, x: Ref, dy: Ref, dw: Ref) -> list:
    """dW(F, CKK/groups) = dy(F,NP) @ col(CKK,NP)^T, per group; or cuDNN's backward-filter."""
    k, pix = g.ckk // g.groups, g.oh * g.ow
    col, dy_t = ctx.new_scratch(4 * g.ckk * g.cols), ctx.new_scratch(4 * f * g.cols)
    fallback = (_launch(ctx, render_im2col(g), (col, x), g.ckk * g.cols),
                _launch(ctx, render_swap01(g.n, f, pix, False), (dy_t, dy), f * g.cols),
                Gemm(False, True, f // g.groups, k, g.cols, dy_t, col, dw, batch=g.groups))
    return [Choice((ConvCall("filter", g, f, x, dy, dw),), fallback)]


def _conv_of(ctx: StepCtx, x_shape: tuple) -> Optional[Conv2d]:
    from ..ops.conv import geometry
    g = geometry(ctx.attrs)
    return conv2d(g, x_shape, g.out(x_shape[2:]))


@family("convolution")
def _convolution(ctx: StepCtx, p: dict) -> list:
    g = _conv_of(ctx, ctx.in_shapes[0])
    if g is None:
        return [Host(ctx.step)]
    bias = None if ctx.attrs["no_bias"] else ctx.ins[2]
    return conv_forward(ctx, g, ctx.attrs["num_filter"], ctx.ins[0], ctx.ins[1], ctx.outs[0],
                        bias)


@family("convolution_backward_data")
def _convolution_backward_data(ctx: StepCtx, p: dict) -> list:
    """Inputs (ograd, weight, data)."""
    g = _conv_of(ctx, ctx.in_shapes[2])
    if g is None:
        return [Host(ctx.step)]
    return conv_backward_data(ctx, g, ctx.attrs["num_filter"], ctx.ins[1], ctx.ins[0],
                              ctx.outs[0])


@family("convolution_backward_weight")
def _convolution_backward_weight(ctx: StepCtx, p: dict) -> list:
    """Inputs (ograd, data)."""
    g = _conv_of(ctx, ctx.in_shapes[1])
    if g is None:
        return [Host(ctx.step)]
    return conv_backward_weight(ctx, g, ctx.attrs["num_filter"], ctx.ins[1], ctx.ins[0],
                                ctx.outs[0])


def _deconv_of(ctx: StepCtx, x_shape: tuple) -> Optional[Conv2d]:
    """A Deconvolution of data ``x_shape`` is the data gradient of this convolution: its input
    is the deconvolution's output (num_filter channels), its output the deconvolution's data,
    its filters the data's channels, its padding the effective one (``adj``/``target_shape``)."""
    from ..ops.deconv import resolve
    g, out = resolve(ctx.attrs, x_shape[2:])
    return conv2d(g, (x_shape[0], ctx.attrs["num_filter"]) + out, x_shape[2:])


@family("deconvolution")
def _deconvolution(ctx: StepCtx, p: dict) -> list:
    """y = the convolution's backward-data of x with w, plus the bias."""
    x = ctx.in_shapes[0]
    g = _deconv_of(ctx, x)
    if g is None:
        return [Host(ctx.step)]
    bias = None if ctx.attrs["no_bias"] else ctx.ins[2]
    y = ctx.outs[0]
    return conv_backward_data(ctx, g, x[1], ctx.ins[1], ctx.ins[0], y) + \
        _bias_epilogue(ctx, y, bias)


@family("deconvolution_backward_data")
def _deconvolution_backward_data(ctx: StepCtx, p: dict) -> list:
    """Inputs (ograd, weight, data): dx = the convolution's forward of ograd with w."""
    x = ctx.in_shapes[2]
    g = _deconv_of(ctx, x)
    if g is None:
        return [Host(ctx.step)]
    return conv_forward(ctx, g, x[1], ctx.ins[0], ctx.ins[1], ctx.outs[0], None)


@family("deconvolution_backward_weight")
def _deconvolution_backward_weight(ctx: StepCtx, p: dict) -> list:
    """Inputs (ograd, data): dw = the convolution's backward-filter, ograd as its input."""
    x = ctx.in_shapes[1]
    g = _deconv_of(ctx, x)
    if g is None:
        return [Host(ctx.step)]
    return conv_backward_weight(ctx, g, x[1], ctx.ins[0], ctx.ins[1], ctx.outs[0])


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


def _pool_step(ctx: StepCtx, x_index: int, render) -> list:
    """One kernel over the step's output; ``x_index`` is the input holding the pooled data."""
    g = pool_geometry(ctx, ctx.in_shapes[x_index])
    if g is None:
        return [Host(ctx.step)]
    n = prod(ctx.out_shapes[0])
    return [_launch(ctx, render(g), (ctx.outs[0],) + tuple(ctx.ins), n)]


@family("pooling")
def _pooling(ctx: StepCtx, p: dict) -> list:
    return _pool_step(ctx, 0, lambda g: render_pool(g, gather=False))


@family("pooling_backward")
def _pooling_backward(ctx: StepCtx, p: dict) -> list:
    """Inputs (ograd, data, output) -> gradient w.r.t. data."""
    return _pool_step(ctx, 1, render_pool_backward)


@family("pooling_gather")
def _pooling_gather(ctx: StepCtx, p: dict) -> list:
    """Inputs (grad, data, output) -> each window's grad where its output came from."""
    return _pool_step(ctx, 1, lambda g: render_pool(g, gather=True))
