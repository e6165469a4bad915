"""A fused group headed by BatchNorm runs as one kernel on the compiled CPU backend
(``runtime/cpu/norm.BatchNormGroup``): a ResNet block's BatchNorm + ReLU and BatchNorm +
residual add + ReLU in inference (in training the ReLU groups also output the backward's mask,
and ``fuse_bn_epilogue`` leaves them apart) give the numpy backend's outputs; training, beside,
its gradients and moving statistics."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cpu.norm import BatchNormGroup

S = sg.sym


def _block() -> sg.sym.Symbol:
    x = S.var("data")
    a = S.relu(S.BatchNorm(S.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=4,
                                         name="c1"), fix_gamma=False, name="bn1"))
    b = S.BatchNorm(S.Convolution(a, kernel=(3, 3), pad=(1, 1), num_filter=4, name="c2"),
                    fix_gamma=False, name="bn2")
    return S.sum(S.relu(b + x) * S.var("w"))


def _run(dtype: str, is_train: bool, values: dict) -> tuple[list, dict, dict, list]:
    net = _block()
    exe = net.simple_bind(sg.cpu(), data=(2, 4, 6, 6), w=(2, 4, 6, 6), type_dict={
        "data": dtype, "w": dtype})
    for k, v in values.items():
        target = exe.arg_dict.get(k, exe.aux_dict.get(k))
        target[:] = v.astype(target.dtype)
    outs = [o.asnumpy().astype(np.float64) for o in exe.forward(is_train=is_train)]
    grads, aux = {}, {k: v.asnumpy().astype(np.float64) for k, v in exe.aux_dict.items()}
    if is_train:
        exe.backward()
        grads = {k: v.asnumpy().astype(np.float64) for k, v in exe.grad_dict.items()}
    program = (exe._train if is_train else exe._infer).program
    return outs, grads, aux, [type(f).__name__ for f in getattr(program, "_compiled", [])]


@pytest.mark.parametrize("dtype,tol", [("float32", 2e-5), ("bfloat16", 3e-2)])
@pytest.mark.parametrize("is_train", [True, False])
def test_batchnorm_groups_match_the_numpy_backend(
        compiled: Path, monkeypatch: pytest.MonkeyPatch, dtype: str, tol: float,
        is_train: bool) -> None:
    rng = np.random.default_rng(0)
    shapes = _block().infer_shape(data=(2, 4, 6, 6), w=(2, 4, 6, 6))
    names = _block().list_arguments() + _block().list_auxiliary_states()
    values = {n: rng.normal(size=s) * 0.5 for n, s in zip(names, shapes[0] + shapes[2])}
    for k in values:
        if k.endswith("moving_var"):
            values[k] = np.abs(values[k]) + 0.5
    got = _run(dtype, is_train, values)
    if not is_train and dtype == "float32":  # (training's ReLU groups also output the
        # backward's mask, and bfloat16 data with float32 parameters runs BatchNorm's numpy
        # reference: neither is fused)
        assert got[3].count(BatchNormGroup.__name__) == 2, got[3]  # one kernel per block
    monkeypatch.setenv("SYMGRAPH_CPU", "numpy")
    want = _run(dtype, is_train, values)
    for g, w in zip(got[0], want[0]):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
    for part in (1, 2):
        for k in want[part]:
            np.testing.assert_allclose(got[part][k], want[part][k], rtol=tol, atol=tol,
                                       err_msg=k)
