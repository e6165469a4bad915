"""``gluon.nn.SymbolBlock``: MXNet 1.9.1's ``gluon.nn`` re-exports ``gluon.block``'s names, so
code written ``nn.SymbolBlock(outputs, inputs)`` runs as ``gluon.SymbolBlock``."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph import gluon
from symgraph.core.base import GraphError
from symgraph.gluon import nn


def test_nn_symbolblock_is_gluons() -> None:
    assert nn.SymbolBlock is gluon.SymbolBlock and "SymbolBlock" in nn.__all__


def test_nn_symbolblock_runs_a_graph() -> None:
    """A Dense + relu graph wrapped with ``nn.SymbolBlock``, against numpy float64."""
    data = sg.sym.var("data")
    out = sg.sym.relu(sg.sym.FullyConnected(data, num_hidden=3, name="fc"))
    block = nn.SymbolBlock(out, data)
    rng = np.random.default_rng(3)
    w, b = rng.normal(size=(3, 4)), rng.normal(size=3)
    x = rng.normal(size=(5, 4))
    block.initialize()
    block(sg.nd.array(x))  # shapes the deferred parameters
    params = block.collect_params()
    params["fc_weight"].set_data(sg.nd.array(w))
    params["fc_bias"].set_data(sg.nd.array(b))
    got = block(sg.nd.array(x)).asnumpy()
    np.testing.assert_allclose(got, np.maximum(x @ w.T + b, 0.0), rtol=1e-5, atol=1e-6)


def test_nn_symbolblock_refuses_a_non_variable_input() -> None:
    data = sg.sym.var("data")
    hidden = sg.sym.FullyConnected(data, num_hidden=3, name="fc")
    with pytest.raises(GraphError, match=r"input 'fc' is not a variable.*\['data', 'fc_weight'"):
        nn.SymbolBlock(sg.sym.relu(hidden), hidden)
