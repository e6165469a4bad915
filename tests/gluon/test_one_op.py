"""One-op layers (``gluon/one_op.py``): after a first call through ``hybrid_forward``, a layer
records its op directly. Each case runs steps under ``autograd.record()`` on the layer and on a
subclass that overrides ``hybrid_forward`` with the same computation (never kept: the plain
path), sharing one set of parameters, and compares outputs and gradients; Dense is also checked
against float64 numpy, and the kept call must be dropped whenever the layer changes."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd
from symgraph import gluon
from symgraph.core.base import ShapeError
from symgraph.gluon import nn
from symgraph.gluon.one_op import KeptCalls, OneCall


def _plain(cls: type) -> type:
    """``cls`` with ``hybrid_forward`` overridden by itself: the layer is never kept."""
    return type(f"Plain{cls.__name__}", (cls,), {
        "hybrid_forward": lambda self, F, x, *a, **k: cls.hybrid_forward(self, F, x, *a, **k)})


LAYERS: dict[str, tuple[Callable[..., Any], Callable[[np.random.Generator], np.ndarray]]] = {
    "dense": (lambda c, **k: c(3, in_units=4, **k), lambda r: r.normal(size=(5, 4))),
    "dense_relu_nobias": (lambda c, **k: c(3, activation="relu", use_bias=False, in_units=4,
                                           **k), lambda r: r.normal(size=(5, 4))),
    "conv_tanh": (lambda c, **k: c(2, 3, padding=1, activation="tanh", in_channels=1, **k),
                  lambda r: r.normal(size=(2, 1, 5, 5))),
    "maxpool": (lambda c, **k: c(pool_size=2, **k), lambda r: r.normal(size=(2, 3, 4, 4))),
    "activation": (lambda c, **k: c("sigmoid", **k), lambda r: r.normal(size=(3, 4))),
    "batchnorm": (lambda c, **k: c(in_channels=3, **k), lambda r: r.normal(size=(4, 3, 2))),
    "embedding": (lambda c, **k: c(6, 3, **k), lambda r: r.integers(0, 6, size=(5,))),
}
CLASSES = {"dense": nn.Dense, "dense_relu_nobias": nn.Dense, "conv_tanh": nn.Conv2D,
           "maxpool": nn.MaxPool2D, "activation": nn.Activation, "batchnorm": nn.BatchNorm,
           "embedding": nn.Embedding}


def _run(block: gluon.HybridBlock, x: sg.nd.NDArray, c: np.ndarray) -> tuple:
    with autograd.record():
        out = block(x)
        loss = (out * sg.nd.array(c, dtype=out.dtype)).sum()
    loss.backward()
    grads = {k: p.grad().asnumpy().copy() for k, p in block.collect_params().items()
             if p.grad_req != "null"}
    return out.asnumpy(), grads


@pytest.mark.parametrize("kind", sorted(LAYERS))
def test_kept_call_equals_the_plain_path(kind: str, rng: np.random.Generator) -> None:
    make, data = LAYERS[kind]
    layer = make(CLASSES[kind])
    layer.initialize(sg.init.Uniform(0.5))
    plain = make(_plain(CLASSES[kind]), params=layer.collect_params())
    for step in range(3):
        x0 = data(rng)
        x = sg.nd.array(x0, dtype=np.float32 if x0.dtype.kind == "f" else np.int32)
        c = rng.normal(size=layer(x).shape)
        got, want = _run(layer, x, c), _run(plain, x, c)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-7)
        assert got[1].keys() == want[1].keys()
        for k in got[1]:
            np.testing.assert_allclose(got[1][k], want[1][k], rtol=1e-5, atol=1e-6)
        assert isinstance(layer._kept, OneCall) and plain._kept is None  # the kept call ran


def test_dense_against_numpy_then_changes(rng: np.random.Generator) -> None:
    """A kept Dense call, then new weights (set_data), then its activation removed (an
    attribute set), then another batch size: every step is float64 numpy's."""
    layer = nn.Dense(3, activation="relu", in_units=4)
    layer.initialize()

    def check(x0: np.ndarray, c: np.ndarray, act: bool) -> None:
        w, b = layer.weight.data().asnumpy(), layer.bias.data().asnumpy()
        h = x0 @ w.T.astype(np.float64) + b
        y = np.maximum(h, 0) if act else h
        dh = c * (h > 0) if act else c
        out, grads = _run(layer, sg.nd.array(x0), c)
        np.testing.assert_allclose(out, y, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(grads[layer.weight.name], dh.T @ x0, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(grads[layer.bias.name], dh.sum(0), rtol=1e-4, atol=1e-5)

    for _ in range(2):
        check(rng.normal(size=(5, 4)), rng.normal(size=(5, 3)), True)
    assert isinstance(layer._kept, OneCall)
    layer.weight.set_data(sg.nd.array(rng.normal(size=(3, 4))))
    check(rng.normal(size=(5, 4)), rng.normal(size=(5, 3)), True)
    layer.act = None
    assert layer._kept is None
    check(rng.normal(size=(5, 4)), rng.normal(size=(5, 3)), False)
    check(rng.normal(size=(7, 4)), rng.normal(size=(7, 3)), False)
    assert isinstance(layer._kept, OneCall)


def test_wrong_input_after_the_call_is_kept(rng: np.random.Generator) -> None:
    """The kept call checks shapes at the call, and the error names the layer's node."""
    layer = nn.Dense(3, in_units=4, prefix="dense_k_")
    layer.initialize()
    for _ in range(2):
        layer(sg.nd.array(rng.normal(size=(2, 4))))
    assert isinstance(layer._kept, OneCall)
    with pytest.raises(ShapeError, match="dense_k_fwd"):
        layer(sg.nd.array(rng.normal(size=(2, 5))))


def test_hybridize_and_cast_drop_the_kept_call(rng: np.random.Generator) -> None:
    layer = nn.Dense(2, in_units=3)
    layer.initialize()
    x = sg.nd.array(rng.normal(size=(4, 3)))
    ref = layer(x).asnumpy()
    layer(x)
    assert isinstance(layer._kept, OneCall)
    layer.hybridize()
    assert layer._kept is None
    np.testing.assert_allclose(layer(x).asnumpy(), ref, rtol=1e-6)
    layer.hybridize(False)
    layer(x)
    layer.cast("float64")
    assert layer._kept is None
    out = layer(sg.nd.array(x.asnumpy(), dtype=np.float64))
    assert out.dtype == np.float64
    # float64 against the float32 reference: float32's rounding, absolute near zero outputs
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-6, atol=1e-7)


def test_new_parameter_arrays_are_read(rng: np.random.Generator) -> None:
    """Re-initialising (new arrays for the parameters) after the call is kept: the next call
    reads the new arrays."""
    layer = nn.Dense(2, in_units=3)
    layer.initialize()
    x0 = rng.normal(size=(4, 3))
    for _ in range(2):
        layer(sg.nd.array(x0))
    assert isinstance(layer._kept, OneCall)
    layer.initialize(sg.init.Constant(0.5), force_reinit=True)
    np.testing.assert_allclose(layer(sg.nd.array(x0)).asnumpy(),
                               x0 @ np.full((3, 2), 0.5) + 0.0, rtol=1e-5, atol=1e-6)


def _ce_ref(pred: np.ndarray, label: np.ndarray, sw: Any = None) -> tuple:
    """Sparse softmax cross-entropy per sample (float64) and its gradient w.r.t. ``pred``."""
    z = pred - pred.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    idx = label.astype(int)
    loss = -logp[np.arange(len(idx)), idx]
    grad = np.exp(logp)
    grad[np.arange(len(idx)), idx] -= 1
    if sw is not None:
        loss, grad = loss * sw[:, 0], grad * sw
    return loss, grad


@pytest.mark.parametrize("kw", [{}, {"from_logits": True}, {"weight": 2.0},
                                 {"sparse_label": False}])
def test_softmax_ce_loss_kept_calls(kw: dict, rng: np.random.Generator) -> None:
    """The loss's kept calls against the plain path, steps alternating with and without a
    sample weight (another input: the calls are not kept for it; an explicit None is kept
    apart from a weight) and float64 numpy."""
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss(**kw)
    plain = _plain(gluon.loss.SoftmaxCrossEntropyLoss)(**kw)
    for step in range(4):
        p0 = rng.normal(size=(5, 4))
        lab = rng.integers(0, 4, size=5).astype(np.float64)
        if kw.get("sparse_label") is False:
            lab = np.eye(4)[lab.astype(int)]
        sw = rng.uniform(0.5, 2, size=(5, 1)) if step in (1, 3) else None
        got = []
        for fn in (loss_fn, plain):
            pred = sg.nd.array(p0, dtype=np.float64)
            pred.attach_grad()
            extra = [sg.nd.array(sw, dtype=np.float64)] if sw is not None else (
                [None] if step == 2 else [])  # (step 2: an explicit None, then a weight)
            with autograd.record():
                out = fn(pred, sg.nd.array(lab, dtype=np.float64), *extra)
            out.backward()
            got.append((out.asnumpy(), pred.grad.asnumpy()))
        np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-12)
        np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-12)
        if not kw:
            ref = _ce_ref(p0, lab, sw)
            np.testing.assert_allclose(got[0][0], ref[0], rtol=1e-10)
            np.testing.assert_allclose(got[0][1], ref[1], rtol=1e-10)
    kept = isinstance(loss_fn._kept, KeptCalls)
    assert kept == (not kw or "from_logits" in kw) and plain._kept is None


class _Wrong(gluon.HybridBlock):
    """Declares kept calls, but finishes with an op called other than through _op."""

    def hybrid_forward(self, F: Any, x: Any, y: Any) -> Any:
        return -self._op(F, F.broadcast_add, (x, y), {}, None)
    _FIXED_OPS = hybrid_forward


def test_calls_not_all_watched_are_not_kept(rng: np.random.Generator) -> None:
    block = _Wrong()
    for _ in range(3):
        a, b = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
        out = block(sg.nd.array(a, dtype=np.float64), sg.nd.array(b, dtype=np.float64))
        np.testing.assert_allclose(out.asnumpy(), -(a + b), rtol=1e-12)
    assert block._kept is None
