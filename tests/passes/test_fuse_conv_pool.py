"""fuse_conv_pool: which chains fuse, and that fused graphs train exactly like unfused ones.

The CUDA backend runs the pass before autodiff; the numpy backend does not (its gradient would
recompute the fused maps), so the training comparisons here turn it on for the CPU."""
import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.backend import numpy_backend
from symgraph.runtime.cuda.fuse_conv_pool import fuse_conv_pool
from symgraph.compiler.passes.verify import verify

from .util import assert_same, declared, ops_of, random_inputs, run_graph, train_results

S = sg.sym
x = S.var("x")


@pytest.fixture(autouse=True)
def _fuse_on_cpu(monkeypatch) -> None:
    monkeypatch.setattr(numpy_backend, "FORWARD_PIPELINE", (fuse_conv_pool,))


def _chain(channels_act="relu", pool=None, conv=None):
    c = S.Convolution(x, **{"kernel": (3, 3), "pad": (1, 1), "num_filter": 4, "name": "c",
                            **(conv or {})})
    a = c if channels_act is None else S.Activation(c, act_type=channels_act, name="a")
    return S.Pooling(a, **{"pool_type": "max", "kernel": (2, 2), "stride": (2, 2),
                           "name": "p", **(pool or {})})


def _fused_ops(sym, **shapes) -> list:
    g = declared(sym, **shapes)
    out = fuse_conv_pool(g)
    verify(out)
    vals = random_inputs(g)
    for got, want in zip(run_graph(out, vals), run_graph(g, vals)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    return ops_of(out)


def test_seed_cnn_first_layer_fuses_and_trains_the_same() -> None:
    from symgraph.interop.models.simple_cnn import build
    sym = build()
    ops = _fused_ops(sym, data=(4, 1, 28, 28))
    assert ops.count("_conv_act_pool") == 1  # conv1 (1 channel); conv2 (32 channels) stays
    assert ops.count("Convolution") == 1 and ops.count("Pooling") == 1
    shapes = {"data": (4, 1, 28, 28), "softmax_label": (4,)}
    # data gets a gradient too: the fused op's data gradient is the unfused ops' one.
    assert_same(train_results(sym, shapes, True), train_results(sym, shapes, False))


@pytest.mark.parametrize("act", [None, "relu", "tanh", "sigmoid"])
def test_each_activation_fuses_and_trains_the_same(act) -> None:
    sym = S.sum(_chain(act), name="loss")
    node = [n for n in fuse_conv_pool(declared(sym, x=(2, 2, 6, 6))).nodes()
            if n.op == "_conv_act_pool"]
    assert [(n.name, n.attrs["act_type"], n.attrs["pool_kernel"]) for n in node] == \
        [("c_a_p" if act else "c_p", act, (2, 2))]
    shapes = {"x": (2, 2, 6, 6)}
    assert_same(train_results(sym, shapes, True), train_results(sym, shapes, False))


def test_relu_spelled_as_its_own_op_fuses() -> None:
    c = S.Convolution(x, kernel=(3, 3), num_filter=2, name="c")
    sym = S.Pooling(S.relu(c), pool_type="max", kernel=(2, 2), stride=(2, 2))
    assert "_conv_act_pool" in _fused_ops(sym, x=(1, 1, 7, 7))


@pytest.mark.parametrize("why,sym,shape", [
    ("overlapping windows", _chain(pool={"kernel": (3, 3)}), (1, 1, 8, 8)),
    ("average pooling", _chain(pool={"pool_type": "avg"}), (1, 1, 8, 8)),
    ("padded pooling", _chain(pool={"pad": (1, 1)}), (1, 1, 8, 8)),
    ("receptive field too wide", _chain(), (1, 4, 8, 8)),  # 4 channels x 3x3 > MAX_FIELD
    ("dilated", _chain(conv={"dilate": (2, 2)}), (1, 1, 8, 8)),
    ("grouped", _chain(conv={"num_group": 2}), (1, 2, 8, 8)),
    ("no derivative rule", _chain("softrelu"), (1, 1, 8, 8)),
    ("full rounding that leaves a partial window", _chain(pool={"pooling_convention": "full"}),
     (1, 1, 7, 7)),
])
def test_chains_that_must_not_fuse(why, sym, shape) -> None:
    assert "_conv_act_pool" not in _fused_ops(sym, x=shape), why


def test_activation_read_elsewhere_does_not_fuse() -> None:
    c = S.Convolution(x, kernel=(3, 3), num_filter=2, name="c")
    a = S.Activation(c, act_type="relu")
    p = S.Pooling(a, pool_type="max", kernel=(2, 2), stride=(2, 2))
    assert "_conv_act_pool" not in _fused_ops(S.Group([p, a]), x=(1, 1, 6, 6))
    assert "_conv_act_pool" not in _fused_ops(S.Group([p, c]), x=(1, 1, 6, 6))
    side = S.sum(p) + S.sum(a * 2.0)
    assert "_conv_act_pool" not in _fused_ops(side, x=(1, 1, 6, 6))


def test_full_rounding_on_sizes_the_window_divides_fuses() -> None:
    sym = _chain(pool={"pooling_convention": "full"})
    assert "_conv_act_pool" in _fused_ops(sym, x=(1, 1, 8, 8))


def test_cpu_keeps_the_chain_by_default(monkeypatch) -> None:
    monkeypatch.setattr(numpy_backend, "FORWARD_PIPELINE", ())
    sch = _chain().simple_bind(sg.cpu(), x=(1, 1, 8, 8))._train.schedule
    assert "_conv_act_pool" not in [s.node.op for s in sch.steps]
    numpy_backend.FORWARD_PIPELINE = (fuse_conv_pool,)
    sch = _chain().simple_bind(sg.cpu(), x=(1, 1, 8, 8))._train.schedule
    assert "_conv_act_pool" in [s.node.op for s in sch.steps]


def test_without_shapes_nothing_fires() -> None:
    g = _chain().graph()
    assert ops_of(fuse_conv_pool(g)) == ops_of(g)
