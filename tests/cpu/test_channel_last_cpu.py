"""The compiled CPU backend's layout pass (``passes/channel_last`` with oneDNN's policy): which
graphs go NHWC, that their convolutions and max pooling then run compiled on the NHWC values
(no reorders, no numpy fallback), and that they train and infer like the numpy backend's NCHW
graph (the reference)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.compiler.passes.channel_last import CUDNN, ONEDNN, channel_last
from symgraph.core.types.infer_shape import infer_shapes
from symgraph.core.types.infer_type import infer_types
from symgraph.core.types.table import TypeTable

S = sg.sym


def _net() -> S.Symbol:
    """conv-BN-relu, 2x2 max pool, conv-relu, padded 3x3/2 max pool, 1x1 conv, global average
    pool, dense, softmax: each layer kind the pass moves, and a Flatten it must not."""
    x = S.Convolution(S.var("data"), kernel=(3, 3), pad=(1, 1), num_filter=8, name="c1")
    x = S.Activation(S.BatchNorm(x, fix_gamma=False, name="bn1"), act_type="relu")
    x = S.Pooling(x, kernel=(2, 2), stride=(2, 2), name="p1")
    x = S.relu(S.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=8, name="c2"))
    x = S.Pooling(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), name="p2")
    x = S.Convolution(x, kernel=(1, 1), num_filter=6, name="c3")
    x = S.Pooling(x, global_pool=True, pool_type="avg", kernel=(1, 1), name="gap")
    x = S.FullyConnected(S.Flatten(x), num_hidden=5, name="fc")
    return S.SoftmaxOutput(x, name="softmax")


def _run(net: S.Symbol, data_shape: tuple, train: bool) -> tuple[dict, object]:
    rng = np.random.default_rng(3)
    exe = net.simple_bind(sg.cpu(), data=data_shape)
    for k, v in exe.arg_dict.items():
        v[:] = rng.normal(size=v.shape) * (1.0 if k == "data" else 0.3)
    exe.arg_dict["softmax_label"][:] = rng.integers(0, 5, size=data_shape[0])
    for k, v in exe.aux_dict.items():
        v[:] = rng.uniform(0.5, 1.5, size=v.shape) if "var" in k else rng.normal(size=v.shape)
    out = {"out": exe.forward(is_train=train)[0].asnumpy()}
    if train:
        exe.backward()
        out.update({k: g.asnumpy() for k, g in exe.grad_dict.items() if g is not None})
    return out, exe


def _layers(exe: object) -> dict:
    """{step name: layout} of the Convolution and Pooling steps of an executor's training
    schedule, fused groups' heads included."""
    found = {}
    for st in exe._train.schedule.steps:  # type: ignore[attr-defined]
        op, attrs = st.node.op, st.node.attrs
        if op == "_fused" and attrs["head"] is not None:
            op, attrs = attrs["head"][0], attrs["head"][1]
        if op in ("Convolution", "Pooling"):
            found[st.node.name] = attrs["layout"]
    return found


@pytest.mark.parametrize("train", [True, False], ids=["train", "infer"])
def test_a_cnn_runs_nhwc_compiled_and_matches_the_numpy_backend(
        dnnl: None, compiled: Path, monkeypatch: pytest.MonkeyPatch, train: bool) -> None:
    got, exe = _run(_net(), (4, 3, 12, 12), train)
    layouts = _layers(exe)
    assert len(layouts) == 6 and set(layouts.values()) == {"NHWC"}, layouts
    # every convolution call, the max pooling and its unpadded gradient run compiled (the
    # padded window's gradient runs numpy's reference, channels last as first)
    slow = {(s.op, s.node) for s in exe._train.program.fallbacks()}  # type: ignore
    assert not {op for op, _ in slow} & {"Convolution", "_backward_Convolution_data",
                                          "_backward_Convolution_weight", "Pooling"}, slow
    assert not any("_fused" == op and "Pooling" in name and "p1" in name for op, name in slow)
    monkeypatch.setenv("SYMGRAPH_CPU", "numpy")
    want, ref = _run(_net(), (4, 3, 12, 12), train)
    assert len(_layers(ref)) == 6 and set(_layers(ref).values()) == {None}
    assert got.keys() == want.keys()
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_weights_outweighing_the_data_keep_nchw(dnnl: None, compiled: Path) -> None:
    """Batch 1 through wide layers: transposing the weights on every run would cost more than
    the data's reorders save."""
    x = S.relu(S.Convolution(S.var("data"), kernel=(3, 3), pad=(1, 1), num_filter=64, name="a"))
    net = S.sum(S.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=64, name="b"))
    exe = net.simple_bind(sg.cpu(), data=(1, 32, 6, 6), grad_req="null")  # 1152 < 18432 + 36864
    assert set(_layers(exe).values()) == {None}
    exe = net.simple_bind(sg.cpu(), data=(64, 32, 6, 6), grad_req="null")
    assert set(_layers(exe).values()) == {"NHWC"}


def test_nhwc_off_keeps_nchw(dnnl: None, compiled: Path, monkeypatch: pytest.MonkeyPatch
                             ) -> None:
    monkeypatch.setenv("SYMGRAPH_NHWC", "0")
    _, exe = _run(_net(), (4, 3, 12, 12), True)
    assert set(_layers(exe).values()) == {None}


def _typed(net: S.Symbol, dtype: str, **shapes: tuple):
    graph = net.graph()
    return graph.with_types(TypeTable(infer_shapes(graph, shapes),
                                      infer_types(graph, {k: dtype for k in shapes})))


def test_policies_differ_in_dtype_and_pooling() -> None:
    """cuDNN's policy converts narrow convolutions only and leaves pooling NCHW; oneDNN's
    converts float32 and pools NHWC."""
    def ops(graph) -> dict:
        return {n.name: (n.op, n.attrs.get("layout")) for n in graph.nodes()
                if n.op in ("Convolution", "Pooling")}
    g32 = _typed(_net(), "float32", data=(4, 3, 12, 12))
    assert channel_last(g32, CUDNN) is g32
    assert set(ops(channel_last(g32, ONEDNN)).values()) == {("Convolution", "NHWC"),
                                                             ("Pooling", "NHWC")}
    g16 = _typed(_net(), "float16", data=(4, 3, 12, 12))
    cudnn = ops(channel_last(g16, CUDNN))
    assert {v for k, v in cudnn.items() if v[0] == "Pooling"} == {("Pooling", None)}, cudnn
    assert channel_last(g16, ONEDNN) is g16


@pytest.mark.parametrize("nhwc", ["1", "0"], ids=["nhwc", "nchw"])
@pytest.mark.parametrize("window", [(2, 2), (3, 2)], ids=["tiles", "overlapping"])
def test_relu_gradient_runs_in_the_pooling_gradient(
        dnnl: None, compiled: Path, monkeypatch: pytest.MonkeyPatch, nhwc: str,
        window: tuple) -> None:
    """ReLU then max pooling: the ReLU's gradient (``x > 0`` of its output, the pooled data)
    is applied by the pooling gradient's kernel, once per window; gradients as numpy's."""
    monkeypatch.setenv("SYMGRAPH_NHWC", nhwc)
    k, s = window
    x = S.var("data")
    for i, (kk, ss) in enumerate([(k, s), (2, 2)]):
        x = S.Activation(S.Convolution(x, kernel=(3, 3), num_filter=6, name=f"c{i}"),
                         act_type="relu")
        x = S.Pooling(x, kernel=(kk, kk), stride=(ss, ss), name=f"p{i}")
    net = S.SoftmaxOutput(S.FullyConnected(S.Flatten(x), num_hidden=3, name="fc"),
                          name="softmax")

    def grads() -> tuple[dict, set]:
        exe = net.simple_bind(sg.cpu(), data=(8, 3, 20, 20))
        for name, v in exe.arg_dict.items():
            v[:] = rng.integers(0, 3, v.shape) if name == "softmax_label" else \
                rng.normal(size=v.shape)
        exe.forward(is_train=True)
        exe.backward()
        program = exe._train.program
        names = {getattr(f, "__name__", "") for f in getattr(program, "_compiled", [])}
        return {n: g.asnumpy() for n, g in exe.grad_dict.items()}, names
    rng = np.random.default_rng(2)
    got, names = grads()
    assert "max_pool_grad_relu" in names, names
    monkeypatch.setenv("SYMGRAPH_CPU", "numpy")
    rng = np.random.default_rng(2)
    want, _ = grads()
    for n in want:  # (float32 sums of +-40 in another order)
        np.testing.assert_allclose(got[n], want[n], rtol=1e-4,
                                   atol=1e-5 * np.abs(want[n]).max(), err_msg=n)


def test_a_mask_of_another_array_is_not_absorbed() -> None:
    """The pooling gradient applies ``x > 0`` only where that ``x`` is the data it pooled."""
    from symgraph.core.expr import call, inp
    from symgraph.runtime.cpu.layers import absorbs_relu_mask, max_pool_grad
    mask = [inp(0) * call("gt", inp(1), 0.0)]
    assert absorbs_relu_mask(max_pool_grad, mask, (7, 3, 9, 3), 3)
    assert absorbs_relu_mask(max_pool_grad, [call("gt", inp(1), 0.0) * inp(0)], (7, 3, 9, 3), 3)
    assert not absorbs_relu_mask(max_pool_grad, mask, (7, 3, 9, 5), 3)  # another array
    assert not absorbs_relu_mask(max_pool_grad, [inp(0) * call("gt", inp(1), 1.0)],
                                 (7, 3, 9, 3), 3)
    assert not absorbs_relu_mask(None, mask, (7, 3, 9, 3), 3)  # numpy's reference head
