"""Lowering families of the dense layers and losses: FullyConnected, dot, batch_dot (cuBLAS,
bias as one following broadcast kernel), the softmax family, SoftmaxOutput's backward,
softmax_cross_entropy and MakeLoss's division by a count (hand-written kernels)."""
from __future__ import annotations

from math import prod
from typing import Optional

from ...compiler.ops.nn import softmax_output_scale
from ...core.attrs import Attrs
from ...core import expr as E
from ...core.expr import inp
from .codegen import THREADS
from .kernels_dense import (render_count, render_nll_sum, render_softmax,
                            render_softmax_output_backward)
from .actions import Gemm, Kernel, StepCtx, family, launch
from .lowering_elementwise import elementwise_actions
from .lowering_fused import Epilogue, in_place, inline_epilogue

Shape = tuple[int, ...]


def matrix_view(shape: Shape, flatten: bool) -> tuple[int, int]:
    """(rows, cols) a GEMM operand is read as."""
    if flatten:
        return shape[0], prod(shape[1:])
    return prod(shape[:-1]), shape[-1]


@family("fully_connected")
def _fully_connected(ctx: StepCtx, p: dict, epi: Optional[Epilogue] = None) -> list:
    """y = x W^T (cuBLAS), then the bias add as one broadcast kernel over y in place (with a
    fused group's formula when the step heads one)."""
    m, k = matrix_view(ctx.in_shapes[0], ctx.attrs["flatten"])
    n = ctx.attrs["num_hidden"]
    acts = [Gemm(False, True, m, n, k, ctx.ins[0], ctx.ins[1], ctx.outs[0],
                 dtype=ctx.storage)]
    bias = None if ctx.attrs["no_bias"] else ctx.ins[2]
    return acts + in_place(ctx, epi, (m, n), bias, (1, n))


inline_epilogue("fully_connected")(_fully_connected)


@family("dot")
def _dot(ctx: StepCtx, p: dict) -> list:
    """dot or one of its gradients (``p['call']``): one GEMM on the matrices the N-d operands
    stand for (``ops/dot.py``)."""
    from ...compiler.ops.dot import gemm_operands
    ta, tb, m, n, k, ia, ib = gemm_operands(p["call"], list(ctx.in_shapes),
                                            ctx.attrs["transpose_a"], ctx.attrs["transpose_b"])
    return [Gemm(ta, tb, m, n, k, ctx.ins[ia], ctx.ins[ib], ctx.outs[0], dtype=ctx.storage)]


@family("batch_dot")
def _batch_dot(ctx: StepCtx, p: dict) -> list:
    """(B, M, K) x (B, K, N) with transposes: one strided-batched GEMM."""
    (sa, sb), ta, tb = ctx.in_shapes, ctx.attrs["transpose_a"], ctx.attrs["transpose_b"]
    m, k = (sa[2], sa[1]) if ta else (sa[1], sa[2])
    n = sb[1] if tb else sb[2]
    return [Gemm(ta, tb, m, n, k, ctx.ins[0], ctx.ins[1], ctx.outs[0], batch=sa[0],
                 dtype=ctx.storage)]


def softmax_axis_split(shape: Shape, axis: int) -> tuple[int, int, int]:
    return prod(shape[:axis]), shape[axis], prod(shape[axis + 1:])


def softmax_output_axis(attrs: Attrs, shape: Shape) -> tuple[int, int, int]:
    """SoftmaxOutput's (outer, k, inner) view, as its numpy reference reshapes."""
    if attrs["multi_output"]:
        return softmax_axis_split(shape, 1)
    if attrs["preserve_shape"]:
        return softmax_axis_split(shape, len(shape) - 1)
    return shape[0], prod(shape[1:]), 1


@family("softmax")
def _softmax(ctx: StepCtx, p: dict) -> list:
    """Softmax / log-softmax; ``p['axis_from']``: ``"softmax_output"`` (SoftmaxOutput's view),
    ``"mode"`` (SoftmaxActivation: instance = all but axis 0, channel = axis 1) or ``"attr"``
    (the ``axis`` attribute, with an optional ``temperature``)."""
    shape, a, scale = ctx.in_shapes[0], ctx.attrs, 1.0
    if p.get("axis_from") == "softmax_output":
        outer, k, inner = softmax_output_axis(a, shape)
    elif p.get("axis_from") == "last":  # _softmax_rows
        outer, k, inner = softmax_axis_split(shape, len(shape) - 1)
    elif p.get("axis_from") == "mode":
        outer, k, inner = (softmax_axis_split(shape, 1) if a["mode"] == "channel"
                           else (shape[0], prod(shape[1:]), 1))
    else:
        outer, k, inner = softmax_axis_split(shape, a["axis"] % len(shape))
        scale = 1.0 / a["temperature"] if a.get("temperature") is not None else 1.0
        scale = -scale if p.get("negate") else scale  # softmin
    lengths = ctx.ins[1:2] if a.get("use_length") else []  # (outer, inner): data less axis
    kern = render_softmax(ctx.stem, outer, k, inner, bool(p.get("log", False)), scale,
                          ctx.dt(ctx.ins[0]), ctx.dt(ctx.outs[0]),
                          ctx.dtype_of(lengths[0]).name if lengths else "")
    rows = outer * inner
    return [Kernel(kern, max(1, (rows * 32 + THREADS - 1) // THREADS), THREADS,
                   (ctx.outs[0], ctx.ins[0], *lengths), prod(shape))]


@family("softmax_output_backward")
def _softmax_output_backward(ctx: StepCtx, p: dict) -> list:
    a, shape = ctx.attrs, ctx.in_shapes[0]
    outer, k, inner = softmax_output_axis(a, shape)
    scale = softmax_output_scale(a, shape)
    n = prod(shape)
    if tuple(ctx.in_shapes[1]) == tuple(shape):  # probabilities given as the label
        if a["normalization"] == "valid":
            scale /= max(1, outer * inner)
        return elementwise_actions(ctx, "softmax_output_grad", [(inp(0) - inp(1)) * scale],
                                   ctx.in_shapes, ctx.ins, shape, ctx.outs)
    acts: list = []
    by_count = a["normalization"] == "valid"
    count = ctx.ins[1]  # unused by the kernel unless by_count
    if by_count:
        count = ctx.new_array(1, "float32")
        ign = a["ignore_label"] if a["use_ignore"] else float("nan")
        kern = render_count("count_valid", outer * inner, E.call("ne", inp(0), ign),
                            ctx.dt(ctx.ins[1]))
        acts.append(Kernel(kern, 1, THREADS, (count, ctx.ins[1]), outer * inner))
    kern = render_softmax_output_backward(
        "softmax_output_grad", outer, k, inner, scale, a["use_ignore"], a["ignore_label"],
        a["smooth_alpha"], by_count, ctx.storage, ctx.dt(ctx.ins[1]))
    acts.append(launch(ctx, kern, (ctx.outs[0], ctx.ins[0], ctx.ins[1], count), n))
    return acts


@family("softmax_cross_entropy")
def _softmax_cross_entropy(ctx: StepCtx, p: dict) -> list:
    """(data (B, K), label (B,)) -> (1,): log-softmax of each row into scratch, then one block
    sums -logp[row, label] (the numpy reference's truncated, clipped labels)."""
    rows, k = ctx.in_shapes[0]
    logp = ctx.new_array(rows * k, "float32")  # kept in float: the loss sums it
    soft = Kernel(render_softmax("log_softmax", rows, k, 1, True, 1.0, ctx.dt(ctx.ins[0]),
                                 "float32"),
                  max(1, (rows * 32 + THREADS - 1) // THREADS), THREADS, (logp, ctx.ins[0]),
                  rows * k)
    pick = Kernel(render_nll_sum("nll_sum", rows, k, ctx.storage, "float32", ctx.dt(ctx.ins[1])),
                  1, THREADS, (ctx.outs[0], logp, ctx.ins[1]), rows)
    return [soft, pick]


@family("scale_by_count")
def _scale_by_count(ctx: StepCtx, p: dict) -> list:
    """(data, ref) -> data / max(1, number of ref entries for which ``p['counts'](attrs)``, a
    formula of the entry, holds)."""
    count = ctx.new_array(1, "float32")
    n_ref = prod(ctx.in_shapes[1])
    acts = [Kernel(render_count("count", n_ref, p["counts"](ctx.attrs), ctx.dt(ctx.ins[1])), 1,
                   THREADS, (count, ctx.ins[1]), n_ref)]
    return acts + elementwise_actions(ctx, "scale_by_count",
                                      [inp(0) / E.call("max", inp(1), 1.0)],
                                      [ctx.in_shapes[0], (1,)], [ctx.ins[0], count],
                                      ctx.out_shapes[0], ctx.outs)
