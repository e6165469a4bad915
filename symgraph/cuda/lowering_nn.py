"""Lowering families of the CNN ops (Convolution, Deconvolution and Pooling, registered by
``ops/conv.py``, ``ops/deconv.py`` and ``ops/pool.py``): cuDNN convolution (algorithm measured
once per shape) with an im2col + cuBLAS fallback, and hand-written pooling kernels.

1-D layers run as 2-D ones with a height of 1 and 3-D ones add a depth axis to the same
kernels (and take cuDNN's Nd descriptors). Grouped convolutions are cuDNN's group count or one
strided-batched GEMM over the groups (their rows of the column matrix, the weight and the output
are contiguous blocks). A Deconvolution is the data gradient of a convolution (and its gradients
that convolution's forward and weight gradient), so it reuses the same three lowerings.
Geometry is the node's own window object (``ops/geometry.py``), made by the op's shape rule
and passed unchanged to the kernel templates and to cuDNN, so the GPU and numpy shapes cannot
disagree.
"""
from __future__ import annotations

from math import prod
from typing import Optional

from ..ops.conv import conv_window
from ..ops.deconv import deconv_window
from ..ops.geometry import ConvWindow, PoolWindow
from ..ops.pool import pool_window
from .kernels_nn import render_col2im, render_im2col, render_swap01
from .kernels_pool import render_pool, render_pool_backward, render_pool_backward_tiles
from .actions import Choice, ConvCall, Gemm, Ref, StepCtx, family, launch
from .lowering_fused import Epilogue, in_place, inline_epilogue


def conv_forward(ctx: StepCtx, g: ConvWindow, x: Ref, w: Ref, y: Ref,
                 bias: Optional[Ref]) -> list:
    """y(N,F,P) = conv(x, w) (+ bias): cuDNN, or im2col, one GEMM per group (one batched call)
    and the (F,N,P) -> (N,F,P) swap with the bias as its epilogue."""
    f, k, pix, dt = g.filters, g.ckk // g.groups, g.pix, ctx.storage
    col, tmp = ctx.new_array(g.ckk * g.cols, dt), ctx.new_array(f * g.cols, dt)
    fallback = (launch(ctx, render_im2col(g, dt), (col, x), g.ckk * g.cols),
                Gemm(False, False, f // g.groups, g.cols, k, w, col, tmp, g.groups, dt),
                launch(ctx, render_swap01(f, g.n, pix, bias is not None, dt),
                       (y, tmp) + ((bias,) if bias is not None else ()), f * g.cols))
    primary = [ConvCall("fwd", g, x, w, y, dt)] + _channel_epilogue(ctx, None, bias)
    return [Choice(tuple(primary), fallback)]


def _channel_epilogue(ctx: StepCtx, epi: Optional[Epilogue], bias: Optional[Ref]) -> list:
    """The step's output (N, C, ...) += bias laid along the channel axis, then ``epi``, in
    place: one broadcast kernel (none without either)."""
    shape = ctx.out_shapes[0]
    return in_place(ctx, epi, shape, bias, (1, shape[1]) + (1,) * (len(shape) - 2))


def conv_backward_data(ctx: StepCtx, g: ConvWindow, w: Ref, dy: Ref, dx: Ref,
                       bias: Optional[Ref] = None) -> list:
    """dx = col2im(W^T @ dy(F,NP)), per group; cuDNN's backward-data when it is faster.
    A Deconvolution's bias is added after, in place."""
    f, k, pix, dt = g.filters, g.ckk // g.groups, g.pix, ctx.storage
    dy_t, dcol = ctx.new_array(f * g.cols, dt), ctx.new_array(g.ckk * g.cols, dt)
    fallback = (launch(ctx, render_swap01(g.n, f, pix, False, dt), (dy_t, dy), f * g.cols),
                Gemm(True, False, k, g.cols, f // g.groups, w, dy_t, dcol, g.groups, dt),
                launch(ctx, render_col2im(g, dt), (dx, dcol), g.n * g.c * g.d * g.h * g.w))
    return [Choice((ConvCall("data", g, w, dy, dx, dt),), fallback)] + \
        _channel_epilogue(ctx, None, bias)


def conv_backward_weight(ctx: StepCtx, g: ConvWindow, x: Ref, dy: Ref, dw: Ref,
                         bias: Optional[Ref] = None) -> list:
    """dW(F, CKK/groups) = dy(F,NP) @ col(CKK,NP)^T, per group; or cuDNN's backward-filter."""
    assert bias is None, "a weight gradient has no bias"
    f, k, pix, dt = g.filters, g.ckk // g.groups, g.pix, ctx.storage
    col, dy_t = ctx.new_array(g.ckk * g.cols, dt), ctx.new_array(f * g.cols, dt)
    fallback = (launch(ctx, render_im2col(g, dt), (col, x), g.ckk * g.cols),
                launch(ctx, render_swap01(g.n, f, pix, False, dt), (dy_t, dy), f * g.cols),
                Gemm(False, True, f // g.groups, k, g.cols, dy_t, col, dw, g.groups, dt))
    return [Choice((ConvCall("filter", g, x, dy, dw, dt),), fallback)]


CONV_CALLS = {"forward": conv_forward, "data": conv_backward_data, "filter": conv_backward_weight}


def _window(ctx: StepCtx, data: tuple, transposed: bool) -> ConvWindow:
    """The geometry of the convolution a step runs, given its data shape (the node's cached
    window: the object its shape rule made). Transposed (Deconvolution and its gradients): the
    convolution whose data gradient the deconvolution is."""
    if transposed:
        return deconv_window(ctx.attrs, data)[0]
    return conv_window(ctx.attrs, data)


@family("convolution")
def _convolution(ctx: StepCtx, p: dict, epi: Optional[Epilogue] = None) -> list:
    """A convolution-like step as one of the three convolution calls (data on the op):
    ``call`` (forward / data / filter), ``data`` (the input giving the data shape), ``args``
    (the inputs that are the call's two operands), ``transposed`` (Deconvolution), ``bias``
    (the layer adds input 2 unless ``no_bias``)."""
    g = _window(ctx, ctx.in_shapes[p["data"]], p.get("transposed", False))
    bias = ctx.ins[2] if p.get("bias") and not ctx.attrs["no_bias"] else None
    a, b = (ctx.ins[i] for i in p["args"])
    if epi is None:
        return CONV_CALLS[p["call"]](ctx, g, a, b, ctx.outs[0], bias)
    return CONV_CALLS[p["call"]](ctx, g, a, b, ctx.outs[0], None) + \
        _channel_epilogue(ctx, epi, bias)


inline_epilogue("convolution")(_convolution)


def _pool_kernel(ctx: StepCtx, kern, n: int, epi: Optional[Epilogue]) -> list:
    """One launch over ``n`` threads: (output, the step's inputs, epilogue operands)."""
    operands = epi.operands if epi is not None else ()
    return [launch(ctx, kern, (ctx.outs[0],) + tuple(ctx.ins) + operands, n)]


def _epilogue(epi: Optional[Epilogue]) -> dict:
    """The render functions' epilogue arguments."""
    return {} if epi is None else {"epilogue": epi.expr, "n_epi": len(epi.operands)}


@family("pooling")
def _pooling(ctx: StepCtx, p: dict, epi: Optional[Epilogue] = None) -> list:
    """Input data -> pooled output; ``epi``: a fused group's formula applied by the kernel."""
    g = pool_window(ctx.attrs, ctx.in_shapes[0])
    return _pool_kernel(ctx, render_pool(g, False, **_epilogue(epi), dtype=ctx.storage),
                        prod(ctx.out_shapes[0]), epi)


@family("pooling_backward")
def _pooling_backward(ctx: StepCtx, p: dict, epi: Optional[Epilogue] = None) -> list:
    """Inputs (ograd, data, output) -> gradient w.r.t. data: one thread per tile when windows
    do not overlap (each window searched once), else one per input cell (a gather)."""
    g = pool_window(ctx.attrs, ctx.in_shapes[1])
    dt = ctx.storage
    if g.disjoint:
        kern, n = render_pool_backward_tiles(g, **_epilogue(epi), dtype=dt), \
            g.n * g.c * prod(g.tiles)
    else:
        kern, n = render_pool_backward(g, **_epilogue(epi), dtype=dt), prod(ctx.out_shapes[0])
    return _pool_kernel(ctx, kern, n, epi)


# Both write a fused group's formula in their own store (no scratch, no second pass).
inline_epilogue("pooling")(_pooling)
inline_epilogue("pooling_backward")(_pooling_backward)


@family("pooling_gather")
def _pooling_gather(ctx: StepCtx, p: dict) -> list:
    """Inputs (grad, data, output) -> each window's grad where its output came from."""
    g = pool_window(ctx.attrs, ctx.in_shapes[1])
    return _pool_kernel(ctx, render_pool(g, gather=True, dtype=ctx.storage),
                        prod(ctx.out_shapes[0]), None)
