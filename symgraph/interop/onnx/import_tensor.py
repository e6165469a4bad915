"""Importers of ONNX's elementwise, shape, indexing and reduction operators (the layers are in
``import_ops``); each follows the operator's spec at the model's opset.

Inputs that ONNX lets carry shapes or axes must be known when the graph is built (an
initializer, a ``Constant`` node, or a value the backend was given); shapes come from ONNX's
own shape inference, which import runs first.
"""
from __future__ import annotations

from functools import reduce
from typing import Any, Optional

import numpy as np

from ...core.base import DataError
from .context import ImportCtx, first_const, node_label, onnx_module, op_name
from .import_ops import refuse, converter


def _static_rank_ok(c: ImportCtx, const: str, other: str) -> bool:
    """A one-element constant may become a scalar operand only if it adds no axes."""
    shape = c.shapes.get(other)
    return shape is not None and c.consts[const].ndim <= len(shape)


BINARY = {"Add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
          "Sub": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
          "Mul": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
          "Div": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
          "Pow": ("broadcast_power", "_power_scalar", "_rpower_scalar")}


@converter(*BINARY)
def _binary(c: ImportCtx, node: Any, a: dict) -> list:
    """A one-element float constant operand that keeps the other operand's rank becomes a
    scalar op; anything else broadcasts (Pow's exponent is cast to the base's type)."""
    full, scalar, rscalar = BINARY[node.op_type]
    x, y = node.input[:2]
    floats = all(np.issubdtype(c.dtypes.get(n, np.dtype("int64")), np.floating) for n in (x, y))
    for const, other, op in ((y, x, scalar), (x, y, rscalar)):
        if (floats and c.is_const(const) and c.consts[const].size == 1
                and not c.is_const(other) and _static_rank_ok(c, const, other)):
            return [getattr(c.sym, op)(c.get(other), scalar=float(c.consts[const].reshape(())),
                                       name=op_name(node))]
    rhs = c.get(y)
    if node.op_type == "Pow" and c.dtypes.get(y) != c.dtypes.get(x):
        rhs = c.sym.Cast(rhs, dtype=c.dtypes[x].name, name=f"{op_name(node)}_exponent")
    return [getattr(c.sym, full)(c.get(x), rhs, name=op_name(node))]


VARIADIC = {"Max": "broadcast_maximum", "Min": "broadcast_minimum", "Sum": "broadcast_add",
            "Mean": "broadcast_add"}


@converter(*VARIADIC)
def _variadic(c: ImportCtx, node: Any, a: dict) -> list:
    """Max/Min/Sum/Mean of one or more inputs, broadcasting pairwise."""
    fn, name = getattr(c.sym, VARIADIC[node.op_type]), op_name(node)
    xs = [c.get(i) for i in node.input]
    if len(xs) == 1:
        return [c.sym.identity(xs[0], name=name)]
    y = reduce(lambda p, q: fn(p, q), xs[1:-1], xs[0])
    if node.op_type != "Mean":
        return [fn(y, xs[-1], name=name)]
    return [c.sym._div_scalar(fn(y, xs[-1]), scalar=float(len(xs)), name=name)]


COMPARE = {"Equal": "broadcast_equal", "Greater": "broadcast_greater",
           "Less": "broadcast_lesser", "GreaterOrEqual": "broadcast_greater_equal",
           "LessOrEqual": "broadcast_lesser_equal", "And": "broadcast_logical_and",
           "Or": "broadcast_logical_or", "Xor": "broadcast_logical_xor"}


@converter(*COMPARE)
def _compare(c: ImportCtx, node: Any, a: dict) -> list:
    """Comparisons give bool in ONNX (symgraph's give the operands' type)."""
    y = getattr(c.sym, COMPARE[node.op_type])(c.get(node.input[0]), c.get(node.input[1]))
    return [c.sym.Cast(y, dtype="bool", name=op_name(node))]


UNARY = {"Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Neg": "negative", "Abs": "abs",
         "Reciprocal": "reciprocal", "Sign": "sign", "Sin": "sin", "Cos": "cos", "Tan": "tan",
         "Asin": "arcsin", "Acos": "arccos", "Atan": "arctan", "Sinh": "sinh", "Cosh": "cosh",
         "Asinh": "arcsinh", "Acosh": "arccosh", "Atanh": "arctanh", "Floor": "floor",
         "Ceil": "ceil", "Erf": "erf", "Not": "logical_not"}


@converter(*UNARY)
def _unary(c: ImportCtx, node: Any, a: dict) -> list:
    return [getattr(c.sym, UNARY[node.op_type])(c.get(node.input[0]), name=op_name(node))]


@converter("Identity")
def _identity(c: ImportCtx, node: Any, a: dict) -> list:
    return [c.sym.identity(c.get(node.input[0]), name=op_name(node))]


@converter("Dropout")
def _dropout(c: ImportCtx, node: Any, a: dict) -> list:
    """Inference: the input passes through and the mask (second output) is all true."""
    training = first_const(c, node, 2)
    if training is not None and bool(np.asarray(training).reshape(())):
        ratio = first_const(c, node, 1)
        if ratio is None or float(np.asarray(ratio).reshape(())) != 0.0:
            raise refuse(node, "training_mode=1 (random masks)")
    x, name = c.get(node.input[0]), op_name(node)
    mask = c.sym.Cast(c.sym.ones_like(x), dtype="bool", name=f"{name}_mask")
    return [c.sym.identity(x, name=name), mask]


@converter("Concat")
def _concat(c: ImportCtx, node: Any, a: dict) -> list:
    xs = [c.get(i) for i in node.input]
    return [c.sym.Concat(*xs, dim=int(a["axis"]), num_args=len(xs), name=op_name(node))]


@converter("Transpose")
def _transpose(c: ImportCtx, node: Any, a: dict) -> list:
    return [c.sym.transpose(c.get(node.input[0]), axes=tuple(a.get("perm", ())),
                            name=op_name(node))]


@converter("Flatten")
def _flatten(c: ImportCtx, node: Any, a: dict) -> list:
    """(prod(d[:axis]), prod(d[axis:])) for a negative axis too (counted from the end)."""
    x, name = c.get(node.input[0]), op_name(node)
    rank = c.rank(node.input[0], node)
    axis = int(a.get("axis", 1))
    axis = axis + rank if axis < 0 else axis
    if axis == 1:
        return [c.sym.Flatten(x, name=name)]
    shape = c.static_shape(node.input[0], node)
    lead = int(np.prod(shape[:axis], dtype=np.int64))
    return [c.sym.Reshape(x, shape=(lead, -1) if lead else (0, 0), name=name)]


@converter("Reshape")
def _reshape(c: ImportCtx, node: Any, a: dict) -> list:
    """0 copies the input's dimension and -1 is inferred, as in MXNet; MXNet's other codes
    (-2, -3, -4) are not ONNX's and are refused."""
    shape = tuple(int(v) for v in c.const(node.input[1], node))
    if any(v < -1 for v in shape):
        raise DataError(f"{node_label(node)}: shape {shape} has values below -1")
    if a.get("allowzero", 0) and 0 in shape:
        raise refuse(node, "allowzero=1 with a 0 in the shape (a zero-size tensor)")
    return [c.sym.Reshape(c.get(node.input[0]), shape=shape, name=op_name(node))]


@converter("Gather")
def _gather(c: ImportCtx, node: Any, a: dict) -> list:
    """Negative indices count from the end; an index outside [-n, n) is an error (ONNX leaves
    it undefined): a DataError at import when the indices are known, else at run time, from
    ``take(mode='raise')`` on the indices shifted by n where negative."""
    rank = c.rank(node.input[0], node)
    axis = int(a.get("axis", 0)) % rank
    idx = c.known(node.input[1])
    dim = (c.shapes.get(node.input[0]) or (None,) * rank)[axis]
    data, name = c.get(node.input[0]), op_name(node)
    if idx is not None and dim is not None:
        if idx.size and (idx.min() < -dim or idx.max() >= dim):
            raise DataError(f"{node_label(node)}: indices {node.input[1]!r} hold values in "
                            f"[{idx.min()}, {idx.max()}], outside [-{dim}, {dim}) of axis "
                            f"{axis}")
        return [c.sym.take(data, c.get(node.input[1]), axis=axis, mode="wrap", name=name)]
    if dim is None:
        dim = c.static_shape(node.input[0], node)[axis]
    return [c.sym.take(data, _from_end(c, node.input[1], dim, name), axis=axis, mode="raise",
                       name=name)]


@converter("GatherElements")
def _gather_elements(c: ImportCtx, node: Any, a: dict) -> list:
    """out[.., j, ..] = data[.., indices[.., j, ..], ..] along ``axis``; indices may be
    shorter than the data on the other axes (the data is cut to them first). Negative
    indices count from the end, one outside [-n, n) raises DataError as in Gather."""
    shape, ishape = c.static_shape(node.input[0], node), c.static_shape(node.input[1], node)
    axis, name = int(a.get("axis", 0)) % len(shape), op_name(node)
    data, dim = c.get(node.input[0]), shape[axis]
    ends = tuple(dim if k == axis else ishape[k] for k in range(len(shape)))
    if ends != shape:
        data = c.sym.slice(data, begin=(0,) * len(shape), end=ends, name=f"{name}_cut")
    idx = c.known(node.input[1])
    if idx is not None and idx.size and (idx.min() < -dim or idx.max() >= dim):
        raise DataError(f"{node_label(node)}: indices {node.input[1]!r} hold values in "
                        f"[{idx.min()}, {idx.max()}], outside [-{dim}, {dim}) of axis {axis}")
    return [c.sym._gather_axis(data, _from_end(c, node.input[1], dim, name), axis=axis,
                               mode="raise", name=name)]


def _from_end(c: ImportCtx, indices: str, n: int, name: str) -> Any:
    """``indices + n`` where an index is negative (ONNX's reading of one from the end)."""
    i = c.get(indices)
    shift = c.sym._mul_scalar(c.sym._lesser_scalar(i, scalar=0.0), scalar=float(n))
    return c.sym.elemwise_add(i, shift, name=f"{name}_from_end")


def _axes(c: ImportCtx, node: Any, a: dict) -> Optional[tuple]:
    """Axes from the attribute (older opsets) or the second input (newer); None if absent."""
    if "axes" in a:
        return tuple(int(v) for v in a["axes"])
    value = first_const(c, node, 1)
    return None if value is None else tuple(int(v) for v in np.asarray(value).reshape(-1))


@converter("Squeeze")
def _squeeze(c: ImportCtx, node: Any, a: dict) -> list:
    return [c.sym.squeeze(c.get(node.input[0]), axis=_axes(c, node, a), name=op_name(node))]


@converter("Unsqueeze")
def _unsqueeze(c: ImportCtx, node: Any, a: dict) -> list:
    """Axes (negative ones too) index the output, whose rank is input rank + len(axes)."""
    axes = _axes(c, node, a) or ()
    out_rank = c.rank(node.input[0], node) + len(axes)
    x = c.get(node.input[0])
    for k, ax in enumerate(sorted(v % out_rank for v in axes)):
        x = c.sym.expand_dims(x, axis=ax, name=f"{op_name(node)}_{k}")
    return [x]


@converter("Clip")
def _clip(c: ImportCtx, node: Any, a: dict) -> list:
    """Bounds from attributes (opset < 11) or inputs; absent ones are the type's range, and
    min > max gives max everywhere (as the spec's min(max(x, lo), hi))."""
    dt = c.dtypes.get(node.input[0], np.dtype(np.float32))
    info = np.finfo(dt) if np.issubdtype(dt, np.floating) else np.iinfo(dt)
    lo, hi = first_const(c, node, 1), first_const(c, node, 2)
    lo = float(a.get("min", -np.inf) if lo is None else np.asarray(lo).reshape(()))
    hi = float(a.get("max", np.inf) if hi is None else np.asarray(hi).reshape(()))
    lo, hi = max(lo, float(info.min)), min(hi, float(info.max))
    return [c.sym.clip(c.get(node.input[0]), a_min=min(lo, hi), a_max=hi, name=op_name(node))]


@converter("Cast")
def _cast(c: ImportCtx, node: Any, a: dict) -> list:
    dtype = np.dtype(onnx_module().helper.tensor_dtype_to_np_dtype(a["to"]))
    if dtype.kind not in "biuf":
        raise refuse(node, f"Cast to {dtype}")
    return [c.sym.Cast(c.get(node.input[0]), dtype=dtype.name, name=op_name(node))]


CONSTANT_FIELDS = {"value": None, "value_float": np.float32, "value_floats": np.float32,
                   "value_int": np.int64, "value_ints": np.int64}


@converter("Constant")
def _constant(c: ImportCtx, node: Any, a: dict) -> None:
    """A constant keeps its rank (a (1, 1, 1) value still broadcasts to rank 3)."""
    (key,) = a  # the checker allows exactly one
    if key not in CONSTANT_FIELDS:
        raise refuse(node, f"Constant with {key}")
    value = a[key]
    c.consts[node.output[0]] = (onnx_module().numpy_helper.to_array(value) if key == "value"
                                else np.asarray(value, CONSTANT_FIELDS[key]))
    return None


REDUCE = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min",
          "ReduceProd": "prod"}


@converter(*REDUCE, "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp", "ReduceLogSum")
def _reduce(c: ImportCtx, node: Any, a: dict) -> list:
    """Empty or absent axes reduce everything, unless ``noop_with_empty_axes`` (then the
    input passes through)."""
    axes, name, x = _axes(c, node, a), op_name(node), c.get(node.input[0])
    if not axes:
        if a.get("noop_with_empty_axes", 0):
            return [c.sym.identity(x, name=name)]
        axes = None
    kw = dict(axis=axes, keepdims=bool(a.get("keepdims", 1)))
    op = node.op_type
    if op in REDUCE:
        return [getattr(c.sym, REDUCE[op])(x, name=name, **kw)]
    if op in ("ReduceL1", "ReduceL2"):
        return [c.sym.norm(x, ord=1 if op == "ReduceL1" else 2, name=name, **kw)]
    if op == "ReduceSumSquare":
        return [c.sym.sum(c.sym.square(x), name=name, **kw)]
    inner = c.sym.exp(x) if op == "ReduceLogSumExp" else x
    return [c.sym.log(c.sym.sum(inner, **kw), name=name)]


@converter("ArgMax", "ArgMin")
def _arg(c: ImportCtx, node: Any, a: dict) -> list:
    if a.get("select_last_index", 0):
        raise refuse(node, "select_last_index=1")
    fn = c.sym.argmax if node.op_type == "ArgMax" else c.sym.argmin
    y = fn(c.get(node.input[0]), axis=int(a.get("axis", 0)), keepdims=bool(a.get("keepdims", 1)))
    return [c.sym.Cast(y, dtype="int64", name=op_name(node))]


@converter("Where")
def _where(c: ImportCtx, node: Any, a: dict) -> list:
    """ONNX's Where broadcasts its three inputs; symgraph's takes equal shapes."""
    out = c.static_shape(node.output[0], node)
    xs = []
    for k, n in enumerate(node.input):
        x = c.get(n)
        if k == 0:  # symgraph's condition has the values' type
            x = c.sym.Cast(x, dtype=c.dtypes[node.input[1]].name)
        if c.static_shape(n, node) != out:
            x = c.sym.broadcast_to(c.sym.Reshape(x, shape=(1,) * (len(out) - c.rank(n, node))
                                                 + c.static_shape(n, node)), shape=out)
        xs.append(x)
    return [c.sym.where(*xs, name=op_name(node))]


@converter("Expand")
def _expand(c: ImportCtx, node: Any, a: dict) -> list:
    shape = c.static_shape(node.input[0], node)
    target = tuple(int(v) for v in c.const(node.input[1], node))
    try:
        out = np.broadcast_shapes(shape, target)
    except ValueError as exc:
        raise DataError(f"{node_label(node)}: shape {target} does not broadcast with the "
                        f"input's {shape}") from exc
    x = c.sym.Reshape(c.get(node.input[0]), shape=(1,) * (len(out) - len(shape)) + shape)
    return [c.sym.broadcast_to(x, shape=out, name=op_name(node))]


@converter("Tile")
def _tile(c: ImportCtx, node: Any, a: dict) -> list:
    reps = tuple(int(v) for v in c.const(node.input[1], node))
    return [c.sym.tile(c.get(node.input[0]), reps=reps, name=op_name(node))]


@converter("Shape")
def _shape(c: ImportCtx, node: Any, a: dict) -> list:
    """``start``/``end`` (opset 15) slice the shape as Python slices do, clamped."""
    rank = c.rank(node.input[0], node)
    begin, end, _ = slice(a.get("start", 0), a.get("end", rank)).indices(rank)
    shape = c.sym.shape_array(c.get(node.input[0]))
    return [c.sym.slice_axis(shape, axis=0, begin=begin, end=max(begin, end),
                             name=op_name(node))]
