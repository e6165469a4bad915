"""A program's CUDA module split into parts compiled at once (``cuda.module_parts``): the split
is a partition with the prelude and each kernel's helpers in its part, kernels are found across
the loaded parts, each part is cached by its own key, an nvcc error names its part; on the GPU
a split program computes what the one-module program does."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg
from symgraph.core import config
from symgraph.core.base import AttrError, ExecutionError
from symgraph.core.expr import inp
from symgraph.runtime.cuda import compiler, module_parts
from symgraph.runtime.cuda.codegen import Rendered, render_contiguous

from .graphs import seed_cnn, seed_cnn_inputs

needs_nvcc = pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")


def _kernels() -> list[Rendered]:
    """Twelve distinct kernels, the bfloat16 ones with the narrow-type helpers, plus repeats."""
    out = []
    for k in range(6):
        out.append(render_contiguous("scale", [inp(0) * float(k + 2)]))
        out.append(render_contiguous("shift", [inp(0) + float(k + 2)], in_types=["bfloat16"],
                                     out_types=["bfloat16"]))
    return out + out[:3]


def _broken(name: str) -> Rendered:
    src = (f'extern "C" __global__ void {name}(float* y0, long long n) {{\n'
           f'    y0[0] = undefined_in_{name};\n}}\n')
    return Rendered(name, src, 1)


def test_split_is_a_partition_with_prelude_and_helpers() -> None:
    kernels = _kernels()
    names = {k.name for k in kernels}
    assert len(names) == 12
    parts = module_parts.split(kernels, 4)
    assert len(parts) == 4 and [p.index for p in parts] == [0, 1, 2, 3]
    assert sorted(n for p in parts for n in p.names) == sorted(names)  # each exactly once
    by_name = {k.name: k for k in kernels}
    for p in parts:
        assert p.source.startswith(compiler.PRELUDE) and p.count == 4
        for other in names - set(p.names):
            assert other not in p.source  # no other part's kernel
        for n in p.names:
            assert by_name[n].source in p.source
            for helper, body in by_name[n].helpers:  # what the kernel calls is there
                assert body in p.source, (n, helper)
    sizes = [sum(module_parts.weight(by_name[n]) for n in p.names) for p in parts]
    assert max(sizes) <= 2 * min(sizes)  # shares of comparable nvcc time


def test_one_part_is_the_whole_module_and_small_modules_stay_whole(monkeypatch) -> None:
    kernels = _kernels()
    (whole,) = module_parts.split(kernels, 1)
    assert whole.source == compiler.module_source(kernels)  # the one-module cache key, kept
    assert len(module_parts.split(kernels[:4])) == 1  # a few KB: one nvcc call
    monkeypatch.setattr(module_parts, "PART_WEIGHT", 1)
    monkeypatch.setenv("SYMGRAPH_NVCC_JOBS", "5")
    assert len(module_parts.split(kernels)) == 5
    monkeypatch.setenv("SYMGRAPH_NVCC_JOBS", "1")
    assert len(module_parts.split(kernels)) == 1
    monkeypatch.setenv("SYMGRAPH_NVCC_JOBS", "0")
    with pytest.raises(AttrError, match="SYMGRAPH_NVCC_JOBS"):
        module_parts.split(kernels)


class FakeModule:
    """A loaded cubin as pycuda's module answers ``get_function``."""

    def __init__(self, cubin: bytes) -> None:
        self.cubin = cubin

    def get_function(self, name: str) -> tuple:
        return self.cubin, name


def test_kernels_are_found_across_the_loaded_parts() -> None:
    parts = module_parts.split(_kernels(), 3)

    cubins = [f"cubin{i}".encode() for i in range(3)]
    mods = module_parts.Modules(parts, cubins, FakeModule)
    for p in parts:
        for n in p.names:
            assert mods.get_function(n) == (cubins[p.index], n)
            assert mods.cubin_of(n) == cubins[p.index]


@needs_nvcc
def test_each_part_is_cached_by_its_own_key(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SYMGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    log = tmp_path / "nvcc.log"
    monkeypatch.setenv("SYMGRAPH_NVCC_LOG", str(log))
    a, b = module_parts.split(_kernels(), 2)
    calls = compiler.NVCC_CALLS
    cubins = module_parts.compile_parts([a, b], "sm_90")
    assert compiler.NVCC_CALLS == calls + 2 and len(log.read_text().splitlines()) == 2
    assert len(list((tmp_path / "cache").glob("*.cubin"))) == 2
    for part, cubin in zip((a, b), cubins):  # the ELF symbols are the part's kernels
        assert module_parts.kernel_symbols(cubin) == set(part.names)
        assert all(n.encode() in cubin for n in part.names)
    assert module_parts.compile_parts([a, b], "sm_90") == cubins
    mods = module_parts.Modules([a, b], cubins, FakeModule)
    del mods.where[b.names[0]]  # (a kernel defined in another's source): by the ELF symbols
    assert mods.get_function(b.names[0]) == (cubins[1], b.names[0])
    with pytest.raises(ExecutionError, match="'sg_absent_0' is in none of the program's 2"):
        mods.get_function("sg_absent_0")
    assert compiler.NVCC_CALLS == calls + 2  # warm: no nvcc at all
    (c,) = module_parts.split([render_contiguous("other", [inp(0) - 1.0])], 1)
    module_parts.compile_parts([a, c], "sm_90")  # a part shared with another program
    assert compiler.NVCC_CALLS == calls + 3


@needs_nvcc
def test_nvcc_error_names_the_failing_part(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SYMGRAPH_CACHE_DIR", str(tmp_path))
    good = render_contiguous("fine", [inp(0) * 3.0])
    parts = module_parts.split([good, _broken("sg_zz_broken_1")], 2)
    bad = next(p for p in parts if "sg_zz_broken_1" in p.names)
    with pytest.raises(ExecutionError) as err:
        module_parts.compile_parts(parts, "sm_90")
    text = str(err.value)
    assert text.startswith(f"CUDA module part {bad.index + 1} of 2 (kernels sg_zz_broken_1)")
    assert "undefined_in_sg_zz_broken_1" in text.split("generated source")[0]  # nvcc's message
    assert "y0[0] = undefined_in_sg_zz_broken_1;" in text.split("generated source")[1]
    assert good.name not in text  # the other part's source is not shown
    assert len(list(tmp_path.glob("*.cubin"))) == 1  # the good part is cached, the bad not


def _train_step(monkeypatch, part_weight: int, jobs: str) -> tuple:
    monkeypatch.setattr(module_parts, "PART_WEIGHT", part_weight)
    with config.override("SYMGRAPH_NVCC_JOBS", jobs), config.override("SYMGRAPH_AUTOTUNE", "0"):
        values = seed_cnn_inputs(np.random.default_rng(3))
        exe = seed_cnn().simple_bind(sg.gpu(0), **{k: v.shape for k, v in values.items()})
        for k, v in values.items():
            exe.arg_dict[k][:] = v
        exe.forward(is_train=True)
        exe.backward()
        grads = {k: g.asnumpy() for k, g in exe.grad_dict.items() if g is not None}
        return len(exe._train.program.parts), exe.outputs[0].asnumpy(), grads


@pytest.mark.gpu
def test_split_program_runs_like_the_whole_one(monkeypatch) -> None:
    whole, out_whole, grads_whole = _train_step(monkeypatch, 10 ** 9, "1")
    parts, out_split, grads_split = _train_step(monkeypatch, 500, "3")
    assert whole == 1 and parts == 3
    np.testing.assert_allclose(out_split, out_whole, rtol=1e-5, atol=1e-6)
    assert grads_split.keys() == grads_whole.keys() and grads_whole
    for k, g in grads_whole.items():
        np.testing.assert_allclose(grads_split[k], g, rtol=1e-5, atol=1e-6, err_msg=k)
