"""``export_model``: a symgraph Symbol and its parameters -> an ONNX file (inference graph).

Shapes and dtypes of every entry come from symgraph's own inference with the given input
shapes, so converters can write concrete attributes (a ``Reshape`` target, a deconvolution's
padding). Parameters become initializers; inputs that are not parameters and that some
converted node reads become graph inputs, in the symbol's input order.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from ...core import fileio
from ...core.base import GraphError, ShapeError
from ...core.graph import Entry, Graph, Node, topo_order
from ...core.types.infer_shape import infer_shapes
from ...core.types.infer_type import infer_types
from .context import OPSET, ExportCtx, onnx_module
from .export_ops import EXPORTERS

def _host(v: Any) -> np.ndarray:
    return v.asnumpy() if hasattr(v, "asnumpy") else np.asarray(v)


def _load_inputs(sym: Any, params: Any) -> tuple[Any, dict[str, np.ndarray]]:
    """MXNet's accepted forms: Symbol or JSON path; dict, [arg, aux] or a parameter file."""
    from ...frontend import symbol as _symbol
    from ...training.checkpoint import load_params
    if isinstance(sym, str):
        sym = _symbol.load(sym)
    if isinstance(params, str):
        arg, aux = load_params(params)
        params = {**arg, **aux}
    elif isinstance(params, (list, tuple)):
        if len(params) != 2:
            raise GraphError(f"export_model: params as a list must be [arg_params, aux_params], "
                             f"got {len(params)} items")
        params = {**params[0], **params[1]}
    return sym, {k: _host(v) for k, v in dict(params).items()}


def _data_inputs(sym: Any, params: dict, n_shapes: int) -> list[str]:
    """The non-parameter inputs ``in_shapes`` describe: all of them, or all but labels."""
    free = [n for n in sym.list_inputs() if n not in params]
    if len(free) != n_shapes:
        free = [n for n in free if not n.endswith("label")]
    if len(free) != n_shapes:
        raise ShapeError(f"export_model: {n_shapes} in_shapes for the inputs "
                         f"{[n for n in sym.list_inputs() if n not in params]} (parameters "
                         f"excluded, labels optional)")
    return free


def _entry_names(nodes: list[Node]) -> dict[Entry, str]:
    """One ONNX tensor name per entry, unique (ONNX graphs are in SSA form) even where two
    symgraph nodes share a name; variables keep theirs, as they are the graph's inputs."""
    names: dict[Entry, str] = {Entry(n, 0): n.name for n in nodes if n.is_variable}
    taken = set(names.values())
    for node in nodes:
        if node.is_variable:
            continue
        entries = node.entries()
        for e in entries:
            base = node.name if len(entries) == 1 else f"{node.name}_output{e.index}"
            name, k = base, 0
            while name in taken:
                k += 1
                name = f"{base}_{k}"
            taken.add(name)
            names[e] = name
    return names


def _output_names(ctx: ExportCtx, outputs: Sequence[Entry], names: dict) -> list[str]:
    """Graph outputs that are graph inputs (or repeat another output) go through Identity:
    ONNX wants every output produced by a node, under a name of its own."""
    result: list[str] = []
    for e in outputs:
        name = names[e]
        if e.node.is_variable or name in result:
            alias = ctx.fresh(f"{name}_output")
            ctx.add("Identity", [name], [alias])
            name = alias
        result.append(name)
    return result


def _convert(ctx: ExportCtx, nodes: list[Node], names: dict[Entry, str]) -> None:
    for node in nodes:
        if node.is_variable:
            continue
        fn = EXPORTERS.get(node.op)
        if fn is None:
            raise GraphError(f"{node.name} ({node.op}): no ONNX converter for this op; "
                             f"export_model supports {sorted(EXPORTERS)}")
        fn(ctx, node, [names[e] for e in node.inputs], [names[e] for e in node.entries()])


def _value_info(helper: Any, name: str, dtype: Any, shape: Sequence[Any]) -> Any:
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)),
                                         list(shape))


def build_model(sym: Any, params: dict[str, np.ndarray], in_shapes: Sequence[Sequence[int]],
                in_types: Union[Any, Sequence[Any]], dynamic: bool = False) -> Any:
    """The ``onnx.ModelProto`` of ``sym`` (see :func:`export_model`)."""
    onnx = onnx_module()
    helper = onnx.helper
    data = _data_inputs(sym, params, len(in_shapes))
    types = list(in_types) if isinstance(in_types, (list, tuple)) else [in_types] * len(data)
    graph = Graph(sym.outputs_)
    given = {**{k: tuple(v.shape) for k, v in params.items()},
             **{n: tuple(s) for n, s in zip(data, in_shapes)}}
    shapes = infer_shapes(graph, given)
    dtypes = infer_types(graph, {**{k: v.dtype for k, v in params.items()},
                                 **{n: np.dtype(t) for n, t in zip(data, types)}})
    nodes = topo_order(sym.outputs_)
    names = _entry_names(nodes)
    ctx = ExportCtx(helper, shapes, dtypes, params, dynamic=dynamic,
                    batch=in_shapes[0][0] if dynamic and in_shapes and in_shapes[0] else None)
    ctx.taken.update(names.values())
    _convert(ctx, nodes, names)
    out_names = _output_names(ctx, sym.outputs_, names)
    outputs = [_value_info(helper, n, dtypes[e], ctx.symbolic(shapes[e]))
               for n, e in zip(out_names, sym.outputs_)]
    inputs = [_value_info(helper, n, t, ctx.symbolic(s))
              for n, s, t in zip(data, in_shapes, types) if n in ctx.used]
    inits = [onnx.numpy_helper.from_array(np.ascontiguousarray(v), k)
             for k, v in list(params.items()) + list(ctx.consts.items()) if k in ctx.used]
    g = helper.make_graph(ctx.nodes, sym.name or "symgraph", inputs, outputs, inits)
    model = helper.make_model(g, producer_name="symgraph",
                              opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = min(model.ir_version, 8)  # readable by older onnxruntime releases
    return model


def export_model(sym: Any, params: Any, in_shapes: Optional[Sequence] = None,
                 in_types: Any = np.float32, onnx_file_path: str = "model.onnx",
                 verbose: bool = False, dynamic: bool = False,
                 dynamic_input_shapes: Optional[Sequence] = None,
                 run_shape_inference: bool = False, input_type: Any = None,
                 input_shape: Optional[Sequence] = None) -> str:
    """Write ``sym`` with ``params`` as an ONNX model; returns ``onnx_file_path`` (MXNet 1.9).

    ``sym``: a Symbol or a symbol JSON path; ``params``: ``{name: array}`` with arg and aux
    params, ``[arg_params, aux_params]`` or a parameter file; ``in_shapes``: one shape per data
    input (labels may be left out); ``in_types``: one dtype or one per input. ``dynamic``
    makes the first axis of every input symbolic (``dynamic_input_shapes`` is not supported).
    ``input_type``/``input_shape`` are the old names of ``in_types``/``in_shapes``.
    """
    onnx = onnx_module()
    in_shapes = input_shape if input_shape is not None else in_shapes
    in_types = input_type if input_type is not None else in_types
    if in_shapes is None:
        raise ShapeError("export_model: give in_shapes, e.g. [(1, 1, 28, 28)]")
    if dynamic_input_shapes is not None:
        raise GraphError("export_model: dynamic_input_shapes is not supported; dynamic=True "
                         "makes the batch axis symbolic")
    sym, params = _load_inputs(sym, params)
    model = build_model(sym, params, in_shapes, in_types, dynamic)
    if run_shape_inference:
        model = onnx.shape_inference.infer_shapes(model)
    if verbose:
        print(onnx.helper.printable_graph(model.graph))
    fileio.write_bytes(onnx_file_path, model.SerializeToString())
    return onnx_file_path
