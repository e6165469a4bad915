"""fuse_bn_epilogue: a BatchNorm heads the fused group (or lone ReLU) that alone reads its
output: one ``_fused`` node whose outputs are the group's and BatchNorm's statistics. Values
of outputs, gradients, moving statistics and inference outputs equal the unfused graph's
(passes off: numpy's BatchNorm and ops one by one); a BatchNorm whose output is read twice,
is a graph output, or whose statistics are read before the group is left as it is."""
import numpy as np

import symgraph as sg
from symgraph.core import config

from .util import assert_same, train_results

S = sg.sym


def _block(x, name: str, axis: int):
    """A ResNet basic block: layer -> BN -> ReLU -> layer -> BN, + shortcut -> ReLU, the layers
    3x3 convolutions (axis 1) or dense layers (axis -1: BatchNorm over (N, C))."""
    def layer(h, k):
        if axis == 1:
            return S.Convolution(h, num_filter=3, kernel=(3, 3), pad=(1, 1), no_bias=True,
                                 name=f"{name}c{k}")
        return S.FullyConnected(h, num_hidden=6, no_bias=True, name=f"{name}f{k}")
    y = S.Activation(S.BatchNorm(layer(x, 1), fix_gamma=False, axis=axis, name=f"{name}a"),
                     act_type="relu")
    y = S.BatchNorm(layer(y, 2), axis=axis, name=f"{name}b")
    return S.Activation(y + x, act_type="relu")


def _loss(y):
    """A dense layer and a loss needing no head gradient, as a training net's: the ReLUs'
    backward masks then join the backward's groups, not the forward's (a forward group with
    the mask as a second output would not qualify)."""
    return S.MakeLoss(S.sum(S.FullyConnected(y, num_hidden=2, name="head")))


def _steps(sym, **shapes) -> list:
    with config.override("SYMGRAPH_REMAT", "0"):  # (the forward's groups only)
        exe = sym.simple_bind(sg.cpu(), **shapes)
        return [st.node for st in exe._train.schedule.steps]


def _heads(nodes) -> list[str]:
    return [n.attrs["head"][0] for n in nodes if n.op == "_fused" and n.attrs["head"]]


def test_both_batchnorms_take_their_epilogues_and_values_hold() -> None:
    for axis, shape in ((1, (4, 3, 5, 5)), (-1, (5, 6))):
        sym = _loss(_block(S.var("x"), "b", axis))
        nodes = _steps(sym, x=shape)
        ops = [n.op for n in nodes]
        assert "BatchNorm" not in ops and "Activation" not in ops, ops
        assert _heads(nodes).count("BatchNorm") == 2
        fused = [n for n in nodes if n.op == "_fused" and n.attrs["head"]
                 and n.attrs["head"][0] == "BatchNorm"]
        assert all(len(n.entries()) == 5 for n in fused)
        assert_same(train_results(sym, {"x": shape}, True, out_grads=False),
                    train_results(sym, {"x": shape}, False, out_grads=False))


def test_moving_statistics_and_inference_match() -> None:
    sym = _loss(_block(S.var("x"), "b", 1))
    runs = []
    for enabled in (True, False):
        from symgraph.compiler import passes
        old, passes.ENABLED = passes.ENABLED, enabled
        try:
            exe = sym.simple_bind(sg.cpu(), x=(4, 3, 2, 2))
        finally:
            passes.ENABLED = old
        rng = np.random.default_rng(1)
        for arr in exe.arg_dict.values():
            arr[:] = rng.normal(size=arr.shape) * 2 + 1
        exe.forward(is_train=True)
        aux = {k: a.asnumpy().copy() for k, a in exe.aux_dict.items()}
        runs.append((aux, exe.forward(is_train=False)[0].asnumpy()))
    (aux_on, inf_on), (aux_off, inf_off) = runs
    for k in aux_off:
        assert not np.allclose(aux_off[k], 0.0 if k.endswith("mean") else 1.0)  # updated
        np.testing.assert_allclose(aux_on[k], aux_off[k], rtol=1e-6, atol=1e-7, err_msg=k)
    np.testing.assert_allclose(inf_on, inf_off, rtol=1e-5, atol=1e-6)


def test_batchnorms_that_do_not_qualify_stay() -> None:
    x = S.var("x")

    def bn(name, **kw):
        return S.BatchNorm(S.FullyConnected(x, num_hidden=6, name=f"{name}_fc"), name=name, **kw)
    out = _loss
    one = bn("bn1")
    read_twice = out(S.relu(one) + S.sum(one, axis=1, keepdims=True))  # y read by two
    two = bn("bn2")
    as_output = S.Group([two, out(S.relu(two))])
    stats = bn("bn3", output_mean_var=True)
    early = out(S.relu(stats[0]) * S.sum(stats[1]))  # the mean is read in the forward
    plain = out(S.relu(bn("bn4")))
    for sym, fused in ((read_twice, False), (as_output, False), (early, False), (plain, True)):
        nodes = _steps(sym, x=(4, 3))
        assert ("BatchNorm" in _heads(nodes)) == fused, [n.op for n in nodes]
        grads = sym is as_output  # (a graph output needs its head gradient)
        assert_same(train_results(sym, {"x": (4, 3)}, True, out_grads=grads),
                    train_results(sym, {"x": (4, 3)}, False, out_grads=grads))
