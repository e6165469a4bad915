"""LayerNorm, GroupNorm and InstanceNorm (MXNet 1.9.1): standardise rows, then scale and shift.

Each normalises the rows of a :class:`~symgraph.compiler.ops.rowstats.RowView` of its data: LayerNorm
along ``axis``, GroupNorm over each sample's group of channels (and everything after them),
InstanceNorm over each sample's channel. Outputs are MXNet's: ``(output, mean, std)`` for
LayerNorm and GroupNorm (std is ``sqrt(var + eps)``; mean and std visible with
``output_mean_var``) and ``(output, mean, var)`` for InstanceNorm (only the output visible).
GroupNorm's gamma and beta have one entry per *group*, as in MXNet 1.9.1 (not per channel).
Float16/bfloat16 data keeps its dtype everywhere, and the statistics are computed in float32.
The forward runs as one GPU kernel per call (family ``row_norm``: a block per row); the
gradient is built from registered ops (``rowstats.standardize_grad``), LayerNorm's as one op
(``layer_norm_grad.py``: one GPU kernel).

Example::

    y = sg.sym.LayerNorm(sg.sym.var("x"), axis=-1, eps=1e-5)   # gamma, beta: x_gamma...
"""
from __future__ import annotations

from math import prod
from typing import Callable

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import OPAQUE, OpDef, RunCtx, register
from ._util import check_attr, fmt, norm_axis
from .layer_norm_grad import layer_norm_gradient, layer_norm_view
from .rowstats import RowView, data_shape, standardize_grad, standardize_np

INPUTS = ("data", "gamma", "beta")
OUTPUT_MEAN_VAR = Param("bool", False, doc="Also output the mean and the standard deviation "
                        "(sqrt(var + eps)) of each normalised row.")
EPS_DOC = "Added to the variance before its square root (numerical stability)."


def _check_eps(a: Attrs) -> None:
    check_attr(a["eps"] >= 0, "eps", a["eps"], "must be >= 0 (it is added to the variance)")


def group_norm_view(a: Attrs, shape: tuple) -> RowView:
    """(N, groups, C / groups * rest) reducing the last axis, gamma along the groups."""
    g = a["num_groups"]
    if len(shape) < 2 or shape[1] % g:
        raise ShapeError(f"data {fmt(shape)}: channels (axis 1) must be a multiple of "
                         f"num_groups={g}")
    return RowView((shape[0], g, prod(shape[1:]) // g), (False, False, True), 1)


def instance_norm_view(a: Attrs, shape: tuple) -> RowView:
    """(N, C, rest) reducing the last axis, gamma along C."""
    if len(shape) < 3:
        raise ShapeError(f"data {fmt(shape)}: InstanceNorm needs (N, C, spatial...), at least "
                         f"3 axes")
    return RowView((shape[0], shape[1], prod(shape[2:])), (False, False, True), 1)


def _stat_shape(view_of: Callable, stat: Callable) -> Callable:
    """Shape rule: data -> gamma and beta (the view's param axis), the output, and the two
    statistics (``stat(attrs, data shape, view)``); the output's shape gives the data's."""
    def rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        _check_eps(a)
        if a.get("num_groups", 1) < 1:
            check_attr(False, "num_groups", a["num_groups"], "must be >= 1")
        data = ins[0] if ins[0] is not None else outs[0]
        if data is None:
            return ins, outs
        data = tuple(data)
        view = view_of(a, data)
        p = (view.dims[view.param_axis],)
        s = stat(a, data, view)
        return [data, p, p], [data, s, s]
    return rule


def _compute(view_of: Callable, stat: Callable, std_out: bool) -> Callable:
    def compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
        x, gamma, beta = xs
        view = view_of(a, x.shape)
        y, mean, var = standardize_np(x, gamma, beta, view, a["eps"])
        second = np.sqrt(var + var.dtype.type(a["eps"])) if std_out else var
        s = stat(a, x.shape, view)
        return [y, mean.reshape(s).astype(x.dtype), second.reshape(s).astype(x.dtype)]
    return compute


def _grad(view_of: Callable, std_out: bool) -> Callable:
    def gradient(c) -> list:
        view = view_of(c.attrs, data_shape(c))
        std = c.outputs[2] if std_out else c.sym.sqrt(c.outputs[2] + c.attrs["eps"])
        return standardize_grad(c, view, std, std_out and c.attrs["output_mean_var"])
    return gradient


def _layer_norm_stat(a: Attrs, shape: tuple, view: RowView) -> tuple:
    """The data's shape with the normalised axis as 1."""
    ax = norm_axis(a["axis"], len(shape))
    return tuple(1 if i == ax else d for i, d in enumerate(shape))


def _per_row(a: Attrs, shape: tuple, view: RowView) -> tuple:
    """(N, groups) or (N, C): the view's kept axes."""
    return view.dims[:2]


def _visible(a: Attrs) -> int:
    return 3 if a["output_mean_var"] else 1


def _lowering(view_of: Callable, second: str) -> tuple:
    return ("row_norm", {"kind": "standardize", "view": view_of, "second": second})


register(OpDef(
    "LayerNorm", {"axis": Param("int", -1, doc="The axis normalised over."),
                  "eps": Param("float", 1e-5, doc=EPS_DOC), "output_mean_var": OUTPUT_MEAN_VAR},
    INPUTS, _stat_shape(layer_norm_view, _layer_norm_stat),
    _compute(layer_norm_view, _layer_norm_stat, True), layer_norm_gradient, OPAQUE,
    outputs=("output", "mean", "std"), num_visible=_visible,
    lowering=_lowering(layer_norm_view, "std"),
    doc="Layer normalisation along `axis`: (x - mean) / sqrt(var + eps) * gamma + beta, "
        "gamma and beta of the axis' length; mean and std keep the axis as 1."))
register(OpDef(
    "GroupNorm", {"num_groups": Param("int", 1, doc="Number of channel groups."),
                  "eps": Param("float", 1e-5, doc=EPS_DOC), "output_mean_var": OUTPUT_MEAN_VAR},
    INPUTS, _stat_shape(group_norm_view, _per_row),
    _compute(group_norm_view, _per_row, True), _grad(group_norm_view, True), OPAQUE,
    outputs=("output", "mean", "std"), num_visible=_visible,
    lowering=_lowering(group_norm_view, "std"),
    doc="Group normalisation of (N, C, ...) data over each sample's groups of C / num_groups "
        "channels; gamma and beta have one entry per group (MXNet 1.9.1); mean and std "
        "(N, num_groups)."))
register(OpDef(
    "InstanceNorm", {"eps": Param("float", 1e-3, doc=EPS_DOC)},
    INPUTS, _stat_shape(instance_norm_view, _per_row),
    _compute(instance_norm_view, _per_row, False), _grad(instance_norm_view, False), OPAQUE,
    outputs=("output", "mean", "var"), num_visible=1,
    lowering=_lowering(instance_norm_view, "var"),
    doc="Instance normalisation of (N, C, spatial...) data over each sample's channel; "
        "gamma and beta per channel; hidden outputs mean and var (N, C)."))
