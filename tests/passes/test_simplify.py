"""simplify: each rule of the table fires where it should, and only there; values unchanged."""
import numpy as np
import pytest

import symgraph as sg
from symgraph.compiler.passes.simplify import simplify

from .util import declared, ops_of, random_inputs, run_graph

x = sg.sym.var("x")
y = sg.sym.var("y")

# (expression, shapes, ops left after simplify, independent float64 reference)
CASES = [
    (x * 1.0, {"x": (2, 3)}, [], lambda v: v["x"]),
    (x + 0.0, {"x": (2, 3)}, [], lambda v: v["x"]),
    (x - 0.0, {"x": (2, 3)}, [], lambda v: v["x"]),
    (x / 1.0, {"x": (2, 3)}, [], lambda v: v["x"]),
    (sg.sym.exp(-(-x)), {"x": (2, 3)}, ["exp"], lambda v: np.exp(v["x"])),
    (sg.sym.Reshape(sg.sym.Reshape(x, shape=(6,)), shape=(3, 2)), {"x": (2, 3)},
     ["Reshape"], lambda v: v["x"].reshape(3, 2)),
    (sg.sym.Reshape(sg.sym.Flatten(x), shape=(2, 3)), {"x": (2, 3)}, [],
     lambda v: v["x"]),
    (sg.sym.Flatten(x), {"x": (2, 3)}, [], lambda v: v["x"]),
    (sg.sym.reshape_like(x, y), {"x": (2, 3), "y": (2, 3)}, [], lambda v: v["x"]),
    (sg.sym.add_n(sg.sym.exp(x)), {"x": (4,)}, ["exp"], lambda v: np.exp(v["x"])),
    (sg.sym.add_n(x, sg.sym.zeros_like(y)), {"x": (4,), "y": (4,)}, [], lambda v: v["x"]),
    (sg.sym._broadcast_backward(x, y), {"x": (2, 3), "y": (2, 3)}, [], lambda v: v["x"]),
    (x * sg.sym.ones_like(y), {"x": (2, 3), "y": (2, 3)}, [], lambda v: v["x"]),
    (sg.sym.identity(x), {"x": (2, 3)}, [], lambda v: v["x"]),
    (sg.sym.transpose(sg.sym.transpose(x)), {"x": (2, 3, 4)}, [], lambda v: v["x"]),
    (sg.sym.transpose(sg.sym.transpose(x, axes=(1, 2, 0)), axes=(0, 2, 1)), {"x": (2, 3, 4)},
     ["transpose"], lambda v: v["x"].transpose(1, 2, 0).transpose(0, 2, 1)),
]

# Rules that must NOT fire: the shape would change, or the formula is not an identity.
KEPT = [
    (x * 2.0, {"x": (2, 3)}, ["_mul_scalar"], lambda v: v["x"] * 2.0),
    (x + y, {"x": (2, 3), "y": (2, 3)}, ["broadcast_add"], lambda v: v["x"] + v["y"]),
    (x * sg.sym.ones_like(y), {"x": (1, 3), "y": (2, 3)}, ["ones_like", "broadcast_mul"],
     lambda v: v["x"] * np.ones((2, 3))),
    (sg.sym._broadcast_backward(x, y), {"x": (2, 3), "y": (1, 3)}, ["_broadcast_backward"],
     lambda v: v["x"].sum(axis=0, keepdims=True)),
    (sg.sym.Reshape(x, shape=(3, 2)), {"x": (2, 3)}, ["Reshape"],
     lambda v: v["x"].reshape(3, 2)),
    (sg.sym.transpose(x, axes=(1, 0, 2)), {"x": (2, 3, 4)}, ["transpose"],
     lambda v: v["x"].transpose(1, 0, 2)),
]


@pytest.mark.parametrize("case", range(len(CASES + KEPT)))
def test_rule(case: int) -> None:
    sym, shapes, left, ref = (CASES + KEPT)[case]
    g = declared(sym, **shapes)
    out = simplify(g)
    assert ops_of(out) == left
    vals = random_inputs(g)
    want = ref({k: v.astype(np.float64) for k, v in vals.items()})
    np.testing.assert_allclose(run_graph(out, vals)[0], want, rtol=1e-5, atol=1e-6)


def test_without_shapes_shape_rules_do_not_fire() -> None:
    g = sg.sym.Flatten(x).graph()  # variables not declared: shape unknown
    assert ops_of(simplify(g)) == ["Flatten"]
