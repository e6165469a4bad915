"""The trust model of native code: which C functions an aot ``Custom`` node may call.

Loading a graph (symbol JSON, checkpoint) never loads native code by itself. A function of a
shared library becomes callable only when code names it:

* ``sg.operator.register_custom_ops_library(path, {"F": AotFunction(...)})``, the only way a
  graph read from a file may call native code; it may declare what ``F`` writes (a shape rule
  that every node's ``out_shape`` must match) and which input dtypes it accepts;
* an ``sg.sym.Custom(func="lib.so:F", func_type="aot")`` call, which is code as well; it allows
  ``F`` without a declaration (unless one was registered before).

Library paths are canonical (``os.path.realpath`` when code names them); graph files must hold
absolute paths, never resolved against the working directory later. Whether a library holds CUDA
device code is read from its ELF sections, so a GPU library is refused on the CPU and vice versa.
"""
from __future__ import annotations

import ctypes
import os
import struct
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

from ...core.base import AttrError, ExecutionError


@dataclass(frozen=True)
class AotFunction:
    """What code declares about one exported function of a custom-ops library.

    * ``writes``: callable of the input shapes (tuples) returning the shape, or tuple of shapes,
      the function writes; a node's ``out_shape`` must equal it (None: not declared).
    * ``dtypes``: input dtypes the function reads (None: any; the ABI passes dtype names, so
      the function may check them itself); other dtypes are a DTypeError at bind.
    * ``device``: ``"cpu"`` or ``"gpu"``; None reads it from the library (CUDA device code in
      it means GPU).
    """

    writes: Optional[Callable[..., Any]] = None
    dtypes: Optional[tuple] = None
    device: Optional[str] = None


ARGTYPES = [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int),
            ctypes.POINTER(ctypes.POINTER(ctypes.c_int64)), ctypes.POINTER(ctypes.c_char_p),
            ctypes.c_void_p, ctypes.c_void_p]
CUDA_SECTIONS = (b".nv_fatbin", b".nvFatBinSegment")


@dataclass(frozen=True)
class Native:
    """An allowed function: where it is, the loaded symbol and its declaration."""

    path: str
    name: str
    fn: Callable[..., int]
    decl: AotFunction
    device: str


_LIBS: dict[str, ctypes.CDLL] = {}
_ALLOWED: dict[tuple[str, str], Native] = {}


def split_func(func: str) -> tuple[str, str]:
    """``"path/lib.so:Name"`` -> (path as written, function name)."""
    path, sep, fname = str(func).rpartition(":")
    if not sep or not path or not fname:
        raise AttrError(f"Custom: func={func!r} must be 'path/to/library.so:FunctionName'")
    return path, fname


def has_cuda_code(path: str) -> bool:
    """Whether the ELF file ``path`` has a section of CUDA device code (nvcc's fatbinary)."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:  # 64-bit ELF only (what gcc/nvcc build)
            return False
        end = "<" if head[5] == 1 else ">"
        shoff, = struct.unpack(end + "Q", head[0x28:0x30])
        shentsize, shnum, shstrndx = struct.unpack(end + "HHH", head[0x3A:0x40])
        f.seek(shoff + shstrndx * shentsize)
        strtab = f.read(shentsize)
        off, size = struct.unpack(end + "QQ", strtab[0x18:0x28])
        f.seek(off)
        names = f.read(min(size, 1 << 20))
    return any(s + b"\0" in names for s in CUDA_SECTIONS)


def _load(path: str, fname: str, decl: AotFunction, error: type) -> Native:
    try:
        lib = _LIBS.get(path) or ctypes.CDLL(path)
    except OSError as exc:
        raise error(f"Custom: cannot load library {path} (for function {fname}): {exc}") from None
    _LIBS[path] = lib
    try:
        fn = getattr(lib, fname)  # a C symbol lookup, not a Python name table
    except AttributeError:
        raise error(f"Custom: library {path} has no exported function {fname!r} "
                    f"(declare it extern \"C\")") from None
    fn.restype, fn.argtypes = ctypes.c_int, ARGTYPES
    device = decl.device or ("gpu" if has_cuda_code(path) else "cpu")
    if device not in ("cpu", "gpu"):
        raise error(f"Custom: {fname} in {path}: device={device!r} is not 'cpu' or 'gpu'")
    return Native(path, fname, fn, decl, device)


def _decl(value: Union[None, AotFunction, Callable]) -> AotFunction:
    if value is None or isinstance(value, AotFunction):
        return value or AotFunction()
    if callable(value):
        return AotFunction(writes=value)
    raise AttrError(f"register_custom_ops_library: a function is declared with AotFunction(...) "
                    f"or a writes rule, got {value!r}")


def register_library(path: str, functions: Union[Mapping[str, Any], Sequence[str]],
                     device: Optional[str] = None) -> str:
    """Allow ``functions`` of library ``path`` (``sg.operator.register_custom_ops_library``)."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise AttrError(f"register_custom_ops_library: path must be a file path, got {path!r}")
    real = os.path.realpath(os.fspath(path))
    if isinstance(functions, str) or not isinstance(functions, (Mapping, Sequence)):
        raise AttrError(f"register_custom_ops_library({real}): functions must be a list of "
                        f"names or a mapping name -> AotFunction, got {functions!r}")
    items = functions.items() if isinstance(functions, Mapping) else [(f, None) for f in functions]
    loaded = []
    for fname, value in items:
        decl = _decl(value)
        if device is not None and decl.device is None:
            decl = AotFunction(decl.writes, decl.dtypes, device)
        if decl.dtypes is not None:
            decl = AotFunction(decl.writes, tuple(np.dtype(t).name for t in decl.dtypes),
                               decl.device)
        loaded.append(_load(real, str(fname), decl, AttrError))
    for native in loaded:  # all or nothing
        _ALLOWED[(real, native.name)] = native
    return real


def unregister_library(path: str) -> None:
    """Forget every allowed function of ``path`` (graphs calling them are refused again)."""
    real = os.path.realpath(os.fspath(path))
    for key in [k for k in _ALLOWED if k[0] == real]:
        del _ALLOWED[key]


def allow_from_code(func: str, error: type = AttrError) -> str:
    """An ``sg.sym.Custom`` call names ``func`` in code: allow it (keeping an earlier
    declaration) and return ``func`` with the library's canonical path."""
    path, fname = split_func(func)
    real = os.path.realpath(path)
    if (real, fname) not in _ALLOWED:
        _ALLOWED[(real, fname)] = _load(real, fname, AotFunction(), error)
    return f"{real}:{fname}"


def lookup(func: str, error: type) -> Native:
    """The allowed function of ``func``, else ``error`` saying how to allow it."""
    path, fname = split_func(func)
    if not os.path.isabs(path):
        raise error(f"Custom: library path {path!r} (function {fname}) is relative; a graph "
                    f"names libraries by absolute path, never resolved against the working "
                    f"directory")
    native = _ALLOWED.get((path, fname))
    if native is None:
        raise error(f"Custom: native function {fname} of {path} is not allowed; graphs loaded "
                    f"from files call native code only after "
                    f"sg.operator.register_custom_ops_library({path!r}, [{fname!r}])")
    return native


def check_device(native: Native, device_type: str) -> None:
    """ExecutionError when the library's code cannot run on ``device_type``."""
    if native.device != device_type:
        what = "CUDA device code" if native.device == "gpu" else "host code only"
        raise ExecutionError(f"Custom: aot function {native.name} in {native.path} holds "
                             f"{what} ({native.device} library) and cannot run on a "
                             f"{device_type} context")
