"""Merge the replicas of an op whose result depends on every device of a data-parallel step
(``SyncBatchNorm``): ``Graph -> Graph``.

Why: Gluon runs a data-parallel step as one forward per device; the replicas' nodes of such
an op carry the same key and the number of devices (``OpDef.extra["replicas"] =
(key_rule, merge_rule)``). When one program differentiates the replicas' losses together,
its graph holds all of them, and the op's merge rule rewrites them into one computation over
all their inputs (a BatchNorm over the concatenated batch), whose gradient autodiff then
takes across devices. The training graph runs this before autodiff.

Requires: the graph's types (the merge rules read the inputs' shapes). Guarantees: every
group of replicas whose size is the expected one is merged (each node's outputs keep their
shapes and dtypes); a lone replica (a program that holds one device's forward) stays as it
is, with a ``RuntimeWarning`` that its statistics are its own; another number of replicas is
a ``GraphError`` naming the nodes. A graph without such ops is returned unchanged.
"""
from __future__ import annotations

import warnings
from typing import Any, Optional

from ...core.base import GraphError
from ...core.graph import Graph, Node, rewrite
from ...core.registry import OpDef, get_op, ops_where
from ...core.types.table import types_of


def _merges(opdef: OpDef) -> bool:
    return opdef.extra.get("replicas") is not None


def _rule(node: Node) -> Optional[tuple]:
    return None if node.is_variable else get_op(node.op).extra.get("replicas")


def _groups(graph: Graph) -> dict[tuple, list[Node]]:
    """(op, key) -> the nodes of that group in topological order (expected size last in
    the key)."""
    groups: dict[tuple, list[Node]] = {}
    for node in graph.nodes():
        rule = _rule(node)
        key = rule[0](node) if rule is not None else None
        if key is not None:
            groups.setdefault((node.op, *key), []).append(node)
    return groups


def _check(key: tuple, nodes: list[Node]) -> bool:
    """Whether the group is complete (a lone replica: False, with a warning)."""
    want = key[-1]
    if len(nodes) == want:
        return True
    names = ", ".join(n.name for n in nodes[:4])
    if len(nodes) == 1:
        warnings.warn(f"{nodes[0].name} ({key[0]}, key {key[1]!r}): 1 of its {want} replicas "
                      f"is in this program, so it uses its own device's batch only; "
                      f"differentiate the replicas' losses together (autograd.backward([...])) "
                      f"to share the statistics", RuntimeWarning, stacklevel=2)
        return False
    raise GraphError(f"{names} ({key[0]}, key {key[1]!r}): {len(nodes)} replicas in one "
                     f"program, but the op says {want} devices share the statistics")


def merge_replicas(graph: Graph) -> Graph:
    """``graph`` with each complete group of replicas merged by its op's rule."""
    if graph.op_names().isdisjoint(ops_where(_merges)):
        return graph  # (most graphs: no op has replicas, nothing to walk)
    done: set[tuple] = set()
    while True:
        groups = _groups(graph)
        todo = [(k, ns) for k, ns in groups.items() if k not in done]
        if not todo:
            return graph
        key, nodes = todo[0]
        done.add(key)
        if not _check(key, nodes):
            continue
        table = types_of(graph)
        merged: dict[Node, Any] = dict(zip(nodes, _rule(nodes[0])[1](nodes, table)))
        # a replica's inputs never depend on another replica of its group, so the nodes
        # reach the callback as they are (none of their inputs is replaced in this rewrite)
        graph = rewrite(graph.with_types(table), merged.get)
