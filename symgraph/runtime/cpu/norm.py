"""BatchNorm for the compiled CPU backend: the normalisation as one compiled pass.

The numpy reference (``compiler/ops/norm.py``) makes three passes over the data, each with a
fresh array (subtract the mean, scale, add beta); here the per-channel ``scale = gamma /
sqrt(var + eps)`` and ``shift = beta - mean * scale`` are computed on the channel vectors and
``y = x * scale + shift`` is one elementwise kernel (``group.FusedStep``: the broadcast
pattern's row kernel, split over the backend's threads). The statistics are the reference's:
the moving ones in inference or with ``use_global_stats``, else the batch's (numpy
reductions) with the moving ones updated by ``momentum``. ResNet-18's inference runs 20 of
these (most as the head of a fused BatchNorm + relu group).

Example::

    >>> import numpy as np
    >>> from symgraph.core.attrs import parse_attrs
    >>> from symgraph.core.registry import get_op
    >>> a = parse_attrs(get_op("BatchNorm").params, {"fix_gamma": False, "eps": 0.0}, "")
    >>> x = np.ones((1, 2, 2, 2), np.float32)
    >>> c = np.array([2.0, 3.0], np.float32)
    >>> y = batch_norm(a, [x, c, c, c * 0, c * 0 + 1], None)[0]  # x * gamma + beta
    >>> [round(float(v), 3) for v in y[0, :, 0, 0]]
    [4.0, 6.0]
"""
from __future__ import annotations

from functools import lru_cache
from typing import Optional, Sequence

from ...compiler.ops.norm import bn_statistics, check_axis, vector_shape
from ...core.attrs import Attrs
from ...core.expr import inp, substitute, topo
from ...core.registry import RunCtx
from .group import FusedStep, compute_dtype


@lru_cache(maxsize=256)
def _affine(shape: tuple, dtype: str) -> FusedStep:
    """The group ``x * scale + shift`` over data of ``shape``, computing in ``dtype`` (its
    kernel is one for every shape: ``group.render_kernel``)."""
    return FusedStep([inp(0) * inp(1) + inp(2)], [shape], "batchnorm", "BatchNorm", dtype)


def _normalisation(a: Attrs, xs: list, ctx: Optional[RunCtx]) -> tuple[list, list]:
    """BatchNorm's ``[x, scale, shift]`` (the two broadcastable over x) and its four
    statistics outputs (mean, var, new moving mean and variance) from its five inputs."""
    x, gamma, beta, mm, mv = xs[:5]
    ax = check_axis(a["axis"], x.ndim)
    shape = vector_shape(x.shape[ax], x.shape, ax)
    mean, var, new_mm, new_mv, scale = bn_statistics(
        a, x, gamma, mm, mv, ctx is not None and ctx.is_train)
    shift = beta - mean * scale
    stats = [v.astype(mm.dtype, copy=False) for v in (mean, var, new_mm, new_mv)]
    return [x, scale.reshape(shape), shift.reshape(shape)], stats


def batch_norm(a: Attrs, xs: list, ctx: Optional[RunCtx]) -> list:
    """BatchNorm's five outputs (the reference's: output, mean, var, new moving mean and
    variance) with the output computed in one compiled pass."""
    affine, stats = _normalisation(a, xs, ctx)
    x = affine[0]
    group = _affine(tuple(x.shape), compute_dtype(x.dtype) or "float32")
    return [group(a, affine, ctx)[0].astype(x.dtype, copy=False)] + stats


class BatchNormGroup:
    """A fused group whose head is BatchNorm (``passes/fuse_bn_epilogue``: the ReLU, or the
    residual add and the ReLU, after a ResNet block's BatchNorm) as one kernel: the group's
    formulas with BatchNorm's output replaced by ``x * scale + shift``, so the normalised
    value is never stored (ResNet-18's 64x56x56 BatchNorm + ReLU at batch 32: 3.4 ms as the
    head and then the group's kernel, 1.2 ms as one kernel, the same bits). The statistics are
    :func:`batch_norm`'s; the group's extra outputs are BatchNorm's others, as the head would
    give them."""

    def __init__(self, group: FusedStep, head_attrs: Attrs) -> None:
        n_other = max((int(e.value) for e in topo(group.exprs) if e.op == "input"),
                      default=0)  # the group's inputs after the head's output
        normalised = [inp(0) * inp(1) + inp(2)] + [inp(k + 2) for k in range(1, n_other + 1)]
        self.inner = FusedStep([substitute(e, normalised) for e in group.exprs],
                               group.shapes, group.stem, group.name, group.dtype.name)
        self.attrs, self.n_extra, self.kernels = head_attrs, group.n_extra, self.inner.kernels

    def __call__(self, attrs: Attrs, xs: list, ctx: Optional[RunCtx]) -> list:
        affine, stats = _normalisation(self.attrs, xs, ctx)
        return self.inner(attrs, affine + xs[5:], ctx) + stats[:self.n_extra]


def why_not_batch_norm(a: Attrs, shapes: Sequence[tuple]) -> str:
    """Why a BatchNorm node runs the numpy reference ("" when it compiles)."""
    return "" if len(shapes[0]) >= 1 else "a scalar input"
