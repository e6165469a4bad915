"""``sg.rtc``: generated source (compile-checked with nvcc when present), argument checks on the
CPU, and GPU runs against numpy (marked gpu)."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import symgraph as sg
from symgraph.interop.models.reorg_lenet import BWD_KERNEL, FWD_KERNEL
from symgraph.interop.models.rtc_softmax_mlp import SOFTMAX_GRAD_KERNEL, SOFTMAX_KERNEL
from symgraph.runtime.rtc import CudaModule, Rtc, numbered, parse_signature, rtc_source

SEED_KERNELS = [
    ("softmax", [("x", (100, 10))], [("y", (100, 10))], SOFTMAX_KERNEL),
    ("softmax_grad", [("y", (100, 10)), ("l", (100,))], [("dx", (100, 10))], SOFTMAX_GRAD_KERNEL),
    ("reorg", [("x", (100, 20, 24, 24))], [("y", (100, 80, 12, 12))], FWD_KERNEL),
    ("reorg_grad", [("y", (100, 80, 12, 12))], [("dx", (100, 20, 24, 24))], BWD_KERNEL),
]


def test_source_follows_the_seed_decoration() -> None:
    src = rtc_source("mykernel", [("x", (10,))], [("y", (10, 3))],
                     "y[threadIdx.x] = x[threadIdx.x];")
    lines = src.splitlines()
    assert lines[0] == 'extern "C" __global__ void mykernel(float *x, float *y) {'
    assert "    const int x_ndim = 1;" in lines and "    const int x_dims[] = {10};" in lines
    assert "    const int y_ndim = 2;" in lines and "    const int y_dims[] = {10, 3};" in lines
    assert lines[-2] == "y[threadIdx.x] = x[threadIdx.x];" and lines[-1] == "}"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name,ins,outs,body", SEED_KERNELS, ids=[k[0] for k in SEED_KERNELS])
def test_seed_kernels_compile(tmp_path, name, ins, outs, body) -> None:
    cu = tmp_path / f"{name}.cu"
    cu.write_text(rtc_source(name, ins, outs, body))
    res = subprocess.run(["nvcc", "--cubin", "-arch=sm_90", "-o", str(tmp_path / "k.cubin"),
                          str(cu)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "k.cubin").stat().st_size > 0


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_a_broken_body_does_not_compile(tmp_path) -> None:
    cu = tmp_path / "bad.cu"
    cu.write_text(rtc_source("bad", [("x", (4,))], [("y", (4,))], "y[0] = z[0];"))
    res = subprocess.run(["nvcc", "--cubin", "-arch=sm_90", "-o", str(tmp_path / "b.cubin"),
                          str(cu)], capture_output=True, text=True)
    assert res.returncode != 0 and "z" in res.stderr


def test_numbered_source() -> None:
    text = numbered("\n".join(f"line{i}" for i in range(1, 11)))
    assert text.splitlines()[0] == " 1 | line1" and text.splitlines()[9] == "10 | line10"


def test_rtc_argument_checks() -> None:
    x, y = sg.nd.zeros((4, 3)), sg.nd.zeros((4, 3))
    k = Rtc("copy", [("x", x)], [("y", y)], "y[threadIdx.x] = x[threadIdx.x];")
    with pytest.raises(sg.ShapeError, match=r"x is \(5, 3\).*built for \(4, 3\)"):
        k.push([sg.nd.zeros((5, 3))], [y])
    with pytest.raises(sg.BindError, match="2 inputs"):
        k.push([x, x], [y])
    with pytest.raises(sg.BindError, match="kernels need GPU arrays"):
        k.push([x], [y])
    with pytest.raises(sg.DTypeError, match="float64"):
        Rtc("copy", [("x", sg.nd.zeros(3, dtype=np.float64))], [("y", y)], "")
    with pytest.raises(sg.AttrError, match="not a C identifier"):
        Rtc("bad name", [("x", x)], [("y", y)], "")


def test_parse_signature() -> None:
    sig = parse_signature("const float *x, float* y, int n, double alpha, int64_t *idx")
    assert [(n, p, d.name) for n, p, d in sig] == [
        ("x", True, "float32"), ("y", True, "float32"), ("n", False, "int32"),
        ("alpha", False, "float64"), ("idx", True, "int64")]
    with pytest.raises(sg.AttrError, match="cannot read argument"):
        parse_signature("struct foo *x")


def test_kernel_argument_checks() -> None:
    kern = CudaModule("", exports=("axpy",)).get_kernel("axpy", "const float *x, float *y, int n")
    with pytest.raises(sg.BindError, match="2 arguments"):
        kern.convert_args([sg.nd.zeros(3), 3])
    with pytest.raises(sg.DTypeError, match="argument y needs an NDArray of float32"):
        kern.convert_args([sg.nd.zeros(3), sg.nd.zeros(3, dtype=np.int32), 3])
    with pytest.raises(sg.DTypeError, match="argument n is a int32 scalar"):
        kern.convert_args([sg.nd.zeros(3), sg.nd.zeros(3), sg.nd.zeros(3)])
    with pytest.raises(sg.AttrError, match="not in exports"):
        CudaModule("", exports=("axpy",)).get_kernel("other", "int n")


@pytest.mark.gpu
def test_rtc_softmax_on_gpu_matches_numpy(rng) -> None:
    x = rng.normal(size=(100, 10)).astype(np.float32)
    gx, gy = sg.nd.array(x, sg.gpu()), sg.nd.zeros((100, 10), sg.gpu())
    Rtc("softmax", [("x", gx)], [("y", gy)], SOFTMAX_KERNEL).push([gx], [gy], (1, 1, 1),
                                                                  (100, 1, 1))
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    sg.test_utils.assert_almost_equal(gy.asnumpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-5)


@pytest.mark.gpu
def test_cuda_module_launch(rng) -> None:
    src = r'''extern "C" __global__ void axpy(const float *x, float *y, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] += a * x[i];
    }'''
    x, y = rng.normal(size=1000).astype(np.float32), rng.normal(size=1000).astype(np.float32)
    gx, gy = sg.nd.array(x, sg.gpu()), sg.nd.array(y, sg.gpu())
    kern = CudaModule(src).get_kernel("axpy", "const float *x, float *y, float a, int n")
    kern.launch([gx, gy, 2.0, 1000], sg.gpu(), (4, 1, 1), (256, 1, 1))
    sg.test_utils.assert_almost_equal(gy.asnumpy(), y + 2.0 * x, rtol=1e-6)
    assert sg.rtc.compile_module(src) is sg.rtc.compile_module(src)  # cached


@pytest.mark.gpu
def test_compile_error_shows_numbered_source() -> None:
    with pytest.raises(sg.ExecutionError, match=r"(?s)nvcc failed.*1 \| extern"):
        sg.rtc.compile_module('extern "C" __global__ void k() { undefined_thing; }')
