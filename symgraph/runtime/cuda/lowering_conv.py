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
from typing import Callable, Optional

import numpy as np

from ...compiler.ops.conv import conv_window
from ...compiler.ops.deconv import deconv_window
from ...compiler.ops.geometry import ConvWindow
from .kernels_conv import render_col2im, render_im2col, render_swap01
from .actions import Choice, ConvCall, Gemm, Ref, StepCtx, family, launch
from .lowering_fused import Epilogue, in_place, inline_epilogue
from .cudnn_graph import ROLES
from .lowering_conv_mma import direct, mma_fits
from .lowering_views import moved_copy


COL_BYTES = 32 << 20
"""Bytes of the im2col column matrix from which the generated fallback runs the batch in
chunks of images: its scratch is then one chunk's column matrix, not the whole batch's (the
seed CNN's second layer at batch 1024: 32 MiB instead of 220)."""


def _chunks(g: ConvWindow, dt: str) -> list[tuple[int, int]]:
    """(first image, images) of each chunk the fallback runs (one chunk: the whole batch)."""
    step = max(1, COL_BYTES // (g.ckk * g.pix * np.dtype(dt).itemsize))
    return [(n0, min(step, g.n - n0)) for n0 in range(0, g.n, step)]


def _images(ref: Ref, first: int, per_image: int, dt: str) -> Ref:
    """``ref`` from image ``first`` of a batch whose images hold ``per_image`` elements."""
    return replace(ref, offset=ref.offset + first * per_image * np.dtype(dt).itemsize)


def _per_chunk(ctx: StepCtx, g: ConvWindow, rows: int,
               body: Callable[[ConvWindow, int, Ref, Ref], tuple]) -> tuple:
    """The fallback's actions, chunk by chunk of images (``_chunks``): ``body(window of the
    chunk, first image, col, other)``, ``col`` a chunk's column matrix and ``other`` a chunk's
    ``rows`` x (images x P) matrix, both scratch (the op's own window when the chunk is the
    whole batch)."""
    dt = ctx.storage
    parts = _chunks(g, dt)
    cols = parts[0][1] * g.pix
    col, other = ctx.new_array(g.ckk * cols, dt), ctx.new_array(rows * cols, dt)
    out: tuple = ()
    for n0, m in parts:
        out += body(g if m == g.n else replace(g, n=m), n0, col, other)
    return out


def conv_forward(ctx: StepCtx, g: ConvWindow, x: Ref, w: Ref, y: Ref,
                 bias: Optional[Ref]) -> list:
    """y(N,F,P) = conv(x, w) (+ bias): cuDNN, or per chunk of images im2col, one GEMM per group
    (one batched call) and the (F,n,P) -> (n,F,P) swap with the bias as its epilogue."""
    f, k, pix, dt = g.filters, g.ckk // g.groups, g.pix, ctx.storage

    def body(gc: ConvWindow, n0: int, col: Ref, tmp: Ref) -> tuple:
        return (launch(ctx, render_im2col(gc, dt), (col, _images(x, n0, g.c * g.cells, dt)),
                       gc.ckk * gc.cols),
                Gemm(False, False, f // g.groups, gc.cols, k, w, col, tmp, g.groups, dt),
                launch(ctx, render_swap01(f, gc.n, pix, bias is not None, dt),
                       (_images(y, n0, f * pix, dt), tmp)
                       + ((bias,) if bias is not None else ()), f * gc.cols))
    primary = [ConvCall("fwd", g, x, w, y, dt)] + _channel_epilogue(ctx, None, bias)
    return [Choice(tuple(primary), _per_chunk(ctx, g, f, body))]


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
    """dx = col2im(W^T @ dy(F,nP)), per group and chunk of images; cuDNN's backward-data when
    it is faster. A Deconvolution's bias is added after, in place."""
    f, k, pix, dt = g.filters, g.ckk // g.groups, g.pix, ctx.storage

    def body(gc: ConvWindow, n0: int, dcol: Ref, dy_t: Ref) -> tuple:
        return (launch(ctx, render_swap01(gc.n, f, pix, False, dt),
                       (dy_t, _images(dy, n0, f * pix, dt)), f * gc.cols),
                Gemm(True, False, k, gc.cols, f // g.groups, w, dy_t, dcol, g.groups, dt),
                launch(ctx, render_col2im(gc, dt), (_images(dx, n0, g.c * g.cells, dt), dcol),
                       gc.n * g.c * g.cells))
    return [Choice((ConvCall("data", g, w, dy, dx, dt),), _per_chunk(ctx, g, f, body))] + \
        _channel_epilogue(ctx, None, bias)


def conv_backward_weight(ctx: StepCtx, g: ConvWindow, x: Ref, dy: Ref, dw: Ref,
                         bias: Optional[Ref] = None) -> list:
    """dW(F, CKK/groups) = sum over chunks of images of dy(F,nP) @ col(CKK,nP)^T, per group;
    or cuDNN's backward-filter."""
    assert bias is None, "a weight gradient has no bias"
    f, k, pix, dt = g.filters, g.ckk // g.groups, g.pix, ctx.storage

    def body(gc: ConvWindow, n0: int, col: Ref, dy_t: Ref) -> tuple:
        return (launch(ctx, render_im2col(gc, dt), (col, _images(x, n0, g.c * g.cells, dt)),
                       gc.ckk * gc.cols),
                launch(ctx, render_swap01(gc.n, f, pix, False, dt),
                       (dy_t, _images(dy, n0, f * pix, dt)), f * gc.cols),
                Gemm(False, True, f // g.groups, k, gc.cols, dy_t, col, dw, g.groups, dt,
                     accumulate=n0 > 0))
    return [Choice((ConvCall("filter", g, x, dy, dw, dt),), _per_chunk(ctx, g, f, body))]


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
