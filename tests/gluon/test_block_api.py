"""Block.summary, save/load, hooks with handles, register_op_hook, share_parameters,
optimize_for, ParameterDict.load_dict, Trainer.save_states before a step, and
gluon.utils.download/check_sha1 (against a local HTTP server and hashlib)."""
from __future__ import annotations

import contextlib
import hashlib
import http.server
import io
import os
import threading
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.base import AttrError, DataError, GraphError
from symgraph.gluon import nn


def _mlp(prefix: str = None) -> nn.HybridSequential:
    net = nn.HybridSequential(prefix=prefix)
    with net.name_scope():
        net.add(nn.Dense(5, in_units=4), nn.Dense(3, in_units=5))
    net.initialize()
    return net


def test_hooks_detach():
    calls = {"pre": 0, "post": 0}
    block = nn.Dense(3)
    block.initialize()
    h = block.register_forward_hook(lambda b, x, y: calls.__setitem__("post", calls["post"] + 1))
    with block.register_forward_pre_hook(
            lambda b, x: calls.__setitem__("pre", calls["pre"] + 1)):
        block(sg.nd.ones((2, 4)))
    h.detach()
    block(sg.nd.ones((2, 4)))
    assert calls == {"pre": 1, "post": 1}


def test_summary_counts():
    net = nn.Sequential()
    with net.name_scope():
        net.add(nn.Dense(5, in_units=4), nn.Dense(3))
    net.add(nn.Dense(2, in_units=3, params=None))
    net.initialize()
    net[2].weight.grad_req = "null"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        net.summary(sg.nd.ones((7, 4)))
    text = buf.getvalue()
    sizes = [4 * 5 + 5, 5 * 3 + 3, 3 * 2 + 2]  # in*out + out per Dense
    for i, (n, shape) in enumerate(zip(sizes, [(7, 5), (7, 3), (7, 2)])):
        assert f"Dense-{i + 1}" in text and str(shape) in text and str(n) in text
    assert f"Total params: {sum(sizes)}" in text
    assert f"Non-trainable params: {3 * 2}" in text
    net.hybridize()
    with pytest.raises(AssertionError):
        net.summary(sg.nd.ones((7, 4)))


class _Chain(nn.Block):
    """MXNet's test_save block: children added by name under _children directly."""

    def add(self, block):
        self._children[block.name + str(len(self._children))] = block

    def forward(self, x, *args):
        for block in self._children.values():
            x = block(x)
        return x


def _chain():
    inner = _Chain()
    inner.add(nn.Dense(6, in_units=4))
    net = _Chain()
    net.add(inner)
    net.add(nn.Dense(3, in_units=6))
    return net


def test_save_load_roundtrip(tmp_path):
    net = _chain()
    net.initialize()
    net.hybridize()
    x = sg.nd.array(np.random.default_rng(0).normal(size=(2, 4)))
    want = net(x).asnumpy()
    net.save(str(tmp_path / "m"))
    assert (tmp_path / "m-model.json").is_file() and (tmp_path / "m-model.params").is_file()
    other = _chain()  # fresh names (dense2, dense3): load maps them back
    other.load(str(tmp_path / "m"))
    np.testing.assert_allclose(other(x).asnumpy(), want, rtol=1e-6)
    wrong = nn.Sequential()
    wrong.add(nn.Dense(3, in_units=4))
    with pytest.raises(DataError, match="m-model.json"):
        wrong.load(str(tmp_path / "m"))


def test_op_hook_names():
    net = _mlp("mlp_")
    net.hybridize()
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append((name.decode(), op.decode(),
                                                            arr.shape)), True)
    net(sg.nd.ones((2, 4)))
    assert ("mlp_dense0_fwd_weight", "FullyConnected", (5, 4)) in seen
    assert ("mlp_dense1_fwd_output", "FullyConnected", (2, 3)) in seen
    assert seen.index(("mlp_dense0_fwd_data", "FullyConnected", (2, 4))) == 0


def test_op_hook_names_inputs_of_ops_without_input_names():
    """MXNet registers Activation without input names: its monitor says input0 (its own
    test_op_hook_output_names), as ``sg.monitor`` does."""
    net = nn.HybridSequential(prefix="m_")
    with net.name_scope():
        net.add(nn.Activation("relu"))
    net.hybridize()
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append(name.decode()), True)
    net(sg.nd.ones((2, 4)))
    assert seen == ["m_relu0_fwd_input0", "m_relu0_fwd_output"]


def test_share_parameters_and_reset_ctx():
    a, b = _mlp(), _mlp()
    b.share_parameters(a._collect_params_with_prefix())
    assert b[0].weight is a[0].weight and b[1].bias is a[1].bias
    x = sg.nd.ones((2, 4))
    np.testing.assert_array_equal(a(x).asnumpy(), b(x).asnumpy())
    b.reset_ctx(sg.cpu())
    assert a[0].weight.list_ctx() == [sg.cpu()]


def test_optimize_for():
    net = _mlp()
    with pytest.raises(AttrError, match="TensorRT"):
        net.optimize_for(sg.nd.ones((2, 4)), backend="TensorRT")
    net.optimize_for(sg.nd.ones((2, 4)), static_alloc=True)
    assert net._active and net._cached
    with pytest.raises(GraphError):
        nn.Sequential().optimize_for(sg.nd.ones((2, 4)))


def test_load_dict_and_fresh_trainer_states(tmp_path):
    net = _mlp()
    values = {k: np.full(p.shape, i, np.float32)
              for i, (k, p) in enumerate(net.collect_params().items())}
    net.collect_params().load_dict({k: sg.nd.array(v) for k, v in values.items()})
    for k, p in net.collect_params().items():
        np.testing.assert_array_equal(p.data().asnumpy(), values[k])
    with pytest.raises(DataError, match="missing"):
        net.collect_params().load_dict({})
    trainer = sg.gluon.Trainer(net.collect_params(), "adam")
    trainer.save_states(str(tmp_path / "t.states"))  # before any step: fresh states
    trainer.load_states(str(tmp_path / "t.states"))


@pytest.fixture()
def served(tmp_path):
    """A local HTTP server over ``tmp_path/www``; yields (base url, folder)."""
    www = tmp_path / "www"
    www.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(www), **k)

        def log_message(self, *a):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", www
    server.shutdown()


def test_download_checked(served, tmp_path):
    from symgraph.gluon.utils import check_sha1, download
    url, www = served
    body = os.urandom(5000)
    (www / "blob.bin").write_bytes(body)
    sha1 = hashlib.sha1(body).hexdigest()
    dest = tmp_path / "dl"
    got = download(url + "blob.bin", path=str(dest) + "/", sha1_hash=sha1)
    assert Path(got).read_bytes() == body and check_sha1(got, sha1)
    assert not check_sha1(got, "0" * 40)
    bad = tmp_path / "bad.bin"
    with pytest.raises(DataError, match="bad.bin"):
        download(url + "blob.bin", path=str(bad), sha1_hash="0" * 40, retries=0)
    with pytest.raises(DataError, match="4000"):
        download(url + "blob.bin", path=str(bad), size=4000, retries=0)
    assert not bad.exists() and not list(tmp_path.glob("bad.bin*"))  # nothing partial left
    with pytest.raises(AttrError):
        download(url + "blob.bin", path=str(bad), retries=-1)
