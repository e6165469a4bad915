"""absorb_casts: the float casts AMP puts next to float32 kernels are done by those kernels as
they load or store. Checked: the bfloat16 encoder's CUDA step counts before/after, its outputs
and gradients bit for bit against the graph without the pass, each rewrite against numpy, and
the casts that must stay (read by a GEMM, a graph output, a value read twice, float64)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from benchmarks.common import bind_random
from benchmarks.encoder_step import QUICK, encoder_symbol
from benchmarks.step_counts import model, step_counts
from symgraph.compiler.passes import OPTIMIZE_PIPELINE, absorb_casts
from symgraph.core.dtypes import as_dtype

S = sg.sym
BF16 = as_dtype("bfloat16")
WITHOUT = tuple(p for p in OPTIMIZE_PIPELINE if p is not absorb_casts)
PIPELINE = "symgraph.runtime.compile.OPTIMIZE_PIPELINE"


def _bind(sym, types: dict, shapes: dict, grad: bool = False):
    reqs = {n: ("write" if grad else "null") for n in sym.list_arguments()}
    return sym.simple_bind(sg.cpu(), grad_req=reqs, type_dict=types, **shapes)


def _ops(exe) -> list[str]:
    return [st.node.op for st in exe._infer.schedule.steps]


def _run(exe, values: dict) -> list[np.ndarray]:
    for k, v in values.items():
        exe.arg_dict[k][:] = v
    return [o.asnumpy() for o in exe.forward(is_train=False)]


def _values(types: dict, shape: tuple, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {k: (rng.normal(size=shape) * 2).astype(t) for k, t in types.items()}


def test_encoder_cuda_steps_lose_their_casts(monkeypatch) -> None:
    """Per layer of the bf16 encoder (heads folded: the softmax is _softmax_rows, its
    gradient _softmax_backward): 2 multicasts before the residual adds (gone), 4 amp_casts
    (the softmax input's goes; softmax -> bf16 and LayerNorm -> bf16 stay: their float32
    values are read twice; the last LayerNorm has no reader cast), 6 gradient casts (the
    softmax gradient's ograd and result go; those of the multicasts' bf16 operands stay:
    their producer is _backward_LayerNorm and their reader a GEMM)."""
    after = step_counts(*model("encoder", quick=True), bf16=True)
    fp32_after = step_counts(*model("encoder", quick=True))
    monkeypatch.setattr(PIPELINE, WITHOUT)
    before = step_counts(*model("encoder", quick=True), bf16=True)
    n = QUICK.layers
    assert after["_softmax_rows"] == after["_softmax_backward"] == n
    assert (before["amp_multicast"], after["amp_multicast"]) == (2 * n, 0)
    assert (before["amp_cast"], after["amp_cast"]) == (4 * n - 1, 3 * n - 1)
    assert (before["_backward_Cast"], after["_backward_Cast"]) == (6 * n - 1, 2 * n)
    assert sum(before.values()) - sum(after.values()) == 2 * n + n + 4 * n - 1
    assert step_counts(*model("encoder", quick=True)) == fp32_after  # no cast: no change


def test_encoder_step_bitwise_unchanged(monkeypatch) -> None:
    """Outputs and every gradient of a bf16 training step, with and without the pass."""
    sym = sg.amp.convert_symbol(encoder_symbol(QUICK), target_dtype="bfloat16")
    data = (QUICK.batch, QUICK.seq, QUICK.model)

    def step() -> tuple[list, dict, list]:
        exe = bind_random(sym, sg.cpu(), data)
        exe.forward(is_train=True)
        exe.backward()
        return ([o.asnumpy() for o in exe.outputs],
                {k: g.asnumpy() for k, g in exe.grad_dict.items() if g is not None},
                [st.node.op for st in exe._train.schedule.steps])
    outs, grads, ops = step()
    monkeypatch.setattr(PIPELINE, WITHOUT)
    ref_outs, ref_grads, ref_ops = step()
    assert "amp_multicast" in ref_ops and "amp_multicast" not in ops
    for a, b in zip(outs, ref_outs):
        np.testing.assert_array_equal(a, b)
    assert grads.keys() == ref_grads.keys() and len(grads) == 16 * QUICK.layers
    for k in grads:
        assert np.isfinite(grads[k]).all() and np.abs(grads[k]).max() > 0, k
        np.testing.assert_array_equal(grads[k], ref_grads[k], err_msg=k)


def test_residual_add_reads_both_dtypes() -> None:
    """amp_multicast(bf16, f32) + add: one kernel reading bf16 and f32, = numpy's f32 add."""
    x, y = S.var("x"), S.var("y")
    mc = S.amp_multicast(x, y, num_outputs=2)
    types = {"x": BF16, "y": np.float32}
    exe = _bind(mc[0] + mc[1], types, {"x": (3, 5), "y": (3, 5)})
    assert _ops(exe) == ["_fused"]
    v = _values(types, (3, 5))
    got = _run(exe, v)[0]
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, v["x"].astype(np.float32) + v["y"])


def test_softmax_reads_narrow_input(monkeypatch) -> None:
    """softmax(amp_cast(x bf16 -> f32)): softmax reads x, dtype=float32 (MXNet's own attribute)."""
    sym = S.softmax(S.amp_cast(S.var("x"), dtype="float32"), axis=-1)
    types, shapes = {"x": BF16}, {"x": (4, 7)}
    exe = _bind(sym, types, shapes)
    assert _ops(exe) == ["softmax"]
    assert exe._infer.schedule.steps[0].node.attrs["dtype"] == "float32"
    v = _values(types, (4, 7))
    got = _run(exe, v)[0]
    x = v["x"].astype(np.float64)
    want = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(got, want / want.sum(-1, keepdims=True), rtol=1e-6)
    monkeypatch.setattr(PIPELINE, WITHOUT)
    plain = _bind(sym, types, shapes)
    assert _ops(plain) == ["amp_cast", "softmax"]
    np.testing.assert_array_equal(got, _run(plain, v)[0])


def test_fused_group_stores_narrow() -> None:
    """Cast((a + b) * c, bf16): the float32 group stores bfloat16 itself, rounding as astype."""
    a, b, c = S.var("a"), S.var("b"), S.var("c")
    types = {k: np.float32 for k in "abc"}
    exe = _bind(S.Cast((a + b) * c, dtype="bfloat16"), types, {k: (6, 4) for k in "abc"})
    assert _ops(exe) == ["_fused"]
    v = _values(types, (6, 4))
    got = _run(exe, v)[0]
    assert got.dtype == BF16
    np.testing.assert_array_equal(got, ((v["a"] + v["b"]) * v["c"]).astype(BF16))


def _kept(sym, types: dict, shape: tuple) -> list[str]:
    return _ops(_bind(sym, types, {k: shape for k in types}))


@pytest.mark.parametrize("case", ["gemm_reader", "graph_output", "read_twice", "float64"])
def test_casts_that_stay(case: str) -> None:
    x, y = S.var("x"), S.var("y")
    if case == "gemm_reader":  # a GEMM reads the float32 copy: cuBLAS takes one dtype
        ops = _kept(S.FullyConnected(S.amp_cast(x, dtype="float32"), num_hidden=3,
                                     no_bias=True, name="fc"), {"x": BF16}, (2, 4))
        assert ops == ["amp_cast", "FullyConnected"]
    elif case == "graph_output":  # the cast's value is what the user asked for
        c = S.amp_cast(x, dtype="float32")
        ops = _kept(S.Group([c, S.exp(c)]), {"x": BF16}, (2, 4))
        assert "amp_cast" in ops
    elif case == "read_twice":  # the group's float32 value is read besides the cast
        s = S.exp(x) * y
        ops = _kept(S.Group([S.Cast(s, dtype="bfloat16") + S.ones_like(x).astype("bfloat16"),
                             S.sum(s)]), {"x": np.float32, "y": np.float32}, (2, 4))
        assert "Cast" in ops
    else:  # float32 -> float64 is exact but the kernels compute in float32
        ops = _kept(S.exp(S.Cast(x, dtype="float64")), {"x": np.float32}, (2, 4))
        assert ops == ["Cast", "exp"]


def test_graph_without_casts_is_returned_unchanged() -> None:
    from symgraph.compiler.passes import fuse_elementwise
    from symgraph.runtime import compile as C
    g = S.FullyConnected(S.tanh(S.var("x")) * 2.0 + 1.0, num_hidden=3, name="fc").graph()
    g = fuse_elementwise(g.with_types(C.infer(g, {"x": (2, 4)}, {"x": np.float32})))
    assert "_fused" in g.op_names() and absorb_casts(g) is g


def test_random_amp_graphs_bitwise_unchanged(monkeypatch) -> None:
    """ir_fingerprint's random graphs through AMP bf16: outputs and gradients with the pass
    equal those without it, bit for bit, on the graphs it changes (some must change)."""
    from benchmarks.ir_fingerprint import random_graph
    rng = np.random.default_rng(1)
    changed = 0
    for k in range(60):
        sym, shapes = random_graph(rng)
        if not shapes:
            continue
        sym = sg.amp.convert_symbol(sym, target_dtype="bfloat16")
        runs = []
        for pipeline in (OPTIMIZE_PIPELINE, WITHOUT):
            monkeypatch.setattr(PIPELINE, pipeline)
            exe = sym.simple_bind(sg.cpu(), grad_req="write", **shapes)
            values = np.random.default_rng(k)
            for name, arr in exe.arg_dict.items():
                arr[:] = values.normal(size=arr.shape)
            outs = [o.asnumpy() for o in exe.forward(is_train=True)]
            exe.backward([sg.nd.ones(o.shape, dtype=o.dtype) for o in outs])
            runs.append((outs, {n: g.asnumpy() for n, g in exe.grad_dict.items()
                                if g is not None}, len(exe._train.schedule.steps)))
        (outs, grads, steps), (ref_outs, ref_grads, ref_steps) = runs
        changed += steps != ref_steps
        for a, b in zip(outs, ref_outs):
            np.testing.assert_array_equal(a, b, err_msg=f"graph {k}")
        for name in grads:
            np.testing.assert_array_equal(grads[name], ref_grads[name], err_msg=f"{k} {name}")
    assert changed >= 5, changed
