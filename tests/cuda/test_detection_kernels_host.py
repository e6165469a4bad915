"""The detection kernels (``cuda/kernels_detection*.py``, ``kernels_multibox.py``,
``kernels_roi.py``) compiled as host C++ and run one thread at a time (``host_run``): each step
of the graphs below against its op's numpy reference on the same float32 inputs. The block
kernels are written for any block size, so one thread runs them as the GPU's blocks would."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.registry import RunCtx, get_op
from tests.ops import test_detection_mxnet as live

from .host_run import host_compiler, run_on_host

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
S = sg.sym
# One case per kernel (and per option that changes a kernel's code), to keep the g++ runs few.
HOST = {name: live.CASES[name] for name in (
    "roi_pool", "roi_align_ratio", "rroi_align_adaptive", "deformable", "roi_align_ps", "psroi", "box_iou_center", "box_nms",
    "box_nms_center", "bipartite", "box_encode", "box_decode", "prior", "target_mining",
    "detection_topk", "multi_proposal")}


def _steps(expr: str, inputs: list, wrt: list) -> list:
    """(step, shapes, dtypes, input arrays) of every detection step of the expression's
    graph (training, with the ``wrt`` inputs' gradients) whose inputs are all variables:
    the inputs given, the head gradient 1, 2, 3..."""
    names = "abcdef"[:len(inputs)]
    y = eval(expr, {"nd": S}, {n: S.var(n) for n in names})  # noqa: S307 (the cases' table)
    y = y[0] if isinstance(y, (list, tuple)) else y
    args = {n: np.asarray(v, np.float32) for n, v in zip(names, inputs)}
    exe = y.simple_bind(sg.cpu(), grad_req={n: "write" if k in wrt else "null"
                                            for k, n in enumerate(names)},
                        **{n: v.shape for n, v in args.items()})
    sch = (exe._train if wrt else exe._infer).schedule
    values = {slot: args.get(node.name) for node, slot in sch.variables.items()}
    for node, slot in sch.variables.items():
        if node.name.startswith("_head_grad"):
            size = int(np.prod(sch.shapes[slot]))
            values[slot] = np.arange(1, size + 1, dtype=np.float32).reshape(sch.shapes[slot])
    return [(st, sch.shapes, sch.dtypes, [values[i] for i in st.inputs]) for st in sch.steps
            if all(values.get(i) is not None for i in st.inputs)]


@pytest.mark.parametrize("name", sorted(HOST))
def test_kernels_match_numpy(name: str, tmp_path: Path) -> None:
    steps = _steps(*HOST[name])
    assert steps, f"{name}: no step with variable inputs"
    for k, (step, shapes, dtypes, xs) in enumerate(steps):
        want = get_op(step.node.op).compute(step.node.attrs, xs, RunCtx(is_train=True))
        (tmp_path / str(k)).mkdir()
        got = run_on_host(step, shapes, dtypes, xs, tmp_path / str(k))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5,
                                       err_msg=f"{name}: {step.node.op}")
