"""Device contexts: ``sg.cpu()`` and ``sg.gpu(i)`` as in MXNet."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Context:
    """A device: ``device_type`` is ``'cpu'`` or ``'gpu'``."""

    device_type: str
    device_id: int = 0

    def __repr__(self) -> str:
        return f"{self.device_type}({self.device_id})"


def cpu(device_id: int = 0) -> Context:
    """The host CPU (numpy backend)."""
    return Context("cpu", device_id)


def gpu(device_id: int = 0) -> Context:
    """CUDA device ``device_id`` (CUDA backend, needs pycuda)."""
    return Context("gpu", device_id)


def current_context() -> Context:
    """The default context: the CPU."""
    return cpu()


def num_gpus() -> int:
    """How many CUDA devices are visible (0 when pycuda or a driver is missing)."""
    try:
        import pycuda.driver as drv
        drv.init()
        return int(drv.Device.count())
    except Exception:  # no pycuda, no driver, no device: no GPUs, as MXNet reports
        return 0
