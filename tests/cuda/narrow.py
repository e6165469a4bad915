"""float16 / bfloat16 versions of the CUDA test graphs, shared by the CPU tests (every
narrow kernel renders, compiles, and runs on the host) and the GPU tests.

A narrow graph is a registry case or model bound with every argument and auxiliary state in the
narrow dtype; its reference is the float32 graph run by the numpy backend on the *same* values
(the narrow-rounded inputs converted to float32), so the only differences are the narrow
storage of intermediate results and outputs.

Tolerances (``TOLERANCE``), per dtype, as (rtol, atol) with atol relative to
``max(1, max |reference|)``: a narrow output is rounded once (float16: 2^-11 relative, bfloat16:
2^-8) and a step's value may pass through a few narrow intermediates (GEMM output, fused group,
scratch), each adding a rounding of the same size; gradients pass through several steps. The
bounds are about 10 roundings (float16 1e-2, bfloat16 8e-2); narrow formats are compared on
their own scale, not float32's.
"""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

import symgraph as sg

from .graphs import FLOAT64_CASES, all_graphs

NARROW: dict[str, np.dtype] = {"float16": np.dtype(np.float16),
                               "bfloat16": np.dtype(ml_dtypes.bfloat16)}
TOLERANCE: dict[str, tuple[float, float]] = {"float16": (1e-2, 1e-2), "bfloat16": (8e-2, 8e-2)}
# Registry cases whose op pins float64 (the dtype attribute of _ones/_full): they have no narrow
# version, the graph's type rule refuses one.
PINNED = FLOAT64_CASES


def narrow_bind(sym: Any, shapes: dict, dtype: str, ctx: Any = None, **kwargs: Any) -> Any:
    """``sym.simple_bind`` with every argument and aux state of ``shapes`` in ``dtype``."""
    return sym.simple_bind(ctx or sg.cpu(), type_dict={k: NARROW[dtype] for k in shapes},
                           **kwargs, **shapes)


def narrow_graphs(cpu_schedules: bool = False, dtype: str = "float16"
                  ) -> list[tuple[str, Any, dict, dict]]:
    """(id, symbol, float64 inputs, aux) of every test graph that has a narrow version: not
    pinned, and with an argument or aux state to make narrow (a sampler without inputs takes
    its dtype from its ``dtype`` attribute: test_random_gpu.py draws those in narrow types);
    ``cpu_schedules``: see ``graphs.all_graphs`` (composite ops unrolled in ``dtype``)."""
    return [g for g in all_graphs(cpu_schedules, dtype) if g[0] not in PINNED and (g[2] or g[3])]


def rounded(x: np.ndarray, dtype: str) -> np.ndarray:
    """``x`` rounded to ``dtype`` (round to nearest even) and back to float32."""
    return np.asarray(x).astype(NARROW[dtype]).astype(np.float32)


def assert_close(got: np.ndarray, want: np.ndarray, dtype: str, what: str,
                 share: float = 0.0) -> None:
    """``got`` (narrow) equals the float32 reference ``want`` within ``TOLERANCE[dtype]`` but at
    most a ``share`` of the elements; the message names ``what`` (graph, op, output or
    gradient) and the dtype."""
    got = np.asarray(got).astype(np.float32)
    want = np.asarray(want, np.float32).reshape(got.shape)
    rtol, atol = TOLERANCE[dtype]
    scale = max(1.0, float(np.abs(want[np.isfinite(want)]).max()) if want.size else 1.0)
    bad = ~np.isclose(got, want, rtol=rtol, atol=atol * scale, equal_nan=True)
    if bad.sum() > share * got.size:
        k = int(np.flatnonzero(bad)[0])
        raise AssertionError(
            f"{what} in {dtype}: {int(bad.sum())} of {got.size} elements (at most {share:.0%} "
            f"allowed) differ from the float32 "
            f"reference beyond rtol={rtol}, atol={atol}*{scale:.3g}; first at flat index {k}: "
            f"got {got.flat[k]!r}, want {want.flat[k]!r}")

