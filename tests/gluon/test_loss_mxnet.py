"""The gluon losses against MXNet 1.9.1 run live (a subprocess): loss values and the gradient
with respect to the first input, on the same float32 inputs. Marked ``mxnet``; skipped when
MXNet 1.9.1 is not available (``SYMGRAPH_MXNET_PYTHON``)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.gluon import loss as gloss

from ._mxnet_child import run_child
from .test_mxnet_gluon import _mxnet

pytestmark = pytest.mark.mxnet

# the same code makes the losses in both processes (``loss`` is gluon.loss of either)
MAKE = '''
def make(loss):
    return {
        "huber": loss.HuberLoss(rho=0.7, weight=2.0), "hinge": loss.HingeLoss(margin=1.5),
        "squared_hinge": loss.SquaredHingeLoss(), "logistic": loss.LogisticLoss(),
        "logistic_binary": loss.LogisticLoss(label_format="binary"),
        "triplet": loss.TripletLoss(margin=2.0), "kl": loss.KLDivLoss(),
        "kl_softmax": loss.KLDivLoss(from_logits=False, axis=1),
        "poisson": loss.PoissonNLLLoss(), "poisson_full": loss.PoissonNLLLoss(
            from_logits=False, compute_full=True),
        "poisson_full_positive": loss.PoissonNLLLoss(from_logits=False, compute_full=True),
        "cosine": loss.CosineEmbeddingLoss(margin=0.1), "sdml": loss.SDMLLoss(),
        "ctc": loss.CTCLoss(), "ctc_tnc": loss.CTCLoss(layout="TNC", label_layout="TN"),
        "ctc_lengths": loss.CTCLoss(),
    }
'''

CHILD = MAKE + '''
import sys
import numpy as np
import mxnet as mx
inputs = np.load(sys.argv[1])
out = {}
for name, block in make(mx.gluon.loss).items():
    arrays = [mx.nd.array(inputs[f"{name}_{i}"]) for i in range(int(inputs[name + "_n"]))]
    out[name] = block(*arrays).asnumpy()
    arrays[0].attach_grad()
    try:
        with mx.autograd.record():
            loss = block(*arrays)
        loss.backward()
    except mx.base.MXNetError:  # (PoissonNLLLoss(compute_full=True) assigns in place)
        continue
    out[name + "_grad"] = arrays[0].grad.asnumpy()
np.savez(sys.argv[2], **out)
'''


def _inputs() -> dict:
    rng = np.random.default_rng(0)
    n, d = 4, 3

    def normal(*shape):
        return rng.normal(size=shape)
    pm1 = rng.choice([-1.0, 1.0], size=(n, d))
    prob = rng.dirichlet(np.ones(d), n)
    counts = rng.integers(0, 5, (n, d)).astype(float)  # zeros included
    label = np.array([[0, 1, -1], [2, 2, -1], [1, 0, 2], [1, -1, -1]], dtype=float)
    return {
        "huber": [normal(n, d), normal(n, d), rng.uniform(0.5, 2, (n, 1))],
        "hinge": [normal(n, d), pm1], "squared_hinge": [normal(n, d), pm1],
        "logistic": [3 * normal(n, d), pm1],
        "logistic_binary": [3 * normal(n, d), (pm1 + 1) / 2],
        "triplet": [normal(n, d), normal(n, d), normal(n, d)],
        "kl": [np.log(prob), rng.dirichlet(np.ones(d), n)],
        "kl_softmax": [normal(n, d), prob],
        "poisson": [normal(n, d), counts],
        "poisson_full": [rng.uniform(0.2, 2, (n, d)), counts],
        "poisson_full_positive": [rng.uniform(0.2, 2, (n, d)), counts + 1],
        "cosine": [normal(n, d), normal(n, d), np.array([1.0, -1.0, -1.0, 1.0])],
        "sdml": [normal(n, d), normal(n, d)],
        "ctc": [normal(n, 5, d + 1), label],
        "ctc_tnc": [normal(5, n, d + 1), label.T.copy()],
        "ctc_lengths": [normal(n, 5, d + 1), label, np.array([5.0, 4, 3, 2]),
                        np.array([2.0, 1, 3, 1])],
    }


def _symgraph(inputs: dict) -> dict:
    ns: dict = {}
    exec(MAKE, ns)
    out = {}
    for name, block in ns["make"](gloss).items():
        arrays = [sg.nd.array(a.astype(np.float32)) for a in inputs[name]]
        arrays[0].attach_grad()
        with sg.autograd.record():
            loss = block(*arrays)
        loss.backward()
        out[name], out[name + "_grad"] = loss.asnumpy(), arrays[0].grad.asnumpy()
    return out


def test_losses_and_gradients_match_mxnet(tmp_path: Path) -> None:
    inputs = _inputs()
    flat = {f"{k}_{i}": a.astype(np.float32) for k, v in inputs.items() for i, a in enumerate(v)}
    flat.update({f"{k}_n": np.array(len(v)) for k, v in inputs.items()})
    want = dict(np.load(run_child(tmp_path, CHILD, flat, "out.npz")))
    got = _symgraph(inputs)
    # MXNet multiplies Stirling's term, NaN at a zero count (0 * log 0), by the mask of
    # counts above 1: NaN for any zero count (docs/mxnet_parity.md); we give the formula's
    # value, checked against numpy in test_loss_more.py
    assert np.isnan(want.pop("poisson_full")).all() and np.isfinite(got["poisson_full"]).all()
    for key in sorted(want):
        np.testing.assert_allclose(got[key], want[key], rtol=2e-4, atol=2e-6, err_msg=key)


IMPOSSIBLE = """
import mxnet as mx
x = mx.nd.zeros((2, 1, 4))
x.attach_grad()
with mx.autograd.record():
    y = mx.nd.ctc_loss(x, mx.nd.array([[2, 2]]), blank_label="last")
y.backward()
print(float(y.asnumpy()[0]), float(abs(x.grad.asnumpy()).sum()))
"""


def test_impossible_ctc_alignment_departs_from_mxnet() -> None:
    """Two steps cannot emit "2 2" (a blank must separate the repeats): MXNet says loss 0,
    symgraph inf (probability 0); both give gradient 0 (docs/mxnet_parity.md)."""
    run = subprocess.run([_mxnet(), "-c", IMPOSSIBLE], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert [float(v) for v in run.stdout.split()] == [0.0, 0.0]
    x = sg.nd.zeros((2, 1, 4))
    x.attach_grad()
    with sg.autograd.record():
        y = sg.nd.ctc_loss(x, sg.nd.array([[2, 2]]), blank_label="last")
    y.backward()
    assert np.isinf(y.asnumpy()[0]) and not x.grad.asnumpy().any()
