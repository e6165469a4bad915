"""Common-subexpression elimination: ``Graph -> Graph``.

Requires: every op registered. Guarantees: no two op nodes with the same op, attrs and input
entries remain; the first one (in topological order) is kept and every reader of the others reads
it. Variables are never merged (two variables are two bound arrays even if they look alike), and
neither are ops whose result is not a function of their inputs (``OpDef.train_dependent``:
Dropout and other random ops), nor nodes carrying user attributes that differ.
"""
from __future__ import annotations

from ..graph import Graph, Node, rewrite
from ..registry import get_op


def cse(graph: Graph) -> Graph:
    """Merge structurally equal op nodes."""
    seen: dict[tuple, Node] = {}

    def visit(node: Node) -> Node | None:
        if node.is_variable or get_op(node.op).train_dependent:
            return None
        key = (node.op, node.attrs, node.inputs, node.extra)
        first = seen.setdefault(key, node)
        return None if first is node else first
    return rewrite(graph, visit)
