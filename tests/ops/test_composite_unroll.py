"""Composite ops (``ops/_composite.py``) as the CUDA backend runs them: unrolled into their
expansion before autodiff. On the CPU, the unrolled graph must compute the op's numpy
reference and the op's gradient, and lower with no host step (the GPU path's guarantee)."""
from __future__ import annotations

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda.actions import Host, flat_actions
from symgraph.runtime.cuda.plan import lower_schedule
from symgraph.core.registry import get_op
from symgraph.interop.test_utils import assert_almost_equal

from tests.cuda.graphs import unrolled

from .cases_image import CASES as IMAGE_CASES
from .cases_spatial import CASES
from .test_registry import _sample

COMPOSED = [c for c in CASES + IMAGE_CASES if "unroll" in get_op(c.op).extra]


def _run(sym, args: dict, aux: dict, heads: list, dtype: str) -> tuple[list, dict]:
    args = {k: v for k, v in args.items() if k in sym.list_arguments()}  # (unread: dropped)
    exe = sym.bind(sg.cpu(), {k: sg.nd.array(v, dtype=dtype) for k, v in args.items()},
                   args_grad={k: sg.nd.zeros(v.shape, dtype=dtype) for k, v in args.items()},
                   aux_states={k: sg.nd.array(v, dtype=dtype) for k, v in aux.items()} or None)
    outs = [o.asnumpy().copy() for o in exe.forward(is_train=True)]
    exe.backward([sg.nd.array(h, dtype=dtype) for h in heads])
    return outs, {k: exe.grad_dict[k].asnumpy() for k in args}


@pytest.mark.parametrize("case", COMPOSED, ids=lambda c: c.name())
def test_unrolled_matches_op(case) -> None:
    args, aux = _sample(case)
    sym = case.build()
    shapes = {k: v.shape for k, v in {**args, **aux}.items()}
    flat = unrolled(sym, shapes, "float64")
    assert not any(n.op == case.op for n in flat.graph().nodes())
    out_shapes = sym.infer_shape(**shapes)[1]
    rng = np.random.default_rng(5)
    heads = [rng.uniform(-1, 1, s) for s in out_shapes]
    want, want_g = _run(sym, args, aux, heads, "float64")
    got, got_g = _run(flat, args, aux, heads, "float64")
    for g, w in zip(got, want):
        assert_almost_equal(g, w, 1e-9, 1e-9, ("unrolled", "op"))
    for k in case.grad_nodes or list(got_g):
        assert_almost_equal(got_g[k], want_g[k], 1e-9, 1e-9, (f"unrolled d{k}", f"op d{k}"))


@pytest.mark.parametrize("case", COMPOSED, ids=lambda c: c.name())
def test_unrolled_has_no_host_step(case) -> None:
    args, aux = _sample(case)
    shapes = {k: v.shape for k, v in {**args, **aux}.items()}
    for dtype in ("float32", "float16"):
        flat = unrolled(case.build(), shapes, dtype)
        read = {k: s for k, s in shapes.items()
                if k in flat.list_arguments() + flat.list_auxiliary_states()}
        exe = flat.simple_bind(sg.cpu(), type_dict={k: dtype for k in read}, **read)
        for schedule in (exe._infer.schedule, exe._train.schedule):
            low = lower_schedule(schedule, 132)
            hosts = [a.step.node.op for acts in low.actions for a in flat_actions(acts)
                     if isinstance(a, Host)]
            assert not hosts, f"{case.name()} {dtype}: host steps {hosts}"
