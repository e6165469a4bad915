"""The monitor's backward report: what each op node sends back along each input edge, named as
MXNet's backward nodes (``<node>_backward_output<i>``), checked against a float64 numpy
backpropagation written out by hand, on a graph where one value feeds three edges."""
from __future__ import annotations

import numpy as np

import symgraph as sg


def _net() -> sg.sym.Symbol:
    h = sg.sym.FullyConnected(sg.sym.var("data"), num_hidden=4, name="fc")
    a = sg.sym.tanh(h, name="act")
    return sg.sym.elemwise_add(a, sg.sym.elemwise_mul(a, a, name="sq"), name="out")


def _reference(x, w, b, g) -> dict[str, np.ndarray]:
    """Per-edge gradients in float64: out = a + a*a, a = tanh(x W^T + b), head gradient g."""
    a = np.tanh(x @ w.T + b)
    ga = g + 2 * g * a  # a's three edges: g from out, g*a twice from sq
    gh = ga * (1 - a * a)
    return {"out_backward_output0": g, "out_backward_output1": g,
            "sq_backward_output0": g * a, "sq_backward_output1": g * a,
            "act_backward_output": gh, "fc_backward_output0": gh @ w,
            "fc_backward_output1": gh.T @ x, "fc_backward_output2": gh.sum(0)}


def test_backward_report_per_edge() -> None:
    rng = np.random.default_rng(0)
    x, w, b = rng.normal(size=(3, 5)), rng.normal(size=(4, 5)), rng.normal(size=4)
    g = rng.normal(size=(3, 4))
    exe = _net().simple_bind(sg.cpu(), data=(3, 5), grad_req={"data": "null", "fc_weight":
                                                              "write", "fc_bias": "write"})
    seen: list[tuple[str, np.ndarray]] = []
    exe.set_monitor_callback(lambda name, v: seen.append((name.decode(), v.asnumpy())))
    exe.forward(is_train=True, data=x, fc_weight=w, fc_bias=b)
    forward = [name for name, _ in seen]
    assert forward == ["fc_output", "act_output", "sq_output", "out_output"]
    seen.clear()
    exe.backward(sg.nd.array(g))
    want = _reference(x, w, b, g)
    # MXNet's backward runs the last node first
    assert [n for n, _ in seen] == sorted(want, key=lambda n: ["out", "sq", "act", "fc"].index(
        n.split("_")[0]))
    for name, value in seen:
        np.testing.assert_allclose(value, want[name], rtol=1e-5, atol=1e-6, err_msg=name)
    # the executor's own gradients are untouched by the probe
    np.testing.assert_allclose(exe.grad_dict["fc_weight"].asnumpy(), want[
        "fc_backward_output1"], rtol=1e-5, atol=1e-6)


def test_nodes_without_gradient_are_not_reported() -> None:
    """Only nodes depending on an argument whose gradient is asked for have a backward."""
    x = sg.sym.var("data")
    net = sg.sym.FullyConnected(sg.sym.relu(x, name="pre"), num_hidden=2, name="fc")
    exe = net.simple_bind(sg.cpu(), data=(2, 3), grad_req={"data": "null",
                                                          "fc_weight": "write",
                                                          "fc_bias": "null"})
    names: list[str] = []
    exe.set_monitor_callback(lambda name, v: names.append(name.decode()))
    exe.forward(is_train=True, data=np.ones((2, 3)))
    exe.backward(sg.nd.ones((2, 2)))
    assert [n for n in names if "backward" in n] == [
        "fc_backward_output0", "fc_backward_output1", "fc_backward_output2"]
