"""Executor: binding, running, and refusing bad input without touching anything."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.interop.test_utils import assert_almost_equal

S = sg.sym


def mlp():
    net = S.FullyConnected(S.var("data"), num_hidden=128, name="fc1")
    net = S.Activation(net, act_type="relu", name="relu1")
    net = S.FullyConnected(net, num_hidden=64, name="fc2")
    net = S.Activation(net, act_type="relu", name="relu2")
    net = S.FullyConnected(net, num_hidden=10, name="fc3")
    return S.SoftmaxOutput(net, name="softmax")


def numpy_mlp(p: dict, x: np.ndarray, label: np.ndarray) -> tuple[np.ndarray, dict]:
    """Independent float64 forward and backward of the MLP with softmax cross-entropy."""
    h1 = x @ p["fc1_weight"].T + p["fc1_bias"]
    a1 = np.maximum(h1, 0)
    h2 = a1 @ p["fc2_weight"].T + p["fc2_bias"]
    a2 = np.maximum(h2, 0)
    z = a2 @ p["fc3_weight"].T + p["fc3_bias"]
    e = np.exp(z - z.max(1, keepdims=True))
    prob = e / e.sum(1, keepdims=True)
    dz = prob.copy()
    dz[np.arange(len(label)), label.astype(int)] -= 1
    g = {"fc3_weight": dz.T @ a2, "fc3_bias": dz.sum(0)}
    da2 = dz @ p["fc3_weight"] * (h2 > 0)
    g.update(fc2_weight=da2.T @ a1, fc2_bias=da2.sum(0))
    da1 = da2 @ p["fc2_weight"] * (h1 > 0)
    g.update(fc1_weight=da1.T @ x, fc1_bias=da1.sum(0), data=da1 @ p["fc1_weight"])
    return prob, g


def test_mlp_simple_bind_forward_backward_match_float64_numpy(rng) -> None:
    net = mlp()
    exe = net.simple_bind(sg.cpu(), data=(64, 784), type_dict={"data": "float64"})
    assert exe.arg_dict["fc1_weight"].shape == (128, 784)
    params = {k: rng.normal(scale=0.05, size=v.shape) for k, v in exe.arg_dict.items()
              if k not in ("data", "softmax_label")}
    x = rng.uniform(size=(64, 784))
    label = rng.integers(0, 10, 64).astype(np.float64)
    exe.copy_params_from({k: sg.nd.array(v, dtype=np.float64) for k, v in params.items()})
    out = exe.forward(is_train=True, data=x, softmax_label=label)[0].asnumpy()
    exe.backward()
    prob, grads = numpy_mlp(params, x, label)
    assert_almost_equal(out, prob, 1e-10, 1e-12)
    for k, want in grads.items():
        assert_almost_equal(exe.grad_dict[k].asnumpy(), want, 1e-9, 1e-12, (k, "numpy"))


def test_float32_matches_float64_reference(rng) -> None:
    net = mlp()
    exe = net.simple_bind(sg.cpu(), data=(8, 784))
    assert exe.arg_dict["fc1_weight"].dtype == np.float32
    params = {k: rng.normal(scale=0.05, size=v.shape) for k, v in exe.arg_dict.items()
              if k not in ("data", "softmax_label")}
    for k, v in params.items():
        exe.arg_dict[k][:] = v
    x, label = rng.uniform(size=(8, 784)), rng.integers(0, 10, 8).astype(np.float64)
    out = exe.forward(is_train=True, data=x, softmax_label=label)[0]
    exe.backward()
    prob, grads = numpy_mlp(params, x, label)
    assert out.dtype == np.float32
    assert_almost_equal(out, prob, 1e-4, 1e-6)
    assert_almost_equal(exe.grad_dict["fc1_weight"], grads["fc1_weight"], 1e-3, 1e-5)


def test_bind_with_lists_and_outputs_are_persistent(rng) -> None:
    x = S.var("x")
    y = S.exp(x)
    xa = sg.nd.array(rng.normal(size=(3,)))
    exe = y.bind(sg.cpu(), [xa], args_grad=[sg.nd.zeros((3,))])
    out = exe.outputs[0]
    exe.forward(x=np.zeros(3))
    assert out is exe.outputs[0] and list(exe.output_dict.values())[0] is out
    np.testing.assert_allclose(out.asnumpy(), np.ones(3))
    exe.forward(x=np.ones(3))
    np.testing.assert_allclose(out.asnumpy(), np.full(3, np.e), rtol=1e-6)


def test_missing_and_extra_bind_arguments() -> None:
    net = S.FullyConnected(S.var("x"), num_hidden=2, name="fc")
    with pytest.raises(sg.BindError, match=r"missing arrays for \['fc_bias'\]"):
        net.bind(sg.cpu(), {"x": sg.nd.zeros((1, 3)), "fc_weight": sg.nd.zeros((2, 3))})
    with pytest.raises(sg.BindError, match=r"\['zzz'\] are not arguments"):
        net.bind(sg.cpu(), {"x": sg.nd.zeros((1, 3)), "fc_weight": sg.nd.zeros((2, 3)),
                            "fc_bias": sg.nd.zeros((2,)), "zzz": sg.nd.zeros((1,))})
    with pytest.raises(sg.BindError, match="2 arrays given for 3 names"):
        net.bind(sg.cpu(), [sg.nd.zeros((1, 3)), sg.nd.zeros((2, 3))])
    with pytest.raises(sg.BindError, match="expected an NDArray"):
        net.bind(sg.cpu(), [np.zeros((1, 3)), sg.nd.zeros((2, 3)), sg.nd.zeros((2,))])


def test_bind_arrays_of_wrong_shape_or_dtype() -> None:
    net = S.FullyConnected(S.var("x"), num_hidden=2, name="fc")
    with pytest.raises(sg.ShapeError, match=r"fc \(FullyConnected\): weight has shape \(2, 4\)"):
        net.bind(sg.cpu(), [sg.nd.zeros((1, 3)), sg.nd.zeros((2, 4)), sg.nd.zeros((2,))])
    with pytest.raises(sg.DTypeError, match=r"fc \(FullyConnected\)"):
        net.bind(sg.cpu(), [sg.nd.zeros((1, 3)), sg.nd.zeros((2, 3), dtype=np.float64),
                            sg.nd.zeros((2,))])
    with pytest.raises(sg.BindError, match="gradient x"):
        net.bind(sg.cpu(), [sg.nd.zeros((1, 3)), sg.nd.zeros((2, 3)), sg.nd.zeros((2,))],
                 args_grad={"x": sg.nd.zeros((1, 4))})
    with pytest.raises(sg.BindError, match="grad_req"):
        net.bind(sg.cpu(), [sg.nd.zeros((1, 3)), sg.nd.zeros((2, 3)), sg.nd.zeros((2,))],
                 args_grad={"x": sg.nd.zeros((1, 3))}, grad_req="sometimes")


def test_forward_refuses_bad_arrays_and_writes_nothing(rng) -> None:
    net = S.FullyConnected(S.var("x"), num_hidden=2, name="fc")
    exe = net.simple_bind(sg.cpu(), x=(2, 3))
    before = {k: v.asnumpy() for k, v in exe.arg_dict.items()}
    with pytest.raises(sg.BindError, match=r"forward x: shape \(2, 4\)"):
        exe.forward(fc_bias=np.ones(2), x=np.ones((2, 4)))
    with pytest.raises(sg.BindError, match=r"\['y'\] are not arguments"):
        exe.forward(x=np.ones((2, 3)), y=np.ones(1))
    with pytest.raises(sg.BindError, match="dtype float64"):
        exe.forward(x=sg.nd.ones((2, 3), dtype=np.float64))
    for k, v in exe.arg_dict.items():
        np.testing.assert_array_equal(v.asnumpy(), before[k])


def test_backward_without_forward_uses_the_bound_inputs() -> None:
    """MXNet: backward() with no forward differentiates at the bound arrays."""
    exe = S.exp(S.var("x")).simple_bind(sg.cpu(), x=(2,))
    exe.arg_dict["x"][:] = np.array([0.5, -1.0])
    exe.backward(sg.nd.array([2.0, 1.0]))
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), np.exp([0.5, -1.0]) * [2, 1],
                               rtol=1e-6)


def test_backward_after_inference_forward_uses_its_inputs() -> None:
    """MXNet: a plain forward() then backward() differentiates at the last forward's inputs."""
    exe = S.exp(S.var("x")).simple_bind(sg.cpu(), x=(2,))
    exe.forward(is_train=True, x=np.array([0.0, 1.0]))
    exe.forward(x=np.array([2.0, -1.0]))
    exe.backward(sg.nd.array([1.0, 3.0]))
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), np.exp([2.0, -1.0]) * [1, 3],
                               rtol=1e-6)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), np.exp([2.0, -1.0]), rtol=1e-6)


def test_backward_out_grads_checked() -> None:
    exe = S.exp(S.var("x")).simple_bind(sg.cpu(), x=(2,))
    exe.forward(is_train=True)
    with pytest.raises(sg.BindError, match="out_grads 0: shape"):
        exe.backward([sg.nd.ones((3,))])


def test_copy_params_from_checks_names_and_shapes(rng) -> None:
    exe = S.FullyConnected(S.var("x"), num_hidden=2, name="fc").simple_bind(sg.cpu(), x=(1, 3))
    with pytest.raises(sg.BindError, match="'nope' is not an argument"):
        exe.copy_params_from({"fc_weight": sg.nd.ones((2, 3)), "nope": sg.nd.ones((1,))})
    np.testing.assert_array_equal(exe.arg_dict["fc_weight"].asnumpy(), np.zeros((2, 3)))
    with pytest.raises(sg.BindError, match="fc_bias: shape"):
        exe.copy_params_from({"fc_bias": sg.nd.ones((3,))})
    exe.copy_params_from({"fc_bias": sg.nd.ones((2,)), "nope": sg.nd.ones((1,))},
                         allow_extra_params=True)
    np.testing.assert_array_equal(exe.arg_dict["fc_bias"].asnumpy(), np.ones(2))


def test_debug_str_lists_steps() -> None:
    exe = mlp().simple_bind(sg.cpu(), data=(4, 784))
    text = exe.debug_str()
    assert "FullyConnected" in text and "fc1" in text and "_backward_SoftmaxOutput" in text
    assert "memory plan" in text


def test_train_step_with_out_grads_and_inference_mode(rng) -> None:
    """``train_step(out_grads=, is_train=)``: one run equals forward + backward(out_grads);
    ``is_train=False`` runs Dropout as the identity inside the training graph."""
    x0 = rng.normal(size=(3, 4))
    sym = sg.sym.Dropout(sg.sym.var("x") * 2, p=0.5)
    g = sg.nd.zeros((3, 4), dtype=np.float64)
    exe = sym.bind(sg.cpu(), {"x": sg.nd.array(x0, dtype=np.float64)}, args_grad={"x": g})
    head = rng.normal(size=(3, 4))
    out = exe.train_step(out_grads=[sg.nd.array(head, dtype=np.float64)], is_train=False)
    np.testing.assert_allclose(out[0].asnumpy(), 2 * x0)
    np.testing.assert_allclose(g.asnumpy(), 2 * head)
    with pytest.raises(sg.BindError, match="2 out_grads for 1 outputs"):
        exe.train_step(out_grads=[None, None])
