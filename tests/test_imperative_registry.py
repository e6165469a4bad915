"""Generic tests over the registry for imperative ``sg.nd``: every op case of tests/ops, replayed
as ``sg.nd.<op>`` calls on arrays, gives the symbolic path's outputs; autograd gradients of the
replay equal float64 central differences of the symbolic forward."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.frontend import autograd
from symgraph.core.graph import Entry
from symgraph.core.types.infer_type import infer_types
from symgraph.interop.test_utils import _bind, assert_almost_equal, numeric_grad
from tests.ops.case import Case
from tests.cuda.graphs import FLOAT64_CASES, GPU_REFUSED_CASES
from tests.ops.test_registry import ALL_CASES, INTERNAL, _forward, _sample

from symgraph.core.registry import all_ops, get_op

CASES = [c for c in ALL_CASES if c.op not in INTERNAL]
GPU_CASES = [c for c in CASES  # GPU runs float32
             if c.name() not in FLOAT64_CASES | GPU_REFUSED_CASES]
# Ops whose imperative call needs something an op function cannot express.
NOT_IMPERATIVE: set[str] = set()


def replay(sym, values: dict, ctx=None, attach: tuple = (), dtype=np.float64) -> list:
    """Evaluate ``sym`` by calling ``sg.nd.<op>`` node by node on arrays holding ``values``;
    variables named in ``attach`` get ``attach_grad()``. Returns the outputs' arrays."""
    ctx = ctx or sg.cpu()
    got: dict[Entry, sg.nd.NDArray] = {}
    # Imperative code cannot ask consumers for a dtype: an op without inputs is told the one
    # symbolic inference decided (``sg.sym.zeros(...) + x`` takes x's dtype).
    types = infer_types(sym.graph(), {k: np.dtype(dtype) for k in values})
    for node in sym.graph().nodes():
        if node.is_variable:
            a = sg.nd.array(values[node.name], ctx, dtype=dtype)
            if node.name in attach:
                a.attach_grad()
            got[Entry(node)] = a
            continue
        fn = sg.nd.__dict__[node.op]
        attrs = dict(node.attrs)
        if not node.inputs:  # placed by ctx= (a string attribute of the op is ignored)
            attrs.pop("ctx", None)
            attrs["ctx"] = ctx
            if attrs.get("dtype", "") is None:
                attrs["dtype"] = types[Entry(node)].name
        outs = fn(*[got[e] for e in node.inputs], **attrs)
        outs = outs if isinstance(outs, list) else [outs]
        for i, o in enumerate(outs):
            got[Entry(node, i)] = o
    return [got[e] for e in sym.outputs_], {k: v for k, v in got.items() if k.node.is_variable}


def test_every_registered_op_has_an_nd_function() -> None:
    missing = [n for n in all_ops() if not callable(sg.nd.__dict__.get(n))]
    assert not missing


def _imperative_and_symbolic(case: Case, ctx=None, dtype=np.float64) -> tuple[list, list]:
    """(outputs of the ``sg.nd`` replay on ``ctx`` in ``dtype``, outputs of the symbolic
    forward on the CPU), both after seeding the generator alike."""
    args, aux = _sample(case)
    sym = case.build()
    sg.random.seed(7)
    want = _forward(sym, args, aux, case.is_train)
    sg.random.seed(7)
    scope = autograd.train_mode() if case.is_train else autograd.predict_mode()
    with scope:
        outs, _ = replay(sym, {**args, **aux}, ctx, dtype=dtype)
    return outs, want


def _autograd_and_numeric(case: Case, ctx=None, dtype=np.float64) -> list[tuple]:
    """``(name, autograd gradient of the replay on ctx in dtype, float64 central differences
    of the symbolic forward on the CPU)`` for each argument the case differentiates."""
    args, aux = _sample(case)
    sym = case.build()
    names = list(case.grad_nodes or sym.list_arguments())
    rng = np.random.default_rng(5)
    exe = _bind(sym, args, aux, sg.cpu(), np.float64, grad_req="null")
    heads = [rng.normal(size=o.shape) for o in exe.forward(is_train=True)]
    numeric = numeric_grad(exe, args, heads, names, 1e-4, True)
    with autograd.record():
        outs, leaves = replay(sym, {**args, **aux}, ctx, tuple(names), dtype)
    autograd.backward(outs, [sg.nd.array(h, ctx, dtype=dtype) for h in heads])
    by_name = {e.node.name: a for e, a in leaves.items()}
    return [(n, by_name[n].grad.asnumpy(), numeric[n]) for n in names]


@pytest.mark.parametrize("case", CASES, ids=Case.name)
def test_imperative_matches_symbolic(case: Case) -> None:
    outs, want = _imperative_and_symbolic(case)
    if not get_op(case.op).always_mutates:  # (updates run at the call, as MXNet orders them)
        assert all(o.is_pending for o in outs)  # nothing ran yet: the calls only recorded
    assert [o.shape for o in outs] == [w.shape for w in want]
    for g, w in zip(outs, want):
        assert g.dtype == w.dtype
        assert_almost_equal(g.asnumpy(), w, case.rtol, case.atol, ("imperative", "symbolic"))


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=Case.name)
def test_autograd_matches_central_differences(case: Case) -> None:
    for name, got, numeric in _autograd_and_numeric(case):
        assert_almost_equal(got, numeric, case.grad_rtol, case.atol,
                            (f"autograd gradient of {name}", "numeric"))


# -- the same on the GPU (float32 there; references from the CPU in float64) -----------------

@pytest.mark.gpu
@pytest.mark.parametrize("case", GPU_CASES, ids=Case.name)
def test_imperative_matches_symbolic_gpu(case: Case) -> None:
    outs, want = _imperative_and_symbolic(case, sg.gpu(), np.float32)
    assert [o.shape for o in outs] == [w.shape for w in want]
    for g, w in zip(outs, want):
        if "Dropout" in case.name() and case.is_train:
            continue  # another generator on the GPU: tests/cuda check its law
        assert_almost_equal(g.asnumpy(), w, max(case.rtol, 1e-3), max(case.atol, 1e-4),
                            ("imperative gpu", "symbolic cpu"))


@pytest.mark.gpu
@pytest.mark.parametrize("case", [c for c in GPU_CASES if c.grad], ids=Case.name)
def test_autograd_matches_central_differences_gpu(case: Case) -> None:
    for name, got, numeric in _autograd_and_numeric(case, sg.gpu(), np.float32):
        assert_almost_equal(got, numeric, max(case.grad_rtol, 1e-2), max(case.atol, 1e-3),
                            (f"autograd gpu gradient of {name}", "numeric"))
