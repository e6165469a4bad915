"""One importer per ONNX operator: ``IMPORTERS[op_type](ctx, node, attrs) -> [symbols]``.

An importer returns the symbols of the node's outputs, or None when it only recorded a
constant. Weights stored as ONNX lays them out for another operator convention (a ``MatMul``
weight, a ``Gemm`` weight without ``transB``) are transposed into the parameter once.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ...core.base import GraphError
from .context import ImportCtx, op_name

Importer = Callable[[ImportCtx, Any, dict], Optional[list]]
IMPORTERS: dict[str, Importer] = {}


def converter(*names: str) -> Callable[[Importer], Importer]:
    def deco(fn: Importer) -> Importer:
        for n in names:
            IMPORTERS[n] = fn
        return fn
    return deco


def refuse(node: Any, what: str) -> GraphError:
    return GraphError(f"ONNX node {node.name or node.output[0]} ({node.op_type}): {what} is "
                      f"not supported by import_model")


def _sym_pads(c: ImportCtx, node: Any, attrs: dict, kernel: tuple) -> tuple:
    """Explicit pads, or auto_pad SAME_* worked out on the static input shape (output =
    ceil(input / stride)); symgraph pads symmetrically, so an odd total is refused."""
    nsp = len(kernel)
    mode = attrs.get("auto_pad", b"NOTSET")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode in ("SAME_UPPER", "SAME_LOWER") and node.op_type != "ConvTranspose":
        spatial = c.static_shape(node.input[0], node)[2:]
        strides = attrs.get("strides", [1] * nsp)
        dil = attrs.get("dilations", [1] * nsp)
        total = [max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
                 for n, s, k, d in zip(spatial, strides, kernel, dil)]
        if any(t % 2 for t in total):
            raise refuse(node, f"auto_pad={mode} with an odd total padding {total}")
        return tuple(t // 2 for t in total)
    if mode not in ("NOTSET", "VALID"):
        raise refuse(node, f"auto_pad={mode}")
    pads = list(attrs.get("pads", [0] * (2 * nsp)))
    if pads[:nsp] != pads[nsp:]:
        raise refuse(node, f"asymmetric pads {pads}")
    return tuple(pads[:nsp])


def _window(c: ImportCtx, node: Any, attrs: dict, kernel: tuple) -> dict:
    return {"stride": tuple(attrs.get("strides", [1] * len(kernel))),
            "pad": _sym_pads(c, node, attrs, kernel)}


@converter("Conv", "ConvTranspose")
def _conv(c: ImportCtx, node: Any, a: dict) -> list:
    w = c.const(node.input[1], node)
    nsp = w.ndim - 2
    kernel = tuple(a.get("kernel_shape", w.shape[2:]))
    groups = int(a.get("group", 1))
    args = dict(kernel=kernel, dilate=tuple(a.get("dilations", [1] * nsp)), num_group=groups,
                no_bias=len(node.input) < 3 or not node.input[2], **_window(c, node, a, kernel))
    inputs = [c.get(node.input[0]), c.get(node.input[1])]
    if not args["no_bias"]:
        inputs.append(c.get(node.input[2]))
    if node.op_type == "Conv":
        return [c.sym.Convolution(*inputs, num_filter=w.shape[0], name=op_name(node), **args)]
    if "output_shape" in a:  # ONNX derives (possibly negative) pads from it: not MXNet's
        raise refuse(node, "output_shape")
    extra = {"adj": tuple(a["output_padding"])} if "output_padding" in a else {}
    return [c.sym.Deconvolution(*inputs, num_filter=w.shape[1] * groups, name=op_name(node),
                                **args, **extra)]


@converter("Gemm")
def _gemm(c: ImportCtx, node: Any, a: dict) -> list:
    """Y = alpha * A' B' + beta * C: alpha scales the product only, C broadcasts to (M, N)."""
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    x, name = c.get(node.input[0]), op_name(node)
    if a.get("transA", 0):
        x = c.sym.transpose(x)
    has_c = len(node.input) > 2 and bool(node.input[2])
    bias = c.consts[node.input[2]] if has_c and c.is_const(node.input[2]) else None
    if c.is_const(node.input[1]) and (not has_c or _row_bias(bias)):
        w = c.const(node.input[1], node)
        w = (w if a.get("transB", 0) else w.T) * alpha
        inputs = [x, c.param(node.input[1], w)]
        if has_c:
            inputs.append(c.param(node.input[2], np.broadcast_to(bias.reshape(-1) * beta,
                                                                 (w.shape[0],))))
        return [c.sym.FullyConnected(*inputs, num_hidden=w.shape[0], no_bias=not has_c,
                                     name=name)]
    y = c.sym.dot(x, c.get(node.input[1]), transpose_b=bool(a.get("transB", 0)))
    if alpha != 1.0:
        y = y * alpha
    if has_c:
        cc = c.get(node.input[2])
        y = c.sym.broadcast_add(y, cc * beta if beta != 1.0 else cc, name=name)
    return [y]


def _row_bias(bias: Optional[np.ndarray]) -> bool:
    """A constant C that is one value per output column (FullyConnected's bias)."""
    return bias is not None and bias.ndim <= 2 and (bias.ndim < 2 or bias.shape[0] == 1)


@converter("MatMul")
def _matmul(c: ImportCtx, node: Any, a: dict) -> list:
    """numpy.matmul: a constant 2-D right operand is a FullyConnected weight; N-D operands
    broadcast their batch axes and multiply as a batch of matrices."""
    x, name = c.get(node.input[0]), op_name(node)
    if c.is_const(node.input[1]) and c.consts[node.input[1]].ndim == 2:
        w = c.const(node.input[1], node)
        return [c.sym.FullyConnected(x, c.param(node.input[1], w.T), num_hidden=w.shape[1],
                                     no_bias=True, flatten=False, name=name)]
    sa, sb = c.static_shape(node.input[0], node), c.static_shape(node.input[1], node)
    if len(sa) == 2 and len(sb) == 2:
        return [c.sym.dot(x, c.get(node.input[1]), name=name)]
    out = c.static_shape(node.output[0], node)
    ma = (1,) + sa if len(sa) == 1 else sa  # numpy promotes a 1-D operand to a matrix
    mb = sb + (1,) if len(sb) == 1 else sb
    batch = tuple(np.broadcast_shapes(ma[:-2], mb[:-2]))
    ys = []
    for sym, shape in ((x, ma), (c.get(node.input[1]), mb)):
        full = (1,) * (len(batch) + 2 - len(shape)) + shape
        sym = c.sym.Reshape(sym, shape=full)
        if full[:-2] != batch:
            sym = c.sym.broadcast_to(sym, shape=batch + full[-2:])
        ys.append(c.sym.Reshape(sym, shape=(-1,) + full[-2:]))
    return [c.sym.Reshape(c.sym.batch_dot(*ys), shape=out or (1,), name=name)]


ACTIVATIONS = {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Softplus": "softrelu",
               "Softsign": "softsign"}


@converter(*ACTIVATIONS)
def _act(c: ImportCtx, node: Any, a: dict) -> list:
    return [c.sym.Activation(c.get(node.input[0]), act_type=ACTIVATIONS[node.op_type],
                             name=op_name(node))]


SELU_ALPHA, SELU_GAMMA = 1.67326319217681884765625, 1.05070102214813232421875


@converter("LeakyRelu", "Elu", "Selu")
def _leaky(c: ImportCtx, node: Any, a: dict) -> list:
    """Selu is gamma * Elu(x, alpha)."""
    x, name = c.get(node.input[0]), op_name(node)
    if node.op_type == "LeakyRelu":
        return [c.sym.LeakyReLU(x, act_type="leaky", slope=a.get("alpha", 0.01), name=name)]
    alpha = a.get("alpha", SELU_ALPHA if node.op_type == "Selu" else 1.0)
    elu = c.sym.LeakyReLU(x, act_type="elu", slope=alpha, name=f"{name}_elu")
    if node.op_type == "Elu":
        return [elu]
    return [c.sym._mul_scalar(elu, scalar=a.get("gamma", SELU_GAMMA), name=name)]


@converter("PRelu")
def _prelu(c: ImportCtx, node: Any, a: dict) -> list:
    """A constant slope of one value per channel (axis 1) is MXNet's PReLU; any other slope
    broadcasts to X as the spec says: relu(x) + slope * min(x, 0)."""
    x, name = c.get(node.input[0]), op_name(node)
    rank = c.rank(node.input[0], node)
    if c.is_const(node.input[1]) and rank >= 2:
        slope = c.consts[node.input[1]]
        padded = (1,) * (rank - slope.ndim) + slope.shape
        if all(d == 1 for k, d in enumerate(padded) if k != 1):
            return [c.sym.LeakyReLU(x, c.param(node.input[1], slope.reshape(-1)),
                                    act_type="prelu", name=name)]
    neg = c.sym.broadcast_mul(c.get(node.input[1]), c.sym._minimum_scalar(x, scalar=0.0))
    return [c.sym.broadcast_add(c.sym.relu(x), neg, name=name)]


@converter("Softmax", "LogSoftmax")
def _softmax(c: ImportCtx, node: Any, a: dict) -> list:
    """From opset 13 one axis (default -1); before, the input is coerced to 2-D at ``axis``
    (default 1) and each row of the flattened tail is normalised."""
    fn = c.sym.softmax if node.op_type == "Softmax" else c.sym.log_softmax
    x, name = c.get(node.input[0]), op_name(node)
    if c.opset >= 13:
        return [fn(x, axis=int(a.get("axis", -1)), name=name)]
    rank = c.rank(node.input[0], node)
    axis = int(a.get("axis", 1)) % max(rank, 1)
    if axis == rank - 1:
        return [fn(x, axis=-1, name=name)]
    flat = c.sym.Reshape(x, shape=(0,) * axis + (-1,), name=f"{name}_flat")
    return [c.sym.reshape_like(fn(flat, axis=-1, name=f"{name}_rows"), x, name=name)]


@converter("MaxPool", "AveragePool")
def _pool(c: ImportCtx, node: Any, a: dict) -> list:
    """ceil_mode is MXNet's "full" convention where both agree: ONNX drops a last window
    that starts in the right padding, MXNet keeps it (refused then)."""
    kernel = tuple(a["kernel_shape"])
    if any(d != 1 for d in a.get("dilations", [1])):
        raise refuse(node, "dilated pooling")
    if len(node.output) > 1 and node.output[1]:
        raise refuse(node, "MaxPool's Indices output")
    geo = _window(c, node, a, kernel)
    if a.get("ceil_mode", 0):
        _check_ceil(c, node, kernel, geo)
    kind = "max" if node.op_type == "MaxPool" else "avg"
    return [c.sym.Pooling(c.get(node.input[0]), kernel=kernel, pool_type=kind,
                          pooling_convention="full" if a.get("ceil_mode", 0) else "valid",
                          count_include_pad=bool(a.get("count_include_pad", 0)),
                          name=op_name(node), **geo)]


def _check_ceil(c: ImportCtx, node: Any, kernel: tuple, geo: dict) -> None:
    shape = c.static_shape(node.input[0], node)[2:]
    for n, k, s, p in zip(shape, kernel, geo["stride"], geo["pad"]):
        full = -(-(n + 2 * p - k) // s) + 1
        if (full - 1) * s >= n + p:  # ONNX drops a window starting in the right padding
            raise refuse(node, f"ceil_mode=1 where the last window starts in the padding "
                                f"(input {n}, kernel {k}, stride {s}, pad {p})")


@converter("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(c: ImportCtx, node: Any, a: dict) -> list:
    kind = "max" if node.op_type == "GlobalMaxPool" else "avg"
    return [c.sym.Pooling(c.get(node.input[0]), kernel=(1, 1), global_pool=True,
                          pool_type=kind, name=op_name(node))]


@converter("BatchNormalization")
def _bn(c: ImportCtx, node: Any, a: dict) -> list:
    ins = node.input
    if a.get("training_mode", 0) or len([o for o in node.output if o]) > 1:
        raise refuse(node, "training mode (batch statistics as outputs)")
    if not a.get("spatial", 1):  # opsets 7-8: statistics per (C, H, W) element
        raise refuse(node, "spatial=0")
    aux = [c.param(ins[k], c.const(ins[k], node), aux=True) for k in (3, 4)]
    return [c.sym.BatchNorm(c.get(ins[0]), c.get(ins[1]), c.get(ins[2]), *aux,
                            eps=a.get("epsilon", 1e-5), momentum=a.get("momentum", 0.9),
                            fix_gamma=False, name=op_name(node))]


@converter("Flatten")
def _flatten(c: ImportCtx, node: Any, a: dict) -> list:
    if a.get("axis", 1) != 1:
        raise refuse(node, f"axis={a['axis']}")
    return [c.sym.Flatten(c.get(node.input[0]), name=op_name(node))]


@converter("Reshape")
def _reshape(c: ImportCtx, node: Any, a: dict) -> list:
    if a.get("allowzero", 0):
        raise refuse(node, "allowzero=1")
    shape = tuple(int(v) for v in c.const(node.input[1], node))  # 0 and -1 mean what MXNet's do
    return [c.sym.Reshape(c.get(node.input[0]), shape=shape, name=op_name(node))]




@converter("HardSigmoid", "HardSwish")
def _hard(c: ImportCtx, node: Any, a: dict) -> list:
    """HardSigmoid is max(0, min(1, alpha x + beta)); HardSwish is x * HardSigmoid(x) with
    alpha 1/6 and beta 1/2."""
    x, name = c.get(node.input[0]), op_name(node)
    if node.op_type == "HardSigmoid":
        return [c.sym.hard_sigmoid(x, alpha=a.get("alpha", 0.2), beta=a.get("beta", 0.5),
                                   name=name)]
    gate = c.sym.hard_sigmoid(x, alpha=1.0 / 6, beta=0.5, name=f"{name}_gate")
    return [c.sym.elemwise_mul(x, gate, name=name)]


@converter("InstanceNormalization")
def _instance_norm(c: ImportCtx, node: Any, a: dict) -> list:
    ins = node.input
    return [c.sym.InstanceNorm(c.get(ins[0]), c.get(ins[1]), c.get(ins[2]),
                               eps=a.get("epsilon", 1e-5), name=op_name(node))]


@converter("LRN")
def _lrn(c: ImportCtx, node: Any, a: dict) -> list:
    """Same formula as MXNet's (x / (bias + alpha/size * window sum of x^2)^beta); MXNet
    centres the window, so an even size is refused."""
    size = int(a["size"])
    if size % 2 == 0:
        raise refuse(node, f"an even size ({size})")
    return [c.sym.LRN(c.get(node.input[0]), alpha=a.get("alpha", 1e-4), beta=a.get("beta", 0.75),
                      knorm=a.get("bias", 1.0), nsize=size, name=op_name(node))]


@converter("LayerNormalization")
def _layer_norm(c: ImportCtx, node: Any, a: dict) -> list:
    """ONNX normalises the axes from ``axis`` to the end, MXNet one axis: those axes are
    merged into one first. Mean and InvStdDev (1 / MXNet's std) keep the axes as 1; a
    missing bias is zeros."""
    shape = c.static_shape(node.input[0], node)
    axis, name = int(a.get("axis", -1)) % len(shape), op_name(node)
    x, scale = c.get(node.input[0]), c.get(node.input[1])
    merged = axis != len(shape) - 1
    if merged:
        x = c.sym.Reshape(x, shape=shape[:axis] + (-1,), name=f"{name}_rows")
        scale = c.sym.Reshape(scale, shape=(-1,), name=f"{name}_scale")
    if len(node.input) > 2 and node.input[2]:
        bias = c.get(node.input[2])
        bias = c.sym.Reshape(bias, shape=(-1,)) if merged else bias
    else:
        bias = c.sym.zeros_like(scale, name=f"{name}_bias")
    stats = len(node.output) > 1
    y = c.sym.LayerNorm(x, scale, bias, axis=-1, eps=a.get("epsilon", 1e-5),
                        output_mean_var=stats, name=name)
    if not stats:
        return [c.sym.Reshape(y, shape=shape) if merged else y]
    keep = shape[:axis] + (1,) * (len(shape) - axis)
    return [c.sym.Reshape(y[0], shape=shape), c.sym.Reshape(y[1], shape=keep),
            c.sym.Reshape(c.sym.reciprocal(y[2]), shape=keep)]
