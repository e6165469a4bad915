"""The steps of a CUDA program that run Python on the host, between device-only segments:
custom ops (their buffers wrapped as GPU NDArrays, run on the program's stream) and the
stopgap numpy reference of an op without a GPU lowering (only with ``SYMGRAPH_ALLOW_HOST=1``
or where the op's lowering says so)."""
from __future__ import annotations

from typing import Any

import numpy as np

import pycuda.driver as drv

from ...core.registry import RunCtx, get_op
from .actions import Callback, Host
from .runtime import activate, wire


def callback_step(prog: Any, act: Callback, env: Any, rc: RunCtx) -> None:
    """A custom op: its buffers as GPU NDArrays, outputs zeroed, run on the program's stream."""
    from ...core.context import gpu
    from ..ndarray import NDArray
    from .runtime import DeviceArray
    st, shapes, dtypes = act.step, prog.schedule.shapes, prog.schedule.dtypes

    def wrap(slot: int) -> NDArray:
        arr = DeviceArray(shapes[slot], dtypes[slot], gpudata=env.ptrs[slot])
        arr.device_id = prog.device_id
        return NDArray(arr, gpu(prog.device_id))
    with activate(prog.device_id):
        outs = [wrap(s) for s in st.outputs]
        for o in outs:
            if o.size:
                drv.memset_d8_async(o._data.ptr, 0, o._data.nbytes, prog.stream)
        act.run(st.node.attrs, [wrap(s) for s in st.inputs], outs, rc, prog.stream)


def host_step(prog: Any, act: Host, env: Any, rc: RunCtx) -> None:
    """Stopgap for ops without a GPU lowering: numpy reference on host copies."""
    st, shapes, dtypes = act.step, prog.schedule.shapes, prog.schedule.dtypes
    prog.stream.synchronize()
    xs = []
    for s in st.inputs:
        x = np.empty(shapes[s], dtypes[s])
        if x.size:
            drv.memcpy_dtoh(wire(x), env.ptrs[s])
        xs.append(x)
    outs = get_op(st.node.op).compute(st.node.attrs, xs, rc)
    for s, v in zip(st.outputs, outs):
        v = np.ascontiguousarray(np.broadcast_to(np.asarray(v, dtypes[s]), shapes[s]))
        if v.size:
            drv.memcpy_htod(env.ptrs[s], wire(v))
