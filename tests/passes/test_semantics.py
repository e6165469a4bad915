"""Passes preserve meaning: outputs and gradients with every pass on (fusion, memory plan with
NaN poisoning of freed buffers, see tests/conftest.py) equal those with every pass off, for every
registry test graph and for random graphs drawn by hypothesis."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import symgraph as sg
import symgraph.compiler.passes as P
from tests.ops.case import Case
from tests.ops.test_registry import ALL_CASES, _sample

from .util import assert_same, train_results


def _run_case(case: Case, enabled: bool) -> tuple[list, dict]:
    args, aux = _sample(case)
    old, P.ENABLED = P.ENABLED, enabled
    try:
        sym = case.build()
        exe = sym.bind(sg.cpu(), {k: sg.nd.array(v, dtype=np.float64) for k, v in args.items()},
                       args_grad={k: sg.nd.zeros(v.shape, dtype=np.float64)
                                  for k, v in args.items()},
                       aux_states={k: sg.nd.array(v, dtype=np.float64) for k, v in aux.items()}
                       or None)
    finally:
        P.ENABLED = old
    outs = [o.asnumpy().copy() for o in exe.forward(is_train=True)]
    heads = [sg.nd.array(np.linspace(-1, 1, o.size).reshape(o.shape), dtype=np.float64)
             for o in outs]
    exe.backward(heads)
    first = {k: g.asnumpy().copy() for k, g in exe.grad_dict.items()}
    exe.backward(heads)  # a second backward on the same forward reads saved values again
    second = {k: g.asnumpy().copy() for k, g in exe.grad_dict.items()}
    for k in first:
        np.testing.assert_array_equal(first[k], second[k], err_msg=f"{case.name()}: {k}")
    return outs, first


@pytest.mark.parametrize("case", ALL_CASES, ids=Case.name)
def test_registry_graphs_same_with_passes_off(case: Case) -> None:
    assert_same(_run_case(case, True), _run_case(case, False))


B, F = 3, 4
SHAPES = {"full": (B, F), "row": (1, F), "col": (B, 1)}
UNARY = [sg.sym.tanh, sg.sym.sigmoid, sg.sym.relu, sg.sym.negative, sg.sym.abs,
         lambda s: s * 2.0, lambda s: s + 1.0, lambda s: s * 1.0, lambda s: (s > 0.1) * s]
BINARY = [sg.sym.broadcast_add, sg.sym.broadcast_sub, sg.sym.broadcast_mul,
          sg.sym.broadcast_maximum]


@st.composite
def random_graph(draw: st.DrawFn) -> tuple:
    """A mix of elementwise, broadcast, reduce and FullyConnected ops over a pool of values;
    values are reused (shared subexpressions) and a few become extra outputs."""
    pool = [(sg.sym.var(f"v{i}"), kind) for i, kind in enumerate(("full", "row", "col"))]
    shapes = {f"v{i}": SHAPES[k] for i, k in enumerate(("full", "row", "col"))}
    for i in range(draw(st.integers(2, 9))):
        kind = draw(st.sampled_from(["unary", "binary", "reduce", "fc", "again"]))
        a, ka = pool[draw(st.integers(0, len(pool) - 1))]
        if kind == "unary":
            pool.append((draw(st.sampled_from(UNARY))(a), ka))
        elif kind == "binary":
            b, kb = pool[draw(st.integers(0, len(pool) - 1))]
            k = ka if ka == kb else "full"
            pool.append((draw(st.sampled_from(BINARY))(a, b), k))
        elif kind == "reduce" and ka != "row":
            pool.append((sg.sym.sum(a, axis=1, keepdims=True), "col"))
        elif kind == "fc" and ka == "full":
            pool.append((sg.sym.FullyConnected(a, num_hidden=F, name=f"fc{i}"), "full"))
        else:  # the same expression built twice: CSE must merge it
            pool.append((sg.sym.tanh(a) * 3.0 + sg.sym.tanh(a) * 3.0, ka))
    n_out = draw(st.integers(1, 3))
    outs = [p[0] for p in pool[-n_out:]]
    return sg.sym.Group(outs) if len(outs) > 1 else outs[0], shapes


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_graph(), st.integers(0, 3))
def test_random_graphs_same_with_passes_off(graph_shapes: tuple, seed: int) -> None:
    sym, shapes = graph_shapes
    shapes = {k: v for k, v in shapes.items() if k in sym.list_arguments()}
    if not shapes:
        return
    on = train_results(sym, shapes, True, seed)
    off = train_results(sym, shapes, False, seed)
    for x in on[0] + list(on[1].values()):
        assert not np.isnan(x).any(), "NaN: a freed (poisoned) buffer was read"
    assert_same(on, off)


def test_deep_graph_compiles_and_matches() -> None:
    """Passes must not recurse per node (Python's stack) and must stay correct on long chains."""
    x = sg.sym.var("x")
    net = x
    for i in range(200):
        net = sg.sym.tanh(net * 0.9 + 0.1) if i % 50 else sg.sym.sum(net, axis=1, keepdims=True) + net
    shapes = {"x": (2, 3)}
    assert_same(train_results(net, shapes, True), train_results(net, shapes, False))
