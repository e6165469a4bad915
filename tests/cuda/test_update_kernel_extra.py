"""CI without a GPU: the fused update kernels of the optimizers added in optimizer_extra render,
compile for sm_90, and (compiled as host C++, one block of one thread) compute what the numpy
update computes, for several steps. Optimizers with host-side norms or noise are not fused."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.codegen import NARROW_HELPER
from symgraph.runtime.cuda.update_kernel import chunk_table, render_update

from .host_run import HOST_NARROW, HOST_PRELUDE, host_compiler

KW = {"wd": 0.05, "clip_gradient": 0.8, "rescale_grad": 0.5}
FUSED = {
    "nag": {"momentum": 0.9}, "signum": {"momentum": 0.9, "wd_lh": 0.01},
    "signum0": {"momentum": 0.0}, "ftml": {}, "ftrl": {}, "adadelta": {}, "adamax": {},
    "nadam": {}, "dcasgd": {"momentum": 0.5}, "ccsgd": {"momentum": 0.9}, "test": {},
}
SIZES = (700, 3)  # two parameters, the first over several chunks
STEPS = 3


def _make(key: str) -> sg.optimizer.Optimizer:
    return sg.optimizer.create(key.rstrip("0"), **KW, **FUSED[key])


def _main(n_states: int, scal_rows: list, sizes: tuple) -> str:
    """``main``: read weight, grad and states of each parameter, run the kernel once per step
    with that step's scalar table, write weights and states back."""
    n_arr = 2 + n_states
    chunks = [x for pair in chunk_table(list(sizes)) for x in pair]
    lines = [f"    static long long chunks[] = {{{', '.join(map(str, chunks))}}};",
             f"    static unsigned long long table[{len(sizes) * (n_arr + 1)}];",
             f"    static float* bufs[{len(sizes) * n_arr}];"]
    for p, n in enumerate(sizes):
        lines.append(f"    table[{p * (n_arr + 1)}] = {n};")
        for a in range(n_arr):
            k = p * n_arr + a
            lines += [f"    bufs[{k}] = (float*)malloc({4 * n});",
                      f'    {{ FILE* f = fopen("in{k}.bin", "rb"); fread(bufs[{k}], 4, {n}, f); '
                      "fclose(f); }",
                      f"    table[{p * (n_arr + 1) + 1 + a}] = (unsigned long long)bufs[{k}];"]
    for step, rows in enumerate(scal_rows):
        flat = ", ".join(f"{v!r}f" for row in rows for v in row) or "0.f"
        lines += [f"    static float scal{step}[] = {{{flat}}};",
                  f"    KERNEL(table, scal{step}, chunks, {len(chunks) // 2});"]
    for k in range(len(sizes) * n_arr):
        lines.append(f'    {{ FILE* f = fopen("out{k}.bin", "wb"); '
                     f"fwrite(bufs[{k}], 4, {sizes[k // n_arr]}, f); fclose(f); }}")
    return "int main() {\n" + "\n".join(lines) + "\n    return 0;\n}\n"


@pytest.mark.parametrize("key", sorted(FUSED))
def test_new_optimizers_are_fused_rules(key: str) -> None:
    opt = _make(key)
    assert opt.fused and render_update(opt.rule).name.startswith("fused_")


@pytest.mark.parametrize("name", ["lamb", "lars", "lbsgd", "sgld", "groupadagrad"])
def test_host_side_optimizers_are_not_fused(name: str) -> None:
    assert not sg.optimizer.create(name).fused


@pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
@pytest.mark.parametrize("key", sorted(FUSED))
def test_fused_kernel_equals_numpy_update(key: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    weights = [rng.normal(size=n).astype(np.float32) for n in SIZES]
    grads = [rng.normal(scale=2.0, size=n).astype(np.float32) for n in SIZES]
    ref, gpu = _make(key), _make(key)
    states = [ref.create_state(p, w) for p, w in enumerate(weights)]
    start = [(w.copy(), g, *(s.copy() for s in st)) for w, g, st in zip(weights, grads, states)]
    ref_w = [w.copy() for w in weights]
    for _ in range(STEPS):
        ref.update_multi([0, 1], ref_w, grads, states)
    rows = [gpu.step_rows([0, 1]) for _ in range(STEPS)]
    for k, arr in enumerate(a for param in start for a in param):
        arr.tofile(tmp_path / f"in{k}.bin")
    kernel = render_update(gpu.rule)
    src = (HOST_PRELUDE + HOST_NARROW + compiler.module_source([kernel]).replace(
        NARROW_HELPER[1], "") + f"#define KERNEL {kernel.name}\n"
        + _main(len(gpu.rule.states), rows, SIZES))
    (tmp_path / "upd.cpp").write_text(src)
    subprocess.run([host_compiler(), "-O1", "-w", "-o", str(tmp_path / "upd"),
                    str(tmp_path / "upd.cpp")], check=True)
    subprocess.run([str(tmp_path / "upd")], check=True, cwd=tmp_path)
    n_arr = 2 + len(gpu.rule.states)
    for p, n in enumerate(SIZES):
        got_w = np.fromfile(tmp_path / f"out{p * n_arr}.bin", np.float32)
        np.testing.assert_allclose(got_w, ref_w[p], rtol=1e-5, atol=1e-6)
        for s, want in enumerate(states[p]):
            got = np.fromfile(tmp_path / f"out{p * n_arr + 2 + s}.bin", np.float32)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_new_update_kernels_compile_for_sm90() -> None:
    kernels = [render_update(_make(k).rule, dt) for k in sorted(FUSED)
               for dt in ("float32", "float16")]
    cubin = compiler.run_nvcc(compiler.module_source(kernels), "sm_90", compiler.find_nvcc())
    assert all(k.name.encode() in cubin for k in kernels)
