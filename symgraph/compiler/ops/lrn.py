"""LRN: local response normalisation across channels (MXNet's ``LRN``, AlexNet's).

``tmp_norm = knorm + alpha / nsize * sum of x^2 over the nsize channels centred on c`` and
``output = x * tmp_norm^-beta``, with MXNet's two outputs (``tmp_norm`` hidden, but reported to
monitors). The channel window sum is a sum pooling over a (N, 1, C, rest) view, so the gradient
is built from Pooling, Reshape and elementwise ops: the window is symmetric (nsize is odd, as
MXNet requires), so the adjoint of the window sum is the window sum itself.
"""
from __future__ import annotations

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import OPAQUE, OpDef, RunCtx, register
from ._util import check_attr, fmt

LRN_PARAMS = {
    "alpha": Param("float", 1e-4, doc="scale of the squared sum (divided by nsize)"),
    "beta": Param("float", 0.75, doc="exponent of the normaliser"),
    "knorm": Param("float", 2.0, doc="constant added to the scaled squared sum"),
    "nsize": Param("int", doc="number of channels summed around each channel (odd)"),
}


def _check(a: Attrs) -> None:
    check_attr(a["nsize"] >= 1 and a["nsize"] % 2 == 1, "nsize", a["nsize"],
               "must be odd and positive (MXNet's LRN supports odd windows only)")


def _lrn_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    _check(a)
    data = ins[0] if ins[0] is not None else outs[0]
    if data is None:
        return ins, outs
    if len(data) < 2:
        raise ShapeError(f"data {fmt(data)} needs a channel axis (N, C, ...)")
    return [tuple(data)], [tuple(data), tuple(data)]


def window_sum(x: np.ndarray, nsize: int) -> np.ndarray:
    """Sum over the ``nsize`` channels (axis 1) centred on each channel, zero-padded."""
    half = nsize // 2
    pad = [(0, 0)] * x.ndim
    pad[1] = (half, half)
    c = np.cumsum(np.pad(x, pad), axis=1)
    c = np.concatenate([np.zeros_like(c[:, :1]), c], axis=1)
    return c[:, nsize:] - c[:, :-nsize]


def _lrn_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    norm = a["knorm"] + a["alpha"] / a["nsize"] * window_sum(x * x, a["nsize"])
    return [(x * norm ** -a["beta"]).astype(x.dtype), norm.astype(x.dtype)]


def _window_sum_sym(c, v, shape: tuple) -> object:
    """The channel window sum of symbol ``v`` (of ``shape``) as a sum pooling."""
    n, ch = shape[0], shape[1]
    rest = int(np.prod(shape[2:], dtype=np.int64)) if len(shape) > 2 else 1
    half = c.attrs["nsize"] // 2
    view = c.sym.Reshape(v, shape=(n, 1, ch, rest))
    summed = c.sym.Pooling(view, kernel=(c.attrs["nsize"], 1), stride=(1, 1),
                           pad=(half, 0), pool_type="sum")
    return c.sym.Reshape(summed, shape=tuple(shape))


def _lrn_grad(c) -> list:
    x, norm, dy = c.inputs[0], c.outputs[1], c.ograds[0]
    shape = None if c.types is None else c.types.shape(x.outputs_[0])
    if shape is None:
        raise ShapeError(f"{c.node.name} (LRN): the gradient needs the data shape")
    a = c.attrs
    b, scale = a["beta"], 2.0 * a["alpha"] / a["nsize"] * a["beta"]
    inner = _window_sum_sym(c, dy * x * norm ** (-b - 1.0), shape)
    return [dy * norm ** (-b) - scale * x * inner]


register(OpDef(
    "LRN", LRN_PARAMS, ("data",), _lrn_shape, _lrn_compute, _lrn_grad, OPAQUE,
    outputs=("output", "tmp_norm"), num_visible=1,
    lowering="lrn",
    doc="Local response normalisation across channels: x * (knorm + alpha/nsize * window "
        "sum of x^2)^-beta; hidden output tmp_norm is the normaliser."))
