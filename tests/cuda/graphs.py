"""Test graphs shared by the CUDA tests: every registry case plus small whole models."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

import symgraph as sg
from symgraph.core.registry import get_op
from tests.ops.test_registry import ALL_CASES, _sample

S = sg.sym

# Ops that still take the documented host stopgap (inputs to the host, numpy reference, results
# back), in some or all configurations and in every dtype: none (the fused RNN and its backward,
# the last ones, lower to GEMMs and gate kernels: cuda/lowering_rnn.py). Keep it empty.
# Ops whose GPU step runs on the host, each for the reason its lowering data gives
HOST_FALLBACK: set[str] = {"_sample_unique_zipfian"}  # MXNet has a CPU kernel only


def mlp() -> Any:
    x = S.var("data")
    h = S.Activation(S.FullyConnected(x, num_hidden=32, name="fc1"), act_type="relu")
    h = S.FullyConnected(h, num_hidden=10, name="fc2")
    return S.SoftmaxOutput(h, name="softmax")


def mlp_inputs(rng: np.random.Generator, batch: int = 16) -> dict[str, np.ndarray]:
    return {"data": rng.normal(size=(batch, 20)), "fc1_weight": rng.normal(size=(32, 20)) * 0.3,
            "fc1_bias": rng.normal(size=(32,)), "fc2_weight": rng.normal(size=(10, 32)) * 0.3,
            "fc2_bias": rng.normal(size=(10,)),
            "softmax_label": rng.integers(0, 10, size=(batch,)).astype(np.float64)}


def seed_cnn() -> Any:
    from symgraph.interop.models.simple_cnn import build
    return build()


def seed_cnn_inputs(rng: np.random.Generator, batch: int = 4) -> dict[str, np.ndarray]:
    shapes = seed_cnn().infer_shape(data=(batch, 1, 28, 28))[0]
    out = {n: rng.normal(size=s) * 0.2 for n, s in zip(seed_cnn().list_arguments(), shapes)}
    out["softmax_label"] = rng.integers(0, 10, size=(batch,)).astype(np.float64)
    return out


def pool_epilogue() -> Any:
    """Pooling heads whose kernels apply a fused group's formula: relu's mask on a 3x3/3 max
    pool's gradient (remainder cells), a forward epilogue reading a second operand, and a 2x2/3
    avg pool (gaps) whose gradient is added to another term, so the epilogue is not 0 on the
    cells no window covers."""
    x, z = S.var("data"), S.var("data2")
    a = S.Pooling(S.Activation(x, act_type="relu"), kernel=(3, 3), stride=(3, 3))
    b = S.Pooling(z, kernel=(2, 2), stride=(3, 3), pad=(1, 1), pool_type="avg",
                  count_include_pad=False)
    return S.Group([S.Activation(a + S.var("bias"), act_type="sigmoid"), b, z * z])


def pool_epilogue_inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {"data": rng.normal(size=(2, 3, 8, 7)), "bias": rng.normal(size=(2, 3, 2, 2)),
            "data2": rng.normal(size=(2, 2, 7, 9))}


MODELS: dict[str, tuple[Callable[[], Any], Callable[[np.random.Generator], dict]]] = {
    "mlp": (mlp, mlp_inputs),
    "seed_cnn": (seed_cnn, seed_cnn_inputs),
    "pool_epilogue": (pool_epilogue, pool_epilogue_inputs),
}


# Registry cases that pin float64 on purpose (the dtype attribute of _ones/_full/cumsum): the GPU
# path has no float64 kernels (float32, float16, bfloat16: test_narrow.py), so their steps take the
# host path by design, and the float32 and narrow GPU-against-CPU comparisons cannot bind them.
FLOAT64_CASES = {"_ones", "_full", "_arange", "_arange_stop_none"}


# Registry cases whose graphs hold a step the GPU refuses by name (BindError at bind): the
# linalg factorizations and triangular solves (no cuSOLVER/cuBLAS trsm binding yet), gemm/gemm2
# with rows along another axis than -2 (tests/ops/test_linalg.py checks the refusal) and
# channels-last pooling (tests/cuda/test_pool_layout.py).
GPU_REFUSED_CASES = {"gemm2-axis1", "gemm-axis0", "trsm", "trsm-tu", "trsm-r", "potrf",
                     "potrf-upper", "potri", "potri-upper", "gelqf", "gelqf-batch", "syevd",
                     "inverse", "det", "det-one", "slogdet"} | {
    c.name() for c in ALL_CASES if "-last-" in c.name() and "Pooling" in c.op}


# Ops the CUDA backend rewrites before autodiff (passes/unroll_control_flow.py), so a schedule
# bound on the CPU still holds them: tests that lower CPU schedules with the CUDA lowering
# leave their cases out (tests/test_control_flow.py lowers the unrolled graphs; the GPU tests
# bind them on the GPU).
UNROLLED_OPS = {"_foreach", "_while_loop", "_cond"}


def unrolled(sym: Any, shapes: dict, dtype: str = "float32") -> Any:
    """``sym`` as the CUDA backend sees it: ops with an unroll rule replaced by their ops."""
    from symgraph.core.types.infer_shape import infer_shapes
    from symgraph.core.types.infer_type import infer_types
    from symgraph.compiler.passes.unroll_control_flow import unroll_control_flow
    from symgraph.core.types.table import TypeTable
    graph = sym.graph()
    table = TypeTable(infer_shapes(graph, shapes), infer_types(graph, {k: dtype for k in shapes}))
    return S.Symbol(unroll_control_flow(graph.with_types(table)).outputs)


def all_graphs(cpu_schedules: bool = False, dtype: str = "float32"
               ) -> list[tuple[str, Any, dict, dict]]:
    """(id, symbol, float64 inputs, aux) for every registry case the GPU lowers, and model;
    ``cpu_schedules``: without the control-flow cases (only the CUDA backend's passes rewrite
    them), and with the composite ops' cases unrolled as that backend does, in ``dtype``."""
    out = []
    for case in ALL_CASES:
        if case.name() in GPU_REFUSED_CASES or (cpu_schedules and case.op in UNROLLED_OPS):
            continue
        args, aux = _sample(case)
        sym = case.build()
        if cpu_schedules and "unroll" in get_op(case.op).extra:  # a composite op: its kernels
            sym = unrolled(sym, {k: v.shape for k, v in {**args, **aux}.items()}, dtype)
            args = {k: v for k, v in args.items() if k in sym.list_arguments()}
        out.append((case.name(), sym, args, aux))
    for name, (build, inputs) in MODELS.items():
        out.append((name, build(), inputs(np.random.default_rng(0)), {}))
    return out
