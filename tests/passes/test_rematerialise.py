"""rematerialise: the backward recomputes BatchNorm outputs (from the saved batch statistics),
ReLUs and residual sums instead of keeping them from the forward. Gradients equal those of
the graph without the pass (bitwise on the numpy backend: the copies run the same code) and
central finite differences in float64; the forward copies die in the forward; the planned
arena of a small residual network shrinks; ``SYMGRAPH_REMAT=0`` turns it off."""
import numpy as np
import pytest

import symgraph as sg
from symgraph.core import config
from symgraph.core.base import SymgraphError

S = sg.sym


def _net(channels: int = 4):
    """conv -> BN -> ReLU -> conv -> BN, + shortcut -> ReLU -> conv -> dense -> softmax."""
    def conv(h, name):
        return S.Convolution(h, num_filter=channels, kernel=(3, 3), pad=(1, 1), name=name)
    r1 = S.Activation(S.BatchNorm(conv(S.var("data"), "c1"), fix_gamma=False, name="b1"),
                      act_type="relu", name="r1")
    b2 = S.BatchNorm(conv(r1, "c2"), fix_gamma=False, name="b2")
    r2 = S.Activation(b2 + r1, act_type="relu", name="r2")
    return S.SoftmaxOutput(S.FullyConnected(conv(r2, "c3"), num_hidden=3, name="fc"),
                           name="softmax")


def _bind(sym, remat: bool, dtype=np.float32, **shapes):
    reqs = {n: ("null" if n in ("data", "softmax_label") else "write")
            for n in sym.list_arguments()}
    with config.override("SYMGRAPH_REMAT", "1" if remat else "0"):
        exe = sym.simple_bind(sg.cpu(), grad_req=reqs, type_dict={"data": dtype}, **shapes)
        exe._train  # (built inside the override)
    rng = np.random.default_rng(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.integers(0, 3, arr.shape) if name == "softmax_label" \
            else rng.normal(size=arr.shape)
    return exe


def _step(exe) -> dict:
    exe.forward(is_train=True)
    exe.backward()
    return {k: g.asnumpy().copy() for k, g in exe.grad_dict.items() if g is not None}


def test_gradients_bitwise_equal_to_the_graph_without_it() -> None:
    shape = (2, 3, 6, 6)
    on, off = _bind(_net(), True, data=shape), _bind(_net(), False, data=shape)
    names = [st.node.name for st in on._train.schedule.steps]
    assert sum("_remat" in n for n in names) >= 2, names
    assert not any(n.endswith("_remat") for n in
                   (st.node.name for st in off._train.schedule.steps))
    a, b = _step(on), _step(off)
    assert a.keys() == b.keys() and len(a) == 12
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    for name in ("b1_moving_mean", "b2_moving_var"):
        np.testing.assert_array_equal(on.aux_dict[name].asnumpy(), off.aux_dict[name].asnumpy())


def test_forward_relu_and_batchnorm_outputs_die_in_the_forward() -> None:
    exe = _bind(_net(), True, data=(2, 3, 6, 6))
    sch = exe._train.schedule
    nf = sch.n_forward_steps
    from symgraph.compiler.memory_plan import lifetimes
    first, last = lifetimes(sch)
    kept = {s for s, k in first.items() if k < nf and last[s] >= nf}
    # what stays for the backward: convolution outputs, BN statistics, the loss's output (and
    # on the compiled CPU backend the layout pass's transposes: the data and weights into
    # NHWC/OHWI, the last convolution's output back to NCHW for the dense layer)
    writers = {o: st.node for st in sch.steps[:nf] for o in st.outputs}
    big = [writers[s] for s in kept if np.prod(sch.shapes[s]) > 16]
    assert big and all(n.op in ("Convolution", "SoftmaxOutput", "FullyConnected", "transpose")
                       for n in big), [(n.op, n.name) for n in big]


def _loss_of(sym_out):
    return S.MakeLoss(S.sum(S.square(sym_out)))


def test_gradients_against_float64_central_differences() -> None:
    x = S.var("data")
    c = S.Convolution(x, num_filter=2, kernel=(3, 3), pad=(1, 1), name="c")
    r = S.Activation(S.BatchNorm(c, fix_gamma=False, name="bn"), act_type="relu")
    net = _loss_of(S.FullyConnected(r + S.tanh(r), num_hidden=2, name="fc"))
    exe = _bind(net, True, np.float64, data=(3, 2, 4, 4))
    names = [st.node.name for st in exe._train.schedule.steps]
    assert any("_remat" in n for n in names), names
    grads = _step(exe)
    w = exe.arg_dict["c_weight"]
    base = w.asnumpy().copy()
    h = 1e-6
    for idx in [(0, 0, 0, 0), (1, 1, 2, 1), (0, 1, 1, 2)]:
        vals = []
        for d in (h, -h):
            p = base.copy()
            p[idx] += d
            w[:] = p
            vals.append(float(exe.forward(is_train=True)[0].asnumpy().sum()))
        w[:] = base
        fd = (vals[0] - vals[1]) / (2 * h)
        np.testing.assert_allclose(grads["c_weight"][idx], fd, rtol=1e-6, atol=1e-8)


def _deep(blocks: int):
    """``blocks`` residual blocks of conv -> BN -> (+ shortcut) -> ReLU, 16 channels."""
    h = S.Convolution(S.var("data"), num_filter=16, kernel=(3, 3), pad=(1, 1), name="stem")
    for i in range(blocks):
        c = S.Convolution(h, num_filter=16, kernel=(3, 3), pad=(1, 1), name=f"c{i}")
        h = S.Activation(S.BatchNorm(c, fix_gamma=False, name=f"b{i}") + h, act_type="relu")
    return S.SoftmaxOutput(S.FullyConnected(h, num_hidden=3, name="fc"), name="softmax")


def test_planned_arena_shrinks_on_a_residual_network() -> None:
    shape, act = (8, 3, 16, 16), 8 * 16 * 16 * 16 * 4  # one activation: 128 KiB
    on = _bind(_deep(6), True, data=shape)._train.schedule.plan.arena_bytes
    off = _bind(_deep(6), False, data=shape)._train.schedule.plan.arena_bytes
    assert on <= off - 2 * act, (on, off)


def test_inference_graph_and_bad_setting(monkeypatch) -> None:
    sym = _net()
    exe = sym.simple_bind(sg.cpu(), grad_req="null", data=(2, 3, 6, 6))
    out = exe.forward(is_train=False)[0].asnumpy()
    assert out.shape == (2, 3) and np.allclose(out.sum(axis=1), 1.0)
    monkeypatch.setenv("SYMGRAPH_REMAT", "maybe")
    with pytest.raises(SymgraphError, match="SYMGRAPH_REMAT='maybe'"):
        config.get("SYMGRAPH_REMAT")


@pytest.mark.gpu
def test_gpu_gradients_match_without_it() -> None:
    shape = (4, 3, 8, 8)
    grads = []
    for remat in ("1", "0"):
        with config.override("SYMGRAPH_REMAT", remat):
            sym = _net(8)
            reqs = {n: ("null" if n in ("data", "softmax_label") else "write")
                    for n in sym.list_arguments()}
            exe = sym.simple_bind(sg.gpu(0), grad_req=reqs, data=shape)
            rng = np.random.default_rng(0)
            for name, arr in exe.arg_dict.items():
                arr[:] = rng.integers(0, 3, arr.shape) if name == "softmax_label" \
                    else rng.normal(size=arr.shape)
            grads.append(_step(exe))
    for k in grads[0]:
        np.testing.assert_allclose(grads[0][k], grads[1][k], rtol=1e-4, atol=1e-5, err_msg=k)
