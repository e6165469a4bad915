"""One convolution call through cuDNN's graph (backend) API: engines the legacy API misses.

cuDNN 9's legacy ``cudnnFind*`` chooses among the legacy algorithms only. On channels-last data
(NHWC, the layout its tensor-core kernels want) those are slower than on NCHW, while the graph
API's engines (the implicit-GEMM kernels PyTorch reaches through cudnn-frontend) are several
times faster. A :class:`GraphCall` states one call (forward, backward data or backward filter)
as a graph of one operation, asks the heuristics for engine configurations and finalizes the
execution plans of the first few of each heuristics mode, as many as the autotune mode's
``tune_cache.Policy.graph`` says (finalizing is what costs: 19.5 s of ResNet-50's first step
when every mode's first eight were built); ``cudnn.ConvPlan`` times them beside the legacy
algorithms and keeps the fastest. A remembered winner is rebuilt alone from its (heuristics
mode, configuration index) (``pick``). float32
keeps to engines without the TENSOR_CORE or DOWN_CONVERT_INPUTS numerical notes (no TF32, like
the legacy path's FMA math) unless ``SYMGRAPH_TF32=1``.

Tensor unique ids: 1 the data (x or dx), 2 the filter (w or dw), 3 the output (y or dy), for
every kind. Enum values are cuDNN 9's ``cudnn_graph.h``.
"""
from __future__ import annotations

import ctypes
from typing import Any, Optional

from ...core import config
from ...core.base import ExecutionError

# cudnnBackendDescriptorType_t
CONVOLUTION, ENGINE, ENGINECFG, ENGINEHEUR, EXECUTION_PLAN = 1, 2, 3, 4, 5
OP_FWD, OP_BWD_FILTER, OP_BWD_DATA, OPERATIONGRAPH, VARIANT_PACK, TENSOR = 10, 11, 12, 15, 16, 17
# cudnnBackendAttributeType_t
T_HANDLE, T_DATA_TYPE, T_INT64, T_FLOAT, T_VOID_PTR, T_CONV_MODE, T_HEUR_MODE = 0, 1, 3, 4, 6, 7, 8
T_NUMERICAL_NOTE, T_DESCRIPTOR = 11, 15
CROSS_CORRELATION, DATA_FLOAT = 1, 0
HEUR_MODES = (3, 1, 2)  # cudnnBackendHeurMode_t A, B, FALLBACK
NOT_FP32 = (0, 1)  # numerical notes TENSOR_CORE, DOWN_CONVERT_INPUTS: TF32 for float32 data
DATA_TYPES = {"float32": 0, "float16": 2, "bfloat16": 9}  # cudnnDataType_t per storage dtype
# (operation type, its first attribute: alpha, beta, conv desc, then three tensors, and the
# unique ids those three tensors have)
OPERATIONS = {"fwd": (OP_FWD, 700, (2, 1, 3)),  # W, X, Y
              "data": (OP_BWD_DATA, 706, (2, 1, 3)),  # W, DX, DY
              "filter": (OP_BWD_FILTER, 712, (2, 1, 3))}  # DW, X, DY
# Per call kind, the roles of its operands a, b and its output (x: data, w: filter, y: the
# convolution's output); ``cudnn.KINDS`` and ``lowering_conv`` read them too.
ROLES = {"fwd": ("x", "w", "y"), "data": ("w", "y", "x"), "filter": ("x", "y", "w")}
CANDIDATES = 8
MAX_WORKSPACE = 256 << 20  # bytes: configurations that want more are skipped


def packed_strides(dims: tuple, channel_last: bool) -> list[int]:
    """Element strides of a packed tensor of NC(D)HW ``dims`` stored in that order, or with the
    channel axis (1) innermost."""
    order = [0] + list(range(2, len(dims))) + [1] if channel_last else list(range(len(dims)))
    strides, step = [0] * len(dims), 1
    for axis in reversed(order):
        strides[axis], step = step, step * dims[axis]
    return strides


class _Api:
    """The backend functions of a loaded cuDNN, with their argument types (set once per
    library: ``_api``)."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        c = ctypes
        lib.cudnnBackendCreateDescriptor.argtypes = [c.c_int, c.POINTER(c.c_void_p)]
        lib.cudnnBackendDestroyDescriptor.argtypes = [c.c_void_p]
        lib.cudnnBackendFinalize.argtypes = [c.c_void_p]
        lib.cudnnBackendSetAttribute.argtypes = [c.c_void_p, c.c_int, c.c_int, c.c_int64,
                                                 c.c_void_p]
        lib.cudnnBackendGetAttribute.argtypes = [c.c_void_p, c.c_int, c.c_int, c.c_int64,
                                                 c.POINTER(c.c_int64), c.c_void_p]
        lib.cudnnBackendExecute.argtypes = [c.c_void_p, c.c_void_p, c.c_void_p]

    def create(self, kind: int) -> ctypes.c_void_p:
        d = ctypes.c_void_p()
        self.check(self.lib.cudnnBackendCreateDescriptor(kind, ctypes.byref(d)), "create")
        return d

    def set(self, d: Any, name: int, typ: int, ctype: Any, *values: Any) -> None:
        arr = (ctype * len(values))(*values)
        self.check(self.lib.cudnnBackendSetAttribute(d, name, typ, len(values), arr),
                   f"set attribute {name}")

    def finalize(self, d: Any, what: str) -> None:
        self.check(self.lib.cudnnBackendFinalize(d), f"finalize {what}")

    def check(self, status: int, what: str) -> None:
        if status != 0:
            raise ExecutionError(f"cuDNN graph API: {what} failed (status {status})")


_APIS: dict[Any, _Api] = {}  # loaded library -> its _Api


def _api(lib: Any) -> _Api:
    got = _APIS.get(lib)
    if got is None:
        got = _APIS[lib] = _Api(lib)
    return got


def _tensor(api: _Api, uid: int, dims: tuple, strides: list, dtype: int) -> ctypes.c_void_p:
    t = api.create(TENSOR)
    api.set(t, 901, T_DATA_TYPE, ctypes.c_int, dtype)
    api.set(t, 902, T_INT64, ctypes.c_int64, *dims)
    api.set(t, 903, T_INT64, ctypes.c_int64, *strides)
    api.set(t, 906, T_INT64, ctypes.c_int64, uid)
    api.set(t, 900, T_INT64, ctypes.c_int64, 16)  # byte alignment: every buffer is 256-aligned
    api.finalize(t, "tensor")
    return t


def _convolution(api: _Api, dims: dict) -> ctypes.c_void_p:
    c, n = api.create(CONVOLUTION), len(dims["pad"])
    api.set(c, 106, T_INT64, ctypes.c_int64, n)
    api.set(c, 100, T_DATA_TYPE, ctypes.c_int, DATA_FLOAT)
    api.set(c, 101, T_CONV_MODE, ctypes.c_int, CROSS_CORRELATION)
    for name, values in ((105, dims["pad"]), (104, dims["pad"]), (102, dims["dilate"]),
                         (103, dims["stride"])):
        api.set(c, name, T_INT64, ctypes.c_int64, *values)
    api.finalize(c, "convolution")
    return c


def _uses_tensor_cores(api: _Api, cfg: Any) -> bool:
    eng, count = api.create(ENGINE), ctypes.c_int64()
    api.check(api.lib.cudnnBackendGetAttribute(cfg, 300, T_DESCRIPTOR, 1, ctypes.byref(count),
                                               ctypes.byref(eng)), "engine of a config")
    notes = (ctypes.c_int * 16)()
    api.check(api.lib.cudnnBackendGetAttribute(eng, 1303, T_NUMERICAL_NOTE, 16,
                                               ctypes.byref(count), notes), "numerical notes")
    return any(n in NOT_FP32 for n in notes[:count.value])


class GraphCall:
    """The execution plans of one convolution call that finalize (``plans``: (plan, workspace
    bytes), the heuristics' order), each runnable on run()'s operands."""

    def __init__(self, lib: Any, handle: Any, kind: str, descs: dict, dtype: int,
                 float32: bool, limits: tuple = (), pick: Optional[tuple] = None) -> None:
        api = self.api = _api(lib)
        self.handle = handle
        self._order = tuple(ROLES[kind].index(r) for r in "xwy")  # run()'s pointer per uid
        self._packs: dict[tuple, ctypes.c_void_p] = {}
        op_type, first, uids = OPERATIONS[kind]
        tensors = {u: _tensor(api, u, *descs[u], dtype) for u in (1, 2, 3)}
        op = api.create(op_type)
        api.set(op, first, T_FLOAT, ctypes.c_float, 1.0)
        api.set(op, first + 1, T_FLOAT, ctypes.c_float, 0.0)
        api.set(op, first + 2, T_DESCRIPTOR, ctypes.c_void_p, descs["conv"])
        for k, u in enumerate(uids):
            api.set(op, first + 3 + k, T_DESCRIPTOR, ctypes.c_void_p, tensors[u])
        api.finalize(op, f"{kind} operation")
        graph = api.create(OPERATIONGRAPH)
        api.set(graph, 801, T_DESCRIPTOR, ctypes.c_void_p, op)
        api.set(graph, 800, T_HANDLE, ctypes.c_void_p, handle)
        api.finalize(graph, "graph")
        self._tc_ok = not float32 or config.get("SYMGRAPH_TF32")
        # (plan, workspace bytes, (heuristics mode, configuration index)), heuristics' order
        self.plans: list[tuple] = []
        if pick is not None:
            self.plans = self._mode_plans(graph, pick[0], 1, pick[1])
            return
        for mode, limit in limits or tuple((m, CANDIDATES) for m in HEUR_MODES):
            try:  # the modes' lists differ, and the fastest engine is not always in the first
                self.plans += self._mode_plans(graph, mode, limit)
            except ExecutionError:  # a mode without results for this graph
                continue

    def _mode_plans(self, graph: Any, mode: int, limit: int,
                    only: Optional[int] = None) -> list[tuple]:
        """Up to ``limit`` usable plans of heuristics ``mode`` (float32 skips TF32 engines
        unless allowed), or the plan of configuration ``only`` alone when it is usable."""
        api, count = self.api, ctypes.c_int64()
        heur = api.create(ENGINEHEUR)
        api.set(heur, 201, T_DESCRIPTOR, ctypes.c_void_p, graph)
        api.set(heur, 200, T_HEUR_MODE, ctypes.c_int, mode)
        api.finalize(heur, "heuristics")
        api.check(api.lib.cudnnBackendGetAttribute(heur, 202, T_DESCRIPTOR, 0,
                                                   ctypes.byref(count), None), "config count")
        n = min(count.value, 4 * limit if only is None else only + 1)
        cfgs = (ctypes.c_void_p * n)(*[api.create(ENGINECFG) for _ in range(n)])
        api.check(api.lib.cudnnBackendGetAttribute(heur, 202, T_DESCRIPTOR, n,
                                                   ctypes.byref(count), cfgs), "configs")
        found = []
        for index, cfg in enumerate(cfgs[:count.value]):
            if only is not None and index != only:
                continue
            plan = api.create(EXECUTION_PLAN)
            api.set(plan, 400, T_HANDLE, ctypes.c_void_p, self.handle)
            api.set(plan, 401, T_DESCRIPTOR, ctypes.c_void_p, cfg)
            if api.lib.cudnnBackendFinalize(plan) != 0:  # this engine cannot run the graph
                continue
            ws = ctypes.c_int64()
            api.check(api.lib.cudnnBackendGetAttribute(plan, 402, T_INT64, 1,
                                                       ctypes.byref(count), ctypes.byref(ws)),
                      "workspace size")
            if ws.value <= MAX_WORKSPACE and (self._tc_ok or not _uses_tensor_cores(api, cfg)):
                found.append((plan, ws.value, (mode, index)))
            if len(found) == limit:
                break
        return found

    def _pack(self, ptrs: tuple, ws: int) -> ctypes.c_void_p:
        """The variant pack of these pointers, made once (a program's closures keep theirs)."""
        key = ptrs + (ws,)
        pack = self._packs.get(key)
        if pack is None:
            api = self.api
            pack = api.create(VARIANT_PACK)
            api.set(pack, 1000, T_INT64, ctypes.c_int64, 1, 2, 3)
            api.set(pack, 1001, T_VOID_PTR, ctypes.c_void_p, *ptrs)
            api.set(pack, 1003, T_VOID_PTR, ctypes.c_void_p, ws)
            api.finalize(pack, "variant pack")
            self._packs[key] = pack
        return pack

    def run(self, plan: Any, a: int, b: int, out: int, ws: int) -> None:
        """``plan`` on run()'s operands (see ``cudnn.run``), on the handle's current stream."""
        got = (a, b, out)
        pack = self._pack(tuple(got[i] for i in self._order), ws)
        self.api.check(self.api.lib.cudnnBackendExecute(self.handle, plan, pack), "execute")


_CALLS: dict[tuple, Optional[GraphCall]] = {}  # built plans, per call and candidate bound


def graph_call(lib: Any, handle: Any, kind: str, dims: dict, channel_last: bool,
               dtype: str, limits: tuple = (), pick: Optional[tuple] = None
               ) -> Optional[GraphCall]:
    """The graph API's plans of one call of the convolution that ``dims``
    (``cudnn.descriptor_args``) describe, or None when it has none (``SYMGRAPH_CUDNN_API=legacy``:
    never asked). ``limits``: (heuristics mode, plans) pairs to build (default: every mode's
    first ``CANDIDATES``); ``pick``: only the plan of this (mode, configuration index). Built
    once per process for the same arguments (each plan's finalization costs milliseconds)."""
    if not hasattr(lib, "cudnnBackendExecute") or \
            config.get("SYMGRAPH_CUDNN_API") == "legacy":
        return None
    key = (id(lib), handle.value, kind, tuple(sorted(dims.items())), channel_last, dtype,
           limits, pick, config.get("SYMGRAPH_TF32"))
    if key not in _CALLS:
        _CALLS[key] = _build(lib, handle, kind, dims, channel_last, dtype, limits, pick)
    return _CALLS[key]


def _build(lib: Any, handle: Any, kind: str, dims: dict, channel_last: bool, dtype: str,
           limits: tuple, pick: Optional[tuple]) -> Optional[GraphCall]:
    descs: dict = {u: (dims[k], packed_strides(dims[k], channel_last))
                   for u, k in ((1, "x"), (2, "w"), (3, "y"))}
    try:
        descs["conv"] = _convolution(_api(lib), dims)
        call = GraphCall(lib, handle, kind, descs, DATA_TYPES[dtype], dtype == "float32",
                         limits, pick)
    except ExecutionError:
        return None
    return call if call.plans else None
