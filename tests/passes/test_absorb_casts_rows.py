"""absorb_casts on attention's row ops (``_softmax_rows``, ``_softmax_backward``): the widening
cast in front of the softmax, the widening cast of the softmax gradient's ograd and the
narrowing cast of its result are done by the ops themselves. Checked on the numpy backend with
the CUDA backend's ``fold_heads`` in front (so the bfloat16 encoder has these ops): outputs and
every gradient bit for bit against the graph without the pass, the rewritten attributes, each
op's new attribute against a float64 reference, and typed errors for bad attributes."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from benchmarks.common import bind_random
from benchmarks.encoder_step import QUICK, encoder_symbol
from symgraph.compiler.passes import OPTIMIZE_PIPELINE, absorb_casts
from symgraph.compiler.passes.fold_heads import fold_heads
from symgraph.core.dtypes import as_dtype

S = sg.sym
BF16 = as_dtype("bfloat16")
WITHOUT = tuple(p for p in OPTIMIZE_PIPELINE if p is not absorb_casts)
PIPELINE = "symgraph.runtime.compile.OPTIMIZE_PIPELINE"
CPU_FORWARD = "symgraph.runtime.backend.numpy_backend.FORWARD_PIPELINE"


def _step(sym) -> tuple[list, dict, list]:
    exe = bind_random(sym, sg.cpu(), (QUICK.batch, QUICK.seq, QUICK.model))
    exe.forward(is_train=True)
    exe.backward()
    return ([o.asnumpy() for o in exe.outputs],
            {k: g.asnumpy() for k, g in exe.grad_dict.items() if g is not None},
            [st.node for st in exe._train.schedule.steps])


def test_folded_encoder_step_bitwise_unchanged(monkeypatch) -> None:
    """The bf16 encoder with heads folded: per layer the softmax reads the bf16 scores, its
    gradient reads the bf16 ograd and stores bf16; 1 amp_cast and 2 gradient casts fewer,
    every output and gradient bit for bit the same."""
    monkeypatch.setattr(CPU_FORWARD, (fold_heads,))
    sym = sg.amp.convert_symbol(encoder_symbol(QUICK), target_dtype="bfloat16")
    outs, grads, nodes = _step(sym)
    monkeypatch.setattr(PIPELINE, WITHOUT)
    ref_outs, ref_grads, ref_nodes = _step(sym)
    n = QUICK.layers
    rows = [x for x in nodes if x.op == "_softmax_rows"]
    back = [x for x in nodes if x.op == "_softmax_backward"]
    assert len(rows) == len(back) == n
    assert all(x.attrs["dtype"] == "float32" for x in rows)
    assert all(x.attrs["out_dtype"] == "bfloat16" for x in back)
    assert all(x.attrs.get("dtype") is None for x in ref_nodes if x.op == "_softmax_rows")

    def count(ns: list, op: str) -> int:
        return sum(x.op == op for x in ns)
    assert count(ref_nodes, "amp_cast") - count(nodes, "amp_cast") == n
    assert count(ref_nodes, "_backward_Cast") - count(nodes, "_backward_Cast") >= 2 * n
    for a, b in zip(outs, ref_outs):
        np.testing.assert_array_equal(a, b)
    assert grads.keys() == ref_grads.keys() and len(grads) == 16 * n
    for k in grads:
        assert np.abs(grads[k]).max() > 0, k
        np.testing.assert_array_equal(grads[k], ref_grads[k], err_msg=k)


def _rows_graph():
    """bf16 scores -> float32 softmax -> a bf16 copy read by a GEMM (the float32 value is also
    read by the gradient), and the gradient from a bf16 ograd, stored bf16, as attention has
    them."""
    x, g, v = S.var("x"), S.var("g"), S.var("v")
    # (negated: casts of variables are batched into one step by batch_casts first)
    x, g = S.negative(x), S.negative(g)
    y = S._softmax_rows(S.amp_cast(x, dtype="float32"))
    dx = S.amp_cast(S._softmax_backward(y, S.amp_cast(g, dtype="float32")), dtype="bfloat16")
    return S.Group([S.batch_dot(S.amp_cast(y, dtype="bfloat16"), v), dx])


def test_row_ops_take_their_casts(monkeypatch) -> None:
    """Only the GEMM's bf16 copy of the softmax output stays a cast."""
    sym, types = _rows_graph(), {"x": BF16, "g": BF16, "v": BF16}
    shapes = {"x": (3, 4, 9), "g": (3, 4, 9), "v": (3, 9, 2)}
    rng = np.random.default_rng(5)
    vals = {k: (rng.normal(size=shapes[k]) * 3).astype(BF16) for k in types}

    def run() -> tuple[list, list]:
        exe = sym.simple_bind(sg.cpu(), grad_req="null", type_dict=types, **shapes)
        for k in vals:
            exe.arg_dict[k][:] = vals[k]
        return [o.asnumpy() for o in exe.forward()], [s.node.op for s in
                                                      exe._infer.schedule.steps]
    outs, ops = run()
    assert sorted(ops) == ["_softmax_backward", "_softmax_rows", "amp_cast", "batch_dot",
                           "negative", "negative"]
    assert [o.dtype for o in outs] == [BF16, BF16]
    monkeypatch.setattr(PIPELINE, WITHOUT)
    ref, ref_ops = run()
    assert ref_ops.count("amp_cast") == 4
    for a, b in zip(outs, ref):
        np.testing.assert_array_equal(a, b)
    x, g, v = (vals[k].astype(np.float64) for k in ("x", "g", "v"))  # float64 reference
    x, g = -x, -g
    z = np.exp(x - x.max(-1, keepdims=True))
    y = z / z.sum(-1, keepdims=True)
    np.testing.assert_allclose(outs[0].astype(np.float64), y @ v, rtol=2e-2, atol=2e-2)
    want = y * (g - (g * y).sum(-1, keepdims=True))
    np.testing.assert_allclose(outs[1].astype(np.float64), want, rtol=1e-2,
                               atol=1e-2 * np.abs(want).max())


def test_softmax_rows_gradient_returns_to_the_input_dtype() -> None:
    """dtype=float32 over bf16 data: float32 output, a bf16 gradient matching central
    differences of the float64 softmax (weighted sum of the outputs as the loss)."""
    x = S.var("x")
    shape = (2, 5)
    w = np.random.default_rng(1).normal(size=shape)
    exe = S._softmax_rows(x, dtype="float32").simple_bind(sg.cpu(), type_dict={"x": BF16},
                                                          x=shape)
    xv = np.random.default_rng(2).normal(size=shape).astype(BF16)
    exe.arg_dict["x"][:] = xv
    assert exe.forward(is_train=True)[0].dtype == np.float32
    exe.backward([sg.nd.array(w.astype(np.float32))])
    got = exe.grad_dict["x"].asnumpy()
    assert got.dtype == BF16

    def loss(a: np.ndarray) -> float:
        z = np.exp(a - a.max(-1, keepdims=True))
        return float((w * z / z.sum(-1, keepdims=True)).sum())
    x0, eps, fd = xv.astype(np.float64), 1e-6, np.zeros(shape)
    for i in np.ndindex(shape):
        d = np.zeros(shape)
        d[i] = eps
        fd[i] = (loss(x0 + d) - loss(x0 - d)) / (2 * eps)
    np.testing.assert_allclose(got.astype(np.float64), fd, rtol=1e-2, atol=1e-2)


def test_bad_output_dtype_is_a_typed_error() -> None:
    y, g = S.var("y"), S.var("g")
    with pytest.raises(sg.AttrError, match="out_dtype"):
        S._softmax_backward(y, g, out_dtype="float33")
    with pytest.raises(sg.AttrError, match="dtype"):
        S._softmax_rows(y, dtype="nope")
