"""HybridBlocks called with nested arguments and returning nested results (an RNN layer's
``(x, [h, c])``): the same values hybridized or not, against numpy float64, and
``infer_shape`` on nested inputs."""
from __future__ import annotations

import numpy as np

import symgraph as sg
from symgraph import gluon, nd
from symgraph.gluon.nested import flatten, regroup


class _Pairs(gluon.HybridBlock):
    """(x, [a, b]) -> (x + a, [a * b, b - x])."""

    def hybrid_forward(self, F, x, states):  # noqa: N803 (MXNet's name)
        a, b = states
        return x + a, [a * b, b - x]


def test_flatten_and_regroup_round_trip() -> None:
    leaves, fmt = flatten((1, [2, (3, 4)], 5))
    assert leaves == [1, 2, 3, 4, 5] and fmt == (None, (None, (None, None)), None)
    assert regroup(leaves, fmt) == [1, [2, [3, 4]], 5]


def test_nested_arguments_and_results_hybridized(rng) -> None:
    x0, a0, b0 = (rng.normal(size=(2, 3)) for _ in range(3))
    block = _Pairs()
    args = [nd.array(v, dtype=np.float64) for v in (x0, a0, b0)]
    want = [x0 + a0, a0 * b0, b0 - x0]
    for hybrid in (False, True):
        block.hybridize(hybrid)
        out, states = block(args[0], [args[1], args[2]])
        assert isinstance(states, list) and len(states) == 2
        for got, ref in zip([out] + states, want):
            np.testing.assert_allclose(got.asnumpy(), ref, rtol=1e-12)


def test_rnn_layer_infer_shape_with_state_list() -> None:
    layer = gluon.rnn.LSTM(6, num_layers=2)  # input size left to inference
    layer.initialize()
    x = nd.zeros((4, 3, 5))
    layer.infer_shape(x, layer.begin_state(3))
    shapes = {k.split("_", 1)[1]: p.shape for k, p in layer.collect_params().items()}
    assert shapes["l0_i2h_weight"] == (24, 5) and shapes["l1_i2h_weight"] == (24, 6)
    layer.hybridize()
    out, states = layer(x, layer.begin_state(3))
    assert out.shape == (4, 3, 6) and [s.shape for s in states] == [(2, 3, 6)] * 2
