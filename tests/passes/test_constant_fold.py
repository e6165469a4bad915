"""constant_fold: constant subgraphs become one _constant; variables never fold."""
import numpy as np

import symgraph as sg
from symgraph.core.graph import Entry, Graph, Node
from symgraph.compiler.ops.constant import constant_attrs
from symgraph.compiler.passes.constant_fold import constant_fold

from .util import declared, ops_of, random_inputs, run_graph


def test_folds_constant_subgraph() -> None:
    c = Node("_constant", "c", constant_attrs(np.array([1.0, 2.0, 4.0], np.float32)))
    e = Node("exp", "e", inputs=(Entry(c),))
    x = declared(sg.sym.var("x"), x=(3,)).outputs[0]
    s = Node("broadcast_add", "s", inputs=(Entry(e), x))
    g = Graph((Entry(s),))
    out = constant_fold(g)
    assert ops_of(out) == ["_constant", "broadcast_add"]
    vals = random_inputs(g)
    ref = np.exp(np.array([1.0, 2.0, 4.0])) + vals["x"]
    np.testing.assert_allclose(run_graph(out, vals)[0], ref, rtol=1e-6)


def test_variables_never_fold() -> None:
    x = sg.sym.var("x")
    g = declared(sg.sym.exp(x) * 2.0, x=(3,))
    assert ops_of(constant_fold(g)) == ops_of(g)
