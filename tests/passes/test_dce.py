"""dce: only nodes reachable from the outputs survive; values unchanged."""
import numpy as np

import symgraph as sg
from symgraph.core.graph import Graph
from symgraph.compiler.passes.dce import dce

from .util import declared, ops_of, random_inputs, run_graph


def test_dce_drops_unreachable_and_keeps_values() -> None:
    x = sg.sym.var("x")
    used = sg.sym.exp(x)
    unused = sg.sym.log(x)
    g = declared(sg.sym.Group([used, unused]), x=(3, 4))
    only_first = Graph(g.outputs[:1])
    # rebuilding from the first output drops log
    out = dce(only_first)
    assert ops_of(out) == ["exp"]
    vals = random_inputs(g)
    np.testing.assert_allclose(run_graph(out, vals)[0], np.exp(vals["x"].astype(np.float64)),
                               rtol=1e-6)
