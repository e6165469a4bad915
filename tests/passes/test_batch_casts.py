"""batch_casts: the ``_transpose_cast`` nodes of AMP's channels-last weights (class (a): casts
of variables) and of their gradients (class (b): unread graph outputs) each become one
``_multi_transpose_cast``, values unchanged; a lone cast, a cast something reads, and a cast
that waits on a backward-phase input next to one that does not stay apart."""
import numpy as np
import pytest

import symgraph as sg
import symgraph.compiler.passes as P
from symgraph.runtime.backend import numpy_backend
from symgraph.compiler.passes.batch_casts import batch_casts
from symgraph.compiler.passes.channel_last import channel_last
from symgraph.compiler.passes.verify import verify

from .test_channel_last import SHAPES, small_resnet
from .util import declared, ops_of, random_inputs, run_graph

S = sg.sym
OHWI = (0, 2, 3, 1)


def _set_values(exe, shapes: dict, seed: int) -> None:
    """Arguments uniform in [-1, 1), labels of 3 classes, moving statistics (0, 1)."""
    rng = np.random.default_rng(seed)
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.uniform(-1, 1, arr.shape)
    exe.arg_dict["softmax_label"][:] = rng.integers(0, 3, shapes["softmax_label"])
    for name, arr in exe.aux_dict.items():
        arr[:] = 1.0 if name.endswith("var") else 0.0


def _amp_train(monkeypatch, pipeline=None, seed: int = 0, shapes: dict = SHAPES):
    """(executor, outputs, gradients) of one training step of the AMP bfloat16 small ResNet
    with its convolutions channels-last, as the CUDA backend binds it (on the numpy backend)."""
    monkeypatch.setattr(numpy_backend, "FORWARD_PIPELINE", (channel_last,))
    if pipeline is not None:
        monkeypatch.setattr(P, "OPTIMIZE_PIPELINE", pipeline)
        monkeypatch.setattr("symgraph.runtime.compile.OPTIMIZE_PIPELINE", pipeline)
    sym = sg.amp.convert_symbol(small_resnet(), target_dtype="bfloat16")
    reqs = {n: "null" if n in ("data", "softmax_label") else "write"
            for n in sym.list_arguments()}
    exe = sym.simple_bind(sg.cpu(), grad_req=reqs, **shapes)
    _set_values(exe, shapes, seed)
    outs = [o.asnumpy().copy() for o in exe.forward(is_train=True)]
    exe.backward()
    grads = {k: g.asnumpy().copy() for k, g in exe.grad_dict.items() if g is not None}
    return exe, outs, grads


def test_amp_step_has_one_batch_each_way_and_keeps_values(monkeypatch) -> None:
    exe, outs, grads = _amp_train(monkeypatch)
    steps = exe._train.schedule.steps
    ops = [st.node.op for st in steps]
    assert "_transpose_cast" not in ops and ops.count("_multi_transpose_cast") == 2, ops
    fwd, bwd = [st.node for st in steps if st.node.op == "_multi_transpose_cast"]
    # 6 convolution weights, the data and the dense layer's weight and bias (plain casts) in;
    # their 8 gradients out, each batch in its phase
    assert len(fwd.inputs) == 9 and len(bwd.inputs) == 8
    assert {e.node.name for e in fwd.inputs} == {"data", "fc_weight", "fc_bias"} | {
        f"{n}_conv_weight" for n in ("stem", "b1a", "b1b", "b2a", "b2b", "b2p")}
    n_fwd = exe._train.schedule.n_forward_steps
    assert steps.index(next(s for s in steps if s.node is fwd)) < n_fwd
    assert steps.index(next(s for s in steps if s.node is bwd)) >= n_fwd
    with monkeypatch.context() as m:
        plain = tuple(p for p in P.OPTIMIZE_PIPELINE if p is not batch_casts)
        exe2, outs2, grads2 = _amp_train(m, plain)
    ops2 = [st.node.op for st in exe2._train.schedule.steps]
    assert ops2.count("_transpose_cast") == 13 and "_multi_transpose_cast" not in ops2
    for a, b in zip(outs, outs2):
        np.testing.assert_array_equal(a, b)
    assert grads.keys() == grads2.keys() and any(k.endswith("conv_weight") for k in grads)
    for k in grads:
        assert grads[k].dtype == grads2[k].dtype == np.float32, k
        np.testing.assert_array_equal(grads[k], grads2[k], err_msg=k)


def _float32_grads(shapes: dict, seed: int = 0) -> dict:
    """The gradients of the same step of the float32 net (no AMP, passes off)."""
    sym = small_resnet()
    reqs = {n: "null" if n in ("data", "softmax_label") else "write"
            for n in sym.list_arguments()}
    old, P.ENABLED = P.ENABLED, False
    try:
        exe = sym.simple_bind(sg.cpu(), grad_req=reqs, **shapes)
    finally:
        P.ENABLED = old
    _set_values(exe, shapes, seed)
    exe.forward(is_train=True)
    exe.backward()
    return {k: g.asnumpy().copy() for k, g in exe.grad_dict.items() if g is not None}


def test_amp_step_matches_no_passes(monkeypatch) -> None:
    """The optimised and the unoptimised (no fusion, no folding) AMP bfloat16 steps against
    the float32 net's: bfloat16 roundings differ by where fusion keeps float (a BatchNorm
    heading its ReLU applies it before rounding), so neither graph is the other's reference.
    Each gradient within 0.2 of its scale of the float32 one (measured: 0.13 optimised, 0.17
    unoptimised; a wrong formula is off by its whole scale). A batch of 16: BatchNorm over
    two samples turns each rounding into a large change of its gradients."""
    shapes = {"data": (16, 3, 8, 8), "softmax_label": (16,)}
    _, outs, grads = _amp_train(monkeypatch, shapes=shapes)
    monkeypatch.setattr(P, "ENABLED", False)
    _, outs2, grads2 = _amp_train(monkeypatch, shapes=shapes)
    for a, b in zip(outs, outs2):
        np.testing.assert_allclose(a, b, rtol=0.05, atol=0.02)
    ref = _float32_grads(shapes)
    assert grads.keys() == grads2.keys() == ref.keys()
    for k in ref:
        scale = np.abs(ref[k]).max() + 1e-3
        for got in (grads, grads2):
            np.testing.assert_allclose(got[k] / scale, ref[k] / scale, atol=0.2, err_msg=k)


def _tc(x, dtype: str = "bfloat16", axes=(1, 0)):
    return S._transpose_cast(x, axes=axes, dtype=dtype)


def _check(sym, left: list, **shapes) -> None:
    g = declared(sym, "float32", **shapes)
    out = batch_casts(g)
    verify(out)
    assert sorted(ops_of(out)) == sorted(left)
    vals = random_inputs(g)
    want, got = run_graph(g, vals, plan=False), run_graph(out, vals)
    for w, o in zip(want, got):
        assert w.dtype == o.dtype and w.shape == o.shape
        np.testing.assert_array_equal(o, w)


def test_casts_of_variables_merge() -> None:
    a, b = S.var("a"), S.var("b")
    sym = S.Group([S.exp(_tc(a)), S.relu(_tc(b, "float16", (2, 0, 1))), _tc(S.var("c"))])
    _check(sym, ["_multi_transpose_cast", "exp", "relu"], a=(3, 4), b=(2, 3, 4), c=(5, 2))


def test_plain_float_casts_merge_with_transposing_ones() -> None:
    """A float-to-float cast is a transposing cast with the identity permutation; a cast to an
    integer type is not one."""
    a, b, c = S.var("a"), S.var("b"), S.var("c")
    sym = S.Group([S.exp(_tc(a)), S.relu(S.amp_cast(b, dtype="float16")),
                   S.Cast(c, dtype="int32"), S._backward_Cast(S.relu(a), S.var("like")),
                   S.Cast(S.sin(b), dtype="bfloat16")])
    _check(sym, ["_multi_transpose_cast", "exp", "relu", "Cast", "relu", "sin",
                 "_multi_transpose_cast"], a=(3, 4), b=(2, 3, 4), c=(5, 2), like=(3, 4))


def test_unread_output_casts_merge_and_a_read_one_stays() -> None:
    a, b, c = (S.relu(S.var(n)) for n in "abc")
    read = _tc(b)
    sym = S.Group([_tc(a), S.exp(read), _tc(c, "float16"), read])
    _check(sym, ["relu"] * 3 + ["_multi_transpose_cast", "_transpose_cast", "exp"],
           a=(3, 4), b=(2, 3), c=(4, 4))


def test_one_cast_of_each_class_leaves_the_graph_as_it_is() -> None:
    sym = S.Group([S.exp(_tc(S.var("a"))), _tc(S.relu(S.var("b")))])
    g = declared(sym, "float32", a=(3, 4), b=(2, 3))
    assert batch_casts(g) is g


def test_backward_phase_casts_stay_apart() -> None:
    """A cast of a head gradient is not merged with the forward's casts of variables, and an
    unread cast that waits on one is not merged with one that does not (the forward phase
    would wait for the backward's inputs)."""
    head = S.var("head", attr={"__phase__": "backward"})
    early, late = S.relu(S.var("a")), S.relu(S.var("b")) * head
    sym = S.Group([S.exp(_tc(S.var("w"))), S.exp(_tc(head)), _tc(early), _tc(late)])
    g = declared(sym, "float32", a=(3, 4), b=(3, 4), head=(3, 4), w=(2, 2))
    assert batch_casts(g) is g
    # two of each unread kind: one batch of each kind
    sym = S.Group([_tc(early), _tc(late), _tc(S.sin(early)), _tc(S.cos(late))])
    g = declared(sym, "float32", a=(3, 4), b=(3, 4), head=(3, 4))
    out = batch_casts(g)
    verify(out)
    multi = [n for n in out.nodes() if n.op == "_multi_transpose_cast"]
    assert len(multi) == 2 and "_transpose_cast" not in ops_of(out)
    assert [out.outputs.index(e) for m in multi for e in m.entries()] in ([0, 2, 1, 3],
                                                                          [1, 3, 0, 2])


def test_outputs_keep_positions_when_a_cast_is_returned_twice() -> None:
    a, b = S.relu(S.var("a")), S.relu(S.var("b"))
    ta, tb = _tc(a), _tc(b, "float16")
    _check(S.Group([tb, ta, tb]), ["relu", "relu", "_multi_transpose_cast"], a=(3, 4), b=(2, 5))


@pytest.mark.parametrize("bad", [dict(axes=((1, 0),), dtypes=("float16", "float16")),
                                 dict(axes=((1, 0), (1, 0)), dtypes=("float16",))])
def test_attrs_must_give_one_axes_and_one_dtype_per_input(bad: dict) -> None:
    sym = S._multi_transpose_cast(S.var("a"), S.var("b"), **bad, name="mc")
    with pytest.raises(sg.base.AttrError, match=r"mc \(_multi_transpose_cast\).*2 inputs"):
        sym.infer_shape(a=(2, 3), b=(3, 2))
