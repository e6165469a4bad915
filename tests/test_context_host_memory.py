"""MXNet's pinned and shared host memory contexts are host memory: arrays made on them live on
the CPU and compute there (MXNet's DataLoader hands out cpu_shared / cpu_pinned arrays)."""
from __future__ import annotations

import numpy as np

import symgraph as sg


def test_pinned_and_shared_contexts_are_the_cpu() -> None:
    shared = sg.Context("cpu_shared", 1)
    assert shared == sg.cpu(1) and hash(shared) == hash(sg.cpu(1))
    assert sg.cpu_pinned(0) == sg.cpu(0) and sg.cpu_pinned(0).device_typeid == 1
    a = sg.nd.array(np.arange(3.0), ctx=sg.Context("cpu_shared", 0))
    b = sg.nd.ones((3,), ctx=sg.cpu_pinned())
    np.testing.assert_array_equal((a * 2 + b).asnumpy(), [1.0, 3.0, 5.0])
    assert (a + b).context == sg.cpu(0)
