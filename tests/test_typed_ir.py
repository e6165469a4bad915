"""Types on the IR: one shape inference per bind, types carried through the pipeline,
``verify`` checks them, executors no longer rewrite variables with ``__shape__`` strings."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.compiler import passes
from symgraph.core.graph import Entry, Graph
from symgraph.interop.models import simple_cnn
from symgraph.core.types import infer_shape
from symgraph.core.types import infer_type
from symgraph.compiler.passes.verify import verify
from symgraph.core.types.table import TypeTable


def _counts() -> tuple[int, int]:
    return infer_shape.COUNT["infer_shapes"], infer_type.COUNT["infer_types"]


@pytest.mark.parametrize("check", [False, True])
def test_one_inference_per_simple_bind(monkeypatch: pytest.MonkeyPatch, check: bool) -> None:
    monkeypatch.setattr(passes, "VERIFY", check)
    net = simple_cnn.build()
    before = _counts()
    exe = net.simple_bind(sg.cpu(), data=(4, 1, 28, 28), softmax_label=(4,))
    after = _counts()
    assert (after[0] - before[0], after[1] - before[1]) == (1, 1)
    exe.forward(is_train=True, data=np.random.rand(4, 1, 28, 28).astype(np.float32))
    exe.backward()
    assert _counts() == after  # running never infers


def test_one_inference_per_bind() -> None:
    x = sg.sym.var("x")
    y = sg.sym.FullyConnected(sg.sym.relu(x), num_hidden=3, name="fc")
    args = {"x": sg.nd.ones((2, 5)), "fc_weight": sg.nd.ones((3, 5)), "fc_bias": sg.nd.ones(3)}
    before = _counts()
    y.bind(sg.cpu(), args)
    after = _counts()
    assert (after[0] - before[0], after[1] - before[1]) == (1, 1)


def test_bound_variables_stay_the_users_nodes() -> None:
    x = sg.sym.var("x")
    y = sg.sym.relu(x) * 2
    exe = y.simple_bind(sg.cpu(), x=(3,))
    variables = [n for n in exe._train.schedule.graph.nodes() if n.is_variable]
    assert x.outputs_[0].node in variables
    assert all("__shape__" not in v.extra for v in variables)


def test_table_fills_new_nodes_from_their_inputs() -> None:
    x = sg.sym.var("x")
    y = sg.sym.FullyConnected(x, num_hidden=4, name="fc")
    g = y.graph()
    shapes = infer_shape.infer_shapes(g, {"x": (2, 3)})
    types = infer_type.infer_types(g, {})
    table = TypeTable(shapes, types)
    z = sg.sym.sum(sg.sym.exp(y), axis=1)  # built after inference: not in the table
    e = z.outputs_[0]
    assert table.shape(e) == (2,) and table.dtype(e) == np.float32
    assert table.shape(y.outputs_[0]) == (2, 4)


def test_verify_checks_the_types() -> None:
    x = sg.sym.var("x")
    y = sg.sym.FullyConnected(x, num_hidden=4, name="fc")
    g = y.graph()
    good = TypeTable(infer_shape.infer_shapes(g, {"x": (2, 3)}), infer_type.infer_types(g, {}))
    verify(Graph(g.outputs, good))
    wrong = TypeTable(infer_shape.infer_shapes(g, {"x": (2, 3)}), infer_type.infer_types(g, {}))
    wrong.add(y.outputs_[0], (2, 5), np.float32)  # lies about fc's output
    with pytest.raises(sg.GraphError, match=r"fc \(FullyConnected\): output 0 is recorded as "
                                            r"\(2, 5\) float32, its rule gives \(2, 4\)"):
        verify(Graph(g.outputs, wrong))
    unknown = TypeTable({}, {})
    with pytest.raises(sg.GraphError, match="unknown shape"):
        verify(Graph(g.outputs, unknown))


def test_passes_keep_the_table() -> None:
    x = sg.sym.var("x")
    y = sg.sym.relu(sg.sym.exp(x) + 1.0)
    g = y.graph()
    table = TypeTable(infer_shape.infer_shapes(g, {"x": (5,)}), infer_type.infer_types(g, {}))
    out = passes.run_pipeline(Graph(g.outputs, table), passes.OPTIMIZE_PIPELINE)
    assert out.types is table
    assert any(n.op == "_fused" for n in out.nodes())  # fusion saw the shapes
    assert table.shape(out.outputs[0]) == (5,)
    verify(out)
    assert Entry(x.outputs_[0].node) in table._recs


def test_deep_chains_need_no_deep_recursion() -> None:
    """Nothing in bind, forward or backward recurses once per node: a chain twice as deep as
    the stack allowed here binds and runs (10^5-deep graphs must not hit the recursion limit;
    what recursion remains is bounded by a fused kernel's formula, MAX_MEMBERS ops)."""
    import inspect
    import sys
    depth = 1200
    x = sg.sym.var("x")
    y = x
    for i in range(depth):
        y = sg.sym.tanh(y) if i % 2 else sg.sym.sigmoid(y)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + depth // 2)
    try:
        exe = y.simple_bind(sg.cpu(), x=(3,))
        exe.forward(is_train=True, x=np.full(3, 0.5, np.float32))
        exe.backward()
    finally:
        sys.setrecursionlimit(old)
    want = np.full(3, 0.5)
    for i in range(depth):
        want = np.tanh(want) if i % 2 else 1 / (1 + np.exp(-want))
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), want, rtol=1e-5)
