"""CI without a GPU: render every kernel of every test graph and compile it with nvcc; the disk
cache; compile errors; pycuda stays unimported on CPU-only use."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import symgraph as sg
from symgraph.core.base import ExecutionError
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.actions import Host, Kernel, flat_actions
from symgraph.runtime.cuda.codegen import Rendered
from symgraph.runtime.cuda.plan import lower_schedule

from .graphs import FLOAT64_CASES, HOST_FALLBACK, all_graphs

needs_nvcc = pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
ROOT = Path(__file__).resolve().parents[2]


def _schedules(sym, args: dict, aux: dict) -> list:
    exe = sym.simple_bind(sg.cpu(), **{k: v.shape for k, v in {**args, **aux}.items()})
    return [exe._infer.schedule, exe._train.schedule]


def _all_lowered() -> list:
    """Every test graph lowered, but the float64-pinned cases (a BindError without
    SYMGRAPH_ALLOW_HOST: tests/cuda/test_dtype_lowering.py)."""
    return [(name, lower_schedule(s, 132))
            for name, sym, args, aux in all_graphs(cpu_schedules=True)
            if name not in FLOAT64_CASES for s in _schedules(sym, args, aux)]




def test_host_fallback_only_where_documented() -> None:
    """Host fallback is a stopgap: only ops listed in HOST_FALLBACK may use it."""
    allowed = HOST_FALLBACK
    for name, low in _all_lowered():
        for acts in low.actions:
            for a in flat_actions(acts):
                if isinstance(a, Host) and a.step.node.op == "_fused":
                    head = a.step.node.attrs["head"]
                    assert head and head[0] in allowed, f"{name}: fused group on the host"
                elif isinstance(a, Host):
                    assert a.step.node.op in allowed, f"{name}: {a.step.node.op} runs on the host"


DEVICE_FN = re.compile(r"__device__[^;{(]*?\b(\w+)\s*\(")


def _undeclared_helpers(kernels: list) -> list[tuple[str, str]]:
    """(kernel, function) where a kernel calls a helper function that none of its own helpers
    defines: it compiles in the whole module (another kernel brings the helper) but not in a
    part of a split module (``module_parts``) without that kernel."""
    owner: dict[str, set] = {}
    for k in kernels:
        for name, body in k.helpers:
            for fn in DEVICE_FN.findall(body):
                owner.setdefault(fn, set()).add(name)
    known = set(DEVICE_FN.findall(compiler.PRELUDE))
    bad = []
    for k in kernels:
        own = {name for name, _ in k.helpers}
        text = k.source + "".join(body for _, body in k.helpers)
        local = known | set(DEVICE_FN.findall(k.source))
        bad += [(k.name, fn) for fn in sorted(set(re.findall(r"\w+", text)) & owner.keys())
                if fn not in local and not owner[fn] & own]
    return bad


def test_every_kernel_declares_the_helpers_it_calls() -> None:
    kernels = [a.kernel for _, low in _all_lowered() for acts in low.actions
               for a in flat_actions(acts) if isinstance(a, Kernel)]
    assert len(kernels) > 50 and not _undeclared_helpers(kernels)
    helper = ("sq", "__device__ __forceinline__ float sg_sq_probe(float v) { return v * v; }\n")
    brings = Rendered("k_a", 'extern "C" __global__ void k_a() {}\n', 0, helpers=(helper,))
    relies = Rendered("k_b", "... sg_sq_probe(1.f) ...", 0)  # calls it, declares nothing
    assert _undeclared_helpers([brings, relies]) == [("k_b", "sg_sq_probe")]


@needs_nvcc
def test_every_kernel_compiles_for_sm90(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kernels = [a.kernel for _, low in _all_lowered() for acts in low.actions
               for a in flat_actions(acts) if isinstance(a, Kernel)]
    assert len(kernels) > 50
    source = compiler.module_source(kernels)
    cubin = compiler.run_nvcc(source, "sm_90", compiler.find_nvcc())
    assert cubin[:4] == b"\x7fELF"
    for k in kernels:  # every kernel's entry point is in the cubin
        assert k.name.encode() in cubin


def test_module_source_dedupes_kernels() -> None:
    (_, low), = [(n, lower_schedule(s, 132)) for n, sym, a, x in all_graphs(cpu_schedules=True)
                 if n == "mlp"
                 for s in _schedules(sym, a, x)[1:]]
    names = [ln.split("void ")[1].split("(")[0] for ln in low.source.splitlines()
             if ln.startswith('extern "C" __global__')]
    assert len(names) == len(set(names)) and len(names) >= 5


@needs_nvcc
def test_compile_error_shows_numbered_source(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SYMGRAPH_CACHE_DIR", str(tmp_path))
    src = 'extern "C" __global__ void broken(float* y) {\n    y[0] = undefined_name;\n}\n'
    with pytest.raises(ExecutionError) as err:
        compiler.compile_module(src, "sm_90")
    assert "2 |     y[0] = undefined_name;" in str(err.value)
    assert "undefined_name" in str(err.value).split("generated source")[0]
    assert not list(tmp_path.glob("*.cubin"))


@needs_nvcc
def test_warm_cache_second_process_runs_no_nvcc(tmp_path: Path) -> None:
    log = tmp_path / "nvcc.log"
    env = dict(os.environ, SYMGRAPH_CACHE_DIR=str(tmp_path / "cache"),
               SYMGRAPH_NVCC_LOG=str(log), PYTHONPATH=str(ROOT))
    script = textwrap.dedent("""
        import numpy as np, symgraph as sg
        from symgraph.runtime.cuda.compiler import compile_module
        from symgraph.runtime.cuda.plan import lower_schedule
        from tests.cuda.graphs import mlp
        exe = mlp().simple_bind(sg.cpu(), data=(8, 20))
        compile_module(lower_schedule(exe._train.schedule, 132).source, "sm_90")
    """)
    for _ in range(2):
        subprocess.run([sys.executable, "-c", script], env=env, check=True, cwd=ROOT)
    assert len(log.read_text().splitlines()) == 1  # cold: one call; warm: none
    assert len(list((tmp_path / "cache").glob("*.cubin"))) == 1


def test_debug_2_prints_every_kernel(tmp_path, monkeypatch, capsys) -> None:
    if compiler.find_nvcc() is None:
        pytest.skip("nvcc not on PATH")
    monkeypatch.setenv("SYMGRAPH_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("SYMGRAPH_DEBUG", "2")
    src = 'extern "C" __global__ void k_debug_probe(float* y, long long n) { y[0] = 1.f; }\n'
    compiler.compile_module(src, "sm_90")
    assert "k_debug_probe" in capsys.readouterr().err


def test_import_symgraph_does_not_import_pycuda() -> None:
    code = ("import sys, symgraph as sg, numpy as np\n"
            "x = sg.sym.var('x'); e = sg.sym.relu(x).simple_bind(sg.cpu(), x=(2, 2))\n"
            "e.forward(x=np.ones((2, 2)))\n"
            "import symgraph.runtime.cuda.plan\n"
            "assert 'pycuda' not in sys.modules, 'pycuda imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT,
                   env=dict(os.environ, PYTHONPATH=str(ROOT)))


@needs_nvcc
def test_integer_labels_one_hot_runs_on_the_device() -> None:
    """Gluon's SoftmaxCrossEntropyLoss picks with one_hot of int32 labels: the step lowers to a
    kernel reading int indices (a host step there would synchronise every training step)."""
    label = sg.sym.var("label")
    net = sg.sym.one_hot(label, depth=10) * sg.sym.var("x")
    exe = net.simple_bind(sg.cpu(), grad_req={"label": "null", "x": "write"},
                          type_dict={"label": "int32"}, label=(8,), x=(8, 10))
    actions = [a for s in (exe._infer.schedule, exe._train.schedule)
               for acts in lower_schedule(s, 132).actions for a in flat_actions(acts)]
    assert not [a for a in actions if isinstance(a, Host)]
    kernels = [a.kernel for a in actions if isinstance(a, Kernel)]
    source = compiler.module_source(kernels)
    assert "const int* __restrict__ idx" in source
    assert compiler.run_nvcc(source, "sm_90", compiler.find_nvcc())[:4] == b"\x7fELF"
