"""KVStore 2-bit gradient compression against a float64 numpy reference of MXNet's documented
algorithm (residual += grad; send +-threshold where the residual reaches it; keep the rest),
optimizer states saved and loaded through the store, MXNet's local type names, and the same
pushes run live on MXNet 1.9.1."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg

from .mxnet_live import mxnet_json


def _reference(pushes: list[list[np.ndarray]], t: float) -> list[np.ndarray]:
    """Pulled value after each push: the sum over devices of what each one sends."""
    residual = [np.zeros_like(g, np.float64) for g in pushes[0]]
    out = []
    for grads in pushes:
        total = np.zeros_like(grads[0], np.float64)
        for r, g in zip(residual, grads):
            r += g
            sent = np.where(r >= t, t, np.where(r <= -t, -t, 0.0))
            r -= sent
            total += sent
        out.append(total)
    return out


def _pushes(seed: int = 0) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    # quarters stay off the +-threshold boundary after float32 sums of up to 4 pushes
    return [[rng.integers(-6, 7, size=(3, 4)) / 4.0 + 0.01 for _ in range(2)]
            for _ in range(4)]


def test_two_bit_matches_reference() -> None:
    kv = sg.kv.create("device")
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init("w", sg.nd.zeros((3, 4)))
    out = sg.nd.zeros((3, 4))
    pushes = _pushes()
    for grads, want in zip(pushes, _reference(pushes, 0.5)):
        kv.push("w", [sg.nd.array(g) for g in grads])
        kv.pull("w", out=out)
        np.testing.assert_allclose(out.asnumpy(), want, atol=1e-6)


def test_nothing_is_lost_only_delayed() -> None:
    """Sent over all pushes plus what remains in the residuals equals everything pushed."""
    kv = sg.kv.create("local_allreduce_device")
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.3})
    kv.init(7, sg.nd.zeros((3, 4)))
    out, sent = sg.nd.zeros((3, 4)), np.zeros((3, 4))
    pushes = _pushes(1)
    for grads in pushes:
        kv.push(7, [sg.nd.array(g) for g in grads])
        kv.pull(7, out=out)
        sent += out.asnumpy()
    left = sum(kv._compression.residuals[(7, i)] for i in range(2))
    np.testing.assert_allclose(sent + left, sum(sum(p) for p in pushes), atol=1e-5)


def test_bad_settings_and_pushes_are_refused() -> None:
    with pytest.raises(sg.AttrError, match="not supported for this type"):
        sg.kv.create("local").set_gradient_compression({"type": "2bit"})
    kv = sg.kv.create("device")
    for params, match in (({"threshold": 0.5}, "needs a 'type'"),
                          ({"type": "1bit"}, "unknown type '1bit'"),
                          ({"type": "2bit", "threshold": -1}, "greater than 0, got -1.0"),
                          ({"type": "2bit", "foo": 1}, r"unknown keys \['foo'\]")):
        with pytest.raises(sg.AttrError, match=match):
            kv.set_gradient_compression(params)
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init(0, sg.nd.zeros((2,)))
    kv.push(0, sg.nd.array([0.2, -0.7]))
    before = kv._compression.residuals[(0, 0)].copy()
    with pytest.raises(sg.BindError, match=r"key 0 has shape \(2,\), pushed \(3,\)"):
        kv.push(0, [sg.nd.array([9.0, 9.0]), sg.nd.ones((3,))])
    np.testing.assert_array_equal(kv._compression.residuals[(0, 0)], before)
    assert sg.kv.create("local_allreduce_cpu").type == "local_allreduce_cpu"


def _sgd_store(kind: str = "device") -> sg.kv.KVStore:
    kv = sg.kv.create(kind)
    kv.init("w", sg.nd.ones((3,)))
    kv.set_optimizer(sg.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    return kv


def test_optimizer_states_save_and_load(tmp_path) -> None:
    """SGD momentum by hand: m = 0.9 m - 0.1 g; w += m (g the summed push)."""
    kv, g = _sgd_store(), np.array([0.5, -1.0, 2.0])
    for _ in range(2):
        kv.push("w", [sg.nd.array(g), sg.nd.array(g)])
    m = 0.9 * (-0.1 * 2 * g) - 0.1 * 2 * g
    fname = str(tmp_path / "kv.states")
    kv.save_optimizer_states(fname)
    fresh = _sgd_store()
    fresh.load_optimizer_states(fname)
    np.testing.assert_allclose(fresh._updater.states["w"][0], m, rtol=1e-6)
    w = sg.nd.zeros((3,))
    fresh.push("w", sg.nd.array(g))  # continues from the loaded momentum
    fresh.pull("w", out=w)
    np.testing.assert_allclose(w.asnumpy(), 1 + 0.9 * m - 0.1 * g, rtol=1e-6)
    with pytest.raises(sg.AttrError, match="dump_optimizer=True is not supported"):
        kv.save_optimizer_states(fname, dump_optimizer=True)
    with pytest.raises(sg.AttrError, match="call set_optimizer"):
        sg.kv.create("local").load_optimizer_states(fname)


MX_PUSHES = '''
import json, sys
import mxnet as mx
pushes = json.load(sys.stdin)
kv = mx.kv.create("device")
kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
kv.init(0, mx.nd.ones((3, 4)))
kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
out, seen = mx.nd.zeros((3, 4)), []
for grads in pushes:
    kv.push(0, [mx.nd.array(g, ctx=mx.cpu(i)) for i, g in enumerate(grads)])
    kv.pull(0, out=out)
    seen.append(out.asnumpy().tolist())
print(json.dumps(seen))
'''


@pytest.mark.mxnet
def test_compressed_sgd_matches_mxnet() -> None:
    pushes = _pushes(2)
    theirs = mxnet_json(MX_PUSHES, [[g.tolist() for g in p] for p in pushes])
    kv = sg.kv.create("device")
    kv.set_gradient_compression({"type": "2bit", "threshold": 0.5})
    kv.init(0, sg.nd.ones((3, 4)))
    kv.set_optimizer(sg.optimizer.SGD(learning_rate=0.1, momentum=0.9))
    out = sg.nd.zeros((3, 4))
    for grads, want in zip(pushes, theirs):
        kv.push(0, [sg.nd.array(g) for g in grads])
        kv.pull(0, out=out)
        np.testing.assert_allclose(out.asnumpy(), np.asarray(want), rtol=1e-6, atol=1e-6)
