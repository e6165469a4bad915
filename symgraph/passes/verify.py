"""Graph checks run at bind time and, in tests, after every pass."""
from __future__ import annotations

from ..base import GraphError
from ..graph import Graph
from ..registry import get_op


def check_unique_inputs(graph: Graph) -> None:
    """Two different variables may not share a name (bind could not tell them apart)."""
    seen: dict[str, object] = {}
    for node in graph.variables():
        if seen.setdefault(node.name, node) is not node:
            raise GraphError(f"duplicate argument name {node.name!r}: two different variables "
                             f"carry it")


def verify(graph: Graph) -> None:
    """Acyclic (topo_order raises on a cycle), every op registered, arities right."""
    for node in graph.nodes():
        if node.is_variable:
            continue
        opdef = get_op(node.op)
        want = len(opdef.input_names(node.attrs))
        if len(node.inputs) != want:
            raise GraphError(f"{node.name} ({node.op}): {len(node.inputs)} inputs, expected {want}")
        for e in node.inputs:
            if e.index >= e.node.num_outputs:
                raise GraphError(f"{node.name} ({node.op}): reads output {e.index} of "
                                 f"{e.node.name}, which has {e.node.num_outputs}")
    check_unique_inputs(graph)
