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
from typing import Any, Callable

import numpy as np

from ...core.attrs import Attrs
from ...core.base import AttrError, DTypeError, ExecutionError, GraphError, ShapeError, where
from ...core.build import Handle
from . import native
from ._util import as_shape


def load_function(func: str, error: type = ExecutionError) -> Callable[..., int]:
    """The C function of ``func`` if code allowed it (see ``ops/native.py``), else ``error``."""
    return native.lookup(func, error).fn


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
    attrs["func"] = native.allow_from_code(attrs["func"])  # a call in code allows it
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
    result = [as_shape(s, "out_shape") for s in shapes]
    if len(result) != len(outs):
        raise ShapeError(f"out_shape gives {len(result)} shapes for {len(outs)} outputs")
    _check_writes(a, ins, result)
    return ins, result


def _check_writes(a: Attrs, ins: list, result: list) -> None:
    """The graph's out_shape must be what the function is declared to write."""
    fn = native.lookup(a["func"], AttrError)
    if fn.decl.writes is None or any(s is None for s in ins):
        return
    declared = _norm_shape(fn.decl.writes(*[tuple(s) for s in ins]))
    declared = [as_shape(s, "declared shape") for s in
                (list(declared) if _multi(declared) else [declared])]
    if declared != result:
        shown = result[0] if len(result) == 1 else tuple(result)
        raise ShapeError(f"out_shape {shown} differs from what {fn.name} in {fn.path} is "
                         f"declared to write, {declared[0] if len(declared) == 1 else declared},"
                         f" for inputs {', '.join(str(tuple(s)) for s in ins)}")


def _type(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    fn = native.lookup(a["func"], AttrError)
    accepted = fn.decl.dtypes
    for i, t in enumerate(ins):
        if accepted is not None and t is not None and np.dtype(t).name not in accepted:
            raise DTypeError(f"input x{i} has dtype {np.dtype(t).name}, but {fn.name} in "
                             f"{fn.path} is declared to read only {list(accepted)} "
                             f"(cast the input with sg.sym.Cast)")
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
    return int(x._data.gpudata)  # device arrays are pycuda GPUArrays (symgraph.runtime.cuda)


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


def _run(a: Attrs, ins: list, outs: list, rc: Any, stream: Any) -> None:
    fn = native.lookup(a["func"], ExecutionError)
    arrays = list(ins) + list(outs)
    if arrays:
        native.check_device(fn, arrays[0].context.device_type)
    code = call_abi(fn.fn, arrays, stream)
    if code != 0:
        raise ExecutionError(f"Custom: aot function {fn.name} in {fn.path} returned {code} "
                             f"(non-zero means failure); outputs not written")


def _gradient(c: Any) -> list:
    here = where(c.node.name, "Custom")
    bprop = c.attrs["bprop"]
    if bprop is None:
        raise GraphError(f"{here}aot function {c.attrs['func']!r} has "
                         f"no bprop; give bprop=... or bind with grad_req='null'")
    out = c.outputs[0] if len(c.outputs) == 1 else tuple(c.outputs)
    dout = c.ograds[0] if len(c.ograds) == 1 else tuple(c.ograds)
    grads = bprop(*c.inputs, out, dout)
    grads = list(grads) if isinstance(grads, (tuple, list)) else [grads]
    if len(grads) > len(c.inputs):
        raise GraphError(f"{here}bprop returned {len(grads)} gradients "
                         f"for {len(c.inputs)} inputs")
    # Like MindSpore, a shorter tuple leaves the remaining inputs without gradient.
    grads = grads + [None] * (len(c.inputs) - len(grads))
    return [_checked_grad(here, i, g, x, c) for i, (g, x) in enumerate(zip(grads, c.inputs))]


def _checked_grad(here: str, i: int, g: Any, x: Any, c: Any) -> Any:
    """A bprop result must be a one-output Symbol (or None) of its input's shape; a dtype other
    than the input's is cast to it (a float32 kernel in a float64 graph)."""
    if g is None:
        return None
    if not isinstance(g, Handle) or len(g) != 1:
        shown = " ".join(repr(g).split())[:60]
        raise GraphError(f"{here}bprop returned {type(g).__name__} {shown} as the gradient "
                         f"of x{i}; return a one-output sg.sym Symbol (or None)")
    cache = c.types  # the graph's types (new entries typed by their rules); None: unknown
    if cache is None:
        return g
    (ge,), (xe,) = g.outputs_, x.outputs_
    gs, xs = cache.shape(ge), cache.shape(xe)
    if gs is not None and xs is not None and gs != xs:
        raise ShapeError(f"{here}bprop's gradient of x{i} has shape {gs}, the input has {xs}")
    gt, xt = cache.dtype(ge), cache.dtype(xe)
    if gt is not None and xt is not None and gt != xt:
        return c.sym.Cast(g, dtype=xt.name)
    return g


def inputs(a: Attrs) -> tuple:
    # Every path that makes an aot node (an sg.sym call, JSON or checkpoint loading) asks for
    # its inputs first: the allow list is enforced here, before anything can run.
    native.lookup(a["func"], AttrError)
    return tuple(f"x{i}" for i in range(a["num_args"]))


outputs, infer_shape, infer_type, run, gradient = _outputs, _shape, _type, _run, _gradient
