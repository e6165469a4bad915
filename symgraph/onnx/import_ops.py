"""One importer per ONNX operator: ``IMPORTERS[op_type](ctx, node, attrs) -> [symbols]``.

An importer returns the symbols of the node's outputs, or None when it only recorded a
constant. Weights stored as ONNX lays them out for another operator convention (a ``MatMul``
weight, a ``Gemm`` weight without ``transB``) are transposed into the parameter once.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..base import GraphError
from .importer import ImportCtx, first_const, op_name

Importer = Callable[[ImportCtx, Any, dict], Optional[list]]
IMPORTERS: dict[str, Importer] = {}


def _reg(*names: str) -> Callable[[Importer], Importer]:
    def deco(fn: Importer) -> Importer:
        for n in names:
            IMPORTERS[n] = fn
        return fn
    return deco


def _refuse(node: Any, what: str) -> GraphError:
    return GraphError(f"ONNX node {node.name or node.output[0]} ({node.op_type}): {what} is "
                      f"not supported by import_model")


def _sym_pads(node: Any, attrs: dict, nsp: int) -> tuple:
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID", "NOTSET", "VALID"):
        raise _refuse(node, f"auto_pad={attrs['auto_pad']!r}")
    pads = list(attrs.get("pads", [0] * (2 * nsp)))
    if pads[:nsp] != pads[nsp:]:
        raise _refuse(node, f"asymmetric pads {pads}")
    return tuple(pads[:nsp])


def _window(node: Any, attrs: dict, nsp: int) -> dict:
    return {"stride": tuple(attrs.get("strides", [1] * nsp)), "pad": _sym_pads(node, attrs, nsp)}


@_reg("Conv", "ConvTranspose")
def _conv(c: ImportCtx, node: Any, a: dict) -> list:
    w = c.const(node.input[1], node)
    nsp = w.ndim - 2
    kernel = tuple(a.get("kernel_shape", w.shape[2:]))
    groups = int(a.get("group", 1))
    args = dict(kernel=kernel, dilate=tuple(a.get("dilations", [1] * nsp)), num_group=groups,
                no_bias=len(node.input) < 3 or not node.input[2], **_window(node, a, nsp))
    inputs = [c.get(node.input[0]), c.get(node.input[1])]
    if not args["no_bias"]:
        inputs.append(c.get(node.input[2]))
    if node.op_type == "Conv":
        return [c.sym.Convolution(*inputs, num_filter=w.shape[0], name=op_name(node), **args)]
    extra = {"adj": tuple(a["output_padding"])} if "output_padding" in a else {}
    if "output_shape" in a:
        extra = {"target_shape": tuple(a["output_shape"])[-nsp:]}
    return [c.sym.Deconvolution(*inputs, num_filter=w.shape[1] * groups, name=op_name(node),
                                **args, **extra)]


@_reg("Gemm")
def _gemm(c: ImportCtx, node: Any, a: dict) -> list:
    alpha, beta = a.get("alpha", 1.0), a.get("beta", 1.0)
    x = c.get(node.input[0])
    if a.get("transA", 0):
        x = c.sym.transpose(x)
    if not c.is_const(node.input[1]):
        y = c.sym.dot(x, c.get(node.input[1]), transpose_b=bool(a.get("transB", 0)))
        if len(node.input) > 2 and node.input[2]:
            y = c.sym.broadcast_add(y, c.get(node.input[2]) * beta)
        return [y * alpha if alpha != 1.0 else y]
    w = c.const(node.input[1], node)
    w = (w if a.get("transB", 0) else w.T) * alpha
    bias = first_const(c, node, 2)
    inputs = [x, c.param(node.input[1], w)]
    if bias is not None:
        inputs.append(c.param(node.input[2], np.broadcast_to(bias * beta, (w.shape[0],))))
    return [c.sym.FullyConnected(*inputs, num_hidden=w.shape[0], no_bias=bias is None,
                                 name=op_name(node))]


@_reg("MatMul")
def _matmul(c: ImportCtx, node: Any, a: dict) -> list:
    x = c.get(node.input[0])
    if c.is_const(node.input[1]) and c.consts[node.input[1]].ndim == 2:
        w = c.const(node.input[1], node)
        return [c.sym.FullyConnected(x, c.param(node.input[1], w.T), num_hidden=w.shape[1],
                                     no_bias=True, flatten=False, name=op_name(node))]
    return [c.sym.dot(x, c.get(node.input[1]), name=op_name(node))]


ACTIVATIONS = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Softplus": "softrelu",
               "Softsign": "softsign"}


@_reg(*ACTIVATIONS)
def _act(c: ImportCtx, node: Any, a: dict) -> list:
    return [c.sym.Activation(c.get(node.input[0]), act_type=ACTIVATIONS[node.op_type],
                             name=op_name(node))]


@_reg("LeakyRelu", "Elu", "Selu", "PRelu")
def _leaky(c: ImportCtx, node: Any, a: dict) -> list:
    x, name = c.get(node.input[0]), op_name(node)
    if node.op_type == "PRelu":
        slope = c.const(node.input[1], node).reshape(-1)
        return [c.sym.LeakyReLU(x, c.param(node.input[1], slope), act_type="prelu", name=name)]
    kind = {"LeakyRelu": "leaky", "Elu": "elu", "Selu": "selu"}[node.op_type]
    default = {"LeakyRelu": 0.01, "Elu": 1.0, "Selu": 0.25}[node.op_type]
    if node.op_type == "Selu" and ("alpha" in a or "gamma" in a):
        raise _refuse(node, "Selu with non-default alpha/gamma")
    return [c.sym.LeakyReLU(x, act_type=kind, slope=a.get("alpha", default), name=name)]


@_reg("Softmax", "LogSoftmax")
def _softmax(c: ImportCtx, node: Any, a: dict) -> list:
    # before opset 13 softmax coerced the input to 2-D at ``axis`` (default 1)
    axis = a.get("axis", -1 if c.opset >= 13 else 1)
    fn = c.sym.softmax if node.op_type == "Softmax" else c.sym.log_softmax
    return [fn(c.get(node.input[0]), axis=axis, name=op_name(node))]


@_reg("MaxPool", "AveragePool")
def _pool(c: ImportCtx, node: Any, a: dict) -> list:
    kernel = tuple(a["kernel_shape"])
    if any(d != 1 for d in a.get("dilations", [1])):
        raise _refuse(node, "dilated pooling")
    kind = "max" if node.op_type == "MaxPool" else "avg"
    return [c.sym.Pooling(c.get(node.input[0]), kernel=kernel, pool_type=kind,
                          pooling_convention="full" if a.get("ceil_mode", 0) else "valid",
                          count_include_pad=bool(a.get("count_include_pad", 0)),
                          name=op_name(node), **_window(node, a, len(kernel)))]


@_reg("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(c: ImportCtx, node: Any, a: dict) -> list:
    kind = "max" if node.op_type == "GlobalMaxPool" else "avg"
    return [c.sym.Pooling(c.get(node.input[0]), kernel=(1, 1), global_pool=True,
                          pool_type=kind, name=op_name(node))]


@_reg("BatchNormalization")
def _bn(c: ImportCtx, node: Any, a: dict) -> list:
    ins = node.input
    aux = [c.param(ins[k], c.const(ins[k], node), aux=True) for k in (3, 4)]
    return [c.sym.BatchNorm(c.get(ins[0]), c.get(ins[1]), c.get(ins[2]), *aux,
                            eps=a.get("epsilon", 1e-5), momentum=a.get("momentum", 0.9),
                            fix_gamma=False, name=op_name(node))]


@_reg("Flatten")
def _flatten(c: ImportCtx, node: Any, a: dict) -> list:
    if a.get("axis", 1) != 1:
        raise _refuse(node, f"axis={a['axis']}")
    return [c.sym.Flatten(c.get(node.input[0]), name=op_name(node))]


@_reg("Reshape")
def _reshape(c: ImportCtx, node: Any, a: dict) -> list:
    if a.get("allowzero", 0):
        raise _refuse(node, "allowzero=1")
    shape = tuple(int(v) for v in c.const(node.input[1], node))  # 0 and -1 mean what MXNet's do
    return [c.sym.Reshape(c.get(node.input[0]), shape=shape, name=op_name(node))]


BINARY = {"Add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
          "Sub": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
          "Mul": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
          "Div": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
          "Pow": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
          "Max": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar"),
          "Min": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar")}


@_reg(*BINARY)
def _binary(c: ImportCtx, node: Any, a: dict) -> list:
    """A one-element constant operand becomes a scalar op; anything else broadcasts."""
    full, scalar, rscalar = BINARY[node.op_type]
    x, y = node.input[:2]
    for const, other, op in ((y, x, scalar), (x, y, rscalar)):
        if c.is_const(const) and c.consts[const].size == 1 and not c.is_const(other):
            fn = getattr(c.sym, op)
            return [fn(c.get(other), scalar=float(c.consts[const].reshape(())),
                       name=op_name(node))]
    return [getattr(c.sym, full)(c.get(x), c.get(y), name=op_name(node))]


UNARY = {"Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Neg": "negative", "Abs": "abs",
         "Reciprocal": "reciprocal", "Sign": "sign"}


@_reg(*UNARY)
def _unary(c: ImportCtx, node: Any, a: dict) -> list:
    return [getattr(c.sym, UNARY[node.op_type])(c.get(node.input[0]), name=op_name(node))]


@_reg("Identity", "Dropout")
def _identity(c: ImportCtx, node: Any, a: dict) -> list:
    return [c.get(node.input[0])]  # inference: Dropout passes its input through


@_reg("Sum")
def _sum(c: ImportCtx, node: Any, a: dict) -> list:
    return [c.sym.add_n(*[c.get(i) for i in node.input], name=op_name(node))]


@_reg("Concat")
def _concat(c: ImportCtx, node: Any, a: dict) -> list:
    xs = [c.get(i) for i in node.input]
    return [c.sym.Concat(*xs, dim=a["axis"], num_args=len(xs), name=op_name(node))]


@_reg("Transpose")
def _transpose(c: ImportCtx, node: Any, a: dict) -> list:
    return [c.sym.transpose(c.get(node.input[0]), axes=tuple(a.get("perm", ())),
                            name=op_name(node))]


@_reg("Gather")
def _gather(c: ImportCtx, node: Any, a: dict) -> list:
    if a.get("axis", 0) != 0 or not c.is_const(node.input[0]):
        raise _refuse(node, "Gather other than rows of a constant table (Embedding)")
    table = c.const(node.input[0], node)
    return [c.sym.Embedding(c.get(node.input[1]), c.param(node.input[0], table),
                            input_dim=table.shape[0], output_dim=table.shape[1],
                            name=op_name(node))]


def _axes(c: ImportCtx, node: Any, a: dict) -> Optional[tuple]:
    if "axes" in a:
        return tuple(a["axes"])
    value = first_const(c, node, 1)
    return None if value is None else tuple(int(v) for v in value)


@_reg("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin")
def _reduce(c: ImportCtx, node: Any, a: dict) -> list:
    fn = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "max",
          "ReduceMin": "min"}[node.op_type]
    return [getattr(c.sym, fn)(c.get(node.input[0]), axis=_axes(c, node, a),
                               keepdims=bool(a.get("keepdims", 1)), name=op_name(node))]


@_reg("Unsqueeze", "Squeeze")
def _squeeze(c: ImportCtx, node: Any, a: dict) -> list:
    axes = _axes(c, node, a)
    x = c.get(node.input[0])
    if node.op_type == "Squeeze":
        return [c.sym.squeeze(x, axis=axes, name=op_name(node))]
    for k, ax in enumerate(sorted(axes or ())):
        x = c.sym.expand_dims(x, axis=ax, name=f"{op_name(node)}_{k}")
    return [x]


@_reg("Clip")
def _clip(c: ImportCtx, node: Any, a: dict) -> list:
    lo, hi = first_const(c, node, 1), first_const(c, node, 2)
    lo = a.get("min", -np.inf) if lo is None else float(lo)
    hi = a.get("max", np.inf) if hi is None else float(hi)
    return [c.sym.clip(c.get(node.input[0]), a_min=lo, a_max=hi, name=op_name(node))]


@_reg("Cast")
def _cast(c: ImportCtx, node: Any, a: dict) -> list:
    from .export import onnx_module
    dtype = onnx_module().helper.tensor_dtype_to_np_dtype(a["to"])
    return [c.sym.Cast(c.get(node.input[0]), dtype=np.dtype(dtype).name, name=op_name(node))]


@_reg("Constant")
def _constant(c: ImportCtx, node: Any, a: dict) -> None:
    if "value" not in a:
        raise _refuse(node, f"Constant with {sorted(a)}")
    from .export import onnx_module
    c.consts[node.output[0]] = onnx_module().numpy_helper.to_array(a["value"])
    return None
