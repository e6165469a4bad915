"""MXNet's ``mx.nd`` functions that are not ops (from_numpy, DLPack, load_frombuffer,
onehot_encode, contrib.isinf..., CachedOp), pickle state, runtime.Features and partial shape
inference; references are numpy and, where installed, MXNet 1.9.1 live."""
from __future__ import annotations

import json

import numpy as np
import pytest

import symgraph as sg

from .mxnet_live import mxnet_json


def test_from_numpy_shares_memory_and_refuses_strided() -> None:
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    x = sg.nd.from_numpy(a)
    with pytest.raises(ValueError):
        a[0, 0] = 1  # MXNet takes the buffer over: the source is read-only
    x[2, 1] = 100
    assert a[2, 1] == 100
    assert sg.nd.from_numpy(a).asnumpy()[2, 1] == 100  # a read-only source shares too
    with pytest.raises(sg.base.BindError, match="not C-contiguous"):
        sg.nd.from_numpy(np.ones((3, 2)).T)
    b = np.ones((2, 2))
    sg.nd.from_numpy(b, zero_copy=False)[0, 0] = 5
    assert b[0, 0] == 1


def test_dlpack_round_trip_shares_memory() -> None:
    x = sg.nd.array([[1.0, 2.0], [3.0, 4.0]])
    y = sg.nd.from_dlpack(x.to_dlpack_for_write())
    y[0, 0] = 9
    assert x.asnumpy()[0, 0] == 9
    z = sg.nd.from_dlpack(sg.nd.to_dlpack_for_read(x))
    np.testing.assert_array_equal(z.asnumpy(), [[9, 2], [3, 4]])


def test_load_frombuffer_and_damage(tmp_path) -> None:
    arrays = {"a": np.arange(6.0).reshape(2, 3), "b": np.ones(4, np.int32)}
    fname = str(tmp_path / "x.params")
    sg.nd.save(fname, {k: sg.nd.array(v, dtype=v.dtype) for k, v in arrays.items()})
    raw = open(fname, "rb").read()
    got = sg.nd.load_frombuffer(raw)
    for k, v in arrays.items():
        np.testing.assert_array_equal(got[k].asnumpy(), v)
    with pytest.raises(sg.base.DataError):
        sg.nd.load_frombuffer(raw[:-10])


def test_pickle_state_round_trip_and_mxnet_gpu_state() -> None:
    x = sg.nd.array(np.arange(5.0))
    y = sg.nd.zeros((1,))
    y.__setstate__(x.__getstate__())
    np.testing.assert_array_equal(y.asnumpy(), np.arange(5.0))
    # MXNet 1.9.1's state of nd.arange(1, ctx=gpu()): a V2 record on device type 2
    state = {"handle": bytearray(b"\xc9\xfa\x93\xf9" + bytes(4) + b"\x01" + bytes(3)
                                 + b"\x01" + bytes(7) + b"\x02" + bytes(15))}
    y.__setstate__(state)
    assert y.context == sg.cpu() and y.asnumpy().tolist() == [0.0]
    with pytest.raises(sg.base.DataError):
        y.__setstate__({"handle": bytearray(b"\x00" * 8)})


def test_onehot_encode_and_contrib_tests() -> None:
    idx = np.array([2, 0, 1, 2])
    out = sg.nd.zeros((4, 3))
    sg.nd.onehot_encode(sg.nd.array(idx), out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.eye(3)[idx])
    v = np.array([np.inf, -np.inf, np.nan, 5.0, 0.0], np.float32)
    x = sg.nd.array(v)
    np.testing.assert_array_equal(sg.nd.contrib.isinf(x).asnumpy(), np.isinf(v))
    np.testing.assert_array_equal(sg.nd.contrib.isnan(x).asnumpy(), np.isnan(v))
    np.testing.assert_array_equal(sg.nd.contrib.isfinite(x).asnumpy(), np.isfinite(v))


def test_cached_op_values_and_gradient() -> None:
    a, b = sg.sym.var("a"), sg.sym.var("b")
    op = sg.nd.CachedOp(sg.sym.dot(a, b) + 2)
    av, bv = np.random.rand(3, 4), np.random.rand(4, 2)
    x, w = sg.nd.array(av), sg.nd.array(bv)
    w.attach_grad()
    with sg.autograd.record():
        y = op(x, w)
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), av @ bv + 2, rtol=1e-5)
    np.testing.assert_allclose(w.grad.asnumpy(), av.T @ np.ones((3, 2)), rtol=1e-5)
    with pytest.raises(sg.base.BindError, match="2 inputs"):
        op(x)


def test_runtime_features() -> None:
    features = sg.runtime.Features()
    assert features.is_enabled("int64_tensor_size")
    assert features.is_enabled("CUDA") == (sg.context.num_gpus() > 0)
    with pytest.raises(RuntimeError, match="unknown"):
        features.is_enabled("NO_SUCH_FEATURE")


def test_fluent_split_v2_and_np_shape_json() -> None:
    x = sg.nd.array(np.arange(12.0).reshape(2, 6))
    parts = x.split_v2((1, 3), axis=1)
    for got, want in zip(parts, np.split(np.arange(12.0).reshape(2, 6), (1, 3), axis=1)):
        np.testing.assert_array_equal(got.asnumpy(), want)
    assert "is_np_shape" not in json.loads(sg.sym.var("v").tojson())["attrs"]
    with sg.np_shape(True):
        assert json.loads(sg.sym.var("v").tojson())["attrs"]["is_np_shape"] == ["int", 1]


PARTIAL = {  # name: (op, attrs, given shapes)
    "dot": ("dot", {}, {"x": (0, 3, 4), "y": (4, 5)}),
    "batch_dot": ("batch_dot", {}, {"x": (0, 3, 4), "y": (0, 4, 5)}),
    "batch_dot_inner": ("batch_dot", {}, {"x": (0, 3, 4), "y": (0, 0, 5)}),
    "pick": ("pick", {"axis": 1}, {"x": (0, 3, 3), "y": (0, 3)}),
    "pick_index": ("pick", {"axis": 1}, {"x": (2, 3, 3), "y": (0, 0)}),
    "unknown": ("sin", {}, {}),
}
_MX_PARTIAL = """
import json, sys
import mxnet as mx
out = {}
for name, (op, attrs, given) in json.load(sys.stdin).items():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    s = getattr(mx.sym, op)(x, **attrs) if op == "sin" else getattr(mx.sym, op)(x, y, **attrs)
    a, o, _ = s.infer_shape_partial(**{k: tuple(v) for k, v in given.items()})
    out[name] = [[list(t) for t in a], [list(t) for t in o]]
print(json.dumps(out))
"""


def _partial(op: str, attrs: dict, given: dict) -> list:
    x, y = sg.sym.var("x"), sg.sym.var("y")
    fn = getattr(sg.sym, op)
    s = fn(x, **attrs) if op == "sin" else fn(x, y, **attrs)
    a, o, _ = s.infer_shape_partial(**given)
    return [[list(t) for t in a], [list(t) for t in o]]


def test_partial_shapes_by_hand() -> None:
    assert _partial(*PARTIAL["dot"])[1] == [[0, 3, 5]]
    assert _partial(*PARTIAL["batch_dot"])[1] == [[0, 3, 5]]
    assert _partial(*PARTIAL["batch_dot_inner"])[1] == [[]]  # inner size unknown
    assert _partial(*PARTIAL["pick_index"]) == [[[2, 3, 3], [2, 3]], [[2, 3]]]
    emb = sg.sym.Embedding(sg.sym.var("d"), sg.sym.var("w"), input_dim=100, output_dim=10)
    assert emb.infer_shape_partial(d=(0, 5))[1] == [(0, 5, 10)]
    with sg.np_shape(True):
        assert emb.infer_shape_partial(d=(-1, 5))[1] == [(-1, 5, 10)]
        assert sg.sym.sin(sg.sym.var("x")).infer_shape_partial()[1] == [None]
    assert sg.sym.sin(sg.sym.var("x")).infer_shape_partial()[1] == [()]


@pytest.mark.mxnet
def test_partial_shapes_match_mxnet() -> None:
    want = mxnet_json(_MX_PARTIAL, PARTIAL)
    for name, case in PARTIAL.items():
        assert _partial(*case) == want[name], name
