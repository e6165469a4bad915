"""The ``row_norm`` kernels (LayerNorm, GroupNorm, InstanceNorm, L2Normalization, moments)
without a GPU: they compile with nvcc for sm_90 in every float dtype, and run on the CPU, one
thread (``host_run``: every value re-read past the register copies) and real block sizes
(``block_run``: the shared-memory fold, rows longer than the registers hold), against
independent float64 numpy (``tests/ops/cases_norm_layer.py``). GPU tests (marked ``gpu``) run
the ops forward and backward on the device against the same references, in float32 and in
float16/bfloat16 (statistics in float32, so the results are the narrow rounding of the float32
ones)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.attrs import parse_attrs
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.kernels_row_norm import block_for, render_row_norm
from symgraph.core.registry import get_op
from tests.ops import cases_norm_layer as ref

from .block_run import run_threaded
from .host_run import host_compiler, run_on_host

S = sg.sym
needs_gxx = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
x, g, b = S.var("x"), S.var("g"), S.var("b")

# id: (symbol, data shape, param shape or None, reference of (x, g, b) or (x,))
CONFIGS: dict[str, tuple[Any, tuple, Any, Callable]] = {
    "layer_last": (S.LayerNorm(x, g, b, output_mean_var=True), (3, 5, 40), (40,),
                   lambda x, g, b: ref.layer_norm(x, g, b)),
    "layer_mid": (S.LayerNorm(x, g, b, axis=1, eps=1e-3, output_mean_var=True), (2, 7, 3, 4),
                  (7,), lambda x, g, b: ref.layer_norm(x, g, b, axis=1, eps=1e-3)),
    "group": (S.GroupNorm(x, g, b, num_groups=3, output_mean_var=True), (2, 6, 5, 3), (3,),
              lambda x, g, b: ref.group_norm(x, g, b, 3)),
    "instance": (S.InstanceNorm(x, g, b), (2, 3, 9, 4), (3,),
                 lambda x, g, b: [ref.instance_norm(x, g, b)]),
    "l2_channel": (S.L2Normalization(x, mode="channel"), (2, 5, 3, 2), None,
                   lambda x: [ref.l2_normalization(x, "channel")]),
    "l2_instance": (S.L2Normalization(x), (3, 4, 6), None,
                    lambda x: [ref.l2_normalization(x, "instance")]),
    "moments": (S.moments(x, axes=(0, 2, 3)), (3, 4, 5, 2), None,
                lambda x: ref.moments(x, (0, 2, 3))),
}


def _values(cid: str, dtype: Any = np.float32) -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    _, shape, pshape, _ = CONFIGS[cid]
    xs = [rng.normal(size=shape) * 2 + 3]
    if pshape is not None:
        xs += [rng.uniform(0.5, 1.5, size=pshape), rng.normal(size=pshape)]
    return [v.astype(dtype) for v in xs]


def _step(cid: str, dtype: str = "float32") -> tuple:
    sym, shape, pshape, _ = CONFIGS[cid]
    shapes = {"x": shape} | ({"g": pshape, "b": pshape} if pshape else {})
    exe = sym.simple_bind(sg.cpu(), grad_req="null", type_dict={k: dtype for k in shapes},
                          **shapes)
    sch = exe._infer.schedule
    (step,) = sch.steps
    return step, sch.shapes, sch.dtypes


def _check(got: list, cid: str, xs: list, rtol: float = 2e-5) -> None:
    want = CONFIGS[cid][3](*[v.astype(np.float64) for v in xs])
    for k, w in enumerate(want):
        np.testing.assert_allclose(np.asarray(got[k], np.float64).reshape(np.shape(w)), w,
                                   rtol=rtol, atol=rtol, err_msg=f"{cid} output {k}")


@needs_gxx
@pytest.mark.parametrize("cid", sorted(CONFIGS))
def test_one_thread_on_host(cid: str, tmp_path: Path) -> None:
    """One thread per block: every value past the first MAX_PER is read again (the re-read
    loops), and the rows are walked by the grid-stride loop."""
    step, shapes, dtypes = _step(cid)
    xs = _values(cid)
    _check(run_on_host(step, shapes, dtypes, xs, tmp_path), cid, xs)


@needs_gxx
@pytest.mark.parametrize("cid,block", [("layer_last", 4), ("group", 7), ("moments", 32),
                                       ("l2_instance", 3)])
def test_blocks_of_threads_on_host(cid: str, block: int, tmp_path: Path) -> None:
    """Several threads and two blocks: the shared-memory fold of an odd thread count, threads
    past the row's end, and rows longer than the registers of ``block`` threads."""
    step, shapes, dtypes = _step(cid)
    node, xs = step.node, _values(cid)
    p = get_op(node.op).lowering[1]
    view = p["view"](node.attrs, xs[0].shape)
    kern = render_row_norm(view, p["kind"], node.attrs.get("eps", 0.0), p.get("second", "std"))
    outs = {f"o{k}": (int(np.prod(shapes[s])), np.dtype(np.float32))
            for k, s in enumerate(step.outputs)}
    ins = {f"i{k}": v for k, v in enumerate(xs)}
    got = run_threaded([(kern, 2, block, list(outs) + list(ins))], ins, outs, tmp_path)
    _check([got[k] for k in outs], cid, xs)


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_kernels_compile_for_sm90_in_every_float_dtype() -> None:
    """Every kind in float32, float16 and bfloat16 (float32 statistics and parameters of
    narrow data too), and a row longer than the registers hold, in one nvcc call."""
    kernels = []
    for cid in sorted(CONFIGS):
        for dt in ("float32", "float16", "bfloat16"):
            step, shapes, dtypes = _step(cid)
            p = get_op(step.node.op).lowering[1]
            view = p["view"](step.node.attrs, shapes[step.inputs[0]])
            kernels.append(render_row_norm(view, p["kind"], 1e-5, p.get("second", "std"), dt))
    big = get_op("LayerNorm").lowering[1]["view"](parse_attrs(get_op("LayerNorm").params, {}, ""),
                                                  (8, 6000))
    assert block_for(big) == 256
    kernels.append(render_row_norm(big, "standardize", 1e-5, "std", "bfloat16", "float32",
                                   "float32"))
    cubin = compiler.run_nvcc(compiler.module_source(kernels), "sm_90", compiler.find_nvcc())
    assert all(k.name.encode() in cubin for k in kernels)


# -- on the device ---------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("cid", sorted(CONFIGS))
def test_forward_on_gpu(cid: str, dtype: str) -> None:
    """Forward on the GPU against float64 numpy of the narrow-rounded inputs: float32 within
    float32 sums' rounding, narrow types within a few roundings of their own (statistics in
    float32)."""
    import ml_dtypes
    nd = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}[dtype]
    xs = _values(cid, nd)
    sym = CONFIGS[cid][0]
    names = sym.list_arguments()
    exe = sym.bind(sg.gpu(0), {n: sg.nd.array(v, sg.gpu(0), nd) for n, v in zip(names, xs)})
    got = [o.asnumpy() for o in exe.forward()]
    _check(got, cid, xs, {"float32": 1e-5, "float16": 4e-3, "bfloat16": 3e-2}[dtype])


@pytest.mark.gpu
def test_transformer_rows_on_gpu() -> None:
    """LayerNorm over rows of 768 and of 4096 (all in registers) and 6000 (partly re-read),
    bfloat16, against float64 numpy (gradients: every registry case runs on the GPU in
    tests/cuda/test_gpu.py and test_gpu_narrow.py)."""
    import ml_dtypes
    rng = np.random.default_rng(3)
    for c in (768, 4096, 6000):
        xv = (rng.normal(size=(64, c)) * 3 + 1).astype(ml_dtypes.bfloat16)
        gv = rng.uniform(0.5, 1.5, size=c).astype(ml_dtypes.bfloat16)
        bv = rng.normal(size=c).astype(ml_dtypes.bfloat16)
        exe = S.LayerNorm(x, g, b).bind(sg.gpu(0), {
            "x": sg.nd.array(xv, sg.gpu(0)), "g": sg.nd.array(gv, sg.gpu(0)),
            "b": sg.nd.array(bv, sg.gpu(0))})
        (y,) = exe.forward()
        want = ref.layer_norm(*(v.astype(np.float64) for v in (xv, gv, bv)))[0]
        np.testing.assert_allclose(y.asnumpy().astype(np.float64), want, rtol=3e-2, atol=3e-2)
