"""Common-subexpression elimination: ``Graph -> Graph``.

Requires: every op registered. Guarantees: no two op nodes with the same op, attrs and input
entries remain; the first one (in topological order) is kept and every reader of the others reads
it. Variables are never merged (two variables are two bound arrays even if they look alike), and
neither are ops whose result is not a function of their inputs (``OpDef.train_dependent``:
Dropout and other random ops), nor nodes carrying user attributes that differ.
"""
from __future__ import annotations

from ...core.graph import VARIABLE, Graph, Node, rewrite
from ...core.registry import get_op


def cse(graph: Graph) -> Graph:
    """Merge structurally equal op nodes."""
    seen: dict[tuple, Node] = {}
    keep: dict[str, bool] = {VARIABLE: True}  # op -> never merged (asked once per op)

    def visit(node: Node) -> Node | None:
        op = node.op
        never = keep.get(op)
        if never is None:
            never = keep[op] = bool(get_op(op).train_dependent)
        if never:
            return None
        key = (node.op, node.attrs, node.inputs, node.extra)
        first = seen.setdefault(key, node)
        return None if first is node else first
    return rewrite(graph, visit)
