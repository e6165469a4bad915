"""Gradient buckets as one contiguous buffer per device, so that a bucket is reduced by ONE
``ncclAllReduce`` per device instead of one per gradient.

NCCL runs the collectives of a group one after another inside its kernel, each paying its
latency (several microseconds for the small ones: biases, BatchNorm parameters). With a
flat buffer per bucket the gradients are *views* into it: backward writes them there
directly (the CUDA backend writes into the executor's gradient arrays), the all-reduce sums
the whole buffer at once and the fused update reads the views; nothing is copied.

Requires: the gradients of a bucket share one dtype (a mixed bucket stays per gradient) and
the flattening happens before the executor's first run (the backend records the gradient
arrays' pointers then). Guarantees: each view starts at a multiple of :data:`ALIGN` bytes
(the alignment of a fresh allocation, which vectorised kernels rely on); the padding between
views is zero and stays zero (zero summed is zero).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ...core import config

ALIGN = 256
FLAT_ENV = "SYMGRAPH_FLAT_BUCKETS"


def enabled() -> bool:
    """Whether GPU buckets are flattened (``SYMGRAPH_FLAT_BUCKETS=1``; off by default until
    measured on GPUs: written on a machine without one)."""
    return config.get(FLAT_ENV)


def layout(sizes: Sequence[int], itemsize: int, align: int = ALIGN) -> tuple[list[int], int]:
    """(element offset of each array, total elements) when arrays of ``sizes`` elements are
    laid out one after another, each starting at a multiple of ``align`` bytes."""
    step = max(1, align // itemsize)
    offsets, pos = [], 0
    for n in sizes:
        offsets.append(pos)
        pos += -(-int(n) // step) * step
    return offsets, pos


class FlatBucket:
    """One device's buffer of a bucket, shaped like an array for a communicator
    (``_data.ptr``, ``shape``, ``dtype``)."""

    def __init__(self, data: Any, dtype: Any) -> None:
        self._data, self.shape, self.dtype = data, tuple(data.shape), np.dtype(dtype)


def flatten(grads: Sequence[Any], alloc: Callable[[int, Any], Any],
            view: Callable[[Any, int, tuple], Any]) -> FlatBucket | None:
    """Move the arrays ``grads`` (one device's gradients of one bucket, NDArrays) into one
    zeroed buffer from ``alloc(elements, dtype)``: each array's ``_data`` becomes
    ``view(buffer, element offset, shape)``. ``None`` (nothing moved) when the dtypes differ."""
    dtypes = {np.dtype(g.dtype) for g in grads}
    if len(dtypes) != 1 or not grads:
        return None
    dtype = dtypes.pop()
    offsets, total = layout([int(np.prod(g.shape)) for g in grads], dtype.itemsize)
    buf = alloc(total, dtype)
    for g, off in zip(grads, offsets):
        g._data = view(buf, off, tuple(g.shape))
    return FlatBucket(buf, dtype)


def gpu_alloc(device_id: int) -> Callable[[int, Any], Any]:
    """A zeroed device buffer on ``device_id`` (for :func:`flatten`)."""
    def alloc(n: int, dtype: Any) -> Any:
        import pycuda.driver as drv
        from ...runtime.cuda.runtime import activate, empty_device
        arr = empty_device((n,), dtype, device_id)
        with activate(device_id):
            drv.memset_d8(arr.gpudata, 0, arr.nbytes)
        return arr
    return alloc


def gpu_view(buf: Any, offset: int, shape: tuple) -> Any:
    """A device array of ``shape`` at element ``offset`` of ``buf``, keeping ``buf`` alive."""
    from ...runtime.cuda.runtime import DeviceArray
    arr = DeviceArray(shape, buf.dtype, gpudata=buf.ptr + offset * buf.dtype.itemsize,
                      base=buf)
    arr.device_id = buf.device_id
    return arr
