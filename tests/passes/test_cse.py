"""cse: equal op nodes merge; variables and random ops never do."""
import numpy as np

import symgraph as sg
from symgraph.core.graph import Graph
from symgraph.compiler.passes.cse import cse
from symgraph.core.registry import OpDef, get_op, register, unregister

from .util import declared, ops_of, random_inputs, run_graph


def test_equal_subexpressions_merge() -> None:
    x = sg.sym.var("x")
    a = sg.sym.exp(x) + 1.0
    b = sg.sym.exp(x) + 1.0
    g = declared(sg.sym.Group([a * b, a]), x=(2, 3))
    out = cse(g)
    assert ops_of(out).count("exp") == 1
    assert ops_of(out).count("_plus_scalar") == 1
    vals = random_inputs(g)
    ref = np.exp(vals["x"].astype(np.float64)) + 1.0
    got = run_graph(out, vals)
    np.testing.assert_allclose(got[0], ref * ref, rtol=1e-5)
    np.testing.assert_allclose(got[1], ref, rtol=1e-5)


def test_different_attrs_or_variables_do_not_merge() -> None:
    x, y = sg.sym.var("x"), sg.sym.var("y")
    g = declared(sg.sym.Group([x * 2.0, x * 3.0, sg.sym.exp(x), sg.sym.exp(y)]),
                 x=(2,), y=(2,))
    out = cse(g)
    assert ops_of(out).count("_mul_scalar") == 2
    assert ops_of(out).count("exp") == 2
    assert len(out.variables()) == 2


def test_train_dependent_ops_are_not_merged() -> None:
    base = get_op("exp")
    unregister("_test_random")
    register(OpDef("_test_random", {}, ("data",), base.infer_shape,
                   lambda a, xs, ctx: [xs[0] + np.random.rand(*xs[0].shape)],
                   "not differentiable", "opaque", train_dependent=True, doc="test"))
    try:
        from symgraph.core.graph import Entry, Node
        x = sg.sym.var("x")
        gx = declared(x, x=(2,))
        v = gx.outputs[0]
        n1 = Node("_test_random", "r1", inputs=(v,))
        n2 = Node("_test_random", "r2", inputs=(v,))
        out = cse(Graph((Entry(n1), Entry(n2))))
        assert ops_of(out).count("_test_random") == 2
    finally:
        unregister("_test_random")
