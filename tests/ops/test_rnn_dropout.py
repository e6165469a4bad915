"""Dropout inside the fused ``RNN`` op (``p`` > 0) on the numpy backend: inference ignores p;
training drops the outputs of every layer but the last with masks drawn from ``sg.random``
(the same draws as the reference below makes after reseeding), the result equals the
unrolled reference (``rnn_dropout_ref``) with those masks, the masks have Dropout's law, and
the gradients equal float64 central differences of the unrolled reference with the masks
fixed. Bad ``p`` is refused by name."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import symgraph as sg
from symgraph.core import rng as core_rng
from symgraph.core.attrs import Attrs
from symgraph.core.base import SymgraphError
from symgraph.core.registry import RunCtx, get_op

from .rnn_dropout_ref import unrolled

S = sg.sym
T, N, I, H = 3, 2, 2, 3


def _attrs(mode: str, p: float = 0.4, layers: int = 3, bi: bool = True) -> dict:
    return dict(state_size=H, num_layers=layers, bidirectional=bi, mode=mode, p=p,
                state_outputs=True)


def _names(mode: str) -> list[str]:
    return ["data", "params", "state"] + (["cell"] if mode == "lstm" else [])


def _bind(attrs: dict, seed: int = 0) -> tuple[Any, list]:
    """A float64 executor of RNN(**attrs) with gradients, and its input values."""
    sym = S.RNN(*[S.var(n) for n in _names(attrs["mode"])], name="rnn", **attrs)
    shapes = sym.infer_shape(data=(T, N, I))[0]
    rng = np.random.default_rng(seed)
    xs = [rng.normal(size=s) * 0.6 for s in shapes]
    exe = sym.bind(sg.cpu(), {n: sg.nd.array(x, dtype=np.float64)
                              for n, x in zip(_names(attrs["mode"]), xs)},
                   args_grad={n: sg.nd.zeros(x.shape, dtype=np.float64)
                              for n, x in zip(_names(attrs["mode"]), xs)})
    return exe, xs


def _masks_after_seed(seed: int, attrs: dict) -> np.ndarray:
    """Dropout's draw for the mask shape (L-1, T, N, D*H), from ``sg.random`` reseeded."""
    d = 2 if attrs["bidirectional"] else 1
    core_rng.reseed(seed)
    keep = core_rng.generator().random((attrs["num_layers"] - 1, T, N, d * H)) >= attrs["p"]
    return keep / (1.0 - attrs["p"])


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_inference_ignores_p(mode: str) -> None:
    exe, xs = _bind(_attrs(mode, p=0.7))
    got = [o.asnumpy() for o in exe.forward(is_train=False)]
    for g, w in zip(got, unrolled(_attrs(mode), xs, None)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mode", ["rnn_tanh", "lstm"])
def test_training_drops_between_layers_with_sg_random(mode: str) -> None:
    attrs = _attrs(mode)
    exe, xs = _bind(attrs)
    sg.random.seed(17)
    got = [o.asnumpy() for o in exe.forward(is_train=True)]
    masks = _masks_after_seed(17, attrs)
    assert 0 < (masks == 0).sum() < masks.size
    for g, w in zip(got, unrolled(attrs, xs, masks)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    assert not np.allclose(got[0], unrolled(attrs, xs, None)[0])
    # one layer: nothing between layers, so p changes nothing
    exe1, xs1 = _bind(_attrs(mode, layers=1))
    np.testing.assert_allclose(exe1.forward(is_train=True)[0].asnumpy(),
                               unrolled(_attrs(mode, layers=1), xs1, None)[0], rtol=1e-10)


def test_masks_have_dropouts_law() -> None:
    attrs = dict(_attrs("gru", p=0.3, layers=2), bidirectional=False)
    xs = [np.random.default_rng(1).normal(size=s)
          for s in ((40, 8, 2), (2 * 3 * H * (2 + H) + 3 * H * (H + H) + 4 * 3 * H,),
                    (2, 8, H))]
    outs = get_op("RNN").compute(Attrs(attrs), xs,
                                 RunCtx(is_train=True, rng=np.random.default_rng(2)))
    mask = outs[-1]
    assert mask.shape == (1, 40, 8, H)
    assert set(np.unique(mask)) == {0.0, 1 / 0.7}
    assert abs((mask == 0).mean() - 0.3) < 0.07  # 960 draws: over 4 standard deviations


def _numeric_grad(f: Any, xs: list, k: int, eps: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(xs[k])
    for i in range(xs[k].size):
        hi, lo = [x.copy() for x in xs], [x.copy() for x in xs]
        hi[k].flat[i] += eps
        lo[k].flat[i] -= eps
        g.flat[i] = (f(hi) - f(lo)) / (2 * eps)
    return g


@pytest.mark.parametrize("mode", ["rnn_tanh", "lstm"])
def test_gradient_matches_finite_differences_with_fixed_masks(mode: str) -> None:
    attrs = _attrs(mode, p=0.5)
    exe, xs = _bind(attrs, seed=4)
    sg.random.seed(23)
    outs = exe.forward(is_train=True)
    masks = _masks_after_seed(23, attrs)
    heads = [np.random.default_rng(9).normal(size=o.shape) for o in outs]
    exe.backward([sg.nd.array(h, dtype=np.float64) for h in heads])

    def loss(values: list) -> float:
        return float(sum((h * o).sum() for h, o in zip(heads, unrolled(attrs, values, masks))))
    for k, name in enumerate(_names(mode)):
        np.testing.assert_allclose(exe.grad_dict[name].asnumpy(), _numeric_grad(loss, xs, k),
                                   rtol=1e-5, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_p_outside_0_1_is_refused_by_name(p: float) -> None:
    sym = S.RNN(*[S.var(n) for n in _names("gru")], name="enc", **_attrs("gru", p=p))
    with pytest.raises(SymgraphError, match=r"enc \(RNN\).*p.*\[0, 1\]"):
        sym.infer_shape(data=(T, N, I))


MXNET_IDENTITY_RNN = """
import json, os, sys
os.environ["MXNET_USE_MKLDNN_RNN"] = "0"  # oneDNN's RNN ignores p; the native one drops
import mxnet as mx
import numpy as np
a = json.load(sys.stdin)
x = np.asarray(a["x"])
sym = mx.sym.RNN(mx.sym.var("x"), mx.sym.var("p"), mx.sym.var("s"), state_size=x.shape[2],
                 num_layers=a["layers"], mode="rnn_relu", p=a["p"])
exe = sym.simple_bind(mx.cpu(), x=x.shape)
exe.arg_dict["x"][:] = x
exe.arg_dict["p"][:] = np.asarray(a["flat"])
exe.arg_dict["s"][:] = 0
print(json.dumps(exe.forward(is_train=True)[0].asnumpy().astype(float).tolist()))
"""


def _identity_rnn(layers: int, h: int) -> np.ndarray:
    """rnn_relu weights passing positive data through unchanged: W = I, U = 0, no biases, so
    a training output divided by the data is the product of the masks it went through."""
    eye, zero = np.eye(h).ravel(), np.zeros(h * h)
    return np.concatenate([np.concatenate([eye, zero])] * layers + [np.zeros(2 * h * layers)])


@pytest.mark.mxnet
def test_mask_law_and_placement_match_mxnet() -> None:
    """MXNet 1.9.1 (native CPU RNN) and symgraph, through 3 identity layers with p = 0.3:
    each element is dropped or scaled by 1/(1-p) once per boundary (two), never after the
    last layer, with the same frequencies."""
    from tests.mxnet_live import mxnet_json
    x = np.random.default_rng(0).uniform(0.5, 1.5, size=(50, 20, 4))
    flat = _identity_rnn(3, 4)
    theirs = np.asarray(mxnet_json(MXNET_IDENTITY_RNN, {"x": x.tolist(), "layers": 3,
                                                         "p": 0.3, "flat": flat.tolist()}))
    sym = S.RNN(S.var("x"), S.var("p"), S.var("s"), state_size=4, num_layers=3,
                mode="rnn_relu", p=0.3)
    exe = sym.bind(sg.cpu(), {"x": sg.nd.array(x, dtype=np.float64),
                              "p": sg.nd.array(flat, dtype=np.float64),
                              "s": sg.nd.zeros((3, 20, 4), dtype=np.float64)})
    ours = exe.forward(is_train=True)[0].asnumpy()
    levels = [0.0, 1 / 0.7, 1 / 0.49]
    for ratio in (ours / x, theirs / x):
        nearest = np.abs(ratio[..., None] - np.array(levels)).argmin(-1)
        np.testing.assert_allclose(ratio, np.array(levels)[nearest], rtol=1e-5)
        share = np.bincount(nearest.ravel(), minlength=3) / ratio.size
        np.testing.assert_allclose(share, [1 - 0.49, 0.0, 0.49], atol=0.04)  # 4000 draws
