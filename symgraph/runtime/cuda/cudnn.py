"""cuDNN 9 through ctypes: the legacy convolution API (forward, backward-data, backward-filter).

One handle per device. A :class:`ConvPlan` holds the descriptors of one convolution shape and the
engines chosen for it per call, made once per shape and cached. How many candidates are listed
and timed is the ``SYMGRAPH_AUTOTUNE`` mode's (``tune_cache.POLICIES``): the legacy algorithms
come from ``cudnnFind*`` (which times them all) only in mode ``full``, else from the
``*_v7`` heuristics; winners are remembered on disk (``tune_cache``), so that a second process
rebuilds the one remembered engine per call and times nothing.
Data is float32, float16 or bfloat16 (tensor and filter descriptors of that type); the
convolution descriptor's compute type is always FLOAT (narrow data accumulates in float). Math is
CUDNN_TENSOR_OP_MATH for narrow data (tensor cores); for float32 CUDNN_FMA_MATH (plain FP32: no
TF32 tensor cores) unless ``SYMGRAPH_TF32=1`` (CUDNN_DEFAULT_MATH, which lets cuDNN use TF32).
Layout is the window's: NC(D)HW, or channels last (N(D)HWC data, K(D)HWC filters) for a
channel-last window (``ConvWindow.channel_last``: what ``passes/channel_last.py`` makes for
the tensor-core kernels, which want NHWC).
When the library cannot be loaded, :func:`available` is False and the backend runs its im2col +
cuBLAS lowering instead.
"""
from __future__ import annotations

import ctypes
import sys
from math import prod
from typing import Any, Optional

from ...core import config
from ...core.base import ExecutionError
from ...compiler.ops.geometry import ConvWindow
from . import libs, tune_cache
from .cudnn_graph import DATA_TYPES as CUDNN_DATA, ROLES, graph_call, packed_strides

CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, CUDNN_TENSOR_NHWC, CUDNN_CROSS_CORRELATION = 0, 0, 1, 1
CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH, CUDNN_FMA_MATH = 0, 1, 3

_LIB: Any = None
_TRIED = False
_HANDLES: dict[int, ctypes.c_void_p] = {}
_PLANS: dict[tuple, "ConvPlan"] = {}
_IDENTITY: dict[int, dict] = {}  # device id -> tune_cache.device_identity


class _Perf(ctypes.Structure):
    """cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t (the three share one layout)."""

    _fields_ = [("algo", ctypes.c_int), ("status", ctypes.c_int), ("time", ctypes.c_float),
                ("memory", ctypes.c_size_t), ("determinism", ctypes.c_int),
                ("mathType", ctypes.c_int), ("reserved", ctypes.c_int * 3)]


def _load() -> Optional[Any]:
    global _LIB, _TRIED
    if not _TRIED:
        _TRIED = True
        lib = libs.load("cudnn", required=False)  # nvidia-cudnn wheel first
        if lib is not None and hasattr(lib, "cudnnConvolutionForward"):  # legacy API needed
            _LIB = lib
        if _LIB is None:
            print(f"symgraph: {libs.missing_message('cudnn')}; convolutions use im2col + "
                  "cuBLAS", file=sys.stderr)
    return _LIB


def available() -> bool:
    return config.get("SYMGRAPH_CUDNN") != "0" and _load() is not None


def _check(status: int, what: str) -> None:
    if status != 0:
        msg = _LIB.cudnnGetErrorString
        msg.restype = ctypes.c_char_p
        raise ExecutionError(f"cuDNN {what} failed: {msg(status).decode()} ({status})")


def handle(device_id: int) -> ctypes.c_void_p:
    h = _HANDLES.get(device_id)
    if h is None:
        h = ctypes.c_void_p()
        _check(_load().cudnnCreate(ctypes.byref(h)), "cudnnCreate")
        _HANDLES[device_id] = h
    return h


def _desc(kind: str, dtype: str, channel_last: bool, *dims: int) -> ctypes.c_void_p:
    """A packed tensor or filter descriptor of ``dtype`` and NC(D)HW ``dims`` (4 or 5: the Nd
    API), stored NC(D)HW or channels last."""
    lib, d = _LIB, ctypes.c_void_p()
    dim_a = (ctypes.c_int * len(dims))(*dims)
    if kind == "tensor":
        strides = packed_strides(dims, channel_last)
        _check(lib.cudnnCreateTensorDescriptor(ctypes.byref(d)), "create tensor descriptor")
        _check(lib.cudnnSetTensorNdDescriptor(d, CUDNN_DATA[dtype], len(dims), dim_a,
                                              (ctypes.c_int * len(dims))(*strides)),
               "set tensor descriptor")
    else:
        _check(lib.cudnnCreateFilterDescriptor(ctypes.byref(d)), "create filter descriptor")
        fmt = CUDNN_TENSOR_NHWC if channel_last else CUDNN_TENSOR_NCHW
        _check(lib.cudnnSetFilterNdDescriptor(d, CUDNN_DATA[dtype], fmt, len(dims), dim_a),
               "set filter descriptor")
    return d


def _ints(*v: int) -> Any:
    return (ctypes.c_int * len(v))(*v)


class Unsupported(ExecutionError):
    """cuDNN offers no working algorithm for a shape (that convolution uses im2col instead)."""


def lifted(values: tuple, fill: int) -> tuple:
    """A 1-D layer's per-axis ``values`` with a leading axis of ``fill`` (cuDNN's descriptors
    have 2 or 3 spatial axes); 2-D and 3-D values as they are."""
    return (fill,) + tuple(values) if len(values) == 1 else tuple(values)


def descriptor_args(g: ConvWindow) -> dict[str, tuple]:
    """The dimensions and settings of a convolution's cuDNN descriptors, read from the node's
    window: ``x`` (N, C, *spatial), ``y`` (N, filters, *out), ``w`` (filters, C/groups,
    *kernel), and the convolution's ``pad``, ``stride``, ``dilate``."""
    return {"x": (g.n, g.c) + lifted(g.spatial, 1), "y": (g.n, g.filters) + lifted(g.out, 1),
            "w": (g.filters, g.c // g.groups) + lifted(g.kernel, 1),
            "pad": lifted(g.pad, 0), "stride": lifted(g.stride, 1),
            "dilate": lifted(g.dilate, 1)}


# Per call kind: the legacy Find, workspace-size and run functions, and the ConvPlan
# descriptors of its three tensors (operands a, b and the output, in the functions' order).
KINDS = {"fwd": ("cudnnFindConvolutionForwardAlgorithm",
                 "cudnnGetConvolutionForwardWorkspaceSize", "cudnnConvolutionForward",
                 ROLES["fwd"]),
         "data": ("cudnnFindConvolutionBackwardDataAlgorithm",
                  "cudnnGetConvolutionBackwardDataWorkspaceSize",
                  "cudnnConvolutionBackwardData", ROLES["data"]),
         "filter": ("cudnnFindConvolutionBackwardFilterAlgorithm",
                    "cudnnGetConvolutionBackwardFilterWorkspaceSize",
                    "cudnnConvolutionBackwardFilter", ROLES["filter"])}
# Per call kind: the legacy heuristics (ranked by cuDNN's model, nothing run; Find's arguments)
HEURISTICS = {"fwd": "cudnnGetConvolutionForwardAlgorithm_v7",
              "data": "cudnnGetConvolutionBackwardDataAlgorithm_v7",
              "filter": "cudnnGetConvolutionBackwardFilterAlgorithm_v7"}
# Per call kind: the legacy FFT algorithm (cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t)
FFT = {"fwd": 4, "data": 2, "filter": 2}


def identity(device_id: int) -> dict:
    """The device and library versions a remembered engine is valid for."""
    got = _IDENTITY.get(device_id)
    if got is None:
        _LIB.cudnnGetVersion.restype = ctypes.c_size_t
        got = _IDENTITY[device_id] = tune_cache.device_identity(device_id,
                                                                _LIB.cudnnGetVersion())
    return got


def engine_id(engine: tuple) -> dict:
    """What the disk cache stores of an engine: a legacy algorithm, or a graph-API plan's
    (heuristics mode, configuration index)."""
    return {"legacy": engine[1]} if engine[0] == "legacy" else {"graph": list(engine[3])}


class ConvPlan:
    """Descriptors and measured algorithms of one 1-D, 2-D or 3-D convolution of geometry
    ``g`` (``g.filters`` filters, ``g.groups`` groups) over data of ``dtype``."""

    def __init__(self, device_id: int, g: ConvWindow, dtype: str = "float32") -> None:
        lib, h = _LIB, handle(device_id)
        self.device_id = device_id
        # Find runs work on the handle's stream: point it at the (live) default stream, not at
        # the stream of whichever program used the handle last (it may be freed by now).
        _check(lib.cudnnSetStream(h, ctypes.c_void_p(0)), "cudnnSetStream")
        dims = descriptor_args(g)
        last = g.channel_last
        self.x = _desc("tensor", dtype, last, *dims["x"])
        self.y = _desc("tensor", dtype, last, *dims["y"])
        self.w = _desc("filter", dtype, last, *dims["w"])
        self.conv = ctypes.c_void_p()
        _check(lib.cudnnCreateConvolutionDescriptor(ctypes.byref(self.conv)), "create conv")
        _check(lib.cudnnSetConvolutionNdDescriptor(
            self.conv, len(dims["pad"]), _ints(*dims["pad"]), _ints(*dims["stride"]),
            _ints(*dims["dilate"]), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            "set conv descriptor")
        _check(lib.cudnnSetConvolutionGroupCount(self.conv, g.groups), "set group count")
        _check(lib.cudnnSetConvolutionMathType(self.conv, math_type(dtype)), "set math type")
        self.choice: dict[str, tuple] = {}  # kind -> engine: ("legacy", algo) / ("graph", ...)
        self.ws: dict[str, int] = {}
        self.ms: dict[str, float] = {}  # the chosen engine's measured time (when measured)
        self.keys: dict[str, str] = {}  # kind -> its disk cache key (modes that cache)
        pol = tune_cache.policy()
        found = {kind: self._candidates(kind, g, dims, dtype, pol) for kind in KINDS}
        for kind, engines in found.items():
            if not engines:
                raise Unsupported(f"cuDNN has no {kind} algorithm for {g}, {dtype}")
        self._measure(found, dims, dtype)

    def _candidates(self, kind: str, g: ConvWindow, dims: dict, dtype: str,
                    pol: tune_cache.Policy) -> list[tuple]:
        """The remembered engine of one call, else the mode's (engine, workspace) candidates."""
        if pol.cached:
            key = self.keys[kind] = tune_cache.choice_key(
                identity(self.device_id), "cudnn-engine", kind=kind, window=g, dtype=dtype,
                tf32=config.get("SYMGRAPH_TF32"), api=config.get("SYMGRAPH_CUDNN_API"))
            got = tune_cache.shared().get(key)
            engine = self._remembered(kind, dims, g.channel_last, dtype, got) if got else None
            if engine is not None:
                return [engine]
        engines = self._engines(kind, dims, g.channel_last, dtype, pol)
        # single: the graph API's heuristic first choice, before the legacy one's
        return sorted(engines, key=lambda e: e[0][0] != "graph")[:1] if pol.single else engines

    def _remembered(self, kind: str, dims: dict, last: bool, dtype: str,
                    got: Any) -> Optional[tuple]:
        """The engine a cache entry names, rebuilt alone; None when it cannot be (a damaged
        entry, an engine this cuDNN no longer offers): the call is measured again."""
        try:
            if "legacy" in got:
                algo = int(got["legacy"])
                return ("legacy", algo), self._workspace(kind, algo)
            pick = (int(got["graph"][0]), int(got["graph"][1]))  # checked before cuDNN sees it
            call = graph_call(_LIB, handle(self.device_id), kind, dims, last, dtype, pick=pick)
        except (ExecutionError, KeyError, TypeError, ValueError, IndexError):
            return None
        if call is None:
            return None
        plan, ws, where = call.plans[0]
        return ("graph", call, plan, where), ws

    def _workspace(self, kind: str, algo: int) -> int:
        _, size, _, names = KINDS[kind]
        d1, d2, d3 = (getattr(self, n) for n in names)
        nbytes = ctypes.c_size_t()
        _check(getattr(_LIB, size)(handle(self.device_id), d1, d2, self.conv, d3, algo,
                                   ctypes.byref(nbytes)), size)
        return nbytes.value

    def _engines(self, kind: str, dims: dict, last: bool, dtype: str,
                 pol: tune_cache.Policy) -> list[tuple]:
        """(engine, workspace bytes) candidates of one call: the legacy API's first
        algorithms (by Find's timing or by its heuristics, as ``pol`` says), then the graph
        API's plans."""
        lib, h = _LIB, handle(self.device_id)
        rank = KINDS[kind][0] if pol.find else HEURISTICS[kind]
        d1, d2, d3 = (getattr(self, n) for n in KINDS[kind][3])
        perf, count = (_Perf * 8)(), ctypes.c_int()
        _check(getattr(lib, rank)(h, d1, d2, self.conv, d3, 8, ctypes.byref(count), perf), rank)
        ok = [p.algo for p in perf[:count.value] if p.status == 0]
        algos = ok[:pol.legacy] + ([FFT[kind]] if pol.fft and dtype == "float32"
                                   and FFT[kind] in ok[pol.legacy:] else [])
        found = [(("legacy", a), self._workspace(kind, a)) for a in algos]
        call = graph_call(lib, h, kind, dims, last, dtype, limits=pol.graph)
        return found + ([(("graph", call, plan, where), ws) for plan, ws, where in call.plans]
                        if call else [])

    def _measure(self, found: dict, dims: dict, dtype: str) -> None:
        """Keep each call's fastest engine, every candidate timed the same way on scratch
        operands (cuDNN's Find times only its own algorithms, and differently)."""
        for kind, engines in found.items():  # nothing to choose (remembered, mode 0...)
            if len(engines) == 1:
                self.choice[kind], self.ws[kind] = engines[0]
        found = {kind: engines for kind, engines in found.items() if len(engines) > 1}
        if not found:
            return
        import pycuda.driver as drv  # here: this module is imported (not run) without pycuda
        from .conv_choice import fastest
        item = 4 if dtype == "float32" else 2
        bufs = {k: drv.mem_alloc(item * prod(dims[k])) for k in ("x", "w", "y")}
        ws = drv.mem_alloc(max(256, max(n for e in found.values() for _, n in e)))
        stream, h = drv.Stream(), handle(self.device_id)  # a graph captures no default stream
        _check(_LIB.cudnnSetStream(h, ctypes.c_void_p(stream.handle)), "cudnnSetStream")
        try:
            for kind, engines in found.items():
                a, b, out = (int(bufs[n]) for n in KINDS[kind][3])
                best, self.ms[kind] = fastest(len(engines), lambda i: self.launch(
                    kind, engines[i][0], a, b, out, int(ws), engines[i][1]), stream)
                self.choice[kind], self.ws[kind] = engines[best]
                if kind in self.keys and self.ms[kind] < float("inf"):  # not when all failed
                    tune_cache.shared().put(self.keys[kind], engine_id(engines[best][0]))
        finally:  # the live default stream again (this one is freed with the function)
            stream.synchronize()
            _check(_LIB.cudnnSetStream(h, ctypes.c_void_p(0)), "cudnnSetStream")

    def launch(self, kind: str, engine: tuple, a: int, b: int, out: int, ws: int,
               ws_bytes: int) -> None:
        """Run one call with ``engine`` on the handle's current stream (``run``'s operands)."""
        if engine[0] == "graph":
            engine[1].run(engine[2], a, b, out, ws)
            return
        _, _, fn, names = KINDS[kind]
        d1, d2, d3 = (getattr(self, n) for n in names)
        _check(getattr(_LIB, fn)(handle(self.device_id), ctypes.byref(_ONE), d1,
                                 ctypes.c_void_p(a), d2, ctypes.c_void_p(b), self.conv,
                                 engine[1], ctypes.c_void_p(ws), ctypes.c_size_t(ws_bytes),
                                 ctypes.byref(_ZERO), d3, ctypes.c_void_p(out)), fn)


def math_type(dtype: str) -> int:
    """cudnnMathType_t: tensor cores for narrow data; float32 is plain FMA unless
    ``SYMGRAPH_TF32=1``."""
    if dtype != "float32":
        return CUDNN_TENSOR_OP_MATH
    return CUDNN_DEFAULT_MATH if config.get("SYMGRAPH_TF32") else CUDNN_FMA_MATH


def plan(device_id: int, g: ConvWindow, dtype: str = "float32") -> Optional[ConvPlan]:
    """The cached plan of this convolution shape and dtype (measured on first use); None when
    cuDNN has no algorithm for it (one line on stderr says so)."""
    key = (device_id, g, dtype, config.get("SYMGRAPH_TF32"), config.get("SYMGRAPH_AUTOTUNE"))
    if key not in _PLANS:
        try:
            _PLANS[key] = ConvPlan(device_id, g, dtype)
        except Unsupported as err:
            print(f"symgraph: {err}; using im2col + cuBLAS", file=sys.stderr)
            _PLANS[key] = None
    return _PLANS[key]


_ONE, _ZERO = ctypes.c_float(1.0), ctypes.c_float(0.0)


def run(device_id: int, stream_handle: int, p: ConvPlan, kind: str, a: int, b: int, out: int,
        ws: int, ws_bytes: int) -> None:
    """fwd: y = conv(x=a, w=b); data: dx = conv^T(w=a, dy=b); filter: dw from (x=a, dy=b)."""
    _check(_LIB.cudnnSetStream(handle(device_id), ctypes.c_void_p(stream_handle)),
           "cudnnSetStream")
    p.launch(kind, p.choice[kind], a, b, out, ws, ws_bytes)
