"""Forward and backward of window and normalisation ops against PyTorch CPU (float64), a second
independent reference beside the naive loops of the registry cases."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.interop.test_utils import assert_almost_equal

torch = pytest.importorskip("torch")
F = torch.nn.functional
S = sg.sym


def _run(sym, values: dict, head: np.ndarray) -> tuple:
    """Training forward and backward on symgraph (aux states: mean 0, variance 1)."""
    aux_shapes = sym.infer_shape(**{k: v.shape for k, v in values.items()})[2]
    aux = {k: sg.nd.array(np.zeros(s) if "mean" in k else np.ones(s), dtype=np.float64)
           for k, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    exe = sym.bind(sg.cpu(), {k: sg.nd.array(v, dtype=np.float64) for k, v in values.items()},
                   args_grad={k: sg.nd.zeros(v.shape, dtype=np.float64)
                              for k, v in values.items()},
                   aux_states=aux or None)
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward(sg.nd.array(head, dtype=np.float64))
    return out, {k: g.asnumpy() for k, g in exe.grad_dict.items()}


def _torch(fn, values: dict, head: np.ndarray) -> tuple:
    t = {k: torch.tensor(v, requires_grad=True) for k, v in values.items()}
    out = fn(**t)
    out.backward(torch.tensor(head))
    return out.detach().numpy(), {k: v.grad.numpy() for k, v in t.items()}


def _compare(sym, fn, values: dict, seed: int = 0) -> None:
    out_shape = sym.infer_shape(**{k: v.shape for k, v in values.items()})[1][0]
    head = np.random.default_rng(seed).normal(size=out_shape)
    ours, our_grads = _run(sym, values, head)
    theirs, their_grads = _torch(fn, values, head)
    assert_almost_equal(ours, theirs, 1e-9, 1e-9, ("symgraph", "torch"))
    for k in values:
        assert_almost_equal(our_grads[k], their_grads[k], 1e-9, 1e-9, (f"d{k}", "torch"))


def test_deconvolution_matches_conv_transpose() -> None:
    rng = np.random.default_rng(1)
    values = {"x": rng.normal(size=(2, 4, 5, 4)), "w": rng.normal(size=(4, 3, 3, 2)),
              "b": rng.normal(size=6)}
    sym = S.Deconvolution(S.var("x"), S.var("w"), S.var("b"), kernel=(3, 2), stride=(2, 3),
                          pad=(1, 0), adj=(1, 2), dilate=(1, 2), num_filter=6, num_group=2,
                          no_bias=False)
    _compare(sym, lambda x, w, b: F.conv_transpose2d(
        x, w, b, stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2,
        dilation=(1, 2)), values)


def test_grouped_convolution_3d() -> None:
    rng = np.random.default_rng(2)
    values = {"x": rng.normal(size=(2, 4, 5, 4, 6)), "w": rng.normal(size=(6, 2, 2, 3, 3))}
    sym = S.Convolution(S.var("x"), S.var("w"), kernel=(2, 3, 3), stride=(2, 1, 2),
                        pad=(1, 1, 0), dilate=(1, 1, 2), num_filter=6, num_group=2,
                        no_bias=True)
    _compare(sym, lambda x, w: F.conv3d(x, w, stride=(2, 1, 2), padding=(1, 1, 0),
                                        dilation=(1, 1, 2), groups=2), values)


@pytest.mark.parametrize("pool_type, full", [("max", False), ("max", True), ("avg", True)])
def test_pooling(pool_type: str, full: bool) -> None:
    values = {"x": np.random.default_rng(3).normal(size=(2, 3, 9, 8))}
    sym = S.Pooling(S.var("x"), kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type=pool_type,
                    pooling_convention="full" if full else "valid")
    fn = F.max_pool2d if pool_type == "max" else F.avg_pool2d
    _compare(sym, lambda x: fn(x, 3, 2, 1, ceil_mode=full), values)


def test_batchnorm_training() -> None:
    rng = np.random.default_rng(4)
    values = {"x": rng.normal(size=(4, 3, 2, 5)) * 2 + 1, "g": rng.uniform(0.5, 1.5, 3),
              "b": rng.normal(size=3)}
    sym = S.BatchNorm(S.var("x"), S.var("g"), S.var("b"), fix_gamma=False, eps=1e-3,
                      name="bn")
    _compare(sym, lambda x, g, b: F.batch_norm(x, None, None, g, b, training=True, eps=1e-3),
             values)


def test_log_softmax_and_gelu() -> None:
    values = {"x": np.random.default_rng(5).normal(size=(3, 7))}
    _compare(S.log_softmax(S.var("x"), axis=1), lambda x: F.log_softmax(x, 1), values)
    _compare(S.LeakyReLU(S.var("x"), act_type="gelu"),
             lambda x: F.gelu(x), values)  # the erf form, as MXNet 1.9.1
    _compare(S.LeakyReLU(S.var("x"), act_type="selu"), lambda x: F.selu(x), values)
