"""Device contexts: ``sg.cpu()`` and ``sg.gpu(i)`` as in MXNet. MXNet's pinned and shared host
memory (``cpu_pinned``, ``Context('cpu_shared', i)``) are host memory like any other here: such
a context is ``cpu(i)`` (the GPU backend copies from any host array)."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import ClassVar, Optional

__all__ = ["Context", "cpu", "cpu_pinned", "gpu", "current_context", "num_gpus"]
HOST_MEMORY = ("cpu_pinned", "cpu_shared")  # MXNet's other host device types: cpu here


class _ContextClass(type):
    """Gives the class MXNet's ``Context.default_ctx``: the thread's default, settable."""

    @property
    def default_ctx(cls) -> "Context":
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, ctx: "Context") -> None:
        set_current_context(ctx)


@dataclass(frozen=True, eq=False)
class Context(metaclass=_ContextClass):
    """A device: ``device_type`` is ``'cpu'`` or ``'gpu'``."""

    device_type: str
    device_id: int = 0
    # MXNet's name: the thread's default context lives in `_default_ctx.value`
    _default_ctx: ClassVar[threading.local] = threading.local()
    devtype2str: ClassVar[dict] = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    devstr2type: ClassVar[dict] = {"cpu": 1, "gpu": 2, "cpu_pinned": 3, "cpu_shared": 5}

    @property
    def device_typeid(self) -> int:
        """MXNet's number of the device type (1 cpu, 2 gpu)."""
        return Context.devstr2type[self.device_type]

    # Contexts key the program caches and parameter tables on every step: the hash is
    # computed once, and equal contexts made by cpu()/gpu() are one object (identity first).
    def __post_init__(self) -> None:
        if isinstance(self.device_type, Context):  # MXNet's copy: Context(ctx)
            object.__setattr__(self, "device_id", self.device_type.device_id)
            object.__setattr__(self, "device_type", self.device_type.device_type)
        if self.device_type in HOST_MEMORY:
            object.__setattr__(self, "device_type", "cpu")
        object.__setattr__(self, "_hash", hash((self.device_type, self.device_id)))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Context)
                                 and self.device_type == other.device_type
                                 and self.device_id == other.device_id)

    def __reduce__(self) -> tuple:
        # Rebuilt through __init__: string hashes differ between processes.
        return (Context, (self.device_type, self.device_id))

    def __repr__(self) -> str:
        return f"{self.device_type}({self.device_id})"

    def __enter__(self) -> "Context":
        """``with sg.gpu(0):`` makes this the default context of the block (MXNet)."""
        stack = getattr(Context._default_ctx, "stack", None)
        if stack is None:
            stack = Context._default_ctx.stack = []
        stack.append(getattr(Context._default_ctx, "value", None))
        Context._default_ctx.value = self
        return self

    def __exit__(self, *exc: object) -> None:
        Context._default_ctx.value = Context._default_ctx.stack.pop()


_MADE: dict[tuple, Context] = {}


def _context(device_type: str, device_id: int) -> Context:
    ctx = _MADE.get((device_type, device_id))
    if ctx is None:
        ctx = Context(device_type, device_id)
        if len(_MADE) < 1024 and isinstance(device_id, int):
            _MADE[device_type, device_id] = ctx
    return ctx


def cpu(device_id: int = 0) -> Context:
    """The host CPU (numpy backend)."""
    return _context("cpu", device_id)


def cpu_pinned(device_id: int = 0) -> Context:
    """MXNet's page-locked host memory: ``cpu(device_id)`` here.

    >>> sg.cpu_pinned(0) == sg.cpu(0)
    True
    """
    return _context("cpu", device_id)


def gpu(device_id: int = 0) -> Context:
    """CUDA device ``device_id`` (CUDA backend, needs pycuda)."""
    return _context("gpu", device_id)


def current_context() -> Context:
    """The default context: the CPU, or the context of the innermost ``with ctx:`` block
    (``test_utils.set_default_context`` sets it for the thread)."""
    ctx: Optional[Context] = getattr(Context._default_ctx, "value", None)
    return cpu() if ctx is None else ctx


def set_current_context(ctx: Context) -> None:
    """Make ``ctx`` this thread's default context (until a ``with ctx:`` block changes it)."""
    Context._default_ctx.value = ctx


def num_gpus() -> int:
    """How many CUDA devices are visible (0 when pycuda or a driver is missing)."""
    try:
        import pycuda.driver as drv
        drv.init()
        return int(drv.Device.count())
    except Exception:  # no pycuda, no driver, no device: no GPUs, as MXNet reports
        return 0
