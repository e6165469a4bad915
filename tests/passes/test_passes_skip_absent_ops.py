"""Passes whose ops are absent from a graph return it untouched after one check of the graph's
op set (``Graph.op_names``) against the ops the registry says they handle (``ops_where``),
without asking the registry about every node."""
from __future__ import annotations

import importlib
import json
from typing import Callable

import numpy as np
import pytest

import symgraph as sg
from symgraph.core import registry
from symgraph.compiler.ops.constant import constant_attrs
from symgraph.core.graph import Entry, Graph, Node
from symgraph.runtime import compile as C

S = sg.sym
PASSES = ["absorb_casts", "batch_casts", "constant_fold", "fold_casts", "fuse_bn_epilogue", "merge_replicas"]


def _pass(name: str) -> tuple[object, Callable[[Graph], Graph]]:
    """The pass's module and its function (the package exports the function by the same name)."""
    module = importlib.import_module(f"symgraph.compiler.passes.{name}")
    return module, getattr(module, name)


def _typed(net: S.Symbol, **shapes: tuple) -> Graph:
    graph = net.graph()
    return graph.with_types(C.infer(graph, shapes, {k: np.float32 for k in shapes}))


def _elementwise() -> Graph:
    x = S.var("x")
    return _typed(S.sigmoid(S.tanh(x) * 2.0 + x), x=(3, 4))


def test_op_names_are_the_ops_of_the_graph_json() -> None:
    net = S.FullyConnected(S.relu(S.var("x")), num_hidden=4, name="fc") + 1.0
    want = {n["op"] for n in json.loads(net.tojson())["nodes"]}
    graph = net.graph()
    assert graph.op_names() == want
    assert "FullyConnected" in want and "null" in want
    assert graph.with_types(None).op_names() is graph.op_names()


def test_ops_where_follows_registrations() -> None:
    def is_cast(opdef: registry.OpDef) -> bool:
        return opdef.cast
    before = registry.ops_where(is_cast)
    assert before == {n for n, d in registry.all_ops().items() if d.cast}
    assert "Cast" in before and "relu" not in before
    spare = registry.get_op("Cast")
    registry.unregister("Cast")
    try:
        assert "Cast" not in registry.ops_where(is_cast)
    finally:
        registry.register(spare)
    assert registry.ops_where(is_cast) == before


@pytest.mark.parametrize("name", PASSES)
def test_a_pass_without_its_ops_asks_no_node(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = _elementwise()
    module, run = _pass(name)

    def refuse(name: str) -> registry.OpDef:
        raise AssertionError(f"asked the registry about {name}")
    if hasattr(module, "get_op"):
        monkeypatch.setattr(module, "get_op", refuse)
    assert run(graph) is graph


def test_passes_still_fire_when_their_ops_are_present() -> None:
    x = S.var("x")
    c = Node("_constant", "c", constant_attrs(np.array([1.0, 2.0], np.float32)))
    folded = _pass("constant_fold")[1](Graph((Entry(Node("exp", "e", inputs=(Entry(c),))),)))
    assert folded.op_names() == {"_constant"}
    data, shape, dtype = folded.outputs[0].node.attrs["value"]
    np.testing.assert_allclose(np.frombuffer(data, dtype).reshape(shape), np.exp([1.0, 2.0]),
                               rtol=1e-6)
    cast = S.transpose(S.Cast(x, dtype="float16"), axes=(1, 0))
    g = _pass("fold_casts")[1](_typed(cast, x=(2, 3)))
    assert "_transpose_cast" in g.op_names() and "transpose" not in g.op_names()
