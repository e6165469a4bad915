"""``import_model``: an ONNX file -> ``(sym, arg_params, aux_params)`` (MXNet 1.9's contract).

A model is checked before anything is built: ``onnx.checker.check_model`` and ONNX's strict
shape inference must accept it, else :class:`~symgraph.DataError` carries their message
(which names the node or tensor). Graph inputs that are not initializers become
``sg.sym.var`` data inputs; initializers become parameters (``aux_params`` for a batch norm's
running statistics, ``arg_params`` otherwise), named as in the file. Each ONNX node is
translated by ``import_ops.IMPORTERS[op_type]`` according to the model's opset.
"""
from __future__ import annotations

import os
from typing import Any, Optional, Union

import numpy as np

from ...core.base import DataError, GraphError, SymgraphError
from .context import ImportCtx, attributes, node_label, onnx_module
from . import (import_einsum, import_math, import_pad, import_resize,  # noqa: F401  (register)
               import_shape, import_tensor)
from .import_ops import IMPORTERS

ONNX_DOMAINS = ("", "ai.onnx")
# Operators whose early versions mean something else, and the first version mapped: before
# 7 the binary ops broadcast by a legacy `broadcast`/`axis` rule; Reshape took its shape as
# an attribute before 5, Tile its repeats as (tiles, axis) before 6; Cast's `to` was a string
# before 6; Concat's axis was optional before 4; BatchNormalization and Dropout had `is_test`;
# Pad's were `paddings` before 2; Resize 10 had no coordinate transform (Upsample's rule).
_LEGACY7 = ("Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less",
            "Gemm", "PRelu", "BatchNormalization", "Dropout")
MIN_VERSION = {**{op: 7 for op in _LEGACY7}, "Reshape": 5, "Tile": 6, "Cast": 6, "Concat": 4,
               "Pad": 2, "Resize": 11}


def _arrays(params: dict[str, np.ndarray], used: set) -> dict:
    from ...runtime.ndarray import array
    return {k: array(v, dtype=v.dtype) for k, v in params.items() if k in used}


def load_checked(source: Union[str, bytes, Any]) -> tuple[Any, dict]:
    """The ``ModelProto`` of ``source`` (a path, serialized bytes or a ModelProto) once
    onnx's checker and strict shape inference accept it, and the inferred ``(shape, dtype)``
    of every tensor (a shape is None where the rank is unknown, a dimension where it is
    symbolic)."""
    onnx = onnx_module()
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    where = source if isinstance(source, str) else "ONNX model"
    try:
        if isinstance(source, str):
            model = onnx.load(source)
        elif isinstance(source, bytes):
            model = onnx.load_from_string(source)
        else:
            model = source
    except OSError:
        raise
    except Exception as exc:  # protobuf's DecodeError and onnx's own load errors
        raise DataError(f"{where}: not a readable ONNX model ({type(exc).__name__}: "
                        f"{exc})") from exc
    if not model.graph.output:
        raise DataError(f"{where}: the graph {model.graph.name!r} has no outputs")
    try:
        onnx.checker.check_model(model)
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise DataError(f"{where}: the ONNX checker rejects the model: "
                        f"{' '.join(str(exc).split())}") from exc
    return model, _inferred_types(inferred.graph)


def _inferred_types(graph: Any) -> dict[str, tuple]:
    """``{tensor: (shape or None, numpy dtype or None)}``; non-tensor graph inputs and outputs
    (sequences, maps, optionals) are refused: symgraph's graphs carry tensors only."""
    helper = onnx_module().helper
    types: dict[str, tuple] = {t.name: (tuple(t.dims), helper.tensor_dtype_to_np_dtype(
        t.data_type)) for t in graph.initializer}
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        if not info.type.HasField("tensor_type"):
            raise GraphError(f"ONNX tensor {info.name!r}: type {info.type.WhichOneof('value')} "
                             f"is not supported by import_model (tensors only)")
        t = info.type.tensor_type
        shape = (tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)
                 if t.HasField("shape") else None)
        dtype = helper.tensor_dtype_to_np_dtype(t.elem_type) if t.elem_type else None
        if dtype is not None and np.dtype(dtype).kind not in "biuf":
            raise GraphError(f"ONNX tensor {info.name!r}: element type {np.dtype(dtype)} is "
                             f"not supported by import_model (numbers and bool only)")
        types[info.name] = (shape, dtype)
    return types


def _fold(ctx: ImportCtx, node: Any) -> bool:
    """Constant folding: a node whose inputs are all constants (initializers, Constant
    nodes, folded nodes; not run-time inputs) is evaluated once by ONNX's reference
    implementation, and a Shape or Size of a tensor whose shape inference fixed is read off.
    Models whose shape arithmetic is spelled out in nodes (Shape -> Gather -> Concat ->
    Reshape) then import with static shapes, as symgraph's graphs need."""
    inputs = [i for i in node.input if i]
    if node.op_type in ("Shape", "Size") and node.input[0] not in ctx.consts:
        shape = ctx.shapes.get(node.input[0])
        if shape is None or None in shape:
            return False
        dims = np.array(shape, np.int64)
        if node.op_type == "Size":
            ctx.consts[node.output[0]] = np.array(dims.prod(), np.int64)
            return True
        start, end, _ = slice(*(attributes(node).get(k) for k in ("start", "end"))).indices(
            len(dims))
        ctx.consts[node.output[0]] = dims[start:end]
        return True
    if not inputs or not all(i in ctx.consts for i in inputs) or node.op_type == "Constant":
        return False
    from onnx.reference import ReferenceEvaluator
    try:
        values = ReferenceEvaluator(node).run(None, {i: ctx.consts[i] for i in inputs})
    except Exception:  # an op the reference cannot run: the importer gets it
        return False
    for name, value in zip(node.output, values):
        if name:
            ctx.consts[name] = np.asarray(value)
    return True


def _convert_node(ctx: ImportCtx, node: Any) -> None:
    if _fold(ctx, node):
        return
    fn = IMPORTERS.get(node.op_type)
    if fn is None or node.domain not in ONNX_DOMAINS:
        raise GraphError(f"{node_label(node)}: no importer for this operator (domain "
                         f"{node.domain!r}); import_model supports {sorted(IMPORTERS)}")
    if ctx.opset < MIN_VERSION.get(node.op_type, 1):
        raise GraphError(f"{node_label(node)}: opset {ctx.opset} is older than the first "
                         f"version import_model maps ({MIN_VERSION[node.op_type]}); convert "
                         f"the model with onnx.version_converter first")
    try:
        outs = fn(ctx, node, attributes(node))
    except SymgraphError:
        raise
    except (IndexError, KeyError, ValueError, TypeError) as exc:
        # the checker passed, so what is left is an input combination we do not map
        raise GraphError(f"{node_label(node)}: cannot import it at opset {ctx.opset}: "
                         f"{type(exc).__name__}: {exc}") from exc
    if outs is not None:
        for name, value in zip(node.output, outs):
            if name:
                ctx.values[name] = value


def build_symbol(model: Any, types: dict, feeds: Optional[dict] = None) -> tuple:
    """``(sym, arg_params, aux_params)`` of a checked ``model``; ``feeds`` are input values
    known up front (they may stand where a constant is needed, such as a shape)."""
    from ...frontend import symbol as sym_mod
    opset = next((o.version for o in model.opset_import if o.domain in ONNX_DOMAINS), 1)
    ctx = ImportCtx(sym_mod, opset=opset, feeds=dict(feeds or {}),
                    shapes={k: s for k, (s, _) in types.items()},
                    dtypes={k: np.dtype(t) for k, (_, t) in types.items() if t is not None})
    onnx = onnx_module()
    for init in model.graph.initializer:
        ctx.consts[init.name] = onnx.numpy_helper.to_array(init)
    for inp in model.graph.input:
        if inp.name not in ctx.consts:
            ctx.values[inp.name] = sym_mod.var(inp.name)
    for node in model.graph.node:
        _convert_node(ctx, node)
    heads = [ctx.get(o.name) for o in model.graph.output]
    sym = heads[0] if len(heads) == 1 else sym_mod.Group(heads)
    used = set(sym.list_inputs())
    return sym, _arrays(ctx.arg_params, used), _arrays(ctx.aux_params, used)


def import_model(model_file: str) -> tuple[Any, dict, dict]:
    """Read ``model_file`` and return ``(sym, arg_params, aux_params)`` (MXNet 1.9's
    ``mx.contrib.onnx.import_model``).

    A file that onnx's checker or strict shape inference rejects raises DataError naming
    the node or tensor; an operator without an importer raises GraphError naming it::

        sym, arg_params, aux_params = sg.onnx.import_model("net.onnx")
    """
    model, types = load_checked(model_file)
    return build_symbol(model, types)


def get_model_metadata(model_file: str) -> dict[str, list[tuple]]:
    """Names and shapes of the graph's data inputs and outputs (MXNet 1.9's
    ``mx.contrib.onnx.get_model_metadata``): ``{'input_tensor_data': [(name, shape, elem_type)],
    'output_tensor_data': [(name, shape)]}``; an unknown (dynamic) dimension reads 0, as
    MXNet reports it. Initializers are parameters, not inputs."""
    graph = load_checked(model_file)[0].graph
    params = {t.name for t in graph.initializer}

    def dims(value: Any) -> tuple[int, ...]:
        return tuple(int(d.dim_value) for d in value.type.tensor_type.shape.dim)
    return {"input_tensor_data": [(i.name, dims(i), int(i.type.tensor_type.elem_type))
                                  for i in graph.input if i.name not in params],
            "output_tensor_data": [(o.name, dims(o)) for o in graph.output]}
