"""Bind scales: the mechanisms that keep ``simple_bind`` linear in the graph size
(benchmarks/bind_scale.py measures the time; these tests pin the behaviour the speed relies on,
against independent references, and the counts that must not grow with the graph)."""
from __future__ import annotations

import importlib
import random

import numpy as np
import pytest

import symgraph as sg
from symgraph import graph as G
from symgraph import typetable
from symgraph.base import GraphError
from symgraph.graph import Entry, Graph, Node, rewrite, topo_order, variable
from symgraph.passes import infer_shape
from symgraph.typetable import TypeTable

fuse_mod = importlib.import_module("symgraph.passes.fuse_elementwise")


def _reference_order(outputs: list[Entry]) -> list[Node]:
    """Recursive depth-first post-order, inputs in order (MXNet's order), written plainly."""
    order: list[Node] = []
    seen: set[Node] = set()

    def visit(n: Node) -> None:
        if n in seen:
            return
        seen.add(n)
        for e in n.inputs:
            visit(e.node)
        order.append(n)
    for e in outputs:
        visit(e.node)
    return order


@pytest.mark.parametrize("seed", range(20))
def test_topo_order_is_mxnets_depth_first_order(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [variable(f"v{i}") for i in range(3)]
    for i in range(60):
        ins = tuple(Entry(rng.choice(nodes)) for _ in range(rng.randint(1, 3)))
        nodes.append(Node("elemwise_add" if len(ins) == 2 else "add_n", f"n{i}",
                          sg.attrs.Attrs({"num_args": len(ins)} if len(ins) != 2 else {}), ins))
    outs = [Entry(n) for n in rng.sample(nodes[3:], 4)]
    assert topo_order(outs) == _reference_order(outs)


def test_topo_order_names_a_cycle() -> None:
    a = variable("a")
    b = Node("relu", "b", inputs=(Entry(a),))
    c = Node("relu", "c", inputs=(Entry(b),))
    object.__setattr__(b, "inputs", (Entry(c),))  # only a hand-made graph can have one
    with pytest.raises(GraphError, match="cycle through node"):
        topo_order([Entry(c)])


def _chain(n: int) -> tuple[Graph, TypeTable]:
    x = sg.sym.var("x")
    for i in range(n):
        x = sg.sym.tanh(x, name=f"t{i}")
    g = x.graph()
    v = g.variables()[0]
    table = TypeTable({Entry(v): (3,)}, {Entry(v): np.dtype("float32")})
    return g.with_types(table), table


def test_rewrite_without_change_is_the_same_graph() -> None:
    g, _ = _chain(5)
    assert rewrite(g, lambda node: None) is g


def test_rebuilt_nodes_keep_their_types_without_running_rules(monkeypatch) -> None:
    g, table = _chain(6)
    for n in g.nodes():
        table.shape(Entry(n))  # every type known, as after inference
    first = g.nodes()[1]  # t0: replace it by a sigmoid of the same type
    out = rewrite(g, lambda n: Node("sigmoid", n.name, inputs=n.inputs) if n is first else None)

    def refuse(*_: object) -> None:
        raise AssertionError("a rule ran for a node whose type was carried over")
    monkeypatch.setattr(typetable, "forward_types", refuse)
    rebuilt = [n for n in out.nodes() if n.op == "tanh"]
    assert len(rebuilt) == 5 and all(n not in g.nodes() for n in rebuilt)
    assert all(table.shape(Entry(n)) == (3,) for n in rebuilt)
    assert all(table.dtype(Entry(n)) == np.float32 for n in rebuilt)


def test_shape_inference_runs_each_rule_at_most_twice(monkeypatch) -> None:
    calls = []
    real = infer_shape._apply
    monkeypatch.setattr(infer_shape, "_apply", lambda n, k: calls.append(n) or real(n, k))
    g, _ = _chain(300)
    shapes = infer_shape.infer_shapes(g, {"x": (3,)})
    assert all(shapes[Entry(n)] == (3,) for n in g.nodes())
    assert len(calls) <= 2 * 300  # settled nodes are not asked again


def _count_walks(monkeypatch, n: int) -> int:
    walks = []
    real = G.topo_order
    monkeypatch.setattr(G, "topo_order", lambda outs: walks.append(1) or real(outs))
    x = sg.sym.var("data")
    for i in range(n):
        x = sg.sym.relu(sg.sym.FullyConnected(x, num_hidden=4, name=f"fc{i}"), name=f"r{i}")
    x.simple_bind(sg.cpu(), data=(2, 4))
    return len(walks)


def test_graph_walks_per_bind_do_not_grow_with_the_graph(monkeypatch) -> None:
    small = _count_walks(monkeypatch, 5)
    assert 0 < small == _count_walks(monkeypatch, 60)


def test_fused_formulas_are_built_once_per_distinct_group(monkeypatch) -> None:
    built = []
    real = fuse_mod._formulas
    monkeypatch.setattr(fuse_mod, "_formulas", lambda sig, outs: built.append(1)
                        or real(sig, outs))
    x = sg.sym.var("x")
    for i in range(400):
        x = sg.sym.sigmoid(x, name=f"s{i}") if i % 2 else sg.sym.tanh(x, name=f"t{i}")
    exe = x.simple_bind(sg.cpu(), x=(5,))
    kernels = [s for s in exe.schedule.steps if s.node.op == "_fused"]
    assert len(kernels) >= 16 and len(built) <= 12
    data = np.linspace(-1, 1, 5)
    out = exe.forward(x=data)[0].asnumpy()
    ref = data.astype(np.float64)
    for i in range(400):
        ref = 1 / (1 + np.exp(-ref)) if i % 2 else np.tanh(ref)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
