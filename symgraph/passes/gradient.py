"""Reverse-mode autodiff: builds the backward graph symbolically from each op's gradient rule.

Requires: every op registered. Guarantees: for each requested variable an entry holding the
gradient of the outputs (weighted by head gradients) with respect to it; fan-out gradients summed
with ``add_n``; ops without a path to the outputs contribute nothing, and a variable with no
path at all gets ``zeros_like``; ``NOT_DIFFERENTIABLE`` ops and rules returning ``None`` stop the
flow; a broadcast op's input gradients are summed back to the input's shape here, in one place.
Gradient rules only compose registered ops, so the result can be differentiated again.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

from .. import name as _name
from .. import symbol as S
from ..attrs import Attrs
from ..graph import VARIABLE, Entry, Graph, Node
from ..base import GraphError, where
from ..typetable import TypeTable, types_of
from ..registry import BROADCAST, NO_GRADIENT, NOT_DIFFERENTIABLE, get_op


@dataclass
class GradCtx:
    """What a gradient rule sees: symbols for the node's inputs, outputs (hidden ones too) and
    output gradients, its attrs, ``sym`` (the ``sg.sym`` module) to build ops with, and
    ``types`` (the graph's TypeTable: shapes and dtypes of any entry, new ones included)."""

    node: Node
    attrs: Attrs
    inputs: list
    outputs: list
    ograds: list
    sym: Any
    types: Optional[TypeTable] = None  # the graph's types (shapes and dtypes of the entries)


def _depends_on(nodes: list[Node], wrt: set[Node]) -> set[Node]:
    reach = set(wrt)
    for node in nodes:
        for e in node.inputs:  # (plain loops: once per node of the graph)
            if e.node in reach:
                reach.add(node)
                break
    return reach


def _any_in(entries: tuple[Entry, ...], ograds: dict) -> bool:
    for e in entries:  # (a plain loop: once per node)
        if e in ograds:
            return True
    return False


def _total(sym: Any, grads: list) -> Any:
    return grads[0] if len(grads) == 1 else sym.add_n(*grads)


def gradient(graph: Graph, wrt: Sequence[Node], head_grads: Sequence[Optional[Any]],
             zero_as_none: bool = False) -> list:
    """Gradient symbols of ``graph``'s outputs with respect to the variables ``wrt``.

    ``head_grads[i]`` is the symbol of output i's gradient (None: that output has none).
    A variable no gradient reaches gets ``zeros_like`` of it, or None with ``zero_as_none``
    (the executor then fills its gradient array instead of computing zeros).
    """
    table = types_of(graph)
    nodes = graph.nodes()
    needed = _depends_on(nodes, set(wrt))
    ograds: dict[Entry, list] = {}
    for out, head in zip(graph.outputs, head_grads):
        if head is not None and out.node in needed:
            ograds.setdefault(out, []).append(head)
    with _name.Prefix("") as namer:  # restarted per node: Prefix(f"{node.name}_backward_")
        for node in reversed(nodes):
            if node not in needed or node.op == VARIABLE:
                continue
            opdef = get_op(node.op)
            entries = node.entries()
            if opdef.gradient == NOT_DIFFERENTIABLE or not _any_in(entries, ograds):
                continue
            if opdef.gradient == NO_GRADIENT:
                raise GraphError(f"{where(node.name, node.op)}has no gradient, but a gradient "
                                 f"must flow through it to {sorted(v.name for v in wrt)}")
            namer.restart(f"{node.name}_backward_")
            outs = [S.Symbol((e,)) for e in entries]
            dys = [_total(S, ograds[e]) if e in ograds else S.zeros_like(o)
                   for e, o in zip(entries, outs)]
            ctx = GradCtx(node, node.attrs, [S.Symbol((e,)) for e in node.inputs], outs, dys, S,
                          table)
            in_grads = opdef.gradient(ctx)
            for e, g in zip(node.inputs, in_grads):
                if g is None or e.node not in needed:
                    continue
                if opdef.pattern == BROADCAST:
                    g = S._broadcast_backward(g, S.Symbol((e,)))
                ograds.setdefault(e, []).append(g)
    result = []
    for v in wrt:
        e = Entry(v)
        with _name.Prefix(f"{v.name}_grad_"):
            if e in ograds:
                result.append(_total(S, ograds[e]))
            else:
                result.append(None if zero_as_none else S.zeros_like(S.Symbol((e,))))
    return result


def symbol_gradient(sym: Any, wrt: list[str]) -> Any:
    """``Symbol.gradient``: d(sum of all outputs)/d(each variable in ``wrt``), as one symbol."""
    graph = sym.graph()
    by_name = {n.name: n for n in graph.variables()}
    missing = [w for w in wrt if w not in by_name]
    if missing:
        raise GraphError(f"gradient: {missing} are not inputs; inputs: {sym.list_inputs()}")
    heads = [S.ones_like(S.Symbol((e,))) for e in graph.outputs]
    return S.Group(gradient(graph, [by_name[w] for w in wrt], heads))
