"""Per-batch host<->device copies that do not stop the host: pinned staging buffers, async
copies on the executor's stream, reused in a ring.

``fit`` on the GPU copies each batch in with one async host-to-device copy per input and the
outputs out with one async device-to-host copy each, so the host prepares the next batch while
the GPU runs the step. A ring buffer is refilled only after the copy that last used it completed
(its event), so the host may run up to ``DEPTH - 1`` steps ahead.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import pycuda.driver as drv

from ..ndarray import NDArray
from .runtime import activate, wire, wire_dtype

DEPTH = 4


def _pinned(shape: tuple, dtype: np.dtype) -> np.ndarray:
    """A page-locked host array; bfloat16 (no buffer format) allocated as its 16-bit words."""
    if np.dtype(dtype).kind != "V":
        return drv.pagelocked_empty(shape, dtype)
    return drv.pagelocked_empty(shape, wire_dtype(dtype)).view(dtype)


class Staging:
    """Rings of pinned buffers, one ring per (direction, array), on ``device_id``."""

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self._rings: dict[tuple, list] = {}
        self._turn: dict[tuple, int] = {}

    def _buffer(self, key: tuple, shape: tuple, dtype: np.dtype) -> tuple[np.ndarray, list, int]:
        """The next pinned buffer of ``key``'s ring, once its previous copy has completed."""
        ring = self._rings.get(key)
        if ring is None:
            ring = self._rings[key] = [[_pinned(shape, dtype), None] for _ in range(DEPTH)]
        k = self._turn[key] = (self._turn.get(key, -1) + 1) % DEPTH
        if ring[k][1] is not None:
            ring[k][1].synchronize()
        return ring[k][0], ring[k], k

    def to_device(self, target: Any, value: Any, stream: Any) -> None:
        """Queue ``target[:] = value`` (an NDArray on the GPU; value broadcast and cast as
        numpy does) on ``stream``."""
        if isinstance(value, NDArray):  # a host batch is only read: no copy
            if value.context.device_type != "cpu":  # a device copy, or through the host
                target[:] = value
                return
            value = value._data
        buf, entry = self.reserve(target)
        np.copyto(buf, value, casting="unsafe")
        self.send(target, buf, entry, stream)

    def reserve(self, target: Any) -> tuple[np.ndarray, list]:
        """The pinned buffer of the next copy into ``target`` (waiting, if need be, for the
        copy that used it ``DEPTH`` turns ago) and its ring entry. Filling the buffer is the
        caller's (any thread may: no CUDA call is involved); :meth:`send` queues the copy."""
        data = target._data
        with activate(self.device_id):
            buf, entry, _ = self._buffer(("in", data.ptr), data.shape, data.dtype)
        return buf, entry

    def send(self, target: Any, buf: np.ndarray, entry: list, stream: Any) -> None:
        """Queue the copy of the filled ``buf`` (from :meth:`reserve`) into ``target``."""
        data = target._data
        with activate(self.device_id):
            if data.size:
                drv.memcpy_htod_async(data.ptr, wire(buf), stream)
            entry[1] = drv.Event(drv.event_flags.DISABLE_TIMING).record(stream)

    def from_device(self, sources: Sequence[Any],
                    stream: Any) -> Callable[[], list[np.ndarray]]:
        """Queue copies of ``sources`` (GPU NDArrays) to pinned buffers; the returned function
        waits for them and gives the host arrays (valid until ``DEPTH - 1`` later copies)."""
        bufs = []
        with activate(self.device_id):
            for src in sources:
                data = src._data
                buf, entry, _ = self._buffer(("out", data.ptr), data.shape, data.dtype)
                if data.size:
                    drv.memcpy_dtoh_async(wire(buf), data.ptr, stream)
                bufs.append((buf, entry))
            event = drv.Event().record(stream)
            for _, entry in bufs:
                entry[1] = event

        def wait() -> list[np.ndarray]:
            with activate(self.device_id):
                event.synchronize()
            return [b for b, _ in bufs]
        return wait
