"""The MXNet 1.x optimizers of optimizer_extra / optimizer_norm / optimizer_contrib: several
steps (weight decay, clipping, rescaling) against an independent float64 numpy reference
written here from MXNet's documented rules, and against MXNet 1.9.1 run live (marked
``mxnet``; float32 and multi-precision float16 weights)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, ShapeError

from .mxnet_live import mxnet_json

STEPS = 4
SHAPE = (5, 4)
COMMON = {"wd": 0.05, "clip_gradient": 0.8, "rescale_grad": 0.5}
CASES: dict[str, tuple[str, dict]] = {
    "nag": ("nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.0}),
    "nag_wd": ("nag", {"learning_rate": 0.1, "momentum": 0.9}),
    "nag_plain": ("nag", {"learning_rate": 0.1}),
    "signum": ("signum", {"learning_rate": 0.05, "momentum": 0.9, "wd_lh": 0.01}),
    "signsgd": ("signum", {"learning_rate": 0.05, "momentum": 0.0}),
    "ftml": ("ftml", {"learning_rate": 0.05}),
    "ftrl": ("ftrl", {"learning_rate": 0.1, "lamda1": 0.01, "beta": 1.0}),
    "adadelta": ("adadelta", {"rho": 0.9, "epsilon": 1e-5}),
    "adamax": ("adamax", {"learning_rate": 0.02}),
    "nadam": ("nadam", {"learning_rate": 0.01}),
    "dcasgd": ("dcasgd", {"learning_rate": 0.1, "lamda": 0.04}),
    "ccsgd": ("ccsgd", {"learning_rate": 0.1, "momentum": 0.9}),
    "test": ("test", {}),
    "lamb": ("lamb", {"learning_rate": 0.01, "upper_bound": 2.0}),
    "lamb_nobias": ("lamb", {"learning_rate": 0.01, "bias_correction": False}),
    "lars": ("lars", {"learning_rate": 0.1, "momentum": 0.9, "eta": 0.01}),
    "lbsgd": ("lbsgd", {"learning_rate": 0.1, "momentum": 0.9, "batch_scale": 2,
                        "warmup_epochs": 2, "updates_per_epoch": 2}),
    "groupadagrad": ("groupadagrad", {"learning_rate": 0.1, "wd": 0.0}),
}
MP_CASES = ("nag", "adamax", "ftml", "nadam", "lars", "signum", "adadelta")
# MXNet 1.9.1 departs from its documented rule here (docs/mxnet_parity.md): nag_mom_update
# writes the weight before it reads it for the momentum's weight decay (out aliases weight);
# mp_lamb_update drifts from its own float32 LAMB by a whole step by the second step.
MX_DEPARTS = {"nag_wd"}


def _data(seed: int = 0) -> tuple[np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    w = rng.normal(size=SHAPE).astype(np.float32)
    grads = [rng.normal(scale=1.5, size=SHAPE).astype(np.float32) for _ in range(STEPS)]
    grads[1][0, 0] = 0.0  # a zero gradient (signs, Ftrl's threshold)
    return w, grads


def _kwargs(case: str) -> dict:
    name, kw = CASES[case]
    return {**COMMON, **kw}


def _run_symgraph(case: str, dtype: str = "float32", mp: bool = False) -> np.ndarray:
    w, grads = _data()
    w = w.astype(dtype)
    opt = sg.optimizer.create(CASES[case][0], multi_precision=mp, **_kwargs(case))
    state = opt.create_state_multi_precision(0, w)
    for g in grads:
        opt.update_multi_precision(0, w, g.astype(dtype), state)
    return w


# -- independent float64 references (one step: w, g, state dict, t, kwargs) --------------------
def _clip(g: np.ndarray, c: float) -> np.ndarray:
    return np.clip(g, -c, c)


def _ref_nag(w, g, s, t, k):  # MXNet's docstring: state = m*state + g; w -= lr*(g + m*state)
    g = _clip(k["rescale_grad"] * g, k["clip_gradient"]) + k["wd"] * w
    mom = k.get("momentum", 0.0)
    s["m"] = mom * s.get("m", 0.0) + g
    return w - k["learning_rate"] * (g + mom * s["m"])


def _ref_signum(w, g, s, t, k):
    g = _clip(k["rescale_grad"] * g, k["clip_gradient"])
    lr, mom = k["learning_rate"], k["momentum"]
    if mom == 0:
        return (1 - lr * k["wd"]) * w - lr * np.sign(g)
    s["m"] = mom * s.get("m", 0.0) - (1 - mom) * (g + k["wd"] * w)
    return (1 - lr * k.get("wd_lh", 0.0)) * w + lr * np.sign(s["m"])


def _ref_ftml(w, g, s, t, k, b1=0.6, b2=0.999, eps=1e-8):
    g = _clip(k["rescale_grad"] * g + k["wd"] * w, k["clip_gradient"])
    s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
    d = (1 - b1 ** t) / k["learning_rate"] * (np.sqrt(s["v"] / (1 - b2 ** t)) + eps)
    s["z"] = b1 * s.get("z", 0.0) + (1 - b1) * g - (d - b1 * s.get("d", 0.0)) * w
    s["d"] = d
    return -s["z"] / d


def _ref_ftrl(w, g, s, t, k):
    g = _clip(k["rescale_grad"] * g, k["clip_gradient"])
    lr, n = k["learning_rate"], s.get("n", 0.0)
    s["z"] = s.get("z", 0.0) + g - (np.sqrt(n + g * g) - np.sqrt(n)) * w / lr
    s["n"] = n + g * g
    z = s["z"]
    return np.where(np.abs(z) > k["lamda1"], (np.sign(z) * k["lamda1"] - z) /
                    ((k["beta"] + np.sqrt(s["n"])) / lr + k["wd"]), 0.0)


def _ref_adadelta(w, g, s, t, k):
    g = _clip(k["rescale_grad"] * g, k["clip_gradient"])
    rho, eps = k["rho"], k["epsilon"]
    s["ag"] = rho * s.get("ag", 0.0) + (1 - rho) * g * g
    delta = np.sqrt(s.get("ad", 0.0) + eps) / np.sqrt(s["ag"] + eps) * g
    s["ad"] = rho * s.get("ad", 0.0) + (1 - rho) * delta * delta
    return w - delta - k["wd"] * w


def _ref_adamax(w, g, s, t, k, b1=0.9, b2=0.999):
    g = _clip(k["rescale_grad"] * g + k["wd"] * w, k["clip_gradient"])
    s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    s["u"] = np.maximum(b2 * s.get("u", 0.0), np.abs(g))
    return w - k["learning_rate"] / (1 - b1 ** t) * s["m"] / s["u"]


def _ref_nadam(w, g, s, t, k, b1=0.9, b2=0.999, eps=1e-8, decay=0.004):
    g = _clip(k["rescale_grad"] * g + k["wd"] * w, k["clip_gradient"])
    mu = b1 * (1 - 0.5 * 0.96 ** (t * decay))
    mu1 = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * decay))
    s["sched"] = s.get("sched", 1.0) * mu
    s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
    m_bar = (1 - mu) * g / (1 - s["sched"]) + mu1 * s["m"] / (1 - s["sched"] * mu1)
    return w - k["learning_rate"] * m_bar / (np.sqrt(s["v"] / (1 - b2 ** t)) + eps)


def _ref_dcasgd(w, g, s, t, k):
    g = _clip(k["rescale_grad"] * g, k["clip_gradient"])
    prev = s.get("prev", w)
    mom = -k["learning_rate"] * (g + k["wd"] * w + k["lamda"] * g * g * (w - prev))
    s["prev"] = w
    return w + mom


def _ref_sgd(w, g, s, t, k, lr=None):
    lr = k["learning_rate"] if lr is None else lr
    s["m"] = k.get("momentum", 0.0) * s.get("m", 0.0) - lr * (
        _clip(k["rescale_grad"] * g, k["clip_gradient"]) + k["wd"] * w)
    return w + s["m"]


def _ref_test(w, g, s, t, k):
    return w + k["rescale_grad"] * g


def _ref_lamb(w, g, s, t, k, b1=0.9, b2=0.999, eps=1e-6):
    g = _clip(k["rescale_grad"] * g, k["clip_gradient"])
    s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
    c1, c2 = ((1 - b1 ** t), (1 - b2 ** t)) if k.get("bias_correction", True) else (1.0, 1.0)
    u = s["m"] / c1 / (np.sqrt(s["v"] / c2) + eps) + k["wd"] * w
    r1 = min(np.linalg.norm(w), k.get("upper_bound") or np.inf)
    return w - k["learning_rate"] * r1 / np.linalg.norm(u) * u


def _ref_lars(w, g, s, t, k):  # a parameter index without a name: a layer that is scaled
    wn, gn = np.linalg.norm(w), np.linalg.norm(g) * k["rescale_grad"]
    lr = k["learning_rate"] * k["eta"] * wn / (gn + k["wd"] * wn)
    return _ref_sgd(w, g, s, t, k, lr)


def _ref_lbsgd(w, g, s, t, k):
    if t % 2:  # batch_scale 2: the first of two calls only accumulates
        s["acc"] = g
        return w
    nwup = k["warmup_epochs"] * k["updates_per_epoch"]
    mult = 2.0 if t >= nwup else 1.0 + (2.0 - 1) * t / nwup
    return _ref_sgd(w, (s["acc"] + g) / 2, s, t, k, k["learning_rate"] * mult)


def _ref_groupadagrad(w, g, s, t, k, eps=1e-5):
    g = _clip(k["rescale_grad"] * g, k["clip_gradient"])
    s["h"] = s.get("h", 0.0) + np.mean(g * g, axis=1, keepdims=True)
    return w - k["learning_rate"] * g / np.sqrt(s["h"] + eps)


REFS = {"nag": _ref_nag, "nag_wd": _ref_nag, "nag_plain": _ref_nag, "signum": _ref_signum,
        "signsgd": _ref_signum,
        "ftml": _ref_ftml, "ftrl": _ref_ftrl, "adadelta": _ref_adadelta, "adamax": _ref_adamax,
        "nadam": _ref_nadam, "dcasgd": _ref_dcasgd, "ccsgd": _ref_sgd, "test": _ref_test,
        "lamb": _ref_lamb, "lamb_nobias": _ref_lamb, "lars": _ref_lars, "lbsgd": _ref_lbsgd,
        "groupadagrad": _ref_groupadagrad}


@pytest.mark.parametrize("case", sorted(CASES))
def test_steps_match_float64_reference(case: str) -> None:
    w, grads = _data()
    w64, state, k = w.astype(np.float64), {}, _kwargs(case)
    for t, g in enumerate(grads, 1):
        w64 = REFS[case](w64, g.astype(np.float64), state, t, k)
    np.testing.assert_allclose(_run_symgraph(case), w64, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_gradient_buffer_reused_across_steps(case: str) -> None:
    """As a training loop: the weight and gradient are NDArrays, the backward writes each
    step's gradient into the same buffer (the optimizers read it in place)."""
    w, grads = _data()
    w64, state, k = w.astype(np.float64), {}, _kwargs(case)
    for t, g in enumerate(grads, 1):
        w64 = REFS[case](w64, g.astype(np.float64), state, t, k)
    weight, grad = sg.nd.array(w), sg.nd.zeros(w.shape)
    opt = sg.optimizer.create(CASES[case][0], **k)
    opt_state = opt.create_state_multi_precision(0, weight)
    for g in grads:
        grad[:] = g
        opt.update_multi_precision(0, weight, grad, opt_state)
    np.testing.assert_allclose(weight.asnumpy(), w64, rtol=2e-5, atol=2e-5)


MX_SCRIPT = r"""
import json, sys, warnings
import numpy as np
import mxnet as mx
warnings.simplefilter("ignore")
jobs = json.loads(sys.stdin.read())
out = {}
for key, job in jobs.items():
    w = mx.nd.array(np.array(job["w"], np.float32), dtype=job["dtype"])
    opt = mx.optimizer.create(job["name"], multi_precision=job["mp"], **job["kwargs"])
    state = opt.create_state_multi_precision(0, w)
    for g in job["grads"]:
        opt.update_multi_precision(0, w, mx.nd.array(np.array(g, np.float32),
                                                      dtype=job["dtype"]), state)
    out[key] = w.asnumpy().astype(np.float64).tolist()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def mxnet_results() -> dict:
    w, grads = _data()
    jobs = {}
    for case in CASES:
        for dtype, mp in [("float32", False)] + [("float16", True)] * (case in MP_CASES):
            jobs[f"{case}:{dtype}"] = {"name": CASES[case][0], "kwargs": _kwargs(case),
                                       "dtype": dtype, "mp": mp, "w": w.tolist(),
                                       "grads": [g.tolist() for g in grads]}
    return mxnet_json(MX_SCRIPT, jobs)


@pytest.mark.mxnet
@pytest.mark.parametrize("case", sorted(set(CASES) - MX_DEPARTS))
def test_steps_match_mxnet(case: str, mxnet_results: dict) -> None:
    np.testing.assert_allclose(_run_symgraph(case), mxnet_results[f"{case}:float32"],
                               rtol=1e-6, atol=1e-6)


@pytest.mark.mxnet
@pytest.mark.parametrize("case", MP_CASES)
def test_multi_precision_float16_matches_mxnet(case: str, mxnet_results: dict) -> None:
    got = _run_symgraph(case, "float16", mp=True)
    assert got.dtype == np.float16
    # float32 master weights agree to 1e-6; the float16 copies then round alike (one ulp)
    np.testing.assert_allclose(got.astype(np.float64), mxnet_results[f"{case}:float16"],
                               rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("case", MP_CASES + ("lamb",))
def test_multi_precision_follows_the_float32_step(case: str) -> None:
    """A float32 master weight: the float16 copy is the float32 run's weights, rounded."""
    got = _run_symgraph(case, "float16", mp=True).astype(np.float64)
    want = _run_symgraph(case).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)


def test_registered_names_and_namespaces() -> None:
    for name in ("nag", "adadelta", "adamax", "nadam", "ftrl", "ftml", "signum", "sgld",
                 "dcasgd", "lamb", "lars", "lbsgd", "ccsgd", "groupadagrad", "test"):
        assert type(sg.optimizer.create(name)).__name__.lower() == name
    assert sg.optimizer.contrib.GroupAdaGrad is type(sg.optimizer.create("groupadagrad"))
    assert issubclass(sg.optimizer.ccSGD, sg.optimizer.SGD)
    with pytest.raises(DeprecationWarning):
        sg.optimizer.NAG().set_lr_scale({})


def test_sgld_noise_has_the_documented_law() -> None:
    sg.random.seed(5)
    lr, w0 = 0.04, np.zeros((200, 100), np.float32)
    w = w0.copy()
    opt = sg.optimizer.create("sgld", learning_rate=lr)
    opt.update(0, w, np.zeros_like(w), opt.create_state(0, w))
    assert abs(w.std() - math.sqrt(lr)) < 0.02 * math.sqrt(lr) and abs(w.mean()) < 0.01
    w = np.ones((3, 3), np.float32)
    opt = sg.optimizer.create("sgld", learning_rate=0.0, wd=0.1)
    opt.update(0, w, np.full_like(w, 2.0), ())
    np.testing.assert_array_equal(w, 1.0)  # lr 0: no step, no noise


def test_lr_mult_by_index_and_name() -> None:
    opt = sg.optimizer.create("nag", learning_rate=1.0, param_idx2name={0: "a_weight"})
    opt.set_lr_mult({"a_weight": 0.5, 1: 0.25})
    assert opt._get_lr(0) == 0.5 and opt._get_lr(1) == 0.25


def test_bad_input_is_a_typed_error_and_leaves_data() -> None:
    with pytest.raises(AttrError, match="wd_lh"):
        sg.optimizer.create("signum", momentum=0.0, wd_lh=0.1)
    opt = sg.optimizer.create("groupadagrad", wd=0.1, param_idx2name={0: "emb_weight"})
    w = np.ones((3, 2), np.float32)
    state = opt.create_state(0, w)
    with pytest.raises(AttrError, match="emb_weight.*wd=0.1"):
        opt.update(0, w, np.ones_like(w), state)
    np.testing.assert_array_equal(w, 1.0)
    np.testing.assert_array_equal(state[0], 0.0)
    with pytest.raises(ShapeError, match="only 2-d"):
        opt.create_state(0, np.ones(3, np.float32))


def test_module_fit_nag_and_trainer_adamax_train() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 6)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)
    data = sg.sym.var("data")
    net = sg.sym.SoftmaxOutput(sg.sym.FullyConnected(data, num_hidden=2, name="fc"),
                               name="softmax")
    mod = sg.mod.Module(net)
    mod.fit(sg.io.NDArrayIter(x, y, 16), optimizer="nag", num_epoch=8,
            optimizer_params={"learning_rate": 0.5, "momentum": 0.9})
    assert mod.score(sg.io.NDArrayIter(x, y, 16), "acc")[0][1] > 0.9
    dense = sg.gluon.nn.Dense(1)
    dense.initialize()
    trainer = sg.gluon.Trainer(dense.collect_params(), "adamax", {"learning_rate": 0.1})
    target = x @ np.arange(6, dtype=np.float32)
    first = None
    for _ in range(60):
        with sg.autograd.record():
            loss = ((dense(sg.nd.array(x)).reshape((-1,)) - sg.nd.array(target)) ** 2).mean()
        loss.backward()
        trainer.step(1)
        first = float(loss.asnumpy().ravel()[0]) if first is None else first
    assert float(loss.asnumpy().ravel()[0]) < 0.2 * first
