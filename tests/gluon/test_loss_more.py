"""The gluon losses beyond cross-entropy/L1/L2 against float64 numpy formulas (_loss_refs),
imperatively and hybridized, with ``weight`` and ``sample_weight``; gradients against
central differences of those formulas; CTC against a brute-force sum over alignments."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, DataError, ShapeError
from symgraph.gluon import loss as gloss

from . import _loss_refs as R

N, D = 4, 3


def _pm1(rng):
    return rng.choice([-1.0, 1.0], size=(N, D))


# name: (block factory, reference, input makers (pred first), batch size of sample_weight)
CASES = {
    "huber": (lambda: gloss.HuberLoss(rho=0.7), lambda p, l: R.huber(p, l, 0.7),
              (lambda r: r.normal(size=(N, D)), lambda r: r.normal(size=(N, D)))),
    "hinge": (lambda: gloss.HingeLoss(margin=1.5), lambda p, l: R.hinge(p, l, 1.5),
              (lambda r: r.normal(size=(N, D)), _pm1)),
    "squared_hinge": (lambda: gloss.SquaredHingeLoss(), R.squared_hinge,
                      (lambda r: r.normal(size=(N, D)), _pm1)),
    "logistic_signed": (lambda: gloss.LogisticLoss(), R.logistic,
                        (lambda r: 3 * r.normal(size=(N, D)), _pm1)),
    "logistic_binary": (lambda: gloss.LogisticLoss(label_format="binary"),
                        lambda p, l: R.logistic(p, l, "binary"),
                        (lambda r: 3 * r.normal(size=(N, D)),
                         lambda r: r.integers(0, 2, (N, D)).astype(float))),
    "triplet": (lambda: gloss.TripletLoss(margin=2.0), lambda p, a, b: R.triplet(p, a, b, 2.0),
                (lambda r: r.normal(size=(N, D)), lambda r: r.normal(size=(N, D)),
                 lambda r: r.normal(size=(N, D)))),
    "kl_logits": (lambda: gloss.KLDivLoss(), R.kl_div,
                  (lambda r: np.log(r.dirichlet(np.ones(D), N)),
                   lambda r: r.dirichlet(np.ones(D), N))),
    "kl_softmax": (lambda: gloss.KLDivLoss(from_logits=False),
                   lambda p, l: R.kl_div(p, l, False),
                   (lambda r: r.normal(size=(N, D)), lambda r: r.dirichlet(np.ones(D), N))),
    "cosine": (lambda: gloss.CosineEmbeddingLoss(margin=0.1),
               lambda a, b, y: R.cosine_embedding(a, b, y, 0.1),
               (lambda r: r.normal(size=(N, D)), lambda r: r.normal(size=(N, D)),
                lambda r: np.array([1.0, -1.0, -1.0, 1.0]))),
    "sdml": (lambda: gloss.SDMLLoss(smoothing_parameter=0.2), lambda a, b: R.sdml(a, b, 0.2),
             (lambda r: r.normal(size=(N, D)), lambda r: r.normal(size=(N, D)))),
}
POISSON = {
    "poisson_logits": (lambda: gloss.PoissonNLLLoss(), R.poisson_nll),
    "poisson_rate_full": (lambda: gloss.PoissonNLLLoss(from_logits=False, compute_full=True),
                          lambda p, t: R.poisson_nll(p, t, False, True)),
}


def _inputs(name: str, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    return [np.asarray(g(rng), dtype=np.float64) for g in CASES[name][2]]


def _run(block, arrays: list, *extra) -> tuple:
    nds = [sg.nd.array(a, dtype=a.dtype) for a in list(arrays) + list(extra)]
    first = block(*nds).asnumpy()
    block.hybridize()
    second = block(*nds).asnumpy()
    block.hybridize(False)
    return first, second


@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_matches_numpy_imperative_and_hybridized(name: str) -> None:
    make, ref, _ = CASES[name]
    arrays = _inputs(name)
    want = ref(*arrays)
    for got in _run(make(), arrays):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_weight_and_sample_weight_scale_each_sample(name: str) -> None:
    make, ref, _ = CASES[name]
    arrays = _inputs(name, 1)
    # (N, 1) broadcasts over elements; TripletLoss and SDMLLoss weigh (N,) sums: (N,) there
    sw = np.linspace(0.5, 2.0, N).reshape((N,) if name in ("triplet", "sdml") else (N, 1))
    block = make()
    block._weight = 3.0
    want = ref(*arrays)
    for got in _run(block, arrays, sw):
        np.testing.assert_allclose(got.reshape(want.shape), 3.0 * want * sw.reshape(
            (N,) + (1,) * (want.ndim - 1)), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_of_pred_matches_central_differences(name: str) -> None:
    make, ref, _ = CASES[name]
    arrays = _inputs(name, 2)
    head = np.random.default_rng(3).uniform(0.5, 1.5, ref(*arrays).shape)
    for hybrid in (False, True):
        block = make()
        block.hybridize(hybrid)
        x = sg.nd.array(arrays[0], dtype=np.float64)
        x.attach_grad()
        rest = [sg.nd.array(a, dtype=np.float64) for a in arrays[1:]]
        with sg.autograd.record():
            out = block(x, *rest)
        out.backward(sg.nd.array(head, dtype=np.float64))
        numeric = R.numeric_grad(lambda v: float((ref(v, *arrays[1:]) * head).sum()),
                                 arrays[0])
        np.testing.assert_allclose(x.grad.asnumpy(), numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", sorted(POISSON))
def test_poisson_nll_is_a_mean_over_everything(name: str) -> None:
    make, ref = POISSON[name]
    rng = np.random.default_rng(4)
    pred = rng.uniform(0.2, 2.0, (N, D))
    target = rng.integers(0, 5, (N, D)).astype(np.float64)  # zeros included: no NaN
    want = ref(pred, target)
    for got in _run(make(), [pred, target]):
        assert got.shape == (1,)
        np.testing.assert_allclose(got, want, rtol=1e-10)
    x = sg.nd.array(pred, dtype=np.float64)
    x.attach_grad()
    with sg.autograd.record():
        out = make()(x, sg.nd.array(target, dtype=np.float64))
    out.backward()
    numeric = R.numeric_grad(lambda v: float(ref(v, target)[0]), pred)
    np.testing.assert_allclose(x.grad.asnumpy(), numeric, rtol=1e-5, atol=1e-8)


def test_bad_arguments_raise_attr_errors() -> None:
    with pytest.raises(AttrError, match="label_format.*'onehot'"):
        gloss.LogisticLoss(label_format="onehot")
    with pytest.raises(AttrError, match="layout.*'NCT'"):
        gloss.CTCLoss(layout="NCT")
    with pytest.raises(AttrError, match="label_layout.*'TT'"):
        gloss.CTCLoss(label_layout="TT")


def test_shape_mismatch_names_the_node_and_leaves_inputs_alone() -> None:
    pred = sg.nd.array(np.ones((2, 5, 4)))
    label = np.array([[0.0, 1.0], [1.0, 2.0], [2.0, 0.0]])  # 3 sequences for a batch of 2
    lab = sg.nd.array(label)
    with pytest.raises(ShapeError, match=r"CTCLoss.*label has shape \(3, 2\)"):
        gloss.CTCLoss()(pred, lab).asnumpy()
    np.testing.assert_array_equal(lab.asnumpy(), label)
    np.testing.assert_array_equal(pred.asnumpy(), np.ones((2, 5, 4)))


def test_ctc_label_outside_the_alphabet_is_a_data_error() -> None:
    pred = sg.nd.array(np.zeros((1, 4, 3)))
    with pytest.raises(DataError, match=r"label\[0, 1\] = 2.0.*labels 0\.\.1"):
        gloss.CTCLoss()(pred, sg.nd.array([[1.0, 2.0]])).asnumpy()  # 2 is the blank
