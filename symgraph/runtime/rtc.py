"""``sg.rtc``: CUDA kernels written in Python strings, compiled at run time (MXNet's ``mx.rtc``).

* :class:`Rtc` (MXNet 0.x): only the kernel body is given; symgraph wraps it as the seed shows,
  ``extern "C" __global__ void name(float *x, ..., float *y, ...)`` with ``const int x_ndim`` and
  ``const int x_dims[]`` declared for every argument from the shapes of the arrays given at
  construction (so a kernel is specialised to those shapes; ``push`` checks them).
* :class:`CudaModule` (MXNet 1.x): a whole source; ``get_kernel(name, signature)`` and
  ``CudaKernel.launch(args, ctx, grid_dims, block_dims, shared_mem=0)``.

Source generation and argument checking work anywhere; compiling and launching need pycuda and
a GPU, imported on first use only. :func:`compile_module` compiles with the CUDA backend's
compiler (``symgraph.runtime.cuda.compiler``: one nvcc call, cached on disk by source, options, nvcc and
GPU architecture) and caches the loaded module in this process. Kernels launch on
the stream set by :func:`stream_scope` (the ``Custom`` op sets the executor's stream around a
custom op's Python code), else on the default stream, in the CUDA backend's context of the device.
"""
from __future__ import annotations

import contextlib
import re
import types
from typing import Any, Iterator, Optional, Sequence

import numpy as np

from ..core.base import AttrError, BindError, DTypeError, ShapeError
from ..core.context import Context
from ..core.launch_stream import current as scoped_stream, stream_scope  # noqa: F401 (sg.rtc's)
from .cuda.compiler import numbered  # noqa: F401  (part of sg.rtc's API: numbered sources)

__all__ = ["CudaModule", "CudaKernel", "numbered"]

Dims = Sequence[int]
_MODULES: dict[tuple, Any] = {}


def compile_module(source: str, options: Sequence[str] = (), device_id: int = 0) -> Any:
    """A loaded pycuda module for ``source``: compiled by the CUDA backend's compiler (one nvcc
    call, cached on disk by source, architecture, options and nvcc; ExecutionError with the
    numbered source if nvcc rejects it) and cached in this process."""
    key = (source, tuple(options), device_id)
    if key not in _MODULES:
        import pycuda.driver as drv
        from .cuda.compiler import compile_module as compile_cubin
        from .cuda.runtime import activate as backend_activate, device_info
        cubin = compile_cubin(source, device_info(device_id)["arch"], options)
        with backend_activate(device_id):
            _MODULES[key] = drv.module_from_buffer(cubin)
    return _MODULES[key]


def current_stream(ctx: Context) -> Any:
    """The stream kernels on ``ctx`` launch on now (see :func:`stream_scope`)."""
    if ctx.device_type != "gpu":
        raise BindError(f"sg.rtc: kernels run on a GPU context, got {ctx}")
    return scoped_stream()


@contextlib.contextmanager
def activate(ctx: Context) -> Iterator[None]:
    """Make ``ctx``'s device primary context current (shared with the CUDA backend, and with
    PyTorch or CuPy in the same process)."""
    from .cuda.runtime import activate as backend_activate
    with backend_activate(ctx.device_id):
        yield


def device_pointer(x: Any) -> int:
    """The device address of a GPU NDArray (a pycuda GPUArray inside)."""
    if x.context.device_type != "gpu":
        raise BindError(f"sg.rtc: array on {x.context}; kernels need GPU arrays (bind on a GPU, "
                        f"or give the op a numpy path for CPU arrays)")
    return int(x._data.gpudata)


def _dim3(dims: Dims, what: str) -> tuple[int, int, int]:
    d = tuple(int(v) for v in dims) + (1,) * (3 - len(dims))
    if len(d) != 3 or any(v < 1 for v in d):
        raise AttrError(f"sg.rtc: {what} must be up to 3 positive integers, got {tuple(dims)}")
    return d


def _launch(source: str, options: Sequence[str], name: str, args: list, ctx: Context,
            grid: Dims, block: Dims, shared: int = 0) -> None:
    stream = current_stream(ctx)
    grid3, block3 = _dim3(grid, "grid_dims"), _dim3(block, "block_dims")
    with activate(ctx):
        function = compile_module(source, options, ctx.device_id).get_function(name)
        function(*args, grid=grid3, block=block3, shared=int(shared), stream=stream)


def rtc_source(name: str, inputs: Sequence[tuple[str, Dims]],
               outputs: Sequence[tuple[str, Dims]], kernel: str) -> str:
    """The full source ``Rtc`` compiles: the seed's decoration of a kernel body."""
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise AttrError(f"sg.rtc.Rtc: kernel name {name!r} is not a C identifier")
    params = [f"float *{n}" for n, _ in inputs] + [f"float *{n}" for n, _ in outputs]
    decls = []
    for n, shape in list(inputs) + list(outputs):
        if not re.fullmatch(r"[A-Za-z_]\w*", n):
            raise AttrError(f"sg.rtc.Rtc({name}): argument name {n!r} is not a C identifier")
        dims = ", ".join(str(int(d)) for d in shape) or "1"
        decls.append(f"    const int {n}_ndim = {len(shape)};\n"
                     f"    const int {n}_dims[] = {{{dims}}};")
    return (f'extern "C" __global__ void {name}({", ".join(params)}) {{\n'
            + "\n".join(decls) + "\n" + kernel.rstrip() + "\n}\n")


class Rtc:
    """A CUDA kernel from its body (MXNet 0.x ``mx.rtc``); float32 arrays only."""

    def __init__(self, name: str, inputs: Sequence[tuple[str, Any]],
                 outputs: Sequence[tuple[str, Any]], kernel: str) -> None:
        self.name = name
        self._in = [(n, tuple(a.shape)) for n, a in inputs]
        self._out = [(n, tuple(a.shape)) for n, a in outputs]
        for n, a in list(inputs) + list(outputs):
            if np.dtype(a.dtype) != np.float32:
                raise DTypeError(f"sg.rtc.Rtc({name}): {n} has dtype {a.dtype}; rtc kernels "
                                 f"take float32")
        self.source = rtc_source(name, self._in, self._out, kernel)

    def check(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        """Arrays must match the count, shapes and dtype the kernel was generated for."""
        for kind, want, got in (("inputs", self._in, inputs), ("outputs", self._out, outputs)):
            if len(got) != len(want):
                raise BindError(f"sg.rtc.Rtc({self.name}).push: {len(got)} {kind} for "
                                f"{[n for n, _ in want]}")
            for (n, shape), a in zip(want, got):
                if tuple(a.shape) != shape or np.dtype(a.dtype) != np.float32:
                    raise ShapeError(f"sg.rtc.Rtc({self.name}).push: {n} is {tuple(a.shape)} "
                                     f"{a.dtype}, the kernel was built for {shape} float32")

    def push(self, inputs: Sequence[Any], outputs: Sequence[Any], grid_dims: Dims = (1, 1, 1),
             block_dims: Dims = (1, 1, 1)) -> None:
        """Launch on the current stream of the arrays' GPU."""
        self.check(inputs, outputs)
        arrays = list(inputs) + list(outputs)
        args = [np.uintp(device_pointer(a)) for a in arrays]
        _launch(self.source, (), self.name, args, arrays[0].context, grid_dims, block_dims)


# -- CudaModule (MXNet 1.x) -----------------------------------------------------------------------

_C_TYPES = {
    "float": np.float32, "double": np.float64, "__half": np.float16, "half": np.float16,
    "int": np.int32, "int32_t": np.int32, "unsigned": np.uint32, "uint32_t": np.uint32,
    "int64_t": np.int64, "long long": np.int64, "uint64_t": np.uint64, "size_t": np.uint64,
    "int8_t": np.int8, "char": np.int8, "uint8_t": np.uint8, "unsigned char": np.uint8,
    "bool": np.bool_,
}


def parse_signature(signature: str) -> list[tuple[str, bool, np.dtype]]:
    """``"const float *x, int n"`` -> [(name, is_pointer, dtype)]."""
    out = []
    for part in filter(None, (p.strip() for p in signature.split(","))):
        m = re.fullmatch(r"(?:const\s+)?([A-Za-z_][\w ]*?)\s*(\*?)\s*(?:const\s+)?"
                         r"(?:__restrict__\s+)?([A-Za-z_]\w*)", part)
        if not m or m.group(1).strip() not in _C_TYPES:
            raise AttrError(f"sg.rtc: cannot read argument {part!r} of signature "
                            f"{signature!r}; types: {sorted(_C_TYPES)}")
        out.append((m.group(3), bool(m.group(2)), np.dtype(_C_TYPES[m.group(1).strip()])))
    return out


class CudaKernel:
    """One kernel of a :class:`CudaModule` with its parsed signature."""

    def __init__(self, module: "CudaModule", name: str, signature: str) -> None:
        self.module, self.name = module, name
        self.args = parse_signature(signature)

    def convert_args(self, args: Sequence[Any]) -> list:
        """Check ``args`` against the signature; device pointers and typed scalars."""
        if len(args) != len(self.args):
            raise BindError(f"sg.rtc kernel {self.name}: {len(args)} arguments for signature "
                            f"{[n for n, _, _ in self.args]}")
        for (n, is_ptr, dtype), a in zip(self.args, args):
            if is_ptr and (not hasattr(a, "context") or np.dtype(a.dtype) != dtype):
                raise DTypeError(f"sg.rtc kernel {self.name}: argument {n} needs an NDArray "
                                 f"of {dtype}, got {getattr(a, 'dtype', type(a).__name__)}")
            if not is_ptr and hasattr(a, "context"):
                raise DTypeError(f"sg.rtc kernel {self.name}: argument {n} is a {dtype} "
                                 f"scalar, got an NDArray")
        out = [np.uintp(device_pointer(a)) if is_ptr else dtype.type(a)
               for (_, is_ptr, dtype), a in zip(self.args, args)]
        return out

    def launch(self, args: Sequence[Any], ctx: Context, grid_dims: Dims, block_dims: Dims,
               shared_mem: int = 0) -> None:
        """Launch on ``ctx``'s current stream."""
        converted = self.convert_args(args)
        _launch(self.module.source, self.module.options, self.name, converted, ctx, grid_dims,
                block_dims, shared_mem)


class CudaModule:
    """A CUDA source compiled at run time (MXNet 1.x ``mx.rtc.CudaModule``).

    Kernels are looked up by their ``extern "C"`` names; ``exports`` is accepted for
    compatibility and, when given, limits which names ``get_kernel`` accepts."""

    def __init__(self, source: str, options: Sequence[str] = (),
                 exports: Sequence[str] = ()) -> None:
        self.source, self.options, self.exports = source, tuple(options), tuple(exports)

    def get_kernel(self, name: str, signature: str) -> CudaKernel:
        if self.exports and name not in self.exports:
            raise AttrError(f"sg.rtc.CudaModule: {name!r} is not in exports {list(self.exports)}")
        return CudaKernel(self, name, signature)


def gpu_context(x: Any) -> Optional[Context]:
    """``x.context`` when it is a GPU, else None (custom ops use it to pick rtc or numpy)."""
    ctx = getattr(x, "context", None)
    return ctx if ctx is not None and ctx.device_type == "gpu" else None


class _CallableModule(types.ModuleType):
    """``sg.rtc`` is also callable, as MXNet 0.x's ``mx.rtc(name, inputs, outputs, kernel)``."""

    def __call__(self, name: str, inputs: Sequence[tuple[str, Any]],
                 outputs: Sequence[tuple[str, Any]], kernel: str) -> Rtc:
        return Rtc(name, inputs, outputs, kernel)


import sys as _sys  # noqa: E402

_sys.modules[__name__].__class__ = _CallableModule
