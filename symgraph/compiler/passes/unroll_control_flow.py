"""Unroll control-flow nodes (``_foreach``, ``_while_loop``, ``_cond``) into their bodies' ops.

Requires: shapes and dtypes of the graph's entries (``graph.types``: trip counts and the
shapes of the rows are static). Guarantees: no node whose op has an ``unroll`` rule
(``OpDef.extra["unroll"]``) applying to it (``extra["unrolls"]``) is left, nested ones
included (the pass repeats until none is); each node's outputs, hidden ones too, are computed
by plain ops with the values of the op's numpy reference. The CUDA backend runs it before
autodiff (its ``FORWARD_PIPELINE``), so the loop's steps and their gradients are ordinary kernels of the one program: fused, planned in the
arena and replayed in one CUDA graph, with no per-step return to Python.
"""
from __future__ import annotations

from ...core.graph import Graph, Node, Replacement, rewrite
from ...core.registry import get_op
from ...core.types.table import types_of


def _has_rule(node: Node) -> bool:
    """An ``unroll`` rule applying to this node (``extra["unrolls"](attrs)``, when the op
    states one, says whether it does: bilinear UpSampling is unrolled, nearest is not)."""
    if node.is_variable:
        return False
    extra = get_op(node.op).extra
    return "unroll" in extra and extra.get("unrolls", lambda a: True)(node.attrs)


def unroll_control_flow(graph: Graph) -> Graph:
    """``graph`` with every control-flow node replaced by its unrolled steps."""
    while any(_has_rule(n) for n in graph.nodes()):
        table = types_of(graph)

        def visit(node: Node) -> Replacement:
            if not _has_rule(node):
                return None
            return get_op(node.op).extra["unroll"](node, table)
        graph = rewrite(graph.with_types(table), visit)
    return graph
