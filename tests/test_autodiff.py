"""Autodiff: fan-out, head gradients, no-path zeros, BlockGrad, second derivatives."""
from __future__ import annotations

import numpy as np

import symgraph as sg
from symgraph.interop.test_utils import assert_almost_equal, check_numeric_gradient

S = sg.sym


def _grads(sym, values: dict, out_grads=None, req="write") -> dict:
    args = {k: sg.nd.array(v, dtype=np.float64) for k, v in values.items()}
    grads = {k: sg.nd.zeros(v.shape, dtype=np.float64) for k, v in values.items()}
    exe = sym.bind(sg.cpu(), args, args_grad=grads, grad_req=req)
    exe.forward(is_train=True)
    exe.backward(None if out_grads is None else [sg.nd.array(g, dtype=np.float64)
                                                 for g in out_grads])
    return {k: v.asnumpy() for k, v in exe.grad_dict.items()}


def test_fan_out_gradients_are_summed(rng) -> None:
    x = S.var("x")
    y = x * x + S.exp(x) + x  # x used four times
    xv = rng.normal(size=(3, 4))
    g = _grads(y, {"x": xv})
    assert_almost_equal(g["x"], 2 * xv + np.exp(xv) + 1, 1e-12, 1e-12)


def test_head_gradients_are_honoured(rng) -> None:
    x = S.var("x")
    y = S.tanh(x)
    xv, hv = rng.normal(size=(2, 5)), rng.normal(size=(2, 5))
    g = _grads(y, {"x": xv}, [hv])
    assert_almost_equal(g["x"], hv * (1 - np.tanh(xv) ** 2), 1e-12, 1e-12)


def test_multiple_outputs_each_with_head_gradient(rng) -> None:
    x = S.var("x")
    net = S.Group([S.exp(x), x * 3])
    xv, h1, h2 = (rng.normal(size=(4,)) for _ in range(3))
    g = _grads(net, {"x": xv}, [h1, h2])
    assert_almost_equal(g["x"], h1 * np.exp(xv) + 3 * h2, 1e-12, 1e-12)


def test_argument_without_path_gets_zeros(rng) -> None:
    x, unused = S.var("x"), S.var("u")
    net = S.Group([S.exp(x), S.BlockGrad(unused)])
    g = _grads(net, {"x": rng.normal(size=(3,)), "u": rng.normal(size=(2,))})
    np.testing.assert_array_equal(g["u"], np.zeros(2))


def test_blockgrad_stops_flow(rng) -> None:
    x, w = S.var("x"), S.var("w")
    y = S.BlockGrad(x * 2) * w
    xv, wv = rng.normal(size=(3,)), rng.normal(size=(3,))
    g = _grads(y, {"x": xv, "w": wv})
    np.testing.assert_array_equal(g["x"], np.zeros(3))
    assert_almost_equal(g["w"], 2 * xv, 1e-12, 1e-12)


def test_grad_req_add_accumulates_and_null_skips(rng) -> None:
    x, w = S.var("x"), S.var("w")
    y = x * w
    xv, wv = rng.normal(size=(3,)), rng.normal(size=(3,))
    args = {"x": sg.nd.array(xv, dtype=np.float64), "w": sg.nd.array(wv, dtype=np.float64)}
    gx = sg.nd.array(np.ones(3), dtype=np.float64)
    gw = sg.nd.array(np.full(3, 7.0), dtype=np.float64)
    exe = y.bind(sg.cpu(), args, {"x": gx, "w": gw}, grad_req={"x": "add", "w": "null"})
    for _ in range(2):
        exe.forward(is_train=True)
        exe.backward()
    assert_almost_equal(gx.asnumpy(), 1 + 2 * wv, 1e-12, 1e-12)
    np.testing.assert_array_equal(gw.asnumpy(), np.full(3, 7.0))


def test_symbol_gradient_is_a_real_symbol(rng) -> None:
    x, y = S.var("x"), S.var("y")
    f = S.sum(x * x * y)
    grads = f.gradient(["x", "y"])
    assert len(grads) == 2
    xv, yv = rng.normal(size=(4,)), rng.normal(size=(4,))
    exe = grads.bind(sg.cpu(), {"x": sg.nd.array(xv, dtype=np.float64),
                                "y": sg.nd.array(yv, dtype=np.float64)})
    gx, gy = (o.asnumpy() for o in exe.forward())
    assert_almost_equal(gx, 2 * xv * yv, 1e-12, 1e-12)
    assert_almost_equal(gy, xv * xv, 1e-12, 1e-12)


def test_second_derivative(rng) -> None:
    """d/dx of d/dx sum(x^3 * sin-free stuff) == 6x (+ exp for the exp term)."""
    x = S.var("x")
    f = S.sum(x * x * x + S.exp(x) + S.tanh(x))
    first = f.gradient(["x"])          # 3x^2 + e^x + 1 - tanh^2
    second = first.gradient(["x"])     # 6x + e^x - 2 tanh (1 - tanh^2)
    xv = rng.normal(size=(5,))
    out = second.bind(sg.cpu(), {"x": sg.nd.array(xv, dtype=np.float64)}).forward()[0]
    t = np.tanh(xv)
    assert_almost_equal(out, 6 * xv + np.exp(xv) - 2 * t * (1 - t * t), 1e-10, 1e-10)


def test_gradient_graph_passes_numeric_check(rng) -> None:
    x, w = S.var("x"), S.var("w")
    f = S.sum(S.FullyConnected(x, w, num_hidden=3, no_bias=True, name="fc") ** 2)
    first = f.gradient(["w"])
    check_numeric_gradient(first, {"x": rng.normal(size=(2, 4)), "w": rng.normal(size=(3, 4))})
