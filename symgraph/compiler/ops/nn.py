"""Neural-network layers of the core: FullyConnected and SoftmaxOutput."""
from __future__ import annotations

from math import prod

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import GEMM, NOT_DIFFERENTIABLE, OPAQUE, OpDef, RunCtx, alias, register
from ._util import check_attr, fmt

# -- FullyConnected -----------------------------------------------------------------------------

FC_PARAMS = {"num_hidden": Param("int"), "no_bias": Param("bool", False),
             "flatten": Param("bool", True)}


def _fc_inputs(a: Attrs) -> tuple[str, ...]:
    return ("data", "weight") if a["no_bias"] else ("data", "weight", "bias")


def _fc_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if a["num_hidden"] <= 0:
        raise ShapeError(f"num_hidden must be positive, got {a['num_hidden']}")
    data, out = ins[0], outs[0]
    nh = a["num_hidden"]
    ins = list(ins)
    if len(ins) == 3:
        ins[2] = (nh,)
    if data is None:
        return ins, outs
    if len(data) < 1:  # 1-D data with flatten is (batch, 1), as in MXNet
        raise ShapeError(f"data must have a batch axis, got {fmt(data)}")
    if out is not None and out[0] and not data[0]:  # partial shapes: the batch from the output
        data = ins[0] = (out[0],) + tuple(data[1:])
    features = data[1:] if a["flatten"] else data[-1:]
    if 0 not in features:
        ins[1] = (nh, prod(features))
    out = (data[0], nh) if a["flatten"] else tuple(data[:-1]) + (nh,)
    return ins, [out]


def _fc_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x, w = xs[0], xs[1]
    x2 = x.reshape(x.shape[0], -1) if a["flatten"] else x.reshape(-1, x.shape[-1])
    y = x2 @ w.T
    if not a["no_bias"]:
        y += xs[2]
    out_shape = (x.shape[0], a["num_hidden"]) if a["flatten"] else x.shape[:-1] + (a["num_hidden"],)
    return [y.reshape(out_shape).astype(x.dtype, copy=False)]


def _known_shape(c, sym) -> tuple | None:
    return None if c.types is None else c.types.shape(sym.outputs_[0])


def _fc_grad(c) -> list:
    S = c.sym
    x, w, dy = c.inputs[0], c.inputs[1], c.ograds[0]
    # Reshapes the types show to be no-ops (2-D data) are not made: simplify would remove
    # them, and rebuild every backward node after them (bind time).
    x_shape = _known_shape(c, x)
    if c.attrs["flatten"]:
        x2 = x if x_shape is not None and len(x_shape) == 2 else S.Flatten(x)
        dy2 = dy
    else:
        x2 = S.Reshape(x, shape=(-1, 0), reverse=True)
        dy2 = S.Reshape(dy, shape=(-1, 0), reverse=True)
    dx = S.dot(dy2, w)
    if x_shape is None or _known_shape(c, dx) != x_shape:
        dx = S.reshape_like(dx, x)
    dw = S.dot(dy2, x2, transpose_a=True)
    grads = [dx, dw]
    if not c.attrs["no_bias"]:
        grads.append(S.sum(dy2, axis=0))
    return grads


register(OpDef(
    "FullyConnected", FC_PARAMS, _fc_inputs, _fc_shape, _fc_compute, _fc_grad, GEMM,
    lowering="fully_connected", partial_shapes=True,
    doc="y = x W^T + b; weight (num_hidden, in_features), x flattened to 2-D if flatten."))

# -- SoftmaxOutput --------------------------------------------------------------------------------

SOFTMAX_OUTPUT_PARAMS = {
    "grad_scale": Param("float", 1.0), "ignore_label": Param("float", -1.0),
    "multi_output": Param("bool", False), "use_ignore": Param("bool", False),
    "preserve_shape": Param("bool", False),
    "normalization": Param("str", "null", ("null", "batch", "valid")),
    "out_grad": Param("bool", False), "smooth_alpha": Param("float", 0.0),
}


def _label_shape(a: Attrs, data: tuple) -> tuple:
    if a["multi_output"]:
        return (data[0],) + tuple(data[2:])
    if a["preserve_shape"]:
        return tuple(data[:-1])
    return (data[0],)


def _softmax_output_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    check_attr(0 <= a["smooth_alpha"] <= 1, "smooth_alpha", a["smooth_alpha"],
               "must lie in [0, 1] (as MXNet requires)")
    data, label = ins
    if data is None:
        data = outs[0]
    if data is None:
        return ins, outs
    want = _label_shape(a, data)
    if label is not None and tuple(label) not in (want, tuple(data)):
        raise ShapeError(f"label has shape {fmt(label)}, expected {fmt(want)} "
                         f"from data {fmt(data)}")
    return [data, want if label is None else label], [data]


def _softmax_axis(a: Attrs, ndim: int) -> int:
    return 1 if a["multi_output"] else ndim - 1


def softmax_np(x: np.ndarray, axis: int) -> np.ndarray:
    """Numerically stable softmax along ``axis``."""
    z = np.exp(x - x.max(axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)


def _softmax_output_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    if not a["multi_output"] and not a["preserve_shape"]:
        return [softmax_np(x.reshape(x.shape[0], -1), 1).reshape(x.shape)]
    return [softmax_np(x, _softmax_axis(a, x.ndim))]


def softmax_output_scale(a: Attrs, shape: tuple) -> float:
    """SoftmaxOutput's gradient factor before any 'valid' count, as MXNet 1.9.1: grad_scale,
    over the batch for 'batch'; with ``multi_output`` also over the positions per sample
    (H*W...) unless 'valid' (which counts the positions itself).

    >>> softmax_output_scale({"grad_scale": 1.0, "normalization": "null",
    ...                       "multi_output": True}, (2, 3, 4, 5))
    0.05
    """
    scale = a["grad_scale"]
    if a["normalization"] == "batch":
        scale /= shape[0]
    if a["multi_output"] and a["normalization"] != "valid":
        scale /= max(1, prod(shape[2:]))
    return scale


def _softmax_output_backward(a: Attrs, xs: list, ctx: RunCtx) -> list:
    prob, label = xs
    shape = prob.shape
    if not a["multi_output"] and not a["preserve_shape"]:
        prob = prob.reshape(shape[0], -1)
    axis = _softmax_axis(a, prob.ndim)
    k = prob.shape[axis]
    if label.shape == shape:  # probabilities given as the label
        target = label.reshape(prob.shape).astype(prob.dtype)
        valid = np.ones(prob.shape[:axis] + prob.shape[axis + 1:], dtype=bool)
    else:
        lab = label.reshape(prob.shape[:axis] + prob.shape[axis + 1:])
        idx = lab.astype(np.int64)
        valid = ~(a["use_ignore"] & (lab == a["ignore_label"]))
        # As MXNet 1.9.1: a label outside [0, k) is no class (its row's target is all zero).
        target = np.moveaxis((idx[..., None] == np.arange(k)).astype(prob.dtype), -1, axis)
        if a["smooth_alpha"]:
            alpha = a["smooth_alpha"]
            target = target * (1 - alpha) + (1 - target) * alpha / (k - 1)
    grad = (prob - target) * np.expand_dims(valid, axis)
    scale = softmax_output_scale(a, shape)
    if a["normalization"] == "valid":
        scale /= max(1, int(valid.sum()))
    return [(grad * scale).reshape(shape).astype(xs[0].dtype, copy=False)]


register(OpDef(
    "SoftmaxOutput", SOFTMAX_OUTPUT_PARAMS, ("data", "label"), _softmax_output_shape,
    _softmax_output_compute,
    lambda c: [c.sym._backward_SoftmaxOutput(c.outputs[0], c.inputs[1], **c.attrs), None],
    OPAQUE, lowering=("softmax", {"axis_from": "softmax_output"}),
    doc="Softmax forward; backward is (softmax - onehot(label)) * scale, ignoring "
                "head gradients, as MXNet."))
alias("Softmax", "SoftmaxOutput")

register(OpDef(
    "_backward_SoftmaxOutput", SOFTMAX_OUTPUT_PARAMS, ("prob", "label"),
    lambda a, ins, outs: (ins, [ins[0]] if ins[0] is not None else outs),
    _softmax_output_backward, NOT_DIFFERENTIABLE, OPAQUE, lowering="softmax_output_backward",
    doc="Gradient of SoftmaxOutput with respect to its data."))
