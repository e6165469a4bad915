"""``import_model``: an ONNX file -> ``(sym, arg_params, aux_params)`` (MXNet 1.9's contract).

Graph inputs that are not initializers become ``sg.sym.var`` data inputs; initializers become
parameters (``aux_params`` for a batch norm's running statistics, ``arg_params`` otherwise),
named as in the file. Each ONNX node is translated by ``import_ops.IMPORTERS[op_type]``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..base import GraphError
from .context import ImportCtx, attributes, onnx_module
from .import_ops import IMPORTERS


def _arrays(params: dict[str, np.ndarray], used: set) -> dict:
    from ..ndarray import array
    return {k: array(v, dtype=v.dtype) for k, v in params.items() if k in used}


def import_model(model_file: str) -> tuple[Any, dict, dict]:
    """Read ``model_file`` and return ``(sym, arg_params, aux_params)`` (MXNet 1.9's
    ``mx.contrib.onnx.import_model``); an operator without an importer raises GraphError
    naming it and the supported set."""
    onnx = onnx_module()
    from .. import symbol as sym_mod
    model = onnx.load(model_file)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 17)
    ctx = ImportCtx(sym_mod, opset=opset)
    for init in model.graph.initializer:
        ctx.consts[init.name] = onnx.numpy_helper.to_array(init)
    for inp in model.graph.input:
        if inp.name not in ctx.consts:
            ctx.values[inp.name] = sym_mod.var(inp.name)
    for node in model.graph.node:
        fn = IMPORTERS.get(node.op_type)
        if fn is None or node.domain not in ("", "ai.onnx"):
            raise GraphError(f"ONNX node {node.name or node.output[0]} ({node.op_type}): no "
                             f"importer for this operator; import_model supports "
                             f"{sorted(IMPORTERS)}")
        outs = fn(ctx, node, attributes(node))
        if outs is not None:
            for name, value in zip(node.output, outs):
                ctx.values[name] = value
    heads = [ctx.get(o.name) for o in model.graph.output]
    sym = heads[0] if len(heads) == 1 else sym_mod.Group(heads)
    used = set(sym.list_inputs())
    return sym, _arrays(ctx.arg_params, used), _arrays(ctx.aux_params, used)


def get_model_metadata(model_file: str) -> dict[str, list[tuple]]:
    """Names and shapes of the graph's data inputs and outputs (MXNet 1.9's
    ``mx.contrib.onnx.get_model_metadata``): ``{'input_tensor_data': [(name, shape, elem_type)],
    'output_tensor_data': [(name, shape)]}``; an unknown (dynamic) dimension reads 0, as
    MXNet reports it. Initializers are parameters, not inputs."""
    graph = onnx_module().load(model_file).graph
    params = {t.name for t in graph.initializer}

    def dims(value: Any) -> tuple[int, ...]:
        return tuple(int(d.dim_value) for d in value.type.tensor_type.shape.dim)
    return {"input_tensor_data": [(i.name, dims(i), int(i.type.tensor_type.elem_type))
                                  for i in graph.input if i.name not in params],
            "output_tensor_data": [(o.name, dims(o)) for o in graph.output]}
