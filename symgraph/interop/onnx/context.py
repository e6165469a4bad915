"""What the ONNX converters share: the onnx import, and the contexts export and import
converters receive (``ExportCtx``: inferred types and the nodes written so far; ``ImportCtx``:
the symbols of the tensors read so far). Its own module so that ``export``/``export_ops`` and
``importer``/``import_ops`` each depend on it and not on each other.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from ...core.base import DataError, GraphError
from ...core.graph import Entry

OPSET = 17


def onnx_module() -> Any:
    """Import onnx, or say how to install it."""
    try:
        import onnx
    except ImportError as exc:
        raise ImportError("sg.onnx needs the onnx package: pip install 'symgraph[onnx]'") from exc
    return onnx


@dataclass
class ExportCtx:
    """What a converter sees: inferred shapes/dtypes and ways to add nodes and constants."""

    helper: Any
    shapes: dict[Entry, tuple]
    dtypes: dict[Entry, np.dtype]
    params: dict[str, np.ndarray]
    nodes: list = field(default_factory=list)
    consts: dict[str, np.ndarray] = field(default_factory=dict)
    used: set = field(default_factory=set)
    taken: set = field(default_factory=set)
    dynamic: bool = False  # the first axis of the data inputs is symbolic
    batch: Optional[int] = None  # the export batch size, which `dynamic` leaves open
    node_names: set = field(default_factory=set)

    def add(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str],
            **attrs: Any) -> None:
        """Append one ONNX node, named after its first output (made unique: the checker
        refuses two nodes of one name)."""
        self.used.update(i for i in inputs if i)
        self.taken.update(outputs)
        name, k = outputs[0], 0
        while name in self.node_names:
            k += 1
            name = f"{outputs[0]}_{k}"
        self.node_names.add(name)
        self.nodes.append(self.helper.make_node(op_type, list(inputs), list(outputs),
                                                name=name, **attrs))

    def symbolic(self, shape: Sequence[int]) -> list:
        """``shape`` for a graph input or output: with ``dynamic``, a leading export batch
        size becomes the symbolic dimension ``batch``."""
        shape = list(shape)
        if self.dynamic and shape and shape[0] == self.batch:
            shape[0] = "batch"
        return shape

    def target_shape(self, out: Sequence[int], src: Sequence[int]) -> list:
        """A Reshape target for ``out``: with ``dynamic``, a batch axis kept from the source
        is written as 0 (ONNX: copy the input's dimension), so any batch size runs."""
        out = list(out)
        if self.dynamic and out and src and out[0] == src[0] == self.batch:
            out[0] = 0
        return out

    def const(self, hint: str, value: Any, dtype: Any = np.float32) -> str:
        """A new initializer holding ``value``; returns its name."""
        name = self.fresh(hint)
        self.consts[name] = np.asarray(value, dtype=dtype)
        return name

    def fresh(self, hint: str) -> str:
        """A tensor name not used yet."""
        k, name = 0, hint
        while name in self.consts or name in self.params or name in self.taken:
            k += 1
            name = f"{hint}_{k}"
        self.taken.add(name)
        return name

    def shape(self, e: Entry) -> tuple:
        return tuple(self.shapes[e])

    def dtype(self, e: Entry) -> np.dtype:
        return np.dtype(self.dtypes[e])


@dataclass
class ImportCtx:
    """What an importer sees: symbols of the tensors so far and the constant arrays."""

    sym: Any  # the symgraph.frontend.symbol module
    values: dict[str, Any] = field(default_factory=dict)
    consts: dict[str, np.ndarray] = field(default_factory=dict)
    arg_params: dict[str, np.ndarray] = field(default_factory=dict)
    aux_params: dict[str, np.ndarray] = field(default_factory=dict)
    opset: int = 17
    shapes: dict[str, Optional[tuple]] = field(default_factory=dict)  # from shape inference
    feeds: dict[str, np.ndarray] = field(default_factory=dict)  # input values known up front
    dtypes: dict[str, np.dtype] = field(default_factory=dict)  # from shape inference

    def get(self, name: str) -> Any:
        """The symbol of tensor ``name``; a constant becomes a parameter variable."""
        if name not in self.values:
            if name not in self.consts:
                raise DataError(f"ONNX tensor {name!r} is read before it is produced")
            self.arg_params[name] = self.consts[name]
            self.values[name] = self.sym.var(name, shape=self.consts[name].shape)
        return self.values[name]

    def is_const(self, name: str) -> bool:
        return name in self.consts and name not in self.values

    def const(self, name: str, node: Any) -> np.ndarray:
        """The value of a constant input (a shape, axes...), or GraphError naming the node.
        A graph input whose value the caller gave up front (the backend's run) counts as
        one: symgraph's graphs are static, so shapes and axes must be known when building."""
        if name in self.consts:
            return self.consts[name]
        if name in self.feeds:
            return self.feeds[name]
        raise GraphError(f"{node_label(node)}: input {name!r} must be a constant "
                         f"(initializer or Constant node)")

    def known(self, name: str) -> Optional[np.ndarray]:
        """The value of tensor ``name`` when import knows it (a constant or a fed input)."""
        if name in self.consts:
            return self.consts[name]
        return self.feeds.get(name)

    def static_shape(self, name: str, node: Any) -> tuple:
        """The full shape of tensor ``name``, or GraphError when a dimension is symbolic."""
        shape = self.shapes.get(name)
        if shape is None or any(d is None for d in shape):
            raise GraphError(f"{node_label(node)}: needs the static shape of {name!r}, but "
                             f"ONNX shape inference leaves it at {shape}")
        return tuple(int(d) for d in shape)

    def rank(self, name: str, node: Any) -> int:
        """The rank of tensor ``name`` (from ONNX's shape inference, which import runs)."""
        shape = self.shapes.get(name)
        if shape is None:
            raise GraphError(f"{node_label(node)}: the rank of {name!r} is unknown after "
                             f"ONNX shape inference; give the graph inputs' shapes")
        return len(shape)

    def param(self, name: str, value: np.ndarray, aux: bool = False) -> Any:
        """A parameter variable named ``name`` holding ``value`` (possibly transformed)."""
        (self.aux_params if aux else self.arg_params)[name] = np.ascontiguousarray(value)
        # the shape travels with the variable, so binding with data shapes alone works
        self.values[name] = self.sym.var(name, shape=value.shape)
        return self.values[name]


def node_label(node: Any) -> str:
    """How errors name an ONNX node: ``ONNX node <name or first output> (<op_type>)``."""
    label = node.name or (node.output[0] if node.output else "?")
    return f"ONNX node {label} ({node.op_type})"


def op_name(node: Any) -> str:
    """A symgraph node name for an ONNX node (its name, else its first output), sanitised."""
    raw = node.name or node.output[0]
    return re.sub(r"[^0-9A-Za-z_]", "_", raw).strip("_") or node.op_type.lower()


def attributes(node: Any) -> dict[str, Any]:
    """The node's attributes as Python values."""
    onnx = onnx_module()
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def first_const(ctx: ImportCtx, node: Any, index: int) -> Optional[np.ndarray]:
    """Input ``index`` of ``node`` as a constant, or None when absent or empty."""
    if len(node.input) <= index or not node.input[index]:
        return None
    return ctx.const(node.input[index], node)
