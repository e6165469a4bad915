"""The sequence ops' GPU lowering (``cuda/lowering_sequence.py``), checked without and with a GPU.

Without a GPU: every sequence step of the training programs below (forward ops and their
gradients, both axes, float / integer / no lengths, lengths past both ends) is lowered, its
kernel compiled as host C++ and run (``host_run``), and compared with the op's numpy reference
on the same inputs: exactly, since every kernel only moves elements (narrow dtypes included);
no program holds a host step; every kernel compiles with nvcc for sm_90.
With a GPU (``-m gpu``): outputs and gradients against the numpy backend.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import symgraph as sg
from symgraph.runtime.cuda import compiler
from symgraph.runtime.cuda.actions import Host, Kernel, flat_actions
from symgraph.runtime.cuda.plan import lower_schedule
from symgraph.core.registry import RunCtx, get_op

from .host_run import host_compiler, run_on_host
from .narrow import NARROW

S = sg.sym
T, N = 5, 4
OPS = {"SequenceMask", "SequenceReverse", "SequenceLast", "_backward_SequenceLast"}
LENGTHS = np.array([0.0, 2.0, 5.0, 7.0])  # 0 and 7 lie outside [1, T]: clipped


def _graph(config: str) -> tuple[Any, dict]:
    """(symbol, argument shapes) of a config ``<op>-<axis>-<lengths kind>``."""
    op, axis, kind = config.split("-")
    ax = int(axis)
    shape = (T, N, 3) if ax == 0 else (N, T, 3)
    x, n = S.var("x"), S.var("n")
    kw: dict = {"axis": ax, **({"value": -4.0} if op == "SequenceMask" else {})}
    y = getattr(S, op)(x, n, use_sequence_length=True, **kw) if kind != "none" else \
        getattr(S, op)(x, **kw)
    return S.make_loss(S.sum(y * y)), {"x": shape, **({"n": (N,)} if kind != "none" else {})}


CONFIGS = [f"{op}-{ax}-{kind}" for op in ("SequenceMask", "SequenceLast")
           for ax in (0, 1) for kind in ("float", "int", "none")] + \
          [f"SequenceReverse-0-{kind}" for kind in ("float", "int", "none")]


def _schedule(config: str, dtype: str) -> Any:
    sym, shapes = _graph(config)
    types = {"x": dtype, "n": "int32" if config.endswith("int") else dtype}
    exe = sym.simple_bind(sg.cpu(), type_dict={k: types[k] for k in shapes},
                          grad_req={k: "write" if k == "x" else "null" for k in shapes},
                          **shapes)
    return exe._train.schedule


def _value(shape: tuple, dtype: Any, rng: np.random.Generator, lengths: bool) -> np.ndarray:
    if lengths:
        return LENGTHS.astype(dtype)
    return rng.normal(size=shape).astype(dtype)


@pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")
@pytest.mark.parametrize("dtype", ["float32", *sorted(NARROW)])
@pytest.mark.parametrize("config", CONFIGS)
def test_steps_match_numpy_on_host(config: str, dtype: str, tmp_path: Path) -> None:
    sch = _schedule(config, dtype)
    steps = [s for s in sch.steps if s.node.op in OPS]
    assert len(steps) == 2  # the op and its gradient
    rng = np.random.default_rng(2)
    for st in steps:
        names = get_op(st.node.op).input_names(st.node.attrs)
        xs = [_value(sch.shapes[s], sch.dtypes[s], rng, name == "sequence_length")
              for s, name in zip(st.inputs, names)]
        want = get_op(st.node.op).compute(st.node.attrs, xs, RunCtx(is_train=True))
        (got,) = run_on_host(st, sch.shapes, sch.dtypes, xs, tmp_path)
        np.testing.assert_array_equal(got, np.asarray(want[0]), err_msg=f"{config} {st.node.op}")


@pytest.mark.parametrize("dtype", ["float32", *sorted(NARROW)])
def test_no_host_step(dtype: str) -> None:
    for config in CONFIGS:
        acts = [a for step in lower_schedule(_schedule(config, dtype), 132).actions
                for a in flat_actions(step)]
        assert not [a for a in acts if isinstance(a, Host)], (config, dtype)


@pytest.mark.skipif(compiler.find_nvcc() is None, reason="nvcc not on PATH")
def test_every_sequence_kernel_compiles_for_sm90() -> None:
    kernels = {}
    for dtype in ("float32", *NARROW):
        for config in CONFIGS:
            for step in lower_schedule(_schedule(config, dtype), 132).actions:
                for a in flat_actions(step):
                    if isinstance(a, Kernel) and a.kernel.name.startswith("sg_sequence_"):
                        kernels[a.kernel.name] = a.kernel
    assert {k.split("_")[3] for k in kernels} >= {"f16", "bf16"}
    cubin = compiler.run_nvcc(compiler.module_source(list(kernels.values())), "sm_90",
                              compiler.find_nvcc())
    assert all(name.encode() in cubin for name in kernels)


def _run(config: str, ctx: Any, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    sym, shapes = _graph(config)
    rng = np.random.default_rng(4)
    x = sg.nd.array(rng.normal(size=shapes["x"]), ctx, dtype)
    args = {"x": x}
    if "n" in shapes:
        args["n"] = sg.nd.array(LENGTHS, ctx, "int32" if config.endswith("int") else dtype)
    grad = sg.nd.zeros(shapes["x"], ctx, dtype)
    exe = sym.bind(ctx, args, args_grad={"x": grad}, grad_req={"x": "write", "n": "null"})
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward()
    return out, grad.asnumpy()


@pytest.mark.gpu
@pytest.mark.parametrize("config", CONFIGS)
def test_gpu_matches_cpu(config: str) -> None:
    for dtype in ("float32", "float16"):
        want, got = _run(config, sg.cpu(), dtype), _run(config, sg.gpu(), dtype)
        for w, g in zip(want, got):
            np.testing.assert_allclose(g, w, rtol=1e-2 if dtype == "float16" else 1e-5,
                                       err_msg=config)
