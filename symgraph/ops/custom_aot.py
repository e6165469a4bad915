"""The ``aot`` kind of ``Custom``: compiled kernels with MindSpore's calling convention.

The library exports ``extern "C" int F(int nparam, void **params, int *ndims, int64_t **shapes,
const char **dtypes, void *stream, void *extra)``; ``params`` are the inputs then the outputs,
``dtypes`` MindSpore's names (``"float32"``...), and a non-zero return is an error. On the CPU the
same function is called with host pointers and a null stream; on the GPU with device pointers
and the executor's stream. ``out_shape``/``out_dtype`` are values or callables of the input
shapes/dtypes; ``bprop(*inputs, out, dout)`` returns input gradients built from ``sg.sym`` ops.
"""
from __future__ import annotations

import ctypes
import os
from typing import Any, Callable

import numpy as np

from ..attrs import Attrs
from ..base import AttrError, ExecutionError, GraphError, ShapeError, where

_LIBS: dict[str, ctypes.CDLL] = {}
_ARGTYPES = [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int),
             ctypes.POINTER(ctypes.POINTER(ctypes.c_int64)), ctypes.POINTER(ctypes.c_char_p),
             ctypes.c_void_p, ctypes.c_void_p]


def split_func(func: str) -> tuple[str, str]:
    """``"./lib.so:Name"`` -> (absolute library path, function name)."""
    path, sep, fname = func.rpartition(":")
    if not sep or not path or not fname:
        raise AttrError(f"Custom: func={func!r} must be 'path/to/library.so:FunctionName'")
    return os.path.abspath(path), fname


def load_function(func: str, error: type = ExecutionError) -> Callable[..., int]:
    """The C function of ``func``; ``error`` naming library and function if it cannot be had."""
    path, fname = split_func(func)
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
    fn.restype, fn.argtypes = ctypes.c_int, _ARGTYPES
    return fn


def _norm_shape(v: Any) -> Any:
    return v if callable(v) or v is None else tuple(v)


def _norm_dtype(v: Any, here: str) -> Any:
    if callable(v) and not isinstance(v, type):
        return v
    if isinstance(v, (tuple, list)):
        return tuple(_norm_dtype(x, here) for x in v)
    try:
        return np.dtype(v).name
    except TypeError:
        raise AttrError(f"{here}out_dtype={v!r} is not a dtype") from None


def prepare_attrs(attrs: dict, num_args: int, here: str) -> dict:
    """Check and normalise the attributes of an aot ``Custom`` call (library loaded here, so a
    bad library or name fails when the symbol is made)."""
    attrs = dict(attrs)
    attrs.setdefault("func_type", "aot")
    if attrs["func_type"] != "aot" or not attrs.get("func"):
        raise AttrError(f"{here}aot kernels need func='lib.so:Name' and func_type='aot', got "
                        f"func={attrs.get('func')!r}, func_type={attrs['func_type']!r}")
    if attrs.get("out_shape") is None or attrs.get("out_dtype") is None:
        raise AttrError(f"{here}func_type='aot' needs out_shape and out_dtype")
    if attrs.get("bprop") is not None and not callable(attrs["bprop"]):
        raise AttrError(f"{here}bprop must be callable, got {attrs['bprop']!r}")
    load_function(attrs["func"], AttrError)
    attrs["num_args"] = num_args
    attrs["out_shape"] = _norm_shape(attrs["out_shape"])
    attrs["out_dtype"] = _norm_dtype(attrs["out_dtype"], here)
    return attrs


def _multi(v: Any) -> bool:
    """out_shape given as one shape per output (a tuple of tuples)."""
    return isinstance(v, tuple) and len(v) > 0 and all(isinstance(s, tuple) for s in v)


def _outputs(a: Attrs) -> tuple:
    n = len(a["out_shape"]) if _multi(a["out_shape"]) else 1
    return ("output",) if n == 1 else tuple(f"output{i}" for i in range(n))


def _shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    spec = a["out_shape"]
    if callable(spec):
        if any(s is None for s in ins):
            return ins, outs
        spec = _norm_shape(spec(*[list(s) for s in ins]))
    shapes = list(spec) if _multi(spec) else [spec]
    result = []
    for s in shapes:
        s = tuple(int(d) for d in s)
        if any(d < 0 for d in s):
            raise ShapeError(f"out_shape {s} has a negative dimension")
        result.append(s)
    if len(result) != len(outs):
        raise ShapeError(f"out_shape gives {len(result)} shapes for {len(outs)} outputs")
    return ins, result


def _type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    spec = a["out_dtype"]
    if callable(spec):
        if any(t is None for t in ins):
            return ins, outs
        spec = _norm_dtype(spec(*[np.dtype(t) for t in ins]), "Custom: ")
    types = list(spec) if isinstance(spec, tuple) else [spec] * len(outs)
    return ins, [np.dtype(t) for t in types]


def _pointer(x: Any) -> int:
    if x.context.device_type == "cpu":
        return x._data.ctypes.data
    return int(x._data.gpudata)  # device arrays are pycuda GPUArrays (symgraph.cuda)


def call_abi(fn: Callable[..., int], arrays: list, stream: Any) -> int:
    """Call ``fn`` with MindSpore's ABI on NDArrays (inputs then outputs); ``stream`` is a
    pycuda Stream (its handle is passed) or None (a null stream)."""
    n = len(arrays)
    params = (ctypes.c_void_p * n)(*[_pointer(x) for x in arrays])
    ndims = (ctypes.c_int * n)(*[x.ndim for x in arrays])
    dims = [(ctypes.c_int64 * max(1, x.ndim))(*x.shape) for x in arrays]
    shapes = (ctypes.POINTER(ctypes.c_int64) * n)(
        *[ctypes.cast(d, ctypes.POINTER(ctypes.c_int64)) for d in dims])
    dtypes = (ctypes.c_char_p * n)(*[x.dtype.name.encode() for x in arrays])
    handle = None if stream is None else int(stream.handle)
    return int(fn(n, params, ndims, shapes, dtypes, handle, None))


def _run(a: Attrs, ins: list, outs: list, is_train: bool, stream: Any) -> None:
    fn = load_function(a["func"])
    rc = call_abi(fn, list(ins) + list(outs), stream)
    if rc != 0:
        path, fname = split_func(a["func"])
        raise ExecutionError(f"Custom: aot function {fname} in {path} returned {rc} "
                             f"(non-zero means failure); outputs not written")


def _gradient(c: Any) -> list:
    bprop = c.attrs["bprop"]
    if bprop is None:
        raise GraphError(f"{where(c.node.name, 'Custom')}aot function {c.attrs['func']!r} has "
                         f"no bprop; give bprop=... or bind with grad_req='null'")
    out = c.outputs[0] if len(c.outputs) == 1 else tuple(c.outputs)
    dout = c.ograds[0] if len(c.ograds) == 1 else tuple(c.ograds)
    grads = bprop(*c.inputs, out, dout)
    grads = list(grads) if isinstance(grads, (tuple, list)) else [grads]
    if len(grads) > len(c.inputs):
        raise GraphError(f"{where(c.node.name, 'Custom')}bprop returned {len(grads)} gradients "
                         f"for {len(c.inputs)} inputs")
    # Like MindSpore, a shorter tuple leaves the remaining inputs without gradient.
    return grads + [None] * (len(c.inputs) - len(grads))


def inputs(a: Attrs) -> tuple:
    return tuple(f"x{i}" for i in range(a["num_args"]))


outputs, infer_shape, infer_type, run, gradient = _outputs, _shape, _type, _run, _gradient
