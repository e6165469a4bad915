"""oneDNN's convolutions and pooling for the compiled CPU backend, through its C API (ctypes).

oneDNN (the library MXNet 1.x and PyTorch run on CPUs) convolves with JIT-generated direct
kernels in blocked layouts; on the development machine's AVX-512 core the seed CNN's conv2
runs at about 115 GFLOP/s, where im2col plus OpenBLAS's GEMM reaches 65-75. It comes from the
``onednn-cpu-gomp`` wheel (``libdnnl.so.3``; its C API and ABI are stable across oneDNN 3.x,
so the enum values below hold for every 3.x library). Without it, or with
``SYMGRAPH_ONEDNN=0``, ``layers.py`` convolves through im2col and numpy's BLAS.

A :class:`Primitive` is one call (a convolution's forward, data or weight gradient, or a pooling
forward) for one set of shapes: oneDNN picks the layouts it runs fastest in
(``format_tag_any``; pooling keeps plain ones), and each argument
whose layout differs from the user's plain NCHW/OIHW array is reordered into a kept buffer
before the call (inputs) or out of it after (outputs). Primitives are cached per thread (their
buffers and memory objects are bound to one call at a time).

Example::

    >>> import numpy as np
    >>> from symgraph.runtime.cpu import onednn
    >>> if onednn.library() is not None:  # the wheel is installed
    ...     x, w = np.ones((1, 1, 3, 3), np.float32), np.ones((1, 1, 3, 3), np.float32)
    ...     y = np.empty((1, 1, 1, 1), np.float32)
    ...     onednn.primitive("forward", x.shape, w.shape, y.shape, (1, 1), (0, 0), (1, 1),
    ...                      False)({"src": x, "weights": w, "dst": y})
    ...     assert y.item() == 9.0
"""
from __future__ import annotations

import ctypes
import os
import threading
import warnings
from functools import lru_cache
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ...compiler.ops.conv import to_last
from ...core import config
from ...core.base import ExecutionError

DIST = "onednn-cpu-gomp"
Dims = ctypes.c_int64 * 12  # dnnl_dims_t (DNNL_MAX_NDIMS)
_P = ctypes.c_void_p
F32, FORMAT_ANY, CPU, FORWARD_TRAINING, FORWARD_INFERENCE = 3, 1, 1, 64, 96
CONV_DIRECT, SCRATCHPAD_USER, ELTWISE_RELU = 1, 1, 32
POOLING = {"max": 511, "avg": 767, "avg_exclude": 1023}  # dnnl_pooling_* algorithms
ARGS = {"src": 1, "dst": 17, "weights": 33, "bias": 41, "diff_src": 129, "diff_dst": 145,
        "diff_weights": 161, "scratchpad": 80}
QUERY_MD = {"src": 129, "diff_src": 130, "weights": 131, "diff_weights": 132, "dst": 133,
            "diff_dst": 134, "scratchpad": 136}
QUERY_IMPL = 8  # dnnl_query_impl_info_str
# per call: (inputs, outputs) by oneDNN argument name
CALLS = {"forward": (("src", "weights", "bias"), ("dst",)),
         "data": (("diff_dst", "weights"), ("diff_src",)),
         "filter": (("src", "diff_dst"), ("diff_weights",))}


class OneDNNError(ExecutionError):
    """A oneDNN call failed (its name and status code in the message)."""


class _ExecArg(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_int), ("memory", _P)]


def _library_path() -> tuple[Optional[str], str]:
    """Where ``libdnnl.so.3`` is, or None and why not."""
    setting = config.get("SYMGRAPH_ONEDNN")
    if setting is False:
        return None, "SYMGRAPH_ONEDNN=0"
    if isinstance(setting, str):
        return setting, ""
    import importlib.metadata as metadata
    try:
        dist = metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        return None, f"the {DIST} wheel is not installed"
    for f in dist.files or []:
        if f.name == "libdnnl.so.3":
            return os.path.normpath(str(dist.locate_file(f))), ""
    return None, f"the {DIST} wheel has no libdnnl.so.3"


class _Library:
    """The loaded library, its CPU engine and stream, and ``omp_set_num_threads``."""

    def __init__(self, path: str) -> None:
        self.lib = lib = ctypes.CDLL(path)
        lib.dnnl_primitive_desc_query_md.restype = _P
        lib.dnnl_memory_desc_get_size.restype = ctypes.c_size_t
        self.engine, self.stream = _P(), _P()
        self.check("dnnl_engine_create", ctypes.byref(self.engine), CPU, 0)
        self.check("dnnl_stream_create", ctypes.byref(self.stream), self.engine, 1)
        try:  # oneDNN's OpenMP build: the thread count of the calling thread's regions
            self.set_threads = ctypes.CDLL("libgomp.so.1").omp_set_num_threads
        except (OSError, AttributeError):
            self.set_threads = None

    def check(self, name: str, *args: Any) -> None:
        status = getattr(self.lib, name)(*args)
        if status != 0:
            raise OneDNNError(f"oneDNN: {name} returned status {status}")


@lru_cache(maxsize=1)
def _load() -> tuple[Optional[_Library], str]:
    path, why = _library_path()
    if path is None:
        return None, why
    try:
        return _Library(path), ""
    except (OSError, OneDNNError) as e:
        why = f"{path} did not load: {e}"
        # (a path given in SYMGRAPH_ONEDNN, or a broken wheel: not a silent slowdown)
        warnings.warn(f"symgraph: oneDNN {why}; convolutions run as im2col and BLAS",
                      RuntimeWarning, stacklevel=2)
        return None, why


_THREADS_STARTED = [False]  # a call ran on more than one OpenMP thread in this process
_FORKED_AFTER_THREADS = [False]


def _after_fork_in_child() -> None:
    # GNU OpenMP cannot run in a child forked after its parent started OpenMP threads: the
    # child's first call waits for the parent's threads for ever (seen here with 2 threads).
    # Such a child convolves with im2col and pools with the reference instead.
    if _THREADS_STARTED[0]:
        _FORKED_AFTER_THREADS[0] = True


os.register_at_fork(after_in_child=_after_fork_in_child)


def library() -> Optional[_Library]:
    """The loaded oneDNN library, or None (:func:`why_not` says why): also None in a process
    forked after its parent ran oneDNN on several threads."""
    return None if _FORKED_AFTER_THREADS[0] else _load()[0]


def why_not() -> str:
    """Why oneDNN is not used ('' when it is)."""
    if _FORKED_AFTER_THREADS[0]:
        return ("a process forked after its parent ran oneDNN's OpenMP threads (GNU OpenMP "
                "cannot run in it)")
    return _load()[1]


class Primitive:
    """One oneDNN call for one set of shapes, with the reorders between the user's plain
    arrays and the layouts oneDNN chose. ``describe(self)`` makes its primitive descriptor
    (see :func:`primitive`, :func:`pooling`); ``inputs`` and ``outputs`` map the call's
    arguments (:data:`ARGS` names) to their shapes (oneDNN's dims, channels first); ``last``:
    the user's arrays of more than two axes hold them channels last (NHWC data, OHWI weights).
    Call it with a dict of those arguments as C-contiguous float32 arrays; it writes the
    output arrays."""

    def __init__(self, lib: _Library, describe: Callable[["Primitive"], _P],
                 inputs: dict[str, tuple], outputs: dict[str, tuple], last: bool = False
                 ) -> None:
        self.lib, self._owned = lib, []
        pd = describe(self)
        impl = ctypes.c_char_p()
        lib.lib.dnnl_primitive_desc_query(pd, QUERY_IMPL, 0, ctypes.byref(impl))
        self.implementation = (impl.value or b"?").decode()
        self.user: dict[str, _P] = {}  # argument -> memory over the user's array
        self.before: list = []  # (reorder primitive, its two arguments) to run before
        self.after: list = []
        self.keep: list[np.ndarray] = []  # the kept buffers the memory objects point into
        args = []
        for name, shape in {**inputs, **outputs}.items():
            plain = self.plain(shape, last and len(shape) > 2)
            user = self.user[name] = self._memory(plain, None)
            inner = _P(lib.lib.dnnl_primitive_desc_query_md(pd, QUERY_MD.get(name, 0), 0)
                       ) if name != "bias" else plain
            if lib.lib.dnnl_memory_desc_equal(inner, plain):
                args.append(_ExecArg(ARGS[name], user))
                continue
            mine = self._memory(inner, self._buffer(inner))
            args.append(_ExecArg(ARGS[name], mine))
            if name in outputs:
                self.after.append(self._reorder(inner, plain, mine, user))
            else:
                self.before.append(self._reorder(plain, inner, user, mine))
        scratch = _P(lib.lib.dnnl_primitive_desc_query_md(pd, QUERY_MD["scratchpad"], 0))
        args.append(_ExecArg(ARGS["scratchpad"], self._memory(scratch, self._buffer(scratch))))
        self.args = (_ExecArg * len(args))(*args)
        self.primitive = self._primitive(pd)

    def plain(self, shape: Sequence[int], last: bool = False) -> _P:
        """A float32 memory descriptor of a C-contiguous array of ``shape`` (oneDNN's dims,
        channels first); ``last``: the array holds it channels last (NHWC, OHWI)."""
        stored = to_last(tuple(shape)) if last else tuple(shape)
        strides, step = [], 1
        for n in reversed(stored):
            strides.insert(0, step)
            step *= max(int(n), 1)
        if last:
            strides = [strides[0], strides[-1], *strides[1:-1]]
        return self._md("dnnl_memory_desc_create_with_strides", shape, Dims(*strides))

    def any(self, shape: Sequence[int]) -> _P:
        """A float32 memory descriptor of ``shape`` in the layout oneDNN prefers."""
        return self._md("dnnl_memory_desc_create_with_tag", shape, FORMAT_ANY)

    def _md(self, make: str, shape: Sequence[int], layout: Any) -> _P:
        md = _P()
        self.lib.check(make, ctypes.byref(md), len(shape), Dims(*shape), F32, layout)
        self._owned.append(("dnnl_memory_desc_destroy", md))
        return md

    def descriptor(self, make: str, *args: Any) -> _P:
        """The primitive descriptor ``make(&pd, engine, *args)`` makes, destroyed with this."""
        pd = _P()
        self.lib.check(make, ctypes.byref(pd), self.lib.engine, *args)
        self._owned.append(("dnnl_primitive_desc_destroy", pd))
        return pd

    def attributes(self, relu: bool = False) -> _P:
        """Attributes: the scratchpad is ours (a kept buffer, not allocated per call), and
        ``relu`` applies max(y, 0) to the output as it is written (a post-op)."""
        attr = _P()
        self.lib.check("dnnl_primitive_attr_create", ctypes.byref(attr))
        self._owned.append(("dnnl_primitive_attr_destroy", attr))
        self.lib.check("dnnl_primitive_attr_set_scratchpad_mode", attr, SCRATCHPAD_USER)
        if relu:
            ops = _P()
            self.lib.check("dnnl_post_ops_create", ctypes.byref(ops))
            self._owned.append(("dnnl_post_ops_destroy", ops))
            self.lib.check("dnnl_post_ops_append_eltwise", ops, ELTWISE_RELU,
                           ctypes.c_float(0.0), ctypes.c_float(0.0))
            self.lib.check("dnnl_primitive_attr_set_post_ops", attr, ops)
        return attr

    def _buffer(self, md: _P) -> int:
        size = self.lib.lib.dnnl_memory_desc_get_size(md)
        buf = np.empty(max(int(size), 1), np.uint8)
        self.keep.append(buf)
        return buf.ctypes.data

    def _memory(self, md: _P, pointer: Optional[int]) -> _P:
        mem = _P()
        self.lib.check("dnnl_memory_create", ctypes.byref(mem), md, self.lib.engine,
                       _P(pointer) if pointer is not None else None)
        self._owned.append(("dnnl_memory_destroy", mem))
        return mem

    def _primitive(self, pd: _P) -> _P:
        prim = _P()
        self.lib.check("dnnl_primitive_create", ctypes.byref(prim), pd)
        self._owned.append(("dnnl_primitive_destroy", prim))
        return prim

    def _reorder(self, src: _P, dst: _P, src_mem: _P, dst_mem: _P) -> tuple:
        pd = _P()
        self.lib.check("dnnl_reorder_primitive_desc_create", ctypes.byref(pd), src,
                       self.lib.engine, dst, self.lib.engine, None)
        self._owned.append(("dnnl_primitive_desc_destroy", pd))
        args = (_ExecArg * 2)(_ExecArg(ARGS["src"], src_mem), _ExecArg(ARGS["dst"], dst_mem))
        return self._primitive(pd), args

    def __call__(self, arrays: dict[str, np.ndarray]) -> None:
        lib = self.lib
        for name, mem in self.user.items():
            lib.check("dnnl_memory_set_data_handle", mem, _P(arrays[name].ctypes.data))
        for prim, args in self.before:
            lib.check("dnnl_primitive_execute", prim, lib.stream, 2, args)
        lib.check("dnnl_primitive_execute", self.primitive, lib.stream, len(self.args),
                  self.args)
        for prim, args in self.after:
            lib.check("dnnl_primitive_execute", prim, lib.stream, 2, args)

    def __del__(self) -> None:
        for name, handle in reversed(getattr(self, "_owned", [])):
            getattr(self.lib.lib, name)(handle)


def _right_pad(n: int, k: int, out: int, stride: int, pad: int, dilate: int) -> int:
    """The padding after the last input element that makes ``out`` outputs: MXNet pads both
    sides by ``pad`` and drops a window that would not fit, so this may be less than ``pad``,
    even negative (oneDNN then leaves the last elements unread, as MXNet does)."""
    return (out - 1) * stride + (k - 1) * dilate + 1 - n - pad


def _convolution(call: str, x: tuple, w: tuple, y: tuple, stride: tuple, pad: tuple,
                 dilate: tuple, bias: bool, relu: bool, last: bool
                 ) -> Callable[[Primitive], _P]:
    def describe(p: Primitive) -> _P:
        # NHWC data is convolved in place (brgconv's NHWC kernels run as fast as its blocked
        # ones); NCHW data is reordered into the layout oneDNN picks
        data = (lambda shape: p.plain(shape, True)) if last else p.any
        geometry = (Dims(*stride), Dims(*(d - 1 for d in dilate)), Dims(*pad),
                    Dims(*(_right_pad(x[2 + i], w[2 + i], y[2 + i], stride[i], pad[i],
                                      dilate[i]) for i in range(len(stride)))))
        fwd = p.descriptor("dnnl_convolution_forward_primitive_desc_create",
                           FORWARD_TRAINING if call != "forward" else FORWARD_INFERENCE,
                           CONV_DIRECT, data(x), p.any(w), p.plain((w[0],)) if bias else None,
                           data(y), *geometry, p.attributes(relu))
        if call == "data":
            return p.descriptor("dnnl_convolution_backward_data_primitive_desc_create",
                                CONV_DIRECT, data(x), p.any(w), data(y), *geometry, fwd,
                                p.attributes())
        if call == "filter":
            return p.descriptor("dnnl_convolution_backward_weights_primitive_desc_create",
                                CONV_DIRECT, data(x), p.any(w), None, data(y), *geometry,
                                fwd, p.attributes())
        return fwd
    return describe


_CACHE = threading.local()
_THREADS = threading.local()


def _cached(key: tuple, make: Callable[[_Library], Primitive]) -> Primitive:
    """The calling thread's primitive of ``key``, made by ``make`` the first time."""
    lib = library()
    if lib is None:
        raise OneDNNError(f"oneDNN is not available: {why_not()}")
    held = _CACHE.__dict__.setdefault("primitives", {})
    found = held.get(key)
    if found is None:
        if len(held) >= 256:
            held.pop(next(iter(held)))
        found = held[key] = make(lib)
    return found


def primitive(call: str, x: tuple, w: tuple, y: tuple, stride: tuple, pad: tuple,
              dilate: tuple, bias: bool, relu: bool = False, last: bool = False) -> Primitive:
    """The calling thread's convolution :class:`Primitive` of ``call`` (``forward``, ``data``
    or ``filter``) for data shape ``x``, weights ``w``, output ``y`` (channels first) and the
    window; ``bias``: the forward adds one; ``relu``: the forward's output through max(y, 0);
    ``last``: the arrays are NHWC data and OHWI weights."""
    def make(lib: _Library) -> Primitive:
        shapes = {"src": x, "diff_src": x, "weights": w, "diff_weights": w, "dst": y,
                  "diff_dst": y, "bias": (w[0],)}
        inputs, outputs = CALLS[call]
        return Primitive(lib, _convolution(call, x, w, y, stride, pad, dilate, bias, relu,
                                           last),
                         {k: shapes[k] for k in inputs if bias or k != "bias"},
                         {k: shapes[k] for k in outputs}, last)
    return _cached(("convolution", call, x, w, y, stride, pad, dilate, bias, relu, last),
                   make)


def pooling(kind: str, x: tuple, y: tuple, kernel: tuple, stride: tuple, pad: tuple,
            last: bool = False) -> Primitive:
    """The calling thread's pooling :class:`Primitive` (inference: no workspace) of ``kind``
    (``max``, ``avg`` counting the padding, ``avg_exclude`` not counting it), arguments
    ``src`` and ``dst`` in plain layouts (reordering them would cost more than pooling):
    NCHW, or NHWC with ``last`` (``x``, ``y``: the shapes channels first)."""
    def describe(p: Primitive) -> _P:
        after = (_right_pad(x[2 + i], kernel[i], y[2 + i], stride[i], pad[i], 1)
                 for i in range(len(kernel)))
        return p.descriptor("dnnl_pooling_forward_primitive_desc_create", FORWARD_INFERENCE,
                            POOLING[kind], p.plain(x, last), p.plain(y, last), Dims(*stride),
                            Dims(*kernel), Dims(*(0 for _ in kernel)), Dims(*pad),
                            Dims(*after), p.attributes())
    return _cached(("pooling", kind, x, y, kernel, stride, pad, last),
                   lambda lib: Primitive(lib, describe, {"src": x}, {"dst": y}, last))


def set_threads(n: int) -> None:
    """oneDNN's thread count for the calling thread's calls (OpenMP's per-thread setting, so
    another library's OpenMP pool keeps its own)."""
    lib = library()
    if lib is not None and lib.set_threads is not None and getattr(_THREADS, "n", 0) != n:
        lib.set_threads(n)
        _THREADS.n = n
        _THREADS_STARTED[0] = _THREADS_STARTED[0] or n > 1

