"""Shape inference (analysis): ``Graph -> {Entry: shape}``.

Requires: every op registered. Guarantees: every shape a rule could decide is filled, going
forward and backward through the graph until nothing changes (MXNet's fixpoint), and a shape the
user gave is checked, never overwritten. A contradiction raises ShapeError naming the node, the
op, the input or output, the shape it has and the shape inferred from the other inputs.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from ..attrs import _parse_shape
from ..base import ShapeError, where
from ..graph import Entry, Graph, Node
from ..registry import get_op

Shape = tuple[int, ...]


def declared_shape(node: Node) -> Optional[Shape]:
    """The ``shape=`` a variable was declared with, if any (0 means unknown, as MXNet)."""
    text = node.extra.get("__shape__")
    if text is None:
        return None
    shape = _parse_shape(text)
    return None if 0 in shape else shape


def _describe(names: Sequence[str], shapes: Sequence[Optional[Shape]], skip: int) -> str:
    known = [f"{n} {s}" for i, (n, s) in enumerate(zip(names, shapes))
             if i != skip and s is not None]
    return " from " + ", ".join(known) if known else ""


def _apply_rule(node: Node, shapes: dict[Entry, Shape]) -> bool:
    opdef = get_op(node.op)
    ins = [shapes.get(e) for e in node.inputs]
    outs = [shapes.get(e) for e in node.entries()]
    try:
        new_ins, new_outs = opdef.infer_shape(node.attrs, list(ins), list(outs))
    except ShapeError as exc:
        given = ", ".join(f"{n} {s}" for n, s in zip(opdef.input_names(node.attrs), ins)
                          if s is not None)
        raise ShapeError(f"{where(node.name, node.op)}{exc} (inputs: {given or 'none known'})") \
            from None
    in_names = opdef.input_names(node.attrs)
    out_names = opdef.output_names(node.attrs)
    changed = False
    slots = [(e, n, old, new, i, True) for i, (e, n, old, new)
             in enumerate(zip(node.inputs, in_names, ins, new_ins))]
    slots += [(e, n, old, new, i, False) for i, (e, n, old, new)
              in enumerate(zip(node.entries(), out_names, outs, new_outs))]
    for entry, slot, old, new, i, is_input in slots:
        if new is None:
            continue
        new = tuple(int(d) for d in new)
        if old is None:
            shapes[entry] = new
            changed = True
        elif tuple(old) != new:
            src = _describe(in_names, ins, i if is_input else -1)
            raise ShapeError(f"{where(node.name, node.op)}{slot} has shape {tuple(old)}, "
                             f"inferred {new}{src}")
    return changed


def infer_shapes(graph: Graph, given: Mapping[str, Shape]) -> dict[Entry, Shape]:
    """Shapes of every entry that can be decided from ``given`` (variable name -> shape)."""
    nodes = graph.nodes()
    shapes: dict[Entry, Shape] = {}
    for node in nodes:
        if not node.is_variable:
            continue
        user = given.get(node.name)  # overrides a declared shape, as in MXNet
        shape = user if user is not None else declared_shape(node)
        if shape is not None:
            shapes[Entry(node)] = tuple(int(d) for d in shape)
    ops = [n for n in nodes if not n.is_variable]
    for _ in range(len(ops) + 2):
        changed = False
        for node in ops:
            changed |= _apply_rule(node, shapes)
        for node in reversed(ops):
            changed |= _apply_rule(node, shapes)
        if not changed:
            break
    return shapes


def _split_given(sym: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Shape]:
    names = sym.list_arguments()
    if len(args) > len(names):
        raise ShapeError(f"{len(args)} positional shapes for {len(names)} arguments {names}")
    given = {n: tuple(s) for n, s in zip(names, args) if s is not None}
    inputs = set(sym.list_inputs())
    for k, v in kwargs.items():
        if k not in inputs:
            raise ShapeError(f"infer_shape: {k!r} is not an input of the symbol; "
                             f"inputs: {sym.list_inputs()}")
        if v is not None:
            given[k] = tuple(v)
    return given


def symbol_infer_shape(sym: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
                       partial: bool) -> tuple:
    """``Symbol.infer_shape`` / ``infer_shape_partial``."""
    from .verify import check_unique_inputs
    graph = sym.graph()
    check_unique_inputs(graph)
    shapes = infer_shapes(graph, _split_given(sym, args, kwargs))
    by_name = {n.name: shapes.get(Entry(n)) for n in graph.variables()}
    arg_shapes = [by_name[n] for n in sym.list_arguments()]
    aux_shapes = [by_name[n] for n in sym.list_auxiliary_states()]
    out_shapes = [shapes.get(e) for e in graph.outputs]
    if not partial:
        missing = [n for n in sym.list_inputs() if by_name[n] is None]
        missing_out = [n for n, s in zip(sym.list_outputs(), out_shapes) if s is None]
        if missing or missing_out:
            raise ShapeError(f"cannot decide the shapes of {missing or missing_out}; "
                             f"give them to infer_shape / simple_bind")
    return arg_shapes, out_shapes, aux_shapes
