"""fold_casts: a float cast next to a transpose becomes one ``_transpose_cast`` step (AMP's
channels-last convolution weights: cast + transpose forward, transpose + cast backward), values
unchanged; a cast or transpose something else reads, a graph output, and a cast to or from an
integer type stay as they are."""
import numpy as np
import pytest

import symgraph as sg
from symgraph.core.dtypes import as_dtype
from symgraph.compiler.passes import OPTIMIZE_PIPELINE
from symgraph.compiler.passes.batch_casts import batch_casts
from symgraph.compiler.passes.fold_casts import fold_casts

from .util import declared, ops_of, random_inputs, run_graph, train_results

S = sg.sym
w = S.var("w")
OHWI = (0, 2, 3, 1)


def _amp_conv():
    """A channels-last convolution of bfloat16 data with a float32 OIHW weight, as AMP and
    passes/channel_last build it."""
    data = S.amp_cast(S.var("data"), dtype="bfloat16")
    weight = S.transpose(S.amp_cast(w, dtype="bfloat16"), axes=OHWI)
    y = S.Convolution(data, weight, kernel=(3, 3), num_filter=4, pad=(1, 1), no_bias=True,
                      layout="NHWC")
    return S.sum(S.amp_cast(y, dtype="float32"))


def test_training_graph_folds_both_directions_and_keeps_values(monkeypatch) -> None:
    # without batch_casts, which would merge the weight's and the data's casts (its own test)
    monkeypatch.setattr("symgraph.runtime.compile.OPTIMIZE_PIPELINE",
                        tuple(p for p in OPTIMIZE_PIPELINE if p is not batch_casts))
    sym, shapes = _amp_conv(), {"data": (2, 5, 5, 3), "w": (4, 3, 3, 3)}
    exe = sym.simple_bind(sg.cpu(), grad_req={"data": "null", "w": "write"}, **shapes)
    ops = [st.node.op for st in exe._train.schedule.steps]
    assert ops.count("_transpose_cast") == 2, ops  # the weight in, its gradient out
    assert "transpose" not in ops and ops.count("amp_cast") == 2  # data's and the output's
    assert ops.count("_backward_Cast") == 1  # the output cast's gradient: no transpose there
    folded, plain = train_results(sym, shapes, True), train_results(sym, shapes, False)
    np.testing.assert_array_equal(folded[0][0], plain[0][0])
    np.testing.assert_array_equal(folded[1]["w"], plain[1]["w"])


def _twice(c):
    return S.elemwise_add(S.transpose(c), S.transpose(c, axes=(1, 0)))


# (expression, dtype of w, ops left after fold_casts)
CASES = [
    (S.transpose(S.amp_cast(w, dtype="bfloat16"), axes=(1, 0)), "float32", ["_transpose_cast"]),
    (S.Cast(S.transpose(w), dtype="float16"), "float32", ["_transpose_cast"]),
    (S._backward_Cast(S.transpose(w, axes=(1, 0)), S.var("like")), "bfloat16",
     ["_transpose_cast"]),
    # the cast is read twice: folding would cast twice
    (_twice(S.Cast(w, dtype="float16")), "float32",
     ["Cast", "transpose", "transpose", "elemwise_add"]),
    (S.Cast(S.transpose(w), dtype="int32"), "float32", ["transpose", "Cast"]),  # not a float
    (S.exp(S.transpose(w)), "float32", ["transpose", "exp"]),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_fold(case: int) -> None:
    sym, dtype, left = CASES[case]
    shapes = {"w": (3, 4)} if "like" not in sym.list_arguments() else {"w": (3, 4), "like": (4, 3)}
    g = declared(sym, dtype, **shapes)
    out = fold_casts(g)
    assert sorted(ops_of(out)) == sorted(left)
    vals = random_inputs(g)
    want = run_graph(g, vals, plan=False)[0]
    got = run_graph(out, vals)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_a_graph_output_is_not_folded_away() -> None:
    c = S.Cast(w, dtype="float16")
    sym = S.Group([c, S.transpose(c)])
    out = fold_casts(declared(sym, "float32", w=(3, 4)))
    assert sorted(ops_of(out)) == ["Cast", "transpose"]


@pytest.mark.parametrize("src,dst", [("float32", "bfloat16"), ("bfloat16", "float32"),
                                     ("float32", "float16"), ("float64", "float32")])
def test_transpose_cast_matches_numpy(src: str, dst: str) -> None:
    """The op itself, against numpy's transpose then astype (the float64 reference)."""
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(as_dtype(src))
    sym = S._transpose_cast(S.var("x"), axes=(2, 0, 1), dtype=dst)
    exe = sym.simple_bind(sg.cpu(), type_dict={"x": as_dtype(src)}, x=x.shape)
    exe.arg_dict["x"][:] = x
    got = exe.forward()[0].asnumpy()
    assert got.dtype == as_dtype(dst)
    want = x.astype(np.float64).transpose(2, 0, 1).astype(as_dtype(dst))
    np.testing.assert_array_equal(got, want)
