"""Graph checks run at bind time and, in tests, after every pass.

``verify`` requires nothing and guarantees, when it returns, that the graph is acyclic, every op
is registered with the right arity, every ``_fused`` node is well formed, and every entry has a
shape and a dtype: the graph's own types (``Graph.types``, as in the executor's pipeline) are
checked by replaying each op's rule on them, as autodidax's ``typecheck_jaxpr`` does; a graph
without types whose variables are all declared is inferred once.
"""
from __future__ import annotations

from ...core.base import GraphError
from ...core.expr import topo
from ...core.graph import Graph, Node, check_unique_inputs  # noqa: F401  (re-exported)
from ...core.registry import get_op
from ...core.types.table import forward_types
from ...core.types.infer_shape import infer_shapes
from ...core.types.infer_type import infer_types


def _check_fused(node: Node) -> None:
    """The attribute contract of ``ops/fused.py``."""
    a = node.attrs
    head = a["head"]
    n_head = head[2] if head is not None else 0
    n_expr_inputs = a["num_inputs"] - n_head + (1 if head is not None else 0)
    problems = []
    if not a["exprs"] or len(a["exprs"]) != len(a["shapes"]):
        problems.append(f"{len(a['exprs'])} exprs for {len(a['shapes'])} shapes")
    if not a["members"]:
        problems.append("no members")
    if head is not None and (head[2] > a["num_inputs"] or not get_op(head[0])):
        problems.append(f"bad head {head[0]} with {head[2]} inputs")
    used = [int(e.value) for e in topo(a["exprs"]) if e.op == "input"]
    if any(i < 0 or i >= n_expr_inputs for i in used):
        problems.append(f"expression reads input {max(used)} of {n_expr_inputs}")
    if problems:
        raise GraphError(f"{node.name} (_fused): malformed: {'; '.join(problems)}")


def verify(graph: Graph) -> None:
    """Acyclic (topo_order raises on a cycle), registered ops, arities, fused nodes well formed;
    the graph's types checked against its ops (``Graph.types``), or, without them, shapes and
    dtypes known when every variable is declared."""
    nodes = graph.nodes()
    for node in nodes:
        if node.is_variable:
            continue
        opdef = get_op(node.op)
        want = len(opdef.input_names(node.attrs))
        if len(node.inputs) != want:
            raise GraphError(f"{node.name} ({node.op}): {len(node.inputs)} inputs, expected {want}")
        if "exprs" in node.attrs and "members" in node.attrs:
            _check_fused(node)
    if graph.types is not None:
        check_types(graph, nodes)
    elif all("__shape__" in v.extra for v in nodes if v.is_variable):
        shapes, types = infer_shapes(graph, {}), infer_types(graph, {})
        for node in nodes:
            for e in node.entries():
                if e not in shapes or e not in types:
                    raise GraphError(f"{node.name} ({node.op}): output {e.index} has unknown "
                                     f"{'shape' if e not in shapes else 'dtype'} after passes")


def check_types(graph: Graph, nodes: list[Node]) -> None:
    """The graph's types agree with its ops: every entry has a shape and a dtype, and replaying
    each op's rule forward on its inputs' types gives its outputs' (no full inference)."""
    table = graph.types
    for node in nodes:
        entries = node.entries()
        for e in entries:
            if table.shape(e) is None or table.dtype(e) is None:
                what = "shape" if table.shape(e) is None else "dtype"
                raise GraphError(f"{node.name} ({node.op}): output {e.index} has unknown "
                                 f"{what} after passes")
        if node.is_variable:
            continue
        shapes, dtypes = forward_types(node, [table.shape(e) for e in node.inputs],
                                       [table.dtype(e) for e in node.inputs])
        for e, s, t in zip(entries, shapes, dtypes):
            if (s is not None and s != table.shape(e)) or (t is not None and t != table.dtype(e)):
                raise GraphError(f"{node.name} ({node.op}): output {e.index} is recorded as "
                                 f"{table.shape(e)} {table.dtype(e)}, its rule gives {s} {t}")
