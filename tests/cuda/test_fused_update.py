"""GPU: the fused optimizer step (one kernel for all parameters, inside the backward graph)
against the numpy updater on the CPU: parameters after several steps within 1e-5 relative."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.ndfile import load_dict
from symgraph.interop.test_utils import assert_almost_equal

from .graphs import mlp

pytestmark = pytest.mark.gpu
BATCH, STEPS = 16, 6

CASES = {
    "sgd_mom_wd_clip": ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01,
                                "clip_gradient": 0.05}),
    "sgd_plain_lr_mult": ("sgd", {"learning_rate": 0.2, "wd": 0.001}),
    "sgd_scheduled": ("sgd", {"learning_rate": 0.1, "momentum": 0.5,
                              "lr_scheduler": "factor"}),
    "adam": ("adam", {"learning_rate": 0.01, "wd": 0.01}),
    "rmsprop": ("rmsprop", {"learning_rate": 0.01, "clip_gradient": 1.0}),
    "rmsprop_centered": ("rmsprop", {"learning_rate": 0.01, "centered": True}),
    "adagrad": ("adagrad", {"learning_rate": 0.1, "wd": 0.01}),
    # the other optimizers: fused ones in one kernel, the others (norms, noise, row states)
    # through their numpy step on the device's arrays; the same weights as the CPU either way
    "nag": ("nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}),
    "signum": ("signum", {"learning_rate": 0.01, "momentum": 0.9, "wd_lh": 0.01}),
    "signsgd": ("signum", {"learning_rate": 0.01, "momentum": 0.0}),
    "ftml": ("ftml", {"learning_rate": 0.01, "wd": 0.01}),
    "ftrl": ("ftrl", {"learning_rate": 0.1, "lamda1": 0.01}),
    "adadelta": ("adadelta", {"wd": 0.01}),
    "adamax": ("adamax", {"learning_rate": 0.01, "clip_gradient": 1.0}),
    "nadam": ("nadam", {"learning_rate": 0.01}),
    "dcasgd": ("dcasgd", {"learning_rate": 0.1, "momentum": 0.5}),
    "ccsgd": ("ccsgd", {"learning_rate": 0.1, "momentum": 0.9}),
    "test": ("test", {"learning_rate": 0.1}),
    "lamb": ("lamb", {"learning_rate": 0.01, "wd": 0.01}),
    "lars": ("lars", {"learning_rate": 0.1, "momentum": 0.9}),
    "lbsgd": ("lbsgd", {"learning_rate": 0.1, "momentum": 0.9}),
    "sgld": ("sgld", {"learning_rate": 0.01}),
    "groupadagrad": ("groupadagrad", {"learning_rate": 0.1}),
}


def _data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(BATCH * STEPS, 20)).astype(np.float32),
            rng.integers(0, 10, size=BATCH * STEPS).astype(np.float32))


def _params(params: dict) -> dict:
    params = dict(params)
    if params.pop("lr_scheduler", None):  # lr changes every 2 updates: new scalar tables
        params["lr_scheduler"] = sg.lr_scheduler.FactorScheduler(2, 0.5)
    return params


def _module(ctx, name: str, params: dict) -> sg.mod.Module:
    sym = mlp()
    # GroupAdaGrad updates 2-d weights only (as MXNet's): the biases stay fixed for it
    fixed = [n for n in sym.list_arguments() if n.endswith("_bias")] \
        if name == "groupadagrad" else None
    mod = sg.mod.Module(sym, context=ctx, fixed_param_names=fixed)
    mod.bind([("data", (BATCH, 20))], [("softmax_label", (BATCH,))])
    sg.random.seed(3)
    mod.init_params(sg.init.Xavier())
    mod.init_optimizer(optimizer=name, optimizer_params=_params(params))
    mod._optimizer.set_lr_mult({"fc2_bias": 0.5})
    return mod


def _train(ctx, case: str, fused_step: bool) -> dict:
    name, params = CASES[case]
    mod = _module(ctx, name, params)
    x, y = _data()
    it = sg.io.NDArrayIter(x, y, BATCH)
    for batch in it:
        if fused_step:
            mod.forward_backward_update(batch)
        else:
            mod.forward_backward(batch)
            mod.update()
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


def _close(got: dict, want: dict, what: str) -> None:
    for k in want:
        scale = max(1.0, float(np.abs(want[k]).max()))
        assert_almost_equal(got[k], want[k], rtol=1e-5, atol=1e-5 * scale,
                            names=(f"gpu {what} {k}", "cpu"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_fused_update_matches_cpu(case: str) -> None:
    want = _train(sg.cpu(), case, fused_step=True)
    _close(_train(sg.gpu(0), case, fused_step=True), want, f"{case} (in backward graph)")
    _close(_train(sg.gpu(0), case, fused_step=False), want, f"{case} (update())")


def test_one_launch_per_update() -> None:
    mod = _module(sg.gpu(0), "sgd", CASES["sgd_mom_wd_clip"][1])
    x, y = _data()
    batches = list(sg.io.NDArrayIter(x, y, BATCH))
    mod.forward_backward(batches[0])
    mod.update()
    fused = mod._updater.fused
    launches, uploads = fused.launches, fused.uploads
    mod.forward_backward(batches[1])
    mod.update()  # eager path: one launch, no copy (SGD's scalars do not change)
    assert (fused.launches - launches, fused.uploads - uploads) == (1, 0)
    tail = mod._update_tail()
    assert len(tail.closures(mod._exec._env.ptrs, mod._exec.train_program.stream)) == 1
    for b in batches[2:]:  # in the backward graph: after capture no host launch at all
        mod.forward_backward_update(b)
    n = fused.launches
    mod.forward_backward_update(batches[0])
    assert fused.launches == n


def test_fit_matches_cpu_and_states_round_trip(tmp_path) -> None:
    x, y = _data(1)
    got, seen, history = [], [], []
    for ctx in (sg.cpu(), sg.gpu(0)):
        sg.random.seed(5)
        mod = sg.mod.Module(mlp(), context=ctx)
        counts: list = []
        seen.append(counts)  # a batch's callback sees that batch in the metric (GPU: deferred)
        mod.fit(sg.io.NDArrayIter(x, y, BATCH), num_epoch=2, optimizer="sgd",
                optimizer_params={"learning_rate": 0.05, "momentum": 0.9},
                initializer=sg.init.Xavier(), progress_bar=False,
                batch_end_callback=lambda p: counts.append((p.nbatch, p.eval_metric.num_inst)))
        got.append({k: v.asnumpy() for k, v in mod.get_params()[0].items()})
        history.append([h["train-accuracy"] for h in mod.history])
        mod.save_checkpoint(str(tmp_path / ctx.device_type), 2, save_optimizer_states=True)
    _close(got[1], got[0], "fit")
    assert seen[1] == seen[0] == [(k, (k + 1) * BATCH) for k in range(STEPS)] * 2
    np.testing.assert_allclose(history[1], history[0], atol=1.5 / (BATCH * STEPS))
    cpu = load_dict(tmp_path / "cpu-0002.states")
    gpu = load_dict(tmp_path / "gpu-0002.states")
    for k in cpu:
        np.testing.assert_allclose(gpu[k], cpu[k], rtol=1e-5, atol=1e-6)
    mod2 = sg.mod.Module.load(str(tmp_path / "gpu"), 2, load_optimizer_states=True,
                              context=sg.gpu(0))
    mod2.bind([("data", (BATCH, 20))], [("softmax_label", (BATCH,))])
    mod2.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.05,
                                                           "momentum": 0.9})
    states = mod2._updater.get_states()
    for k in cpu:
        np.testing.assert_allclose(states[k], gpu[k])
