"""Float casts folded into the transposes next to them: ``Graph -> Graph``.

Why: AMP's channels-last convolutions cast each float32 weight to bfloat16 and transpose it to
OHWI, and send its gradient back through the inverse transpose and a cast to float32: two
memory-bound kernels each way where one strided copy can convert as it moves (ResNet-20: 42
kernels of its bf16 step, each a few microseconds whatever its size).

Requires: the graph's types (dtypes of the casts' inputs and outputs). Turns a ``transpose``
whose input is a float-to-float cast (an op with ``OpDef.cast``: ``Cast``, ``amp_cast``,
``_backward_Cast``) read by
nothing else, and such a cast whose input is a ``transpose`` read by nothing else, into one
``_transpose_cast`` of the pair's input (its GPU lowering: one converting gather).

Guarantees: every output keeps its value exactly (a transpose moves elements and a cast
converts each on its own, so the two commute), its name and its type; a value something else
reads (or a graph output) is never folded away; the graph is unchanged when no pair qualifies.
"""
from __future__ import annotations

from ...core.attrs import parse_attrs
from ...core.dtypes import is_float
from ...core.graph import Entry, Graph, Node, rewrite
from ...core.registry import OpDef, get_op, ops_where
from ...core.types.table import TypeTable, types_of


def casts(opdef: OpDef) -> bool:
    """Whether ``opdef`` is a cast (``OpDef.cast``; for :func:`ops_where`)."""
    return opdef.cast


def is_cast(node: Node) -> bool:
    """Whether ``node`` converts each element on its own (``OpDef.cast``)."""
    return not node.is_variable and get_op(node.op).cast


def _float_cast(node: Node, types: TypeTable) -> bool:
    if not is_cast(node):
        return False
    t_in, t_out = types.dtype(node.inputs[0]), types.dtype(Entry(node))
    return t_in is not None and t_out is not None and is_float(t_in) and is_float(t_out)


def _pairs(graph: Graph, types: TypeTable) -> set[str]:
    """The names of the nodes (outer of each pair) to replace: their inner node feeds only
    them. Names, not nodes: ``rewrite`` rebuilds every node below a replaced one, and a
    rebuilt node is another object (a name shared by two nodes could only fold a pair whose
    inner value is also read elsewhere: computed twice, the same values)."""
    users = graph.consumers()
    outputs = {e.node for e in graph.outputs}
    folded: set[str] = set()
    for node in graph.nodes():
        inner = node.inputs[0].node if node.inputs else None
        if inner is None or inner in outputs or len(users[inner]) != 1:
            continue
        if node.op == "transpose" and _float_cast(inner, types) or \
                inner.op == "transpose" and _float_cast(node, types):
            folded.add(node.name)
    return folded


def fold_casts(graph: Graph) -> Graph:
    """``graph`` with its transpose/cast pairs as single ``_transpose_cast`` steps."""
    ops = graph.op_names()
    if "transpose" not in ops or ops.isdisjoint(ops_where(casts)):
        return graph
    types = types_of(graph)
    folded = _pairs(graph, types)
    if not folded:
        return graph
    params = get_op("_transpose_cast").params

    def visit(node: Node) -> Node | None:
        if node.name not in folded:
            return None
        inner = node.inputs[0].node
        t = node if node.op == "transpose" else inner
        if t.op != "transpose" or not is_cast(inner if t is node else node):
            return None
        attrs = parse_attrs(params, {"axes": t.attrs["axes"],
                                     "dtype": types.dtype(Entry(node)).name}, node.name)
        new = Node("_transpose_cast", node.name, attrs, (inner.inputs[0],))
        types.copy(node, new)
        return new
    return rewrite(graph, visit)
