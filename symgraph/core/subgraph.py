"""Subgraphs: graphs held as an attribute of a control-flow node (``_foreach``'s body).

A :class:`Subgraph` is a small graph with named input variables in a fixed order (MXNet's
``list_inputs`` order of the traced body) and output entries. It is immutable; two subgraphs
are equal when their structure is (compared through a canonical text of nodes, attributes and
wiring, computed once), so a node holding one keeps hashable, comparable attrs: CSE and the
memo tables work on control-flow nodes as on any other.

This module gives what every control-flow op needs from its subgraphs: run it on numpy arrays
(the numpy reference runs the body once per iteration), infer shapes and dtypes through it,
differentiate it (a new subgraph: the gradient graph), and splice it into an outer graph
(unrolling).

Example::

    >>> from symgraph.core.graph import Entry, variable
    >>> from symgraph import build
    >>> x = build.Handle((Entry(variable("x")),))
    >>> sub = Subgraph.of(list((x * 2.0).outputs_), [x.outputs_[0].node])
    >>> [float(v[0]) for v in sub.run([np.array([3.0])])]
    [6.0]
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .base import GraphError
from .graph import VARIABLE, Entry, Graph, Node, topo_order
from .registry import RunCtx, get_op

Shape = tuple[int, ...]


class Subgraph:
    """Input variables (in order) and output entries of a graph held by a node."""

    __slots__ = ("inputs", "outputs", "_key", "_nodes", "_plan")

    def __init__(self, inputs: Sequence[Node], outputs: Sequence[Entry]) -> None:
        self.inputs: tuple[Node, ...] = tuple(inputs)
        self.outputs: tuple[Entry, ...] = tuple(outputs)
        self._key: Optional[tuple] = None
        self._nodes: Optional[list[Node]] = None
        self._plan: Optional[tuple] = None

    @classmethod
    def of(cls, outputs: Sequence[Entry], inputs: Sequence[Node]) -> "Subgraph":
        """The subgraph of ``outputs`` whose inputs are ``inputs``; every variable the outputs
        reach must be one of them (GraphError naming the others)."""
        sub = cls(inputs, outputs)
        known = set(sub.inputs)
        stray = [n.name for n in sub.nodes() if n.is_variable and n not in known]
        if stray:
            raise GraphError(f"subgraph reads variables {stray} that are not its inputs "
                             f"{[n.name for n in sub.inputs]}")
        return sub

    def nodes(self) -> list[Node]:
        """Every node the outputs reach, inputs first (MXNet's order)."""
        if self._nodes is None:
            self._nodes = topo_order(self.outputs)
        return self._nodes

    def graph(self) -> Graph:
        return Graph(self.outputs)

    @property
    def input_names(self) -> list[str]:
        return [n.name for n in self.inputs]

    def key(self) -> tuple:
        """A canonical, hashable description of the structure (once per subgraph)."""
        if self._key is None:
            order = self.nodes()
            index = {n: i for i, n in enumerate(order)}
            rows = tuple((n.op, n.name, n.attrs, n.extra,
                          tuple((index[e.node], e.index) for e in n.inputs)) for n in order)
            self._key = (rows, tuple(index.get(n, -1) for n in self.inputs),
                         tuple((index[e.node], e.index) for e in self.outputs))
        return self._key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Subgraph) and (self is other or self.key() == other.key())

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        return (f"<Subgraph {len(self.nodes())} nodes, inputs {self.input_names}, "
                f"{len(self.outputs)} outputs>")

    def run(self, values: Sequence[np.ndarray], ctx: Optional[RunCtx] = None) -> list:
        """The outputs for input arrays ``values`` (in input order), by each op's numpy
        reference: what control-flow ops run per iteration on the CPU."""
        ctx = ctx or RunCtx()
        size, steps, outputs = self._run_plan()
        vals: list = list(values) + [None] * (size - len(values))
        for compute, attrs, ins, outs in steps:
            for k, v in zip(outs, compute(attrs, [vals[i] for i in ins], ctx)):
                vals[k] = v
        return [vals[k] for k in outputs]

    def _run_plan(self) -> tuple:
        """``(number of slots, steps, output slots)``: each value in a numbered slot (the
        inputs first) and each op node as ``(compute, attrs, input slots, output slots)``,
        built once, since a loop runs its body every step."""
        if self._plan is None:
            slot: dict[Entry, int] = {Entry(n): i for i, n in enumerate(self.inputs)}
            steps = []
            for node in self.nodes():
                if node.op == VARIABLE:
                    if Entry(node) not in slot:  # (Subgraph.of refuses such graphs)
                        raise GraphError(f"subgraph input {node.name} has no value")
                    continue
                ins = tuple(slot[e] for e in node.inputs)
                for e in node.entries():
                    slot[e] = len(slot)
                outs = tuple(slot[e] for e in node.entries())
                steps.append((get_op(node.op).compute, node.attrs, ins, outs))
            self._plan = (len(slot), steps, tuple(slot[e] for e in self.outputs))
        return self._plan

    def infer_shapes(self, given: Sequence[Optional[Shape]],
                     partial: bool = False) -> tuple[list, list]:
        """``(input shapes, output shapes)`` decided from the known input shapes ``given``
        (None: unknown); parameter inputs get the shapes their readers need. ``partial``: a 0
        in ``given`` is an unknown dimension, and shapes known in part come back with 0s."""
        from .types.infer_shape import infer_partial_shapes
        names = {n.name: tuple(s) for n, s in zip(self.inputs, given) if s is not None}
        full, part = infer_partial_shapes(self.graph(), names, exact=not partial)
        known = {**part, **full} if partial else full
        return ([known.get(Entry(n)) for n in self.inputs],
                [known.get(e) for e in self.outputs])

    def infer_types(self, given: Sequence[Any]) -> tuple[list, list]:
        """``(input dtypes, output dtypes)`` from the known input dtypes (None: unknown)."""
        from .types.infer_type import infer_types
        names = {n.name: np.dtype(t) for n, t in zip(self.inputs, given) if t is not None}
        found = infer_types(self.graph(), names, defaults=False)
        return ([found.get(Entry(n)) for n in self.inputs],
                [found.get(e) for e in self.outputs])

    def splice(self, inputs: Sequence[Entry], prefix: str) -> list[Entry]:
        """Copies of the subgraph's nodes reading ``inputs`` (one entry per input, in order)
        instead of its input variables, names prefixed; returns the copied outputs."""
        remap: dict[Entry, Entry] = {Entry(n): e for n, e in zip(self.inputs, inputs)}
        for node in self.nodes():
            if node.op == VARIABLE:
                continue
            new = Node(node.op, prefix + node.name, node.attrs,
                       tuple(remap[e] for e in node.inputs), node.extra)
            for old_e, new_e in zip(node.entries(), new.entries()):
                remap[old_e] = new_e
        return [remap[e] for e in self.outputs]
