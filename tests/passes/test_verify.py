"""verify: runs after every pass in tests, and rejects what it promises to reject."""
from __future__ import annotations

import pytest

import symgraph as sg
import symgraph.compiler.passes as P
from symgraph.core.attrs import Attrs
from symgraph.core.base import GraphError
from symgraph.core.expr import inp
from symgraph.core.graph import Entry, Graph, Node
from symgraph.compiler.passes.verify import verify
from symgraph.core.registry import OpDef, register, unregister

from .util import declared


def test_verifier_runs_after_every_pass(monkeypatch) -> None:
    assert P.VERIFY  # set by tests/conftest.py
    seen: list[int] = []
    monkeypatch.setattr(P, "verify", lambda g: seen.append(len(g.nodes())))
    x = sg.sym.var("x")
    exe = (sg.sym.relu(x) * 2.0).simple_bind(sg.cpu(), x=(2, 3))
    # the CPU backend's forward (pre-autodiff) pipeline, then the optimising one; a bind with
    # gradients compiles the training program, the inference one is compiled by the first
    # inference forward
    from symgraph.runtime.compile import backend_for
    passes = len(P.OPTIMIZE_PIPELINE) + len(backend_for(sg.cpu()).FORWARD_PIPELINE)
    assert len(seen) == passes
    exe.forward(is_train=False)
    assert len(seen) == 2 * passes


def _x() -> Entry:
    return declared(sg.sym.var("x"), x=(2, 3)).outputs[0]


def _fused(**changes) -> Graph:
    attrs = {"exprs": (inp(0) * 2.0,), "shapes": ((2, 3),), "members": ("_mul_scalar",),
             "head": None, "num_inputs": 1, "name": "fused_mul_scalar"}
    attrs.update(changes)
    return Graph((Entry(Node("_fused", "f", Attrs(attrs), (_x(),))),))


def test_well_formed_fused_node_passes() -> None:
    verify(_fused())


@pytest.mark.parametrize("changes, message", [
    ({"exprs": (inp(0), inp(0))}, "2 exprs for 1 shapes"),
    ({"exprs": (inp(3) * 2.0,)}, "reads input 3 of 1"),
    ({"members": ()}, "no members"),
])
def test_malformed_fused_node_is_rejected(changes: dict, message: str) -> None:
    with pytest.raises(GraphError, match=message):
        verify(_fused(**changes))


def test_wrong_arity_is_rejected() -> None:
    bad = Node("broadcast_add", "add0", Attrs(), (_x(),))
    with pytest.raises(GraphError, match=r"add0 \(broadcast_add\): 1 inputs, expected 2"):
        verify(Graph((Entry(bad),)))


def test_cycle_is_rejected() -> None:
    a = Node("exp", "a", Attrs(), (_x(),))
    b = Node("exp", "b", Attrs(), (Entry(a),))
    object.__setattr__(a, "inputs", (Entry(b),))  # the IR is immutable; force a cycle
    with pytest.raises(GraphError, match="cycle"):
        verify(Graph((Entry(b),)))


def test_unknown_shape_is_rejected() -> None:
    unregister("_test_shapeless")
    register(OpDef("_test_shapeless", {}, ("data",), lambda a, ins, outs: (ins, outs),
                   lambda a, xs, ctx: [xs[0]], "not differentiable", "opaque", doc="test"))
    try:
        g = Graph((Entry(Node("_test_shapeless", "s", Attrs(), (_x(),))),))
        with pytest.raises(GraphError, match=r"s \(_test_shapeless\): output 0 has unknown shape"):
            verify(g)
    finally:
        unregister("_test_shapeless")


def test_unregistered_op_is_rejected() -> None:
    with pytest.raises(GraphError, match="unknown operator"):
        verify(Graph((Entry(Node("_no_such_op", "n", Attrs(), (_x(),))),)))
