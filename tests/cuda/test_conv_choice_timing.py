"""``conv_choice`` times candidates as CUDA graph replays (``graph_ms``): the graph holds
``reps`` calls and is launched as many times as it says, and a candidate that fails is never
chosen (``fastest``). The work is a kernel counting its own launches on the device."""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

COUNTER = r"""
extern "C" __global__ void bump(unsigned int *n) { atomicAdd(n, 1u); }
"""


@pytest.fixture
def counter():
    from pycuda.compiler import SourceModule
    import pycuda.driver as drv
    from symgraph.runtime.cuda.runtime import activate
    with activate(0):
        bump = SourceModule(COUNTER, no_extern_c=True).get_function("bump")
        n = drv.mem_alloc(4)
        drv.memset_d32(n, 0, 1)
        stream = drv.Stream()

        def read() -> int:
            stream.synchronize()
            out = np.zeros(1, np.uint32)
            drv.memcpy_dtoh(out, n)
            return int(out[0])
        yield (lambda: bump(n, block=(1, 1, 1), grid=(1, 1), stream=stream)), stream, read


def test_graph_ms_replays_reps_calls(counter) -> None:
    from symgraph.runtime.cuda.conv_choice import graph_ms
    launch, stream, read = counter
    ms = graph_ms(launch, stream, reps=4, launches=3)
    assert ms > 0
    # one eager warm-up call, then the graph of 4 calls: a warm-up launch and 3 timed ones
    assert read() == 1 + 4 * (1 + 3)


def test_fastest_never_takes_a_failing_candidate(counter) -> None:
    from symgraph.core.base import ExecutionError
    from symgraph.runtime.cuda.conv_choice import fastest
    launch, stream, read = counter

    def candidate(i: int) -> None:
        if i != 1:
            raise ExecutionError("this engine cannot run")
        launch()
    k, ms = fastest(3, candidate, stream, rounds=2)
    assert (k, ms > 0) == (1, True)
    assert read() == 2 * (1 + 5 * (1 + 3))  # two rounds of graph_ms's defaults
