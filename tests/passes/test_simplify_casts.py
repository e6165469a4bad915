"""simplify's cast-pair rule: exact pairs cancel (same dtype; narrow -> wide -> narrow), inexact
ones stay (f32 -> f16 -> f32 rounds), and values are unchanged either way."""
import numpy as np
import pytest

import symgraph as sg
from symgraph.core.dtypes import as_dtype
from symgraph.compiler.passes.simplify import simplify

from .util import declared, ops_of, random_inputs, run_graph

S = sg.sym
x = S.var("x")


def _c(s, dt: str, op: str = "Cast"):
    return S.Cast(s, dtype=dt) if op == "Cast" else S.amp_cast(s, dtype=dt)


# (expression, dtype of x, ops left after simplify)
CASES = [
    (_c(x, "float32"), "float32", []),                                    # same dtype
    (_c(x, "float16", "amp_cast"), "float16", []),
    (_c(_c(x, "float32"), "float16"), "float16", []),                     # f16 -> f32 -> f16
    (_c(_c(x, "float32", "amp_cast"), "bfloat16", "amp_cast"), "bfloat16", []),
    (_c(_c(x, "float64"), "float32"), "float32", []),
    (_c(_c(x, "float32"), "bfloat16"), "float16", ["Cast"]),              # f16 -> bf16, one cast
    (S.exp(_c(_c(x, "float32"), "float16")), "float16", ["exp"]),
]
# inexact pairs: the inner cast rounds, so the pair is not the identity
KEPT = [
    (_c(_c(x, "float16"), "float32"), "float32", ["Cast", "Cast"]),
    (_c(_c(x, "bfloat16", "amp_cast"), "float32", "amp_cast"), "float32",
     ["amp_cast", "amp_cast"]),
    (_c(_c(x, "bfloat16"), "float16"), "float16", ["Cast", "Cast"]),
    (_c(_c(x, "float16"), "float64"), "float32", ["Cast", "Cast"]),
]


def _reference(sym, dtype: str, xv: np.ndarray) -> np.ndarray:
    """Casts applied one by one in numpy (astype), outermost last."""
    chain, s = [], sym
    while s.get_children() is not None and s.name != "x":
        op = s.graph().outputs[0].node
        chain.append((op.op, op.attrs.get("dtype")))
        s = s.get_children()[0]
    v = xv
    for op, dt in reversed(chain):
        v = np.exp(v.astype(np.float32)).astype(v.dtype) if op == "exp" else v.astype(as_dtype(dt))
    return v


@pytest.mark.parametrize("case", range(len(CASES + KEPT)))
def test_cast_rule(case: int) -> None:
    sym, dtype, left = (CASES + KEPT)[case]
    g = declared(sym, dtype, x=(3, 5))
    out = simplify(g)
    assert ops_of(out) == left
    vals = random_inputs(g)
    vals = {"x": (vals["x"].astype(np.float64) * 3.0 + 1e-3).astype(as_dtype(dtype))}
    want = _reference(sym, dtype, vals["x"])
    got = run_graph(out, vals)[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


def test_f32_f16_f32_is_not_the_identity() -> None:
    """Why the rule keeps that pair: float32 values change through float16."""
    sym, dtype, _ = KEPT[0]
    g = declared(sym, dtype, x=(3, 5))
    vals = {"x": random_inputs(g)["x"] * np.float32(3.0) + np.float32(1e-3)}
    assert not np.array_equal(run_graph(simplify(g), vals)[0], vals["x"])


def test_backward_cast_to_the_same_dtype_is_dropped() -> None:
    g, y = S.var("g"), S.var("y")
    sym = S._backward_Cast(g, y)
    assert ops_of(simplify(declared(sym, "float16", g=(2, 3), y=(2, 3)))) == []


@pytest.mark.parametrize("dtype,left", [("bfloat16", ["elemwise_add"]),
                                        ("float32", ["amp_multicast", "elemwise_add"])])
def test_multicast_of_inputs_already_in_its_dtype_is_dropped(dtype: str, left: list) -> None:
    """AMP's residual add of two bfloat16 values: ``amp_multicast`` would copy both unchanged.
    With float32 data and a bfloat16 branch it casts, so it stays."""
    a, b = S.var("a"), S.var("b")
    other = b if dtype == "bfloat16" else S.amp_cast(b, dtype="bfloat16")
    pair = S.amp_multicast(a, other, num_outputs=2)
    sym = S.elemwise_add(pair[0], pair[1])
    g = declared(sym, dtype, a=(2, 3), b=(2, 3))
    out = simplify(g)
    assert sorted(o for o in ops_of(out) if o != "amp_cast") == left
    vals = random_inputs(g)
    want = vals["a"].astype(np.float64) + vals["b"].astype(as_dtype(dtype)).astype(np.float64)
    got = run_graph(out, vals)[0]
    assert got.dtype == as_dtype(dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(as_dtype(dtype)), rtol=1e-2)
