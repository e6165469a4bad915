"""CI without a GPU: the fused optimizer update kernels render from the optimizers' formulas and
compile with nvcc for sm_90; the chunk table covers every element once."""
from __future__ import annotations

import pytest

import symgraph as sg
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.update_kernel import CHUNK, chunk_table, kernel_name, render_update

OPTIMIZERS = {
    "sgd": lambda: sg.optimizer.SGD(),
    "sgd_mom_clip": lambda: sg.optimizer.SGD(momentum=0.9, wd=1e-4, clip_gradient=1.0),
    "adam": lambda: sg.optimizer.Adam(clip_gradient=5.0),
    "rmsprop": lambda: sg.optimizer.RMSProp(),
    "rmsprop_centered": lambda: sg.optimizer.RMSProp(centered=True, clip_weights=2.0),
    "adagrad": lambda: sg.optimizer.AdaGrad(),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_update_kernel_renders(name: str) -> None:
    rule = OPTIMIZERS[name]().rule
    r = render_update(rule)
    assert r.name == kernel_name(rule) == f"fused_{rule.name}_update_f32"
    assert f'extern "C" __global__ void {r.name}(' in r.source
    # clipping through the NaN-propagating min of the one formula table (expr.C_MIN)
    assert ("!= (" in r.helpers[0][1] and "<" in r.helpers[0][1]) if "clip" in name else True


def test_chunk_table_covers_every_element_once() -> None:
    sizes = [10, CHUNK, CHUNK + 1, 3 * CHUNK - 7, 0, 1]
    covered = {p: set() for p in range(len(sizes))}
    for p, first in chunk_table(sizes):
        covered[p].update(range(first, min(first + CHUNK, sizes[p])))
    assert all(covered[p] == set(range(n)) for p, n in enumerate(sizes))


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_update_kernels_compile_for_sm90(dtype: str) -> None:
    """Weights and gradients of each float dtype (read through sg_ld), float32 states."""
    kernels = [render_update(make().rule, dtype) for make in OPTIMIZERS.values()]
    if dtype != "float32":
        assert all("__half" in k.source or "__nv_bfloat16" in k.source for k in kernels)
        assert all(k.name.endswith({"float16": "_f16", "bfloat16": "_bf16"}[dtype])
                   for k in kernels)
    for k in kernels:  # one module per optimizer, as the updater builds it
        cubin = compiler.run_nvcc(compiler.module_source([k]), "sm_90", compiler.find_nvcc())
        assert cubin[:4] == b"\x7fELF" and k.name.encode() in cubin
