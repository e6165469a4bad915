"""Lowering of layout ops that are strided views: transpose, slice, slice_axis, reverse,
SliceChannel, Concat, ``_slice_assign`` and their gradients, ``_slice_assign_scalar``'s
region fill; UpSampling's nearest repeat (its own kernel).

The op's own numpy indexing is applied to an *uninitialised* numpy array of the input's shape
(``np.empty`` touches no memory), and the resulting view's strides and start offset become the
constants of a copy kernel (``kernels_views``). So the GPU reads exactly the elements numpy
would, with no per-op index arithmetic written here. ``gather``: out[i] = in[view(i)];
``scatter``: out[view(i)] = in[i] (Concat's pieces, a slice's gradient placed into zeros). The kernels move elements of the
step's dtype (any float type: no arithmetic); a gather may also convert them
(``_transpose_cast``, the transpose of a cast that ``passes/fold_casts`` makes one step), and
``_multi_transpose_cast`` (``passes/batch_casts``' batch of them) is one kernel doing each
input's converting gather in its own range of the launch.
"""
from __future__ import annotations

from math import prod
from typing import Callable

import numpy as np

from .actions import Copy, Fill, Kernel, StepCtx, family, launch
from .kernels_views import render_multi_gather, render_strided, render_upsampling

ViewFn = Callable[[object, np.ndarray, list], list]  # (attrs, array, input shapes) -> views


def view_geometry(view: np.ndarray, base: np.ndarray) -> tuple[tuple, tuple, int]:
    """(shape, element strides, element offset) of ``view`` inside array ``base``."""
    size = base.itemsize
    offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return tuple(view.shape), tuple(s // size for s in view.strides), offset // size


def _copy(ctx: StepCtx, view: np.ndarray, base: np.ndarray, dst, src, scatter: bool) -> Kernel:
    shape, strides, offset = view_geometry(view, base)
    kern = render_strided(shape, strides, offset, scatter, ctx.dt(dst), ctx.dt(src))
    return launch(ctx, kern, (dst, src), prod(shape))


def moved_copy(ctx: StepCtx, src, dst, first: tuple, to_last: bool) -> Kernel:
    """Copy between an array of channels-first shape ``first`` (N, C, ...) and its
    channels-last form (N, ..., C): ``to_last`` reads the channels-first ``src``."""
    if to_last:
        base = np.empty(first, np.int8)
        view = np.moveaxis(base, 1, -1)
    else:
        base = np.empty((first[0],) + first[2:] + (first[1],), np.int8)
        view = np.moveaxis(base, -1, 1)
    return _copy(ctx, view, base, dst, src, False)


@family("gather_views")
def _gather_views(ctx: StepCtx, p: dict) -> list:
    """Output k = ``p['views'](attrs, x)[k]`` for the input ``p.get('input', 0)``."""
    i = p.get("input", 0)
    base = np.empty(ctx.in_shapes[i], ctx.dtype_of(ctx.ins[i]))
    views = p["views"](ctx.attrs, base, ctx.in_shapes)
    return [_copy(ctx, v, base, out, ctx.ins[i], False) for v, out in zip(views, ctx.outs)]


MAX_SEGMENTS = 64
"""Gathers per kernel: 2 pointers each, 1 KiB of the 4 KiB of parameters a launch may pass."""


@family("multi_transpose_cast")
def _multi_transpose_cast(ctx: StepCtx, p: dict) -> list:
    """Output j = ``p['views'](attrs, bases)[j]`` of input j's array, converted to output j's
    dtype: one kernel per ``MAX_SEGMENTS`` inputs, over all their elements."""
    bases = [np.empty(shape, ctx.dtype_of(x)) for shape, x in zip(ctx.in_shapes, ctx.ins)]
    segments = [view_geometry(v, b) + (ctx.dt(y), ctx.dt(x)) for v, b, x, y in
                zip(p["views"](ctx.attrs, bases), bases, ctx.ins, ctx.outs)]
    acts = []
    for k in range(0, len(segments), MAX_SEGMENTS):
        part = slice(k, k + MAX_SEGMENTS)
        kern = render_multi_gather(segments[part])
        acts.append(launch(ctx, kern, (*ctx.outs[part], *ctx.ins[part]),
                           sum(prod(s[0]) for s in segments[part])))
    return acts


@family("scatter_views")
def _scatter_views(ctx: StepCtx, p: dict) -> list:
    """Input ``p['inputs'][k]`` -> view k of the output; zero-filled first if ``p['zero']``."""
    base = np.empty(ctx.out_shapes[0], ctx.dtype_of(ctx.outs[0]))
    views = p["views"](ctx.attrs, base, ctx.in_shapes)
    srcs = p.get("inputs") or range(len(ctx.ins))
    acts: list = ([Fill(ctx.outs[0], 0.0, prod(ctx.out_shapes[0]), ctx.dt(ctx.outs[0]))]
                  if p.get("zero") else [])
    return acts + [_copy(ctx, v, base, ctx.outs[0], ctx.ins[s], True)
                   for v, s in zip(views, srcs)]


@family("fill_view")
def _fill_view(ctx: StepCtx, p: dict) -> list:
    """The input copied, then ``attrs['scalar']`` written into ``p['view'](attrs, out)``: the
    region filled contiguously in scratch and scattered through the view's strides."""
    y, shape = ctx.outs[0], ctx.out_shapes[0]
    base = np.empty(shape, ctx.dtype_of(y))
    view = p["view"](ctx.attrs, base)
    acts: list = [Copy(y, ctx.ins[0], base.nbytes)]
    if not view.size:
        return acts
    region = ctx.new_array(view.size, ctx.dtype_of(y))
    return acts + [Fill(region, float(ctx.attrs["scalar"]), view.size, ctx.dt(y)),
                   _copy(ctx, view, base, y, region, True)]


@family("upsampling_nearest")
def _upsampling_nearest(ctx: StepCtx, p: dict) -> list:
    """Each output pixel reads its input's pixel (oh / scale, ow / scale): one kernel for any
    number of inputs, joined along channels or summed (``kernels_views.render_upsampling``)."""
    out = ctx.out_shapes[0]
    inputs = [(s[1], s[2], s[3], out[2] // s[2]) for s in ctx.in_shapes]
    kern = render_upsampling(tuple(out), inputs, ctx.attrs["multi_input_mode"] == "concat",
                             ctx.dt(ctx.outs[0]))
    return [launch(ctx, kern, (ctx.outs[0], *ctx.ins), prod(out))]
