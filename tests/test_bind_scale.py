"""Bind scales: the mechanisms that keep ``simple_bind`` linear in the graph size
(benchmarks/bind_scale.py measures the time; these tests pin the behaviour the speed relies on,
against independent references, and the counts that must not grow with the graph)."""
from __future__ import annotations

import gc
import importlib
import weakref
import random

import numpy as np
import pytest

import symgraph as sg
from symgraph.core import attrs as core_attrs
from symgraph.core import graph as G
from symgraph.core.types import table as typetable
from symgraph.runtime import executor as X
from symgraph.frontend import symbol as S
from symgraph.core.attrs import Param
from symgraph.core.base import GraphError
from symgraph.core.graph import Entry, Graph, Node, rewrite, topo_order, variable
from symgraph.core.types import infer_shape
from symgraph.core.types import infer_type
from symgraph.core.registry import NOT_DIFFERENTIABLE, OPAQUE, OpDef, register, unregister
from symgraph.core.types.table import TypeTable

fuse_mod = importlib.import_module("symgraph.compiler.passes.fuse_elementwise")
fuse_groups = importlib.import_module("symgraph.compiler.passes.fuse_groups")


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
                          core_attrs.Attrs({"num_args": len(ins)} if len(ins) != 2 else {}), ins))
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


def test_shape_inference_runs_each_rule_once_on_a_forward_chain(monkeypatch) -> None:
    calls = []
    real = infer_shape._apply
    monkeypatch.setattr(infer_shape, "_apply", lambda n, k: calls.append(n) or real(n, k))
    g, _ = _chain(300)
    shapes = infer_shape.infer_shapes(g, {"x": (3,)})
    assert all(shapes[Entry(n)] == (3,) for n in g.nodes())
    # a node is settled as soon as its rule has left every input and output known
    assert len(calls) == 300


def test_dtype_inference_runs_each_rule_at_most_twice_with_the_default(monkeypatch) -> None:
    calls = []
    real = infer_type._apply
    monkeypatch.setattr(infer_type, "_apply", lambda n, t: calls.append(n) or real(n, t))
    g, _ = _chain(300)
    types = infer_type.infer_types(g, {})  # nothing given: float32 by default, then again
    assert all(types[Entry(n)] == np.float32 for n in g.nodes())
    assert len(calls) <= 2 * 300  # a backward sweep after a fruitless forward one is skipped


def _count_walks(monkeypatch, n: int) -> int:
    walks = []
    real = G.walk
    monkeypatch.setattr(G, "walk", lambda outs: walks.append(1) or real(outs))
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


def _count_builds(monkeypatch) -> list:
    built: list = []
    real = X.build_stage
    monkeypatch.setattr(X, "build_stage", lambda g, wrt, train, ctx:
                        built.append(train) or real(g, wrt, train, ctx))
    return built


def test_a_bind_compiles_only_the_program_it_was_bound_for(monkeypatch) -> None:
    built = _count_builds(monkeypatch)
    x = sg.sym.var("x")
    y = sg.sym.sigmoid(sg.sym.tanh(x)) * 3.0
    data = np.linspace(-2, 2, 6).reshape(2, 3)
    ref = 3.0 / (1.0 + np.exp(-np.tanh(data)))
    exe = y.simple_bind(sg.cpu(), x=(2, 3))  # gradients requested: the training program
    assert built == [True]
    exe.forward(is_train=True, x=data)
    assert built == [True]
    out = exe.forward(is_train=False, x=data)[0].asnumpy()  # the inference one, once
    exe.forward(is_train=False, x=data)
    assert built == [True, False]
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    built.clear()
    exe = y.simple_bind(sg.cpu(), grad_req="null", x=(2, 3))
    assert built == [False]
    np.testing.assert_allclose(exe.forward(is_train=True, x=data)[0].asnumpy(), ref, rtol=1e-5)
    assert built == [False, True]


def test_gradient_errors_are_still_raised_by_the_bind() -> None:
    x = sg.sym.var("x")
    idx = sg.sym.var("i")
    y = sg.sym.batch_take(x, idx)  # MXNet registers no gradient for it
    with pytest.raises(GraphError, match="batch_take"):
        y.simple_bind(sg.cpu(), grad_req={"x": "write"}, x=(2, 3), i=(2,))


def test_remembered_attribute_parses_tell_equal_values_of_other_types_apart() -> None:
    register(OpDef("_test_tagged", {"tag": Param("text")}, ("data",),
                   lambda a, ins, outs: (ins, [ins[0]]), lambda a, xs, ctx: [xs[0]],
                   NOT_DIFFERENTIABLE, OPAQUE))
    try:
        x = sg.sym.var("x")
        tags = [S.apply_op("_test_tagged", [x], {"tag": v}).outputs_[0].node.attrs["tag"]
                for v in (1, 1.0, True, 1, "1")]
        assert tags == ["1", "1.0", "True", "1", "1"]
    finally:
        unregister("_test_tagged")


def test_fused_kernels_take_their_types_without_running_their_rule(monkeypatch) -> None:
    real = typetable.forward_types

    def no_fused(node: Node, *args: object) -> object:
        assert node.op != "_fused", "the fused kernel's rule ran to find its types"
        return real(node, *args)
    monkeypatch.setattr(typetable, "forward_types", no_fused)
    x = sg.sym.var("x")
    y = sg.sym.exp(sg.sym.tanh(x) * 2.0) + x
    exe = y.simple_bind(sg.cpu(), x=(4,))
    assert any(s.node.op == "_fused" for s in exe.schedule.steps)
    data = np.array([-1.0, -0.2, 0.3, 1.5])
    out, = exe.forward(is_train=True, x=data)
    exe.backward()
    t = np.tanh(data)
    np.testing.assert_allclose(out.asnumpy(), np.exp(2 * t) + data, rtol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(),
                               np.exp(2 * t) * 2 * (1 - t * t) + 1, rtol=1e-5)


def test_fusion_dependency_answers_follow_a_chain_and_stay_small() -> None:
    g, table = _chain(1000)
    for n in g.nodes():
        table.shape(Entry(n))
    nodes = g.nodes()  # a chain: every earlier node is an ancestor
    grouping = fuse_groups.Grouping(g, table, nodes)
    for i in range(len(nodes)):
        grouping.add(i)
    n_groups = len(grouping.groups())
    assert n_groups >= 1000 // fuse_groups.MAX_MEMBERS
    # per node: two small ints, nothing that grows with the number of earlier groups (a mask
    # of every earlier group per node was quadratic in memory on a deep chain)
    assert all(type(t) is int for t in grouping.top)
    for k in range(1, len(nodes), 97):  # does nodes[k] depend on group r, asked per group
        want = {grouping.born[m] for m in range(1, k + 1)}
        got = {r for r in range(len(grouping.parent))
               if grouping.reaches([k], frozenset((r,)))}
        assert got == want


def _bind_and_drop() -> "weakref.ref":
    x = sg.sym.var("x")
    y = sg.sym.tanh(sg.sym.exp(x) * 2.0)
    exe = y.simple_bind(sg.cpu(), x=(3,))
    return weakref.ref(y.outputs_[0].node)


@pytest.fixture
def promote_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small binds behave as large ones do (objects handed to the oldest generation)."""
    monkeypatch.setattr(X, "GC_PROMOTE_AFTER", -1)


@pytest.mark.parametrize("enabled", [True, False])
def test_a_bind_leaves_the_collector_as_it_found_it(enabled: bool, promote_always: None) -> None:
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        x = sg.sym.var("x")
        y = sg.sym.exp(x)
        y.simple_bind(sg.cpu(), x=(2,))
        assert gc.isenabled() is enabled
        with pytest.raises(sg.base.SymgraphError):  # a failing bind restores it too
            (y + sg.sym.var("z")).simple_bind(sg.cpu(), x=(2,), z=(3,))
        assert gc.isenabled() is enabled
        assert gc.get_freeze_count() == 0
    finally:
        (gc.enable if was else gc.disable)()


def test_objects_frozen_by_the_program_stay_frozen(promote_always: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    released = []
    monkeypatch.setattr(gc, "unfreeze", lambda: released.append(1))  # what would release them
    gc.freeze()  # a program that froze its objects (before forking, say)
    try:
        assert gc.get_freeze_count() > 0
        sg.sym.sigmoid(sg.sym.var("x")).simple_bind(sg.cpu(), x=(2,))
        assert released == []  # the bind did not hand the program's frozen objects back
    finally:
        monkeypatch.undo()
        gc.unfreeze()


def test_graphs_of_a_dropped_executor_are_still_collected(promote_always: None) -> None:
    # the bind hands its objects to the oldest generation: a full collection frees them
    ref = _bind_and_drop()
    gc.collect()
    assert ref() is None


def test_small_binds_leave_the_young_generation_alone() -> None:
    garbage = []
    garbage.append(garbage)  # a young cycle of the program's
    ref = weakref.ref(_Box(garbage))
    del garbage
    sg.sym.exp(sg.sym.var("x")).simple_bind(sg.cpu(), x=(2,))
    gc.collect(0)  # a young-generation collection still finds it
    assert ref() is None


class _Box:
    """A weakly referable object in a cycle with itself."""

    def __init__(self, payload: object) -> None:
        self.payload, self.me = payload, self
