"""One NaN rule for both backends, numpy's: every op given by a scalar formula computes the same
NaN, infinities and signed zeros on the GPU as the numpy backend (maximum(NaN, x) = NaN,
sign(NaN) = NaN, relu(NaN) = NaN, a NaN in a max-pool window or a max reduction wins).

On the CPU the CUDA text of every formula (``expr.PRIMS`` through ``codegen.expr_to_c``, what the
GPU kernels contain) is compiled once with g++ (``host_run``'s prelude) and run on all pairs of
special values; the GPU test runs the same ops as graphs on the device.
"""
from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core.attrs import parse_attrs
from symgraph.runtime.cuda.codegen import expr_to_c
from symgraph.runtime.cuda.compiler import PRELUDE
from symgraph.core.expr import inp
from symgraph.core.registry import OpDef, RunCtx, all_ops

from .host_run import HOST_PRELUDE, host_compiler

F32 = np.float32
SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, 1.5, -2.5], F32)
# attributes for the formula ops that have required ones
ATTRS = {"Activation": [{"act_type": t} for t in ("relu", "sigmoid", "tanh", "softrelu",
                                                  "softsign")],
         "clip": [{"a_min": -1.0, "a_max": 1.0}]}
SKIP = {"add_n", "multi_lars"}  # variadic / a multi-tensor update, no single formula
HOST_SKIP = {"erfinv"}  # erfinvf is CUDA's own (no host libm function); the GPU test covers it


def _cases() -> list[tuple[str, OpDef, dict]]:
    out = []
    for name, op in sorted(all_ops().items()):
        if op.expr is None or name in SKIP:
            continue
        for k, given in enumerate(ATTRS.get(name, [{}])):
            out.append((f"{name}-{k}" if name in ATTRS else name, op, given))
    return out


CASES = _cases()


def _inputs(op: OpDef, attrs) -> list[np.ndarray]:
    """Every combination of the special values, one flat array per input."""
    n = len(op.input_names(attrs))
    grid = np.array(list(itertools.product(SPECIAL, repeat=n)), F32).reshape(-1, n)
    return [np.ascontiguousarray(grid[:, k]) for k in range(n)]


def _c_array(name: str, x: np.ndarray) -> str:
    bits = ", ".join(f"__int_as_float({int(b)})" for b in x.view(np.int32))
    return f"static const float {name}[{x.size}] = {{{bits}}};\n"


def _host_program(cases: list) -> tuple[str, list[int]]:
    """One C++ program evaluating every case's formula on its inputs, writing all results to
    stdout as raw float32."""
    parts, mains, sizes = [HOST_PRELUDE, PRELUDE], [], []
    for k, (_, op, given) in enumerate(cases):
        attrs = parse_attrs(op.params, given, op.name)
        xs = _inputs(op, attrs)
        parts += [_c_array(f"c{k}_x{j}", x) for j, x in enumerate(xs)]
        lines, (root,) = expr_to_c([op.expr(attrs, *(inp(j) for j in range(len(xs))))],
                                   [f"c{k}_x{j}[i]" for j in range(len(xs))])
        body = "".join(f"        {ln}\n" for ln in lines)
        store = f"        const float y = {root};\n        fwrite(&y, 4, 1, stdout);\n"
        mains.append(f"    for (int i = 0; i < {xs[0].size}; ++i) {{\n{body}{store}    }}\n")
        sizes.append(xs[0].size)
    return "".join(parts) + "int main() {\n" + "".join(mains) + "    return 0;\n}\n", sizes


def _assert_same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Same NaNs, same infinities, same signed zeros, other values within float rounding of
    the C library against numpy."""
    want = np.asarray(want, F32).reshape(got.shape)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{what}: NaN")
    zeros = (got == 0) & (want == 0)
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]),
                                  err_msg=f"{what}: sign of zero")
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-30, err_msg=what)


@pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
def test_cuda_formulas_follow_numpys_nan_rule(tmp_path: Path) -> None:
    cases = [c for c in CASES if c[1].name not in HOST_SKIP]
    source, sizes = _host_program(cases)
    (tmp_path / "nan.cpp").write_text(source)
    subprocess.run([host_compiler(), "-O0", "-std=c++17", "-o", str(tmp_path / "nan"),
                    str(tmp_path / "nan.cpp")], check=True, capture_output=True)
    out = np.frombuffer(subprocess.run([str(tmp_path / "nan")], check=True,
                                       capture_output=True).stdout, F32)
    assert out.size == sum(sizes)
    for (cid, op, given), got in zip(cases, np.split(out, np.cumsum(sizes)[:-1])):
        attrs = parse_attrs(op.params, given, op.name)
        with np.errstate(all="ignore"):
            want = op.compute(attrs, _inputs(op, attrs), RunCtx())[0]
        _assert_same(got, want, cid)


@pytest.mark.gpu
@pytest.mark.parametrize("cid,op,given", CASES, ids=[c[0] for c in CASES])
def test_gpu_elementwise_nan_inf_and_signed_zero(cid: str, op: OpDef, given: dict) -> None:
    attrs = parse_attrs(op.params, given, op.name)
    xs = _inputs(op, attrs)
    names = op.input_names(attrs)
    sym = getattr(sg.sym, op.name)(*[sg.sym.var(n) for n in names], **given)
    res = []
    for ctx in (sg.cpu(), sg.gpu(0)):
        exe = sym.bind(ctx, {n: sg.nd.array(x, ctx, F32) for n, x in zip(names, xs)})
        res.append(exe.forward()[0].asnumpy())
    _assert_same(res[1], res[0], f"{cid} on the GPU")


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["max_pool", "max", "min"])
def test_gpu_max_pool_and_reductions_keep_nan(kind: str) -> None:
    x = np.arange(32, dtype=F32).reshape(1, 2, 4, 4)
    x[0, 0, 1, 2] = np.nan
    data = sg.sym.var("x")
    sym = (sg.sym.Pooling(data, kernel=(2, 2), stride=(2, 2), pool_type="max")
           if kind == "max_pool" else getattr(sg.sym, kind)(data, axis=(2, 3)))
    res = [sym.bind(ctx, {"x": sg.nd.array(x, ctx, F32)}).forward()[0].asnumpy()
           for ctx in (sg.cpu(), sg.gpu(0))]
    assert np.isnan(res[0]).any()
    _assert_same(res[1], res[0], kind)
