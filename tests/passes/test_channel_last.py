"""channel_last: which convolutions go NHWC, and that a converted graph trains like the original.

The CUDA backend runs the pass before autodiff; here it is turned on for the numpy backend, whose
channels-last convolution runs the same kernel on moved axes, so values match to the order of
BatchNorm's sums."""
import ml_dtypes
import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.backend import numpy_backend
from symgraph.compiler.passes.channel_last import channel_last
from symgraph.compiler.passes.verify import verify

from .util import declared, ops_of

S = sg.sym
BF16 = np.dtype(ml_dtypes.bfloat16)


def _conv_bn(x, name: str, filters: int, stride: int = 1):
    x = S.Convolution(x, num_filter=filters, kernel=(3, 3), stride=(stride, stride),
                      pad=(1, 1), no_bias=True, name=f"{name}_conv")
    return S.BatchNorm(x, fix_gamma=False, name=f"{name}_bn")


def small_resnet():
    """Stem, one residual block with an identity shortcut, one with a strided 1x1 projection,
    global pooling and a dense head (the shape of ResNet-20)."""
    x = S.Activation(_conv_bn(S.var("data"), "stem", 4), act_type="relu")
    y = _conv_bn(S.Activation(_conv_bn(x, "b1a", 4), act_type="relu"), "b1b", 4)
    x = S.Activation(x + y, act_type="relu")
    y = _conv_bn(S.Activation(_conv_bn(x, "b2a", 8, 2), act_type="relu"), "b2b", 8)
    p = S.BatchNorm(S.Convolution(x, num_filter=8, kernel=(1, 1), stride=(2, 2), no_bias=True,
                                  name="b2p_conv"), fix_gamma=False, name="b2p_bn")
    x = S.Activation(y + p, act_type="relu", name="last_relu")
    x = S.Pooling(x, global_pool=True, pool_type="avg", kernel=(1, 1))
    return S.SoftmaxOutput(S.FullyConnected(S.Flatten(x), num_hidden=3, name="fc"),
                           name="softmax")


SHAPES = {"data": (2, 3, 8, 8), "softmax_label": (2,)}


def _train(sym, convert: bool, monkeypatch) -> tuple:
    converted = []

    def spy(graph):
        out = channel_last(graph)
        converted.append(out is not graph)
        return out
    monkeypatch.setattr(numpy_backend, "FORWARD_PIPELINE", (spy,) if convert else ())
    names = sym.list_arguments() + sym.list_auxiliary_states()
    exe = sym.simple_bind(sg.cpu(), type_dict={n: BF16 for n in names}, **SHAPES)
    rng = np.random.default_rng(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.uniform(-1, 1, arr.shape)
    exe.arg_dict["softmax_label"][:] = rng.integers(0, 3, 2)
    for name, arr in exe.aux_dict.items():
        arr[:] = 1.0 if name.endswith("var") else 0.0
    outs = [o.asnumpy().astype(np.float64) for o in exe.forward(is_train=True)]
    exe.backward()
    grads = {k: g.asnumpy().astype(np.float64) for k, g in exe.grad_dict.items()
             if g is not None}
    aux = {k: a.asnumpy().astype(np.float64) for k, a in exe.aux_dict.items()}
    assert converted == ([True] if convert else [])
    return exe.outputs, outs, grads, aux


def test_converted_bfloat16_graph_trains_like_the_original(monkeypatch) -> None:
    sym = small_resnet()
    _, outs0, grads0, aux0 = _train(sym, False, monkeypatch)
    _, outs1, grads1, aux1 = _train(sym, True, monkeypatch)
    # bfloat16 keeps 8 bits: BatchNorm's sums in another order move results by a few ulps
    for a, b in zip(outs0, outs1):
        np.testing.assert_allclose(b, a, rtol=3e-2, atol=3e-2)
    assert grads0.keys() == grads1.keys() and aux0.keys() == aux1.keys()
    for k in grads0:
        scale = np.abs(grads0[k]).max() + 1e-3
        assert np.abs(grads1[k] - grads0[k]).max() <= 0.06 * scale, k
    for k in aux0:
        np.testing.assert_allclose(aux1[k], aux0[k], rtol=3e-2, atol=3e-2, err_msg=k)


def test_what_goes_nhwc() -> None:
    g = channel_last(declared(small_resnet(), dtype="bfloat16", **SHAPES))
    verify(g)
    nodes = [n for n in g.nodes() if not n.is_variable]
    convs = [n for n in nodes if n.op == "Convolution"]
    assert len(convs) == 6 and all(n.attrs["layout"] == "NHWC" for n in convs)
    assert all(n.attrs["axis"] == 3 for n in nodes if n.op == "BatchNorm")
    moves = [n for n in nodes if n.op == "transpose"]
    weights = [n for n in moves if n.inputs[0].node.is_variable and n.name.endswith("_ohwi")]
    # one transpose per weight, the data's way in and the last activation's way out
    assert len(weights) == 6 and len(moves) == 8
    assert [n.name for n in moves if n not in weights] == ["data_nhwc_in", "last_relu"]
    assert g.outputs[0].node.name == "softmax"


def test_float32_and_lone_convolutions_stay_nchw() -> None:
    g = declared(small_resnet(), **SHAPES)
    assert channel_last(g) is g  # float32: cuDNN's NCHW kernels are the faster
    lone = S.Pooling(S.Activation(S.Convolution(S.var("data"), num_filter=4, kernel=(3, 3),
                                                name="c"), act_type="relu"),
                     kernel=(2, 2), stride=(2, 2), pool_type="max")
    g = declared(lone, dtype="bfloat16", data=(2, 3, 8, 8))
    assert channel_last(g) is g and "transpose" not in ops_of(g)


def test_outputs_keep_their_names(monkeypatch) -> None:
    """A converted chain's end as a graph output keeps the output's name and value."""
    x = _conv_bn(S.var("data"), "a", 4)
    sym = S.Group([S.Activation(_conv_bn(x, "b", 4), act_type="relu", name="head"), x])
    monkeypatch.setattr(numpy_backend, "FORWARD_PIPELINE", (channel_last,))
    names = sym.list_arguments() + sym.list_auxiliary_states()
    exe = sym.simple_bind(sg.cpu(), type_dict={n: BF16 for n in names}, data=(2, 3, 6, 6))
    assert list(exe.output_dict) == sym.list_outputs() == ["head_output", "a_bn_output"]
    g = channel_last(declared(sym, dtype="bfloat16", data=(2, 3, 6, 6)))
    assert [e.node.name for e in g.outputs] == ["head", "a_bn"]


def _step(sym, ctx, dtype) -> tuple:
    """Output and gradients (float64) of one training step on ``ctx`` in ``dtype`` from the
    same bfloat16-representable inputs."""
    names = sym.list_arguments() + sym.list_auxiliary_states()
    exe = sym.simple_bind(ctx, type_dict={n: dtype for n in names}, **SHAPES)
    rng = np.random.default_rng(0)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.uniform(-1, 1, arr.shape).astype(BF16).astype(np.float32)
    exe.arg_dict["softmax_label"][:] = rng.integers(0, 3, 2)
    for name, arr in exe.aux_dict.items():
        arr[:] = 1.0 if name.endswith("var") else 0.0
    out = exe.forward(is_train=True)[0].asnumpy().astype(np.float64)
    exe.backward()
    return out, {k: g.asnumpy().astype(np.float64) for k, g in exe.grad_dict.items()
                 if g is not None}


@pytest.mark.gpu
def test_resnet_bfloat16_step_on_the_gpu_is_as_close_as_the_cpu() -> None:
    """The CUDA backend converts (cuDNN reads NHWC in place), the CPU does not. Against the
    float64 step from the same inputs, the GPU's bfloat16 step errs no more than four times as
    much as the CPU's, which rounds to bfloat16 after every op (the GPU computes in float
    between loads and stores, but cuDNN's bfloat16 engines may round partial sums: a weight
    gradient measured 3x the CPU's error, a wrong index would be far off)."""
    sym = small_resnet()
    (o64, g64), (o16, g16), (og, gg) = (_step(sym, sg.cpu(), np.float64),
                                        _step(sym, sg.cpu(), BF16), _step(sym, sg.gpu(0), BF16))
    err = lambda a, b: np.linalg.norm(a - b)  # noqa: E731
    assert err(og, o64) <= 4 * err(o16, o64) + 1e-3 * np.linalg.norm(o64)
    for k in g64:
        assert err(gg[k], g64[k]) <= 4 * err(g16[k], g64[k]) + 1e-3 * np.linalg.norm(g64[k]), k
