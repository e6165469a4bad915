"""Lowering family of the convolution layers (Convolution and Deconvolution and their gradient
ops, registered by ``ops/conv.py`` and ``ops/deconv.py``): cuDNN (algorithm measured once per
shape) with an im2col + cuBLAS fallback (templates in ``kernels_conv``).

1-D layers run as 2-D ones with a height of 1 and 3-D ones add a depth axis to the same
kernels (and take cuDNN's Nd descriptors). Grouped convolutions are cuDNN's group count or one
strided-batched GEMM over the groups (their rows of the column matrix, the weight and the output
are contiguous blocks). A Deconvolution is the data gradient of a convolution (and its gradients
that convolution's forward and weight gradient), so it reuses the same three lowerings.
Geometry is the node's own window object (``ops/geometry.py``), made by the op's shape rule
and passed unchanged to the kernel templates and to cuDNN, so the GPU and numpy shapes cannot
disagree. A channels-last window (NHWC data, OHWI weights) is read in place by cuDNN; its
fallback runs the channels-first kernels on transposed copies.
"""
from __future__ import annotations

from dataclasses import replace
from math import prod
from typing import Optional

from ...compiler.ops.conv import conv_window
from ...compiler.ops.deconv import deconv_window
from ...compiler.ops.geometry import ConvWindow
from .kernels_conv import render_col2im, render_im2col, render_swap01
from .actions import Choice, ConvCall, Gemm, Ref, StepCtx, family, launch
from .lowering_fused import Epilogue, in_place, inline_epilogue
from .cudnn_graph import ROLES
from .lowering_conv_mma import direct, mma_fits
from .lowering_views import moved_copy


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


def _channel_epilogue(ctx: StepCtx, epi: Optional[Epilogue], bias: Optional[Ref],
                      channel_last: bool = False) -> list:
    """The step's output (N, C, ...) or (N, ..., C) += bias laid along the channel axis, then
    ``epi``, in place: one broadcast kernel (none without either)."""
    shape = ctx.out_shapes[0]
    axis = len(shape) - 1 if channel_last else 1
    vec = tuple(d if i == axis else 1 for i, d in enumerate(shape))
    return in_place(ctx, epi, shape, bias, vec)


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
CALL_KINDS = {"forward": "fwd", "data": "data", "filter": "filter"}  # -> ConvCall.kind


def channel_last_call(ctx: StepCtx, call: str, g: ConvWindow, a: Ref, b: Ref, out: Ref,
                      epi: Optional[Epilogue] = None, bias: Optional[Ref] = None) -> list:
    """A convolution call on channels-last operands, then ``bias`` and ``epi`` in place: cuDNN
    reads them in place; the fallback is the direct tensor-core kernels where they fit
    (``kernels_conv_mma``, which apply ``epi`` as they store when there is no bias), else
    copies them channels first, runs the channels-first fallback and copies the result back."""
    first, dt, kind = replace(g, channel_last=False), ctx.storage, CALL_KINDS[call]
    after = _channel_epilogue(ctx, epi, bias, True)
    call_act = ConvCall(kind, g, a, b, out, dt)
    if mma_fits(g, dt, call):
        if epi is not None and bias is None and call != "filter":
            return [Choice((call_act, *after), direct(ctx, call, g, a, b, out, epi))]
        return [Choice((call_act,), direct(ctx, call, g, a, b, out))] + after
    by_role = {"x": first.input_shape, "w": first.weight_shape, "y": first.output_shape}
    shapes = [by_role[r] for r in ROLES[kind]]
    tmp = [ctx.new_array(prod(s), dt) for s in shapes]
    inner = CONV_CALLS[call](ctx, first, tmp[0], tmp[1], tmp[2], None)[0]
    fallback = (moved_copy(ctx, a, tmp[0], shapes[0], False),
                moved_copy(ctx, b, tmp[1], shapes[1], False)) + tuple(inner.fallback) + \
        (moved_copy(ctx, tmp[2], out, shapes[2], True),)
    return [Choice((call_act,), fallback)] + after


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
    if g.channel_last:
        return channel_last_call(ctx, p["call"], g, a, b, ctx.outs[0], epi, bias)
    if epi is None:
        return CONV_CALLS[p["call"]](ctx, g, a, b, ctx.outs[0], bias)
    return CONV_CALLS[p["call"]](ctx, g, a, b, ctx.outs[0], None) + \
        _channel_epilogue(ctx, epi, bias)


inline_epilogue("convolution")(_convolution)
