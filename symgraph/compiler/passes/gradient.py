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

from ...core import name as _name
from ...core.attrs import Attrs
from ...core.build import OPS, Handle
from ...core.graph import VARIABLE, Entry, Graph, Node
from ...core.base import GraphError, where
from ...core.types.table import TypeTable, types_of
from ...core.registry import BROADCAST, NO_GRADIENT, NOT_DIFFERENTIABLE, get_op


@dataclass
class GradCtx:
    """What a gradient rule sees: handles (:class:`~symgraph.core.build.Handle`) on the node's
    inputs, outputs (hidden ones too) and output gradients, its attrs, ``sym`` (every op as a
    function over handles, spelled as ``sg.sym``'s) to build ops with, and ``types`` (the
    graph's TypeTable: shapes and dtypes of any entry, new ones included)."""

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


def gradient(graph: Graph, wrt: Sequence[Node], head_grads: Sequence[Optional[Entry]],
             zero_as_none: bool = False) -> list[Optional[Entry]]:
    """Gradient entries of ``graph``'s outputs with respect to the variables ``wrt``.

    ``head_grads[i]`` is the entry of output i's gradient (None: that output has none).
    A variable no gradient reaches gets ``zeros_like`` of it, or None with ``zero_as_none``
    (the executor then fills its gradient array instead of computing zeros).
    """
    table = types_of(graph)
    nodes = graph.nodes()
    needed = _depends_on(nodes, set(wrt))
    ograds: dict[Entry, list] = {}
    for out, head in zip(graph.outputs, head_grads):
        if head is not None and out.node in needed:
            ograds.setdefault(out, []).append(Handle((head,)))
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
            outs = [Handle((e,)) for e in entries]
            dys = [_total(OPS, ograds[e]) if e in ograds else OPS.zeros_like(o)
                   for e, o in zip(entries, outs)]
            ctx = GradCtx(node, node.attrs, [Handle((e,)) for e in node.inputs], outs, dys,
                          OPS, table)
            in_grads = opdef.gradient(ctx)
            for e, g in zip(node.inputs, in_grads):
                if g is None or e.node not in needed:
                    continue
                if opdef.pattern == BROADCAST:
                    g = OPS._broadcast_backward(g, Handle((e,)))
                ograds.setdefault(e, []).append(g)
    result: list[Optional[Entry]] = []
    for v in wrt:
        e = Entry(v)
        with _name.Prefix(f"{v.name}_grad_"):
            if e in ograds:
                result.append(_total(OPS, ograds[e]).outputs_[0])
            else:
                result.append(None if zero_as_none else
                              OPS.zeros_like(Handle((e,))).outputs_[0])
    return result
