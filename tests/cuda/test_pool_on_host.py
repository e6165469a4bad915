"""The pooling kernels run on the host (``host_run``) against the numpy backend in float64.

Covers the backward tile kernel of disjoint windows (2x2/2, 3x3/3 with remainder cells, stride
> kernel, padding, 1-D, 3-D), the gather kernel of overlapping ones, and both pooling kernels
as the head of a fused group that applies the group's formula in the same kernel, on every cell
it writes: ``dx * 2 + e`` is ``e``, not 0, where no window covers the cell. Inputs are small
integers, so windows hold ties (the gradient goes to the first maximum) and float32 is exact;
the max cases also put -inf in a corner that a padded window sees after a padding cell.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.kernels_pool import (render_pool, render_pool_backward,
                                        render_pool_backward_tiles)
from symgraph.runtime.cuda.actions import Kernel
from symgraph.core.expr import call, inp
from symgraph.compiler.ops.geometry import PoolWindow

from .host_run import host_compiler, lowered, run_on_host

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
S = sg.sym

# id: (data shape, kernel, stride, pad, pool_type, full convention, count_include_pad)
GEOMETRIES = {
    "max-2x2": ((2, 3, 6, 8), (2, 2), (2, 2), (0, 0), "max", False, True),
    "max-3x3-remainder": ((2, 2, 8, 7), (3, 3), (3, 3), (0, 0), "max", False, True),
    "max-gap-pad-full": ((1, 2, 7, 9), (2, 2), (3, 4), (1, 1), "max", True, True),
    "avg-gap-exclude-pad": ((2, 2, 7, 9), (2, 3), (3, 3), (1, 1), "avg", False, False),
    "avg-3x3-remainder-pad": ((1, 2, 8, 7), (3, 3), (3, 3), (1, 1), "avg", False, True),
    "sum-1d-gap": ((2, 3, 10), (2,), (3,), (0,), "sum", False, True),
    "max-1d-pad": ((2, 3, 9), (2,), (2,), (1,), "max", False, True),
    "max-3d-remainder": ((1, 2, 5, 4, 5), (2, 2, 2), (2, 2, 2), (0, 0, 0), "max", False, True),
    "avg-3d-gap-full": ((1, 2, 4, 5, 6), (1, 2, 2), (2, 3, 2), (0, 1, 0), "avg", True, False),
    "max-overlap-pad": ((2, 2, 7, 7), (3, 3), (2, 2), (1, 1), "max", False, True),
}
EPILOGUES: dict[str, Callable[[Any, Any], Any]] = {
    "none": lambda dx, e: dx,
    "relu-mask": lambda dx, e: dx * (e > 0),
    "affine": lambda dx, e: dx * 2 + e,
}


def _attrs(geo: tuple) -> dict:
    _, kernel, stride, pad, kind, full, include = geo
    return dict(kernel=kernel, stride=stride, pad=pad, pool_type=kind, count_include_pad=include,
                pooling_convention="full" if full else "valid")


def _cpu_forward(sym, values: dict) -> np.ndarray:
    """``sym``'s output on the numpy backend, in float64."""
    exe = sym.bind(sg.cpu(), {k: sg.nd.array(v, sg.cpu(), np.float64) for k, v in values.items()})
    out = exe.forward()[0].asnumpy()
    assert out.dtype == np.float64
    return out


def _values(geo: tuple) -> dict[str, np.ndarray]:
    """float64 values that float32 holds exactly: data ``x``, its pooling ``y``, a gradient
    ``dy`` of ``y``'s shape and an epilogue operand ``e`` of ``x``'s shape."""
    rng = np.random.default_rng(0)
    x = rng.integers(-2, 3, size=geo[0]).astype(np.float64)
    if geo[4] == "max":
        x[(0, 0) + (0,) * (x.ndim - 2)] = -np.inf
    y = _cpu_forward(S.Pooling(S.var("x"), **_attrs(geo)), {"x": x})
    return {"x": x, "y": y, "dy": rng.integers(-4, 5, size=y.shape) / 4.0,
            "e": rng.integers(-2, 3, size=geo[0]).astype(np.float64)}


def _run_on_host(sym, values: dict, head: str, tmp: Path) -> tuple[np.ndarray, list]:
    """The host run of the one step of ``sym``'s inference schedule (``head`` alone or a fused
    group it heads), and that step's actions."""
    exe = sym.simple_bind(sg.cpu(), grad_req="null", **{k: v.shape for k, v in values.items()})
    sch = exe._infer.schedule
    (step,) = sch.steps
    op = step.node.attrs["head"][0] if step.node.op == "_fused" else step.node.op
    assert op == head, step.node
    xs = [values[e.node.name] for e in step.node.inputs]
    (got,) = run_on_host(step, sch.shapes, sch.dtypes, xs, tmp)
    return got, lowered(step, sch.shapes, sch.dtypes)[0]


@pytest.mark.parametrize("epilogue", EPILOGUES)
@pytest.mark.parametrize("gid", GEOMETRIES)
def test_pool_backward_matches_numpy(gid: str, epilogue: str, tmp_path: Path) -> None:
    geo = GEOMETRIES[gid]
    values = _values(geo)
    dx = S._backward_Pooling(S.var("dy"), S.var("x"), S.var("y"), **_attrs(geo))
    sym = EPILOGUES[epilogue](dx, S.var("e"))
    if epilogue == "none":
        del values["e"]
    got, acts = _run_on_host(sym, values, "_backward_Pooling", tmp_path)
    (kern,) = acts  # one kernel: the pooling kernel applies the epilogue itself
    disjoint = all(s >= k for s, k in zip(geo[2], geo[1]))
    assert isinstance(kern, Kernel) and ("backward_tiles" in kern.kernel.name) == disjoint
    np.testing.assert_allclose(got, _cpu_forward(sym, values), rtol=1e-6, atol=1e-6, err_msg=gid)


@pytest.mark.parametrize("gid", ["max-3x3-remainder", "avg-gap-exclude-pad", "max-3d-remainder"])
def test_pool_forward_epilogue_matches_numpy(gid: str, tmp_path: Path) -> None:
    geo = GEOMETRIES[gid]
    values = _values(geo)
    values = {"x": values["x"], "e": values["dy"]}  # an operand of the output's shape
    sym = S.Activation(S.Pooling(S.var("x"), **_attrs(geo)) * S.var("e") + 1,
                       act_type="sigmoid")
    got, acts = _run_on_host(sym, values, "Pooling", tmp_path)
    assert len(acts) == 1 and "pool_epilogue" in acts[0].kernel.name
    np.testing.assert_allclose(got, _cpu_forward(sym, values), rtol=1e-6, atol=1e-6, err_msg=gid)


def test_seed_cnn_pool_backward_groups_are_one_kernel() -> None:
    """Both max-pool gradients of the seed CNN, with relu's mask, are one tile kernel each."""
    from .graphs import seed_cnn
    sch = seed_cnn().simple_bind(sg.cpu(), data=(4, 1, 28, 28))._train.schedule
    groups = [lowered(st, sch.shapes, sch.dtypes)[0] for st in sch.steps
              if st.node.op == "_fused" and (st.node.attrs["head"] or ("",))[0] ==
              "_backward_Pooling"]
    assert len(groups) == 2
    for acts in groups:
        assert len(acts) == 1 and "pool_backward_tiles_epilogue" in acts[0].kernel.name


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_kernels_with_64_bit_indices_compile() -> None:
    """Past 2**31 cells the index math is 64-bit (host runs only see 32-bit sizes)."""
    g = PoolWindow(4096, 64, (96, 96), (2, 2), (2, 2), (0, 0), (1, 1), (48, 48), "max", True)
    kernels = [render_pool(g, False), render_pool(g, True), render_pool_backward(g),
               render_pool_backward_tiles(g, inp(0) * call("gt", inp(1), 0.0), 1)]
    for k in kernels:
        assert "unsigned long long j" in k.source, k.name
    cubin = compiler.run_nvcc(compiler.module_source(kernels), "sm_90", compiler.find_nvcc())
    assert all(k.name.encode() in cubin for k in kernels)
