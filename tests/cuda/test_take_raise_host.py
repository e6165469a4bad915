"""take's CUDA kernel for ``mode='raise'``: a kernel cannot raise, so it clips (MXNet raises;
docs/mxnet_parity.md) and never reads outside the data. Compiled as host C++ and run one
thread at a time (``host_run``) on indices far out of range, against numpy's clip."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import symgraph as sg

from .host_run import host_compiler, run_on_host

pytestmark = pytest.mark.skipif(host_compiler() is None, reason="g++ not on PATH")


@pytest.mark.parametrize("axis", [0, 1])
def test_raise_mode_kernel_clips_out_of_range_indices(axis: int, tmp_path: Path) -> None:
    sym = sg.sym.take(sg.sym.var("a"), sg.sym.var("i"), axis=axis, mode="raise")
    sch = sym.simple_bind(sg.cpu(), a=(3, 4), i=(5,), grad_req="null")._infer.schedule
    (step,) = [s for s in sch.steps if s.node.op == "take"]
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([-1e6, -1, 1, 2.9, 1e6], np.float32)
    (got,) = run_on_host(step, sch.shapes, sch.dtypes, [a, idx], tmp_path)
    n = a.shape[axis]
    want = np.take(a, np.clip(idx.astype(np.int64), 0, n - 1), axis=axis)
    np.testing.assert_array_equal(got, want)
