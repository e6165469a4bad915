"""The weight casts of a step batched into one ``_multi_transpose_cast`` each way:
``Graph -> Graph``.

Why: after ``fold_casts``, AMP's channels-last training step still casts every float32 weight
to its narrow OHWI form in a ``_transpose_cast`` of its own, and every weight gradient back in
another (ResNet-20: 43 kernels of 0.5-37K elements), plus the plain casts of the weights that
need no transpose (the dense layer's) and of their gradients. On the GPU each costs the
per-kernel floor of a CUDA graph node (2-3 us), far more than its bytes; one kernel over all
of them costs one.

Requires: the graph's types. The casts it merges are ``_transpose_cast`` nodes and
float-to-float casts (``OpDef.cast``: a ``_transpose_cast`` with the identity
permutation). When two or more qualify, it merges:

* (a) every such cast whose input is a graph variable bound in the forward phase (the weight
  casts): they depend on nothing, so they can all run first;
* (b) every such cast that no node reads and that is a graph output (the weight gradients'
  casts): nothing waits for them, so they can all run last. Those that depend on a variable
  bound only in the backward phase (``__phase__``: the head gradients) and those that do not
  are merged apart, so the forward phase never waits on the backward's inputs (fusion's
  rule). A forward output merged with non-late gradients would make the forward phase compute
  them early (same values, done sooner): the pass cannot tell a forward output from a
  gradient, and a training graph whose loss ignores its head gradient has both kinds.

Every other cast stays as it is. No cycle can appear: (a)'s node reads only variables, (b)'s
node is read by nobody.

Guarantees: every graph output keeps its value exactly (output j of the merged node computes
what cast j computed: a transpose moves, a cast converts each element as ``astype`` does), its
position, name and type; the graph is unchanged when no class has two members. Shared by
every backend: the numpy backend runs the merged op's reference.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ...core.attrs import parse_attrs
from ...core.dtypes import is_float
from ...core.graph import VARIABLE, Entry, Graph, Node, rewrite, unique_name
from ...core.registry import get_op, ops_where
from ...core.types.table import TypeTable, types_of
from .fold_casts import casts, is_cast

Spec = tuple[tuple[int, ...], str]  # (axes, dtype) of a cast: what _multi_transpose_cast needs

CAST = "_transpose_cast"
MULTI = "_multi_transpose_cast"


def _late(nodes: list[Node]) -> set[Node]:
    """The nodes that depend on a variable bound only in the backward phase."""
    late: set[Node] = set()
    for n in nodes:
        if n.op == VARIABLE:
            if n.extra.get("__phase__") == "backward":
                late.add(n)
        elif any(e.node in late for e in n.inputs):
            late.add(n)
    return late


def _spec(node: Node, types: TypeTable) -> Optional[Spec]:
    """(axes, dtype) of a cast this pass may merge, None for any other node."""
    if node.op == CAST:
        return tuple(node.attrs["axes"]), node.attrs["dtype"]
    if not is_cast(node):
        return None
    (shape, t_in), t_out = types.shape_dtype(node.inputs[0]), types.dtype(Entry(node))
    if shape is None or t_in is None or t_out is None or not (is_float(t_in)
                                                              and is_float(t_out)):
        return None
    return tuple(range(len(shape))), np.dtype(t_out).name


def _classes(graph: Graph, specs: dict[Node, Spec]) -> tuple[list[Node], list[list[Node]]]:
    """The casts of class (a), and class (b) as its groups (not late, late)."""
    nodes = graph.nodes()
    casts = [n for n in nodes if n in specs]
    if len(casts) < 2:
        return [], [[], []]
    late = _late(nodes)
    first = [n for n in casts if n.inputs[0].node.op == VARIABLE and n not in late]
    read = {e.node for n in nodes for e in n.inputs}
    taken = set(first)
    last = list(dict.fromkeys(e.node for e in graph.outputs if e.node in specs
                              and e.node not in read and e.node not in taken))
    return first, [[n for n in last if n not in late], [n for n in last if n in late]]


def _merged(casts: list[Node], specs: list[Spec], name: str, types: TypeTable) -> Node:
    """One ``_multi_transpose_cast`` of ``casts``' inputs; its output j has cast j's type."""
    attrs = parse_attrs(get_op(MULTI).params,
                        {"num_args": len(casts), "axes": tuple(s[0] for s in specs),
                         "dtypes": tuple(s[1] for s in specs)}, f"{name} ({MULTI}): ")
    multi = Node(MULTI, name, attrs, tuple(n.inputs[0] for n in casts), n_outputs=len(casts))
    for j, n in enumerate(casts):
        types.copy_entry(Entry(n), Entry(multi, j))
    return multi


def batch_casts(graph: Graph) -> Graph:
    """``graph`` with its weight casts (class (a)) and its gradients' casts (each group of
    class (b)) as one ``_multi_transpose_cast`` per class or group of two or more."""
    ops = graph.op_names()
    if CAST not in ops and ops.isdisjoint(ops_where(casts)):
        return graph  # (no cast to merge: nothing to walk)
    types = types_of(graph)
    specs = {n: s for n in graph.nodes() if (s := _spec(n, types)) is not None}
    first, (early, late) = _classes(graph, specs)
    groups = [(stem, g) for stem, g in (("_transpose_casts_last", early),
                                        ("_transpose_casts_last_late", late)) if len(g) >= 2]
    if len(first) < 2 and not groups:
        return graph
    names = {n.name for n in graph.nodes()}
    out = graph
    if len(first) >= 2:
        multi = _merged(first, [specs[n] for n in first],
                        unique_name("_transpose_casts_first", names, ""), types)
        slot = {n: (Entry(multi, j),) for j, n in enumerate(first)}
        # class (a) reads variables only: rewrite never rebuilds its nodes, identity holds
        out = rewrite(graph, lambda n: slot.get(n))
    # class (b) is read by nothing: only the graph outputs name it. Output p of the rewritten
    # graph is output p of the old one, rebuilt on replaced inputs.
    outputs = list(out.outputs)
    for stem, group in groups:
        member = set(group)
        at = [p for p, e in enumerate(graph.outputs) if e.node in member]
        rebuilt = list(dict.fromkeys(outputs[p].node for p in at))
        spec = {outputs[p].node: specs[graph.outputs[p].node] for p in at}
        multi = _merged(rebuilt, [spec[n] for n in rebuilt], unique_name(stem, names, ""), types)
        index = {n: j for j, n in enumerate(rebuilt)}
        for p in at:
            outputs[p] = Entry(multi, index[outputs[p].node])
    return Graph(tuple(outputs), graph.types) if groups else out
