"""convert_symbol's structure (casts where the op lists say), values against float32, and
convert_model / remove_amp_cast / save-load of bfloat16 parameters."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, DataError
from symgraph.core.dtypes import BFLOAT16

S = sg.sym


def _net():
    x = S.var("data")
    h = S.Convolution(x, num_filter=4, kernel=(3, 3), name="conv")
    h = S.BatchNorm(h, name="bn")
    h = S.Activation(h, act_type="relu", name="relu")
    h = S.FullyConnected(S.Flatten(h, name="flat"), num_hidden=5, name="fc")
    h = h + S.var("offset")
    return S.SoftmaxOutput(h, name="softmax")


def _nodes(sym) -> dict:
    return {n.name: n for n in sym.graph().nodes()}


def _cast_of(node, i: int):
    src = node.inputs[i].node
    return src.attrs["dtype"] if src.op == "amp_cast" else None


@pytest.mark.parametrize("target", ["float16", "bfloat16"])
def test_casts_follow_the_lists(target: str) -> None:
    nodes = _nodes(sg.amp.convert_symbol(_net(), target))
    conv, fc, bn = nodes["conv"], nodes["fc"], nodes["bn"]
    assert [_cast_of(conv, i) for i in range(3)] == [target] * 3  # data, weight, bias
    assert [_cast_of(fc, i) for i in range(3)] == [target] * 3
    assert [_cast_of(bn, i) for i in range(3)] == [None] * 3  # BatchNorm: unlisted (MXNet)
    assert [bn.inputs[i].node.op for i in (3, 4)] == ["null", "null"]  # aux never cast
    assert _cast_of(nodes["softmax"], 0) == "float32"
    add = [n for n in nodes.values() if n.op == "broadcast_add"][0]
    assert {e.node.op for e in add.inputs} == {"amp_multicast"}  # widest
    assert nodes["relu"].inputs[0].node.name == "bn"  # unlisted: unchanged
    out = sg.amp.convert_symbol(_net(), target)
    assert out.list_arguments() == _net().list_arguments()
    t = dict(zip(out.list_outputs(), out.infer_type(data="float32")[1]))
    assert t["softmax_output"] == np.float32
    # ... and runs on the convolution's narrow output with float32 gamma, beta, statistics
    bn_out = out.get_internals()["bn_output"]
    args, outs, aux = bn_out.infer_type(data="float32")
    types = dict(zip(bn_out.list_arguments() + bn_out.list_auxiliary_states(), args + aux))
    assert np.dtype(outs[0]) == np.dtype(target if target == "float16" else BFLOAT16)
    assert {types[k] for k in ("bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var")} \
        == {np.dtype(np.float32)}


def test_one_cast_per_entry_and_dtype() -> None:
    x = S.var("x")
    y = S.FullyConnected(x, num_hidden=3, name="a") + S.FullyConnected(x, num_hidden=3, name="b")
    casts = [n for n in sg.amp.convert_symbol(y).graph().nodes()
             if n.op == "amp_cast" and n.inputs[0].node.name == "x"]
    assert len(casts) == 1


def test_user_lists_excluded_and_conditional() -> None:
    nodes = _nodes(sg.amp.convert_symbol(_net(), "float16", excluded_sym_names=["conv"],
                                         fp32_ops=["softmax", "SoftmaxOutput"],
                                         conditional_fp32_ops=[("Activation", "act_type",
                                                                ["relu"])]))
    assert _cast_of(nodes["conv"], 0) == "float32"
    assert _cast_of(nodes["relu"], 0) == "float32"
    assert _cast_of(nodes["bn"], 0) is None  # BatchNorm is not in the user's fp32 list
    with pytest.raises(AttrError, match="Convolution"):
        sg.amp.convert_symbol(_net(), "float16", target_dtype_ops=["Convolution"],
                              fp32_ops=["Convolution"])
    with pytest.raises(AttrError, match="int8"):
        sg.amp.convert_symbol(_net(), "int8")


@pytest.mark.parametrize("target,tol", [("float16", 5e-3), ("bfloat16", 4e-2)])
def test_values_close_to_float32(target: str, tol: float) -> None:
    rng = np.random.default_rng(0)
    sym = _net()
    shapes = dict(data=(2, 3, 6, 6), softmax_label=(2,), offset=(1, 5))
    exe32 = sym.simple_bind(sg.cpu(), **shapes)
    for k, a in exe32.arg_dict.items():
        a[:] = rng.normal(size=a.shape) * 0.5
    conv = sg.amp.convert_symbol(sym, target).simple_bind(sg.cpu(), **shapes)
    for k, a in conv.arg_dict.items():
        a[:] = exe32.arg_dict[k].asnumpy()
    want = exe32.forward()[0].asnumpy().astype(np.float64)
    got = conv.forward()[0].asnumpy().astype(np.float64)
    np.testing.assert_allclose(got, want, atol=tol)


def test_cast_optional_params_and_convert_model() -> None:
    sym = S.FullyConnected(S.var("data"), num_hidden=3, name="fc")
    arg = {"fc_weight": sg.nd.array(np.ones((3, 4))), "fc_bias": sg.nd.zeros((3,))}
    out, arg2, aux2 = sg.amp.convert_model(sym, arg, {}, "bfloat16", cast_optional_params=True)
    assert arg2["fc_weight"].dtype == BFLOAT16 and arg["fc_weight"].dtype == np.float32
    fc = _nodes(out)["fc"]
    assert fc.inputs[1].node.op == "null" and fc.inputs[0].node.op == "amp_cast"
    exe = out.bind(sg.cpu(), {"data": sg.nd.ones((2, 4)), **arg2})
    np.testing.assert_allclose(exe.forward()[0].asnumpy().astype(np.float32), 4.0)
    plain = sg.amp.convert_model(sym, arg, {}, "bfloat16")[1]
    assert plain["fc_weight"].dtype == np.float32  # without cast_optional_params: float32


def test_remove_amp_cast_and_json() -> None:
    conv = sg.amp.convert_symbol(_net(), "bfloat16")
    back = sg.amp.remove_amp_cast(conv)
    assert not [n for n in back.graph().nodes() if n.op in ("amp_cast", "amp_multicast")]
    again = sg.sym.load_json(conv.tojson())
    assert again.tojson() == conv.tojson()


def test_bfloat16_params_round_trip(tmp_path) -> None:
    a = sg.nd.array(np.linspace(-3, 3, 12).reshape(3, 4), dtype="bfloat16")
    path = tmp_path / "x.params"
    sg.nd.save(str(path), {"arg:w": a})
    raw = path.read_bytes()
    # record: magic, storage, ndim, 2 dims, device type/id, then MXNet's flag 12
    assert (12).to_bytes(4, "little") in raw[:120]
    back = sg.nd.load(str(path))["arg:w"]
    assert back.dtype == BFLOAT16
    np.testing.assert_array_equal(back.asnumpy().view(np.uint16), a.asnumpy().view(np.uint16))


def test_bfloat16_params_load_in_mxnet_layout(tmp_path) -> None:
    """The element bytes are bfloat16's: float32's upper halves (MXNet's layout)."""
    vals = np.array([1.0, -2.5, 3.140625], np.float32)
    a = sg.nd.array(vals, dtype="bf16")
    sg.nd.save(str(tmp_path / "y"), [a])
    tail = (tmp_path / "y").read_bytes()
    assert (vals.view(np.uint32) >> 16).astype("<u2").tobytes() in tail
    with pytest.raises(DataError):
        (tmp_path / "z").write_bytes(tail[:-3])
        sg.nd.load(str(tmp_path / "z"))
