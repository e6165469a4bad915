"""fold_heads: which attention patterns fold, that folded graphs train like unfolded ones
(float64), against an independent numpy attention, and what it leaves alone.

The CUDA backend runs the pass before autodiff; the numpy backend does not, so the training
comparisons here turn it on for the CPU."""

import numpy as np
import pytest

import symgraph as sg
from benchmarks.encoder_step import QUICK, encoder_symbol
from symgraph.compiler.passes.fold_heads import fold_heads
from symgraph.compiler.passes.verify import verify
from symgraph.core.base import ShapeError
from symgraph.runtime.backend import numpy_backend

from .util import declared, ops_of

S = sg.sym
B, T, C, H = 2, 5, 12, 3


def _heads(x, h=H):
    return S.reshape(S.transpose(S.reshape(x, shape=(0, 0, h, -1)), axes=(0, 2, 1, 3)),
                     shape=(-3, 0, 0))


def _merge(x, h=H):
    x = S.reshape(x, shape=(-4, -1, h, 0, 0))
    return S.reshape(S.transpose(x, axes=(0, 2, 1, 3)), shape=(0, 0, -3))


def _attention(scale=0.5):
    q, k, v = S.var("q"), S.var("k"), S.var("v")
    att = S.softmax(S.batch_dot(_heads(q), _heads(k), transpose_b=True) * scale, axis=-1)
    return S.batch_dot(att, _heads(v)), att


def _numpy_attention(q, k, v, scale=0.5):
    """float64 attention, head by head with explicit slices."""
    d = C // H
    out = np.zeros_like(q)
    for b in range(B):
        for h in range(H):
            sl = slice(h * d, (h + 1) * d)
            s = q[b, :, sl] @ k[b, :, sl].T * scale
            p = np.exp(s - s.max(-1, keepdims=True))
            out[b, :, sl] = p / p.sum(-1, keepdims=True) @ v[b, :, sl]
    return out


def _train(sym, shapes: dict, fold: bool, monkeypatch, seed: int = 0) -> tuple:
    """float64 outputs and gradients of one forward/backward, fold_heads on or off."""
    monkeypatch.setattr(numpy_backend, "FORWARD_PIPELINE", (fold_heads,) if fold else ())
    exe = sym.simple_bind(sg.cpu(), type_dict={k: np.float64 for k in shapes}, **shapes)
    rng = np.random.default_rng(seed)
    for name in sorted(exe.arg_dict):
        exe.arg_dict[name][:] = rng.normal(size=exe.arg_dict[name].shape) * 0.5
    outs = [o.asnumpy() for o in exe.forward(is_train=True)]
    exe.backward([sg.nd.array(np.cos(np.arange(o.size)).reshape(o.shape), dtype=np.float64)
                  for o in outs])
    return outs, {k: v.asnumpy() for k, v in exe.grad_dict.items()}, exe


def test_attention_folds_every_transpose_and_the_scale() -> None:
    ctx, _ = _attention()
    g = fold_heads(declared(_merge(ctx), q=(B, T, C), k=(B, T, C), v=(B, T, C)))
    verify(g)
    ops = ops_of(g)
    assert "transpose" not in ops and "batch_dot" not in ops and "_mul_scalar" not in ops
    assert ops.count("_batch_dot_heads") == 2 and ops.count("_softmax_rows") == 1
    heads = [n.attrs for n in g.nodes() if n.op == "_batch_dot_heads"]
    assert [(a["split_lhs"], a["split_rhs"], a["split_out"], a["alpha"]) for a in heads] == \
        [(True, True, False, 0.5), (False, True, True, 1.0)]


def test_attention_matches_numpy_and_central_differences(monkeypatch) -> None:
    ctx, _ = _attention()
    sym = S.sum(S.square(_merge(ctx)))
    shapes = {n: (B, T, C) for n in "qkv"}
    (out,), grads, exe = _train(sym, shapes, True, monkeypatch)
    vals = {n: exe.arg_dict[n].asnumpy() for n in "qkv"}
    assert "transpose" not in [s.node.op for s in exe._train.schedule.steps]
    np.testing.assert_allclose(out, (_numpy_attention(**vals) ** 2).sum(), rtol=1e-12)
    eps, rng = 1e-6, np.random.default_rng(1)
    for name in "qkv":
        for idx in [tuple(rng.integers(0, s) for s in (B, T, C)) for _ in range(3)]:
            up, down = dict(vals), dict(vals)
            up[name], down[name] = vals[name].copy(), vals[name].copy()
            up[name][idx] += eps
            down[name][idx] -= eps
            fd = ((_numpy_attention(**up) ** 2).sum()
                  - (_numpy_attention(**down) ** 2).sum()) / (2 * eps)
            # head gradient cos(0) = 1 on the one output
            np.testing.assert_allclose(grads[name][idx], fd, rtol=1e-6, atol=1e-9)


def test_encoder_trains_the_same_folded(monkeypatch) -> None:
    sym = encoder_symbol(QUICK)
    shapes = {"data": (QUICK.batch, QUICK.seq, QUICK.model)}
    want_out, want_grads, _ = _train(sym, shapes, False, monkeypatch)
    got_out, got_grads, exe = _train(sym, shapes, True, monkeypatch)
    ops = [s.node.op for s in exe._train.schedule.steps]
    assert "transpose" not in ops and ops.count("_softmax_backward") == QUICK.layers
    np.testing.assert_allclose(got_out[0], want_out[0], rtol=1e-12)
    for k in want_grads:
        np.testing.assert_allclose(got_grads[k], want_grads[k], rtol=1e-9, atol=1e-12,
                                   err_msg=k)


def test_graphs_without_the_pattern_are_returned_as_they_are() -> None:
    from symgraph.interop.models.simple_cnn import build
    cnn = declared(build(), data=(2, 1, 28, 28))
    assert fold_heads(cnn) is cnn
    a, b = S.var("a"), S.var("b")
    plain = declared(S.softmax(S.batch_dot(a, b) + 1.0), a=(2, 3, 4), b=(2, 4, 5))
    assert fold_heads(plain) is plain


def test_head_counts_that_disagree_are_left_alone() -> None:
    q, k = S.var("q"), S.var("k")
    sym = S.batch_dot(_heads(q, 2), _heads(k, 4), transpose_b=True)
    g = declared(sym, q=(4, T, 6), k=(2, T, 12))  # 4*2 = 2*4 matrices of 3 columns
    assert fold_heads(g) is g


def test_a_product_read_twice_is_not_merged() -> None:
    ctx, att = _attention()
    sym = S.Group([_merge(ctx), S.sum(ctx)])
    g = fold_heads(declared(sym, q=(B, T, C), k=(B, T, C), v=(B, T, C)))
    ops = ops_of(g)
    assert ops.count("transpose") == 1  # the merge stays; the three splits fold
    assert [n.attrs["split_out"] for n in g.nodes() if n.op == "_batch_dot_heads"] == \
        [False, False]


def test_bad_split_operand_is_a_shape_error_naming_op_and_shape() -> None:
    a, b = S.var("a"), S.var("b")
    sym = S._batch_dot_heads(a, b, heads=3, split_lhs=True, split_rhs=True, transpose_b=True)
    with pytest.raises(ShapeError, match=r"_batch_dot_heads.*\(2, 5, 4, 4\).*heads=3"):
        sym.infer_shape(a=(2, 5, 4, 4), b=(2, 5, 4, 4))
    data = np.ones((2, 5, 4, 4))
    with pytest.raises(ShapeError):
        sym.bind(sg.cpu(), {"a": sg.nd.array(data), "b": sg.nd.array(data)})
    assert (data == 1).all()
    with pytest.raises(ShapeError, match=r"\(2, 3\) vs \(2, 4\)"):
        S._softmax_backward(a, b).infer_shape(a=(2, 3), b=(2, 4))


def test_other_transposes_are_not_heads() -> None:
    """A default (reversing) transpose, or a head transpose feeding a view of another shape,
    is not a head split."""
    q, k = S.var("q"), S.var("k")
    rev = S.reshape(S.transpose(S.reshape(q, shape=(0, 0, H, -1))), shape=(-1, T, B))
    g = declared(S.batch_dot(rev, rev, transpose_b=True), q=(B, T, C))
    assert fold_heads(g) is g
    flat = S.reshape(S.transpose(S.reshape(k, shape=(0, 0, H, -1)), axes=(0, 2, 1, 3)),
                     shape=(B, -1, C // H))
    g = declared(S.batch_dot(flat, flat, transpose_b=True), k=(B, T, C))
    assert fold_heads(g) is g


MX_ATTENTION = """
import json, sys
import mxnet as mx
import numpy as np
nd = mx.nd
p = json.load(sys.stdin)
h, scale = p["heads"], p["scale"]
xs = {k: nd.array(np.asarray(p[k])) for k in "qkv"}
for x in xs.values():
    x.attach_grad()
def heads(x):
    return nd.reshape(nd.transpose(nd.reshape(x, shape=(0, 0, h, -1)), axes=(0, 2, 1, 3)),
                      shape=(-3, 0, 0))
with mx.autograd.record():
    att = nd.softmax(nd.batch_dot(heads(xs["q"]), heads(xs["k"]), transpose_b=True) * scale,
                     axis=-1)
    y = nd.batch_dot(att, heads(xs["v"]))
    y = nd.reshape(nd.transpose(nd.reshape(y, shape=(-4, -1, h, 0, 0)), axes=(0, 2, 1, 3)),
                   shape=(0, 0, -3))
y.backward(nd.array(np.cos(np.arange(y.size)).reshape(y.shape)))
print(json.dumps([y.asnumpy().tolist()] + [xs[k].grad.asnumpy().tolist() for k in "qkv"]))
"""


@pytest.mark.mxnet
def test_folded_attention_matches_mxnet(monkeypatch) -> None:
    """The folded CPU graph's output and q, k, v gradients against MXNet 1.9.1 running the
    unfolded primitives (float32 there)."""
    from tests.mxnet_live import mxnet_json
    ctx, _ = _attention(0.5)
    (out,), grads, exe = _train(_merge(ctx), {n: (B, T, C) for n in "qkv"}, True, monkeypatch)
    assert "transpose" not in [s.node.op for s in exe._train.schedule.steps]
    vals = {n: exe.arg_dict[n].asnumpy().astype(np.float32) for n in "qkv"}
    theirs = mxnet_json(MX_ATTENTION, {"heads": H, "scale": 0.5,
                                       **{k: v.tolist() for k, v in vals.items()}})
    for got, want, what in zip([out] + [grads[k] for k in "qkv"], theirs, ["out", *"qkv"]):
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-4, atol=1e-5, err_msg=what)
