"""Constant folding: ``Graph -> Graph``.

Requires: every op registered. Guarantees: every op node whose inputs are all constants
(``_constant`` nodes, recursively) and whose result is a function of its inputs (not
``train_dependent``) is evaluated once with its numpy reference and replaced by a ``_constant``.

What counts as a constant, and why: graph variables never do, even when bound to arrays that do
not change (the user may write them between calls). ``zeros_like``/``ones_like`` are not folded
into literals: they depend on their input's shape only, but a literal of a large shape would bake
megabytes into the graph; they stay cheap fills that ``simplify`` removes where they are identities.
Results above ``MAX_ELEMENTS`` are left unfolded for the same reason.
"""
from __future__ import annotations

from math import prod

from ...core.graph import Graph, Node, Replacement, rewrite
from ..ops.constant import constant_attrs
from ...core.registry import RunCtx, get_op

MAX_ELEMENTS = 1 << 16
CONSTANT = "_constant"  # the op this pass emits


def constant_fold(graph: Graph) -> Graph:
    """Evaluate subgraphs of constants ahead of time."""
    if CONSTANT not in graph.op_names():
        return graph  # (only nodes reading constants fold, and there are none)
    const = get_op(CONSTANT)

    def visit(node: Node) -> Replacement:
        # Cheapest test first: almost every node reads a non-constant (variables have no inputs).
        if not node.inputs or node.op == const.name:
            return None
        for e in node.inputs:
            if e.node.op != const.name:
                return None
        opdef = get_op(node.op)
        if opdef.train_dependent or node.num_outputs != 1:
            return None
        xs = [const.compute(e.node.attrs, [], RunCtx())[0] for e in node.inputs]
        value = opdef.compute(node.attrs, xs, RunCtx())[0]
        if prod(value.shape) > MAX_ELEMENTS:
            return None
        return Node(const.name, node.name, constant_attrs(value), (), node.extra)
    return rewrite(graph, visit)
