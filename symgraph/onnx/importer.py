"""``import_model``: an ONNX file -> ``(sym, arg_params, aux_params)`` (MXNet 1.9's contract).

Graph inputs that are not initializers become ``sg.sym.var`` data inputs; initializers become
parameters (``aux_params`` for a batch norm's running statistics, ``arg_params`` otherwise),
named as in the file. Each ONNX node is translated by ``import_ops.IMPORTERS[op_type]``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ..base import GraphError
from .export import onnx_module


@dataclass
class ImportCtx:
    """What an importer sees: symbols of the tensors so far and the constant arrays."""

    sym: Any  # the symgraph.symbol module
    values: dict[str, Any] = field(default_factory=dict)
    consts: dict[str, np.ndarray] = field(default_factory=dict)
    arg_params: dict[str, np.ndarray] = field(default_factory=dict)
    aux_params: dict[str, np.ndarray] = field(default_factory=dict)
    opset: int = 17

    def get(self, name: str) -> Any:
        """The symbol of tensor ``name``; a constant becomes a parameter variable."""
        if name not in self.values:
            if name not in self.consts:
                raise GraphError(f"ONNX tensor {name!r} is read before it is produced")
            self.arg_params[name] = self.consts[name]
            self.values[name] = self.sym.var(name)
        return self.values[name]

    def is_const(self, name: str) -> bool:
        return name in self.consts and name not in self.values

    def const(self, name: str, node: Any) -> np.ndarray:
        """The value of a constant input (a shape, axes...), or GraphError naming the node."""
        if name not in self.consts:
            raise GraphError(f"ONNX node {node.name or node.op_type} ({node.op_type}): input "
                             f"{name!r} must be a constant (initializer or Constant node)")
        return self.consts[name]

    def param(self, name: str, value: np.ndarray, aux: bool = False) -> Any:
        """A parameter variable named ``name`` holding ``value`` (possibly transformed)."""
        (self.aux_params if aux else self.arg_params)[name] = np.ascontiguousarray(value)
        self.values[name] = self.sym.var(name)
        return self.values[name]


def op_name(node: Any) -> str:
    """A symgraph node name for an ONNX node (its name, else its first output), sanitised."""
    raw = node.name or node.output[0]
    return re.sub(r"[^0-9A-Za-z_]", "_", raw).strip("_") or node.op_type.lower()


def attributes(node: Any) -> dict[str, Any]:
    """The node's attributes as Python values."""
    onnx = onnx_module()
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _arrays(params: dict[str, np.ndarray], used: set) -> dict:
    from ..ndarray import array
    return {k: array(v, dtype=v.dtype) for k, v in params.items() if k in used}


def import_model(model_file: str) -> tuple[Any, dict, dict]:
    """Read ``model_file`` and return ``(sym, arg_params, aux_params)`` (MXNet 1.9's
    ``mx.contrib.onnx.import_model``); an operator without an importer raises GraphError
    naming it and the supported set."""
    onnx = onnx_module()
    from .. import symbol as sym_mod
    from .import_ops import IMPORTERS
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


def first_const(ctx: ImportCtx, node: Any, index: int) -> Optional[np.ndarray]:
    """Input ``index`` of ``node`` as a constant, or None when absent or empty."""
    if len(node.input) <= index or not node.input[index]:
        return None
    return ctx.const(node.input[index], node)
