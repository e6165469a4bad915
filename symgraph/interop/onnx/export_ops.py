"""One ONNX converter per symgraph op: ``EXPORTERS[op](ctx, node, inputs, outputs)``.

A converter reads the node's parsed attributes and the inferred shapes in ``ctx`` and appends
ONNX nodes whose outputs end in ``outputs``. This is a translation table to an external format
(like the JSON alias table), so it names ops, as a backend's kernel table would.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...core.base import GraphError
from ...core.graph import Entry, Node
from ...compiler.ops.geometry import Window
from ...compiler.ops.conv import conv_window
from ...compiler.ops.deconv import deconv_window
from ...compiler.ops.pool import pool_last, pool_window
from .context import ExportCtx

Converter = Callable[[ExportCtx, Node, list, list], None]
EXPORTERS: dict[str, Converter] = {}


def _reg(*names: str) -> Callable[[Converter], Converter]:
    def deco(fn: Converter) -> Converter:
        for n in names:
            EXPORTERS[n] = fn
        return fn
    return deco


def _refuse(node: Node, what: str) -> GraphError:
    return GraphError(f"{node.name} ({node.op}): {what} has no ONNX equivalent in export_model")


def _window(g: Window) -> dict:
    """ONNX's strides and symmetric pads of a node's geometry."""
    return {"strides": list(g.stride), "pads": list(g.pad) * 2}


@_reg("FullyConnected")
def _fc(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    a, data = node.attrs, node.inputs[0]
    x = ins[0]
    if len(c.shape(data)) != 2:
        if not a["flatten"]:
            wt = c.fresh(f"{node.name}_weight_t")
            c.add("Transpose", [ins[1]], [wt], perm=[1, 0])
            mm = outs[0] if a["no_bias"] else c.fresh(f"{node.name}_matmul")
            c.add("MatMul", [x, wt], [mm])
            if not a["no_bias"]:
                c.add("Add", [mm, ins[2]], outs)
            return
        x = c.fresh(f"{node.name}_flatten")
        c.add("Flatten", [ins[0]], [x], axis=1)
    c.add("Gemm", [x, ins[1]] + ([] if a["no_bias"] else [ins[2]]), outs, transB=1)


@_reg("Convolution")
def _conv(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    a = node.attrs
    g = conv_window(a, tuple(c.shape(node.inputs[0])))
    if g.channel_last:  # ONNX's Conv is channels first
        raise _refuse(node, f"layout {a['layout']}")
    c.add("Conv", ins[:2] if a["no_bias"] else ins[:3], outs, kernel_shape=list(g.kernel),
          dilations=list(g.dilate), group=g.groups, **_window(g))


@_reg("Deconvolution")
def _deconv(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    a = node.attrs
    g, adj = deconv_window(a, tuple(c.shape(node.inputs[0])))  # target_shape's pad and adj
    c.add("ConvTranspose", ins[:2] if a["no_bias"] else ins[:3], outs,
          kernel_shape=list(g.kernel), dilations=list(g.dilate), output_padding=list(adj),
          group=g.groups, **_window(g))


@_reg("Pooling")
def _pool(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    a = node.attrs
    kind = a["pool_type"]
    if pool_last(a):  # ONNX's pools are channels first
        raise _refuse(node, f"layout {a['layout']}")
    if a["global_pool"]:
        if kind == "sum":
            raise _refuse(node, "global sum pooling")
        c.add("GlobalMaxPool" if kind == "max" else "GlobalAveragePool", ins[:1], outs)
        return
    g = pool_window(a, tuple(c.shape(node.inputs[0])))
    k = list(g.kernel)
    geo = dict(_window(g), kernel_shape=k, ceil_mode=int(a["pooling_convention"] == "full"))
    if kind == "max":
        c.add("MaxPool", ins[:1], outs, **geo)
        return
    if kind not in ("avg", "sum"):
        raise _refuse(node, f"pool_type={kind!r}")
    include = int(a["count_include_pad"]) if kind == "avg" else 1
    avg = outs[0] if kind == "avg" else c.fresh(f"{node.name}_avg")
    c.add("AveragePool", ins[:1], [avg], count_include_pad=include, **geo)
    if kind == "sum":  # sum = average over the full window * window size
        c.add("Mul", [avg, c.const(f"{node.name}_size", float(np.prod(k)))], outs)


ACTIVATIONS = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus",
               "softsign": "Softsign"}


@_reg("Activation")
def _act(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    c.add(ACTIVATIONS[node.attrs["act_type"]], ins, outs)


UNARY = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus",
         "softsign": "Softsign", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "abs": "Abs",
         "negative": "Neg", "reciprocal": "Reciprocal", "sign": "Sign",
         "identity": "Identity", "BlockGrad": "Identity", "Dropout": "Identity",
         "add_n": "Sum", "LinearRegressionOutput": "Identity",
         "MAERegressionOutput": "Identity", "LogisticRegressionOutput": "Sigmoid",
         "elemwise_add": "Add", "elemwise_sub": "Sub", "elemwise_mul": "Mul",
         "elemwise_div": "Div", "broadcast_add": "Add", "broadcast_sub": "Sub",
         "broadcast_mul": "Mul", "broadcast_div": "Div", "broadcast_maximum": "Max",
         "broadcast_minimum": "Min", "broadcast_power": "Pow", "_maximum": "Max",
         "_minimum": "Min", "_power": "Pow"}
# A loss head exports its prediction; its label input is not read.
HEAD_ARITY = {"LinearRegressionOutput": 1, "MAERegressionOutput": 1,
              "LogisticRegressionOutput": 1, "Dropout": 1}


def _unary(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    n = HEAD_ARITY.get(node.op, len(ins))
    c.add(UNARY[node.op], ins[:n], outs[:1])


for _op in UNARY:
    EXPORTERS[_op] = _unary

# scalar op -> (ONNX op, scalar first?)
SCALAR = {"_plus_scalar": ("Add", False), "_minus_scalar": ("Sub", False),
          "_rminus_scalar": ("Sub", True), "_mul_scalar": ("Mul", False),
          "_div_scalar": ("Div", False), "_rdiv_scalar": ("Div", True),
          "_power_scalar": ("Pow", False), "_rpower_scalar": ("Pow", True),
          "_maximum_scalar": ("Max", False), "_minimum_scalar": ("Min", False)}


def _scalar(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    op, first = SCALAR[node.op]
    s = c.const(f"{node.name}_scalar", node.attrs["scalar"], c.dtype(node.inputs[0]))
    c.add(op, [s, ins[0]] if first else [ins[0], s], outs)


for _op in SCALAR:
    EXPORTERS[_op] = _scalar


@_reg("square")
def _square(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    c.add("Mul", [ins[0], ins[0]], outs)


@_reg("BatchNorm")
def _bn(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    a = node.attrs
    if a["axis"] != 1:
        raise _refuse(node, f"axis={a['axis']} (ONNX normalises axis 1)")
    gamma = ins[1]
    if a["fix_gamma"]:  # MXNet reads gamma as 1 when it is fixed
        gamma = c.const(f"{node.name}_gamma_fixed",
                        np.ones(c.shape(node.inputs[1]), c.dtype(node.inputs[1])))
    c.add("BatchNormalization", [ins[0], gamma, ins[2], ins[3], ins[4]], outs[:1],
          epsilon=a["eps"], momentum=a["momentum"])


def _softmax_axis(c: ExportCtx, node: Node, ins: list, outs: list, axis: int) -> None:
    c.add("Softmax", ins[:1], outs[:1], axis=axis)


@_reg("SoftmaxOutput", "SoftmaxActivation")
def _softmax_output(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    """Inference of a softmax head: over axis 1, over the last axis with ``preserve_shape``,
    and over all but the batch axis otherwise (MXNet flattens such data first)."""
    a = node.attrs
    shape = c.shape(node.inputs[0])
    multi = a.get("multi_output", False) or a.get("mode", "instance") == "channel"
    if len(shape) <= 2 or multi:
        return _softmax_axis(c, node, ins, outs, 1)
    if a.get("preserve_shape", False):
        return _softmax_axis(c, node, ins, outs, -1)
    flat, soft = c.fresh(f"{node.name}_flat"), c.fresh(f"{node.name}_soft")
    c.add("Flatten", ins[:1], [flat], axis=1)
    c.add("Softmax", [flat], [soft], axis=1)
    like = c.fresh(f"{node.name}_shape")  # the input's own shape: any batch size runs
    c.add("Shape", ins[:1], [like])
    c.add("Reshape", [soft, like], outs[:1])


@_reg("softmax", "log_softmax")
def _softmax(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    x, t = ins[0], node.attrs.get("temperature")
    if t not in (None, 1.0):
        x = c.fresh(f"{node.name}_scaled")
        c.add("Div", [ins[0], c.const(f"{node.name}_t", t, c.dtype(node.inputs[0]))], [x])
    c.add("Softmax" if node.op == "softmax" else "LogSoftmax", [x], outs, axis=node.attrs["axis"])


@_reg("LeakyReLU")
def _leaky(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    a = node.attrs
    kind = a["act_type"]
    if kind == "leaky":
        c.add("LeakyRelu", ins[:1], outs, alpha=a["slope"])
    elif kind == "elu":
        c.add("Elu", ins[:1], outs, alpha=a["slope"])
    elif kind == "selu":
        c.add("Selu", ins[:1], outs)
    elif kind == "prelu":
        gamma = c.fresh(f"{node.name}_slope")
        nsp = len(c.shape(node.inputs[0])) - 2
        c.add("Reshape", [ins[1], c.const(f"{node.name}_gshape", (-1,) + (1,) * nsp,
                                          np.int64)], [gamma])
        c.add("PRelu", [ins[0], gamma], outs)
    else:
        raise _refuse(node, f"act_type={kind!r}")


@_reg("Embedding")
def _embedding(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    idx = c.fresh(f"{node.name}_indices")
    c.add("Cast", [ins[0]], [idx], to=c.helper.np_dtype_to_tensor_dtype(np.dtype(np.int64)))
    c.add("Gather", [ins[1], idx], outs, axis=0)


@_reg("Flatten")
def _flatten(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    c.add("Flatten", ins, outs, axis=1)


@_reg("Concat")
def _concat(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    c.add("Concat", ins, outs, axis=node.attrs["dim"])


@_reg("Reshape", "reshape_like", "expand_dims", "squeeze")
def _reshape(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    """Shape-only ops write the inferred output shape (MXNet's special codes are resolved)."""
    shape = c.target_shape(c.shape(Entry(node, 0)), c.shape(node.inputs[0]))
    c.add("Reshape", [ins[0], c.const(f"{node.name}_shape", shape, np.int64)], outs)


@_reg("transpose")
def _transpose(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    axes = tuple(node.attrs["axes"]) or tuple(reversed(range(len(c.shape(node.inputs[0])))))
    c.add("Transpose", ins, outs, perm=list(axes))


@_reg("clip")
def _clip(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    dt = c.dtype(node.inputs[0])
    c.add("Clip", [ins[0], c.const(f"{node.name}_min", node.attrs["a_min"], dt),
                   c.const(f"{node.name}_max", node.attrs["a_max"], dt)], outs)


@_reg("sum", "mean", "max", "min")
def _reduce(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    a, ndim = node.attrs, len(c.shape(node.inputs[0]))
    axes = a["axis"]
    axes = list(range(ndim)) if axes is None else [v % ndim for v in
                                                   (axes if isinstance(axes, tuple) else (axes,))]
    if a["exclude"]:
        axes = [i for i in range(ndim) if i not in axes]
    op = {"sum": "ReduceSum", "mean": "ReduceMean", "max": "ReduceMax", "min": "ReduceMin"}
    if node.op == "sum":  # opset 13+: ReduceSum takes its axes as an input
        c.add("ReduceSum", [ins[0], c.const(f"{node.name}_axes", axes, np.int64)], outs,
              keepdims=int(a["keepdims"]))
    else:
        c.add(op[node.op], ins, outs, axes=axes, keepdims=int(a["keepdims"]))


@_reg("dot")
def _dot(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    """MXNet's dot contracts the last axis of a with the FIRST axis of b (not MatMul's
    batched product); ``transpose_a`` contracts a's first axis, ``transpose_b`` b's last.
    N-D operands become matrices with the contracted axis on the inside, are multiplied,
    and the product takes the inferred output shape."""
    a = node.attrs
    sa, sb = c.shape(node.inputs[0]), c.shape(node.inputs[1])
    if len(sa) <= 2 and len(sb) <= 2:
        x, y = ins[:2]
        for flag, idx in (("transpose_a", 0), ("transpose_b", 1)):
            if a.get(flag):
                t = c.fresh(f"{node.name}_{flag}")
                c.add("Transpose", [ins[idx]], [t], perm=[1, 0])
                x, y = (t, y) if idx == 0 else (x, t)
        c.add("MatMul", [x, y], outs)
        return
    k = sa[0] if a.get("transpose_a") else sa[-1]
    lhs = _matrix(c, node, ins[0], "lhs", (k, -1) if a.get("transpose_a") else (-1, k),
                  bool(a.get("transpose_a")))
    rhs = _matrix(c, node, ins[1], "rhs", (-1, k) if a.get("transpose_b") else (k, -1),
                  bool(a.get("transpose_b")))
    prod = c.fresh(f"{node.name}_matmul")
    c.add("MatMul", [lhs, rhs], [prod])
    out = list(c.shape(Entry(node, 0)))
    if c.dynamic and len(sa) > 1 and not a.get("transpose_a") and out[0] == c.batch:
        out[0] = -1  # a's leading axis is the batch: let it follow the input
    c.add("Reshape", [prod, c.const(f"{node.name}_shape", out, np.int64)], outs)


def _matrix(c: ExportCtx, node: Node, name: str, hint: str, shape: tuple,
            transpose: bool) -> str:
    """``name`` reshaped to the 2-D ``shape``, then transposed if asked."""
    flat = c.fresh(f"{node.name}_{hint}2d")
    c.add("Reshape", [name, c.const(f"{node.name}_{hint}_shape", shape, np.int64)], [flat])
    if not transpose:
        return flat
    t = c.fresh(f"{node.name}_{hint}_t")
    c.add("Transpose", [flat], [t], perm=[1, 0])
    return t


@_reg("Cast")
def _cast(c: ExportCtx, node: Node, ins: list, outs: list) -> None:
    to = c.helper.np_dtype_to_tensor_dtype(c.dtype(Entry(node, 0)))
    c.add("Cast", ins, outs, to=to)
