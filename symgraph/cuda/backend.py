"""The CUDA backend interface: ``compile(schedule, ctx)`` -> :class:`CudaProgram`.

A program owns one stream, one arena allocation (the memory plan's ``arena_bytes`` plus scratch
buffers) and one module (compiled on first run, from the disk cache when possible). Each step's
actions are turned into closures with every device pointer baked in, once per set of bound
arrays. With CUDA graphs on (default; ``SYMGRAPH_CUDA_GRAPHS=0`` turns them off), a step range
run a second time with the same bound arrays is captured into a graph and from then on replayed
with one launch; new bound arrays (or shapes, which mean a new program) get a new graph. A range
is cut at each host step (custom-op Python, host stopgaps): those run eagerly, the device-only
runs between them are captured and replayed.
"""
from __future__ import annotations

import struct
from math import prod
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .. import config
from .libs import require_pycuda

require_pycuda()  # a missing pycuda says how to install it, not just ModuleNotFoundError
import pycuda.driver as drv  # noqa: E402

from .. import profiler
from .. import random as _random
from ..base import ExecutionError
from ..dtypes import as_dtype
from ..passes import FORWARD_PIPELINE as SHARED_FORWARD
from ..passes.channel_last import channel_last
from ..passes.unroll_control_flow import unroll_control_flow
from ..registry import RunCtx, get_op
from ..schedule import Schedule
from . import cublas
from .compiler import compile_module
from .graphs import CudaGraph
from .codegen import THREADS
from . import conv_choice, cooperative, cudnn
from .actions import (Callback, Choice, ConvCall, Copy, Fill, Gemm, Host, Kernel, Ref, Switch,
                      Upload, flat_actions, memset_pattern)
from .plan import ACCUMULATE, align, lower_schedule, segments
from .runtime import activate, device_info, wire

MAX_GRAPHS = 16
Closure = Callable[[RunCtx], None]


def channel_last_for_cudnn(graph: Any) -> Any:
    """``passes.channel_last`` when cuDNN runs the convolutions (its NHWC kernels are what the
    layout is for); ``SYMGRAPH_NHWC=0`` keeps every convolution NCHW."""
    if not config.get("SYMGRAPH_NHWC") or not cudnn.available():
        return graph
    return channel_last(graph)


# Read by the executor: control flow unrolled into plain ops (each step's kernels in the one
# program and CUDA graph), the shared forward passes, then the layout this backend's library
# wants.
FORWARD_PIPELINE = (unroll_control_flow,) + SHARED_FORWARD + (channel_last_for_cudnn,)


def graphs_enabled() -> bool:
    return config.get("SYMGRAPH_CUDA_GRAPHS")


class CudaEnv:
    """Device pointers of every slot for one run; keeps bound arrays alive."""

    def __init__(self, ptrs: list[int]) -> None:
        self.ptrs = ptrs
        self.keep: dict[int, Any] = {}


class CudaProgram:
    def __init__(self, schedule: Schedule, device_id: int) -> None:
        self.schedule = schedule
        self.device_id = device_id
        info = device_info(device_id)
        self.arch = info["arch"]
        low = lower_schedule(schedule, info["sm_count"])
        self.plan, self.actions, self.source = low.plan, low.actions, low.source
        self.alias = low.alias
        self.has_host = [any(isinstance(a, (Host, Callback)) for a in flat_actions(acts))
                         for acts in self.actions]
        self._scratch_base = align(self.plan.arena_bytes)
        self._key_base = self._scratch_base + align(low.scratch_bytes)
        self.key_steps = low.key_steps  # random keys (Dropout...): 8 bytes each, after scratch
        self._state_base = align(self._key_base + 8 * len(self.key_steps))
        total = self._state_base + low.state_bytes
        with activate(device_id):
            self.stream = drv.Stream()
            self._arena = drv.mem_alloc(max(total, ALIGN_MIN))
            if low.state_bytes:  # (the arena's other bytes are written before they are read)
                drv.memset_d8(int(self._arena) + self._state_base, 0, low.state_bytes)
        self._base = int(self._arena)
        self._workspace: Any = None  # cuDNN workspace, sized once from the measured plans
        self._choice: dict[Choice, tuple] = {}  # library or generated path, measured once
        self._module: Any = None
        self._prepared: dict[tuple, list[list[Closure]]] = {}
        self._graphs: dict[tuple, Any] = {}
        # slot -> (target array, pointer): after a first copying store, the producing step
        # writes straight into the executor's output / gradient array (no copy per step).
        self._redirect: dict[int, tuple[Any, int]] = {}
        bound = set(schedule.variables.values()) | {dst for dst, _ in self.alias}
        produced = [o for st in schedule.steps for o in st.outputs]
        self._redirectable = {o for o in produced if o not in bound
                              and produced.count(o) == 1}
        self._env0: Any = None  # the planned slots' pointers (new_env)
        self._segments: dict[tuple[int, int], list] = {}  # (start, stop) -> segments()

    # -- backend interface ---------------------------------------------------------------------
    def new_env(self) -> CudaEnv:
        if self._env0 is None:  # every run starts from these pointers: made once
            ptrs = [0] * len(self.schedule.shapes)
            for slot, off in self.plan.offset.items():
                ptrs[slot] = self._base + off
            self._env0 = ptrs
        return CudaEnv(list(self._env0))

    def bind_input(self, env: CudaEnv, slot: int, array: Any) -> None:
        env.ptrs[slot] = array._data.ptr
        env.keep[slot] = array._data

    def bind_inputs(self, env: CudaEnv, pairs: Sequence[tuple[int, Any]]) -> None:
        ptrs, keep = env.ptrs, env.keep
        for slot, array in pairs:
            d = array._data
            ptrs[slot] = d.ptr
            keep[slot] = d

    def store_all(self, env: CudaEnv, items: Sequence[tuple[int, Any, bool]]) -> None:
        """:meth:`store` of each ``(slot, target, accumulate)``; a slot whose step already
        writes into its target (redirected) costs one pointer comparison."""
        ptrs = env.ptrs
        for slot, target, accumulate in items:
            if target._data.ptr != ptrs[slot]:
                self.store(env, slot, target, accumulate)

    def run(self, env: CudaEnv, start: int, stop: int, rc: RunCtx, tail: Any = None) -> None:
        """Run steps ``start:stop`` on the program's stream (replaying a graph when possible).

        ``tail`` (optional) is work to run right after the steps, in the same graph: an object
        with ``closures(slot pointers, stream)`` (the fused optimizer step of
        ``cuda/optimizer.py``); it reads the run's slots, so it sees gradients before stores.
        """
        with activate(self.device_id):
            self._load()
            self._draw_keys(start, stop, rc)
            for slot, (_, ptr) in self._redirect.items():
                env.ptrs[slot] = ptr
            for dst, src in self.alias:
                env.ptrs[dst] = env.ptrs[src]
            key = tuple(env.ptrs)
            steps = self._closures(env, (start, stop, key))
            extra = [tail.closures(env.ptrs, self.stream)] if tail is not None else []
            if profiler.recording():  # eagerly, one step at a time between CUDA events
                self._run_profiled(steps, start, rc)
                steps, start, stop = [], stop, stop
            parts = self._segments.get((start, stop))
            if parts is None:
                parts = self._segments[start, stop] = segments(self.has_host, start, stop)
            for i, (a, b, host) in enumerate(parts):
                seg, gkey = steps[a - start:b - start], (a, b, key, rc.is_train)
                if i == len(parts) - 1 and not host and extra:  # the tail joins the last graph
                    seg, gkey, extra = seg + extra, gkey + (tail.key,), []
                if host or not graphs_enabled() or not self._replay(gkey, seg, rc):
                    for closures in seg:
                        for fn in closures:
                            fn(rc)
            for closures in extra:  # after a host step (or no steps): eagerly
                for fn in closures:
                    fn(rc)

    def _run_profiled(self, steps: list, start: int, rc: RunCtx) -> None:
        """Run ``steps`` (from schedule step ``start``) eagerly, each between two CUDA events
        and inside an NVTX range; record device times with ``sg.profiler``."""
        names = profiler.step_names(self.schedule)
        marks = []
        host0 = profiler.now_us()
        first = drv.Event()
        first.record(self.stream)
        for k, closures in enumerate(steps, start):
            begin, end = drv.Event(), drv.Event()
            with profiler.nvtx_range(names[k][0]):
                begin.record(self.stream)
                for fn in closures:
                    fn(rc)
                end.record(self.stream)
            marks.append((k, begin, end))
        if marks:
            marks[-1][2].synchronize()
        for k, begin, end in marks:
            profiler.add_step(self.schedule, k, host0 + first.time_till(begin) * 1000.0,
                              begin.time_till(end) * 1000.0, f"gpu({self.device_id})")

    def store(self, env: CudaEnv, slot: int, target: Any, accumulate: bool) -> None:
        """Write slot ``slot`` into device NDArray ``target`` (``+=`` when ``accumulate``)."""
        dst, src = target._data.ptr, env.ptrs[slot]
        nbytes = target._data.nbytes
        if dst == src:  # the step already wrote into the target (a redirected slot)
            return
        with activate(self.device_id):
            if not accumulate:
                if nbytes:
                    drv.memcpy_dtod_async(dst, src, nbytes, self.stream)
                if slot in self._redirectable and slot not in self._redirect:
                    self._redirect[slot] = (target._data, dst)
            elif np.dtype(target.dtype).name in ACCUMULATE:
                self._load()
                n = target.size
                grid = max(1, min((n + 1023) // 1024, 4096))
                kern = ACCUMULATE[np.dtype(target.dtype).name]
                self._kernel_closure(kern.name, grid, (dst, dst, src), n)(RunCtx())
            else:
                self.stream.synchronize()
                target[:] = target.asnumpy() + self.read(env, slot)

    def read(self, env: CudaEnv, slot: int) -> np.ndarray:
        shape, dtype = self.schedule.shapes[slot], self.schedule.dtypes[slot]
        out = np.empty(shape, dtype)
        with activate(self.device_id):
            self.stream.synchronize()
            if out.size:
                drv.memcpy_dtoh(wire(out), env.ptrs[slot])
        return out

    def time_steps(self, env: CudaEnv, start: int, stop: int, rc: RunCtx,
                   repeat: int = 1, only: Optional[type] = None) -> list[tuple]:
        """(step index, op, name, milliseconds) of each step, run eagerly one at a time;
        ``repeat`` launches of a step between its two events (no synchronisation between
        them) give the mean time of one, without the launch-and-wait latency. ``only``: time
        just the step's actions of that type (``Gemm``: the library calls without their
        epilogue kernels)."""
        self.run(env, start, start, rc)  # resolve pointers, load the module
        out = []
        with activate(self.device_id):
            for k, closures in enumerate(self._closures(env, (start, stop, tuple(env.ptrs)))):
                if only is not None:
                    closures = [fn for fn, a in zip(closures, self.actions[start + k])
                                if isinstance(a, only)]
                begin, end = drv.Event(), drv.Event()
                begin.record(self.stream)
                for _ in range(repeat):
                    for fn in closures:
                        fn(rc)
                end.record(self.stream)
                end.synchronize()
                node = self.schedule.steps[start + k].node
                out.append((start + k, node.op, node.name, end.time_since(begin) / repeat))
        return out

    # -- internals -----------------------------------------------------------------------------
    def _load(self) -> None:
        """Compile (or fetch from the disk cache) and load the program's module, once."""
        if self._module is None:
            cubin = compile_module(self.source, self.arch)
            with activate(self.device_id):
                self._module = drv.module_from_buffer(cubin)
            self._cubin = cubin  # (cooperative launches load it again: cuda/cooperative.py)

    def _draw_keys(self, start: int, stop: int, rc: RunCtx) -> None:
        """Fresh random keys for the steps ``start:stop`` that own one, drawn from the run's
        generator (``sg.random``) and copied in on the stream before the steps' graph, which
        reads them from device memory: a replay draws new numbers, a reseed repeats them."""
        ks = [k for k, s in enumerate(self.key_steps) if start <= s < stop]
        if ks:
            rng = rc.rng if rc.rng is not None else _random.generator()
            values = rng.integers(0, 2 ** 64, size=len(ks), dtype=np.uint64)
            for k, v in zip(ks, values):  # pageable source: staged at once, reusable after
                drv.memcpy_htod_async(self._ptr(Ref("key", k), None), np.array([v]), self.stream)

    def _replay(self, gkey: tuple, steps: list[list[Closure]], rc: RunCtx) -> bool:
        """Launch the graph of this range; capture it the second time the range is run."""
        g = self._graphs.get(gkey)
        if g is None:
            if len(self._graphs) >= MAX_GRAPHS:
                self._drop_graphs()
            self._graphs[gkey] = "seen"
            return False
        if g == "seen":
            def record() -> None:
                for closures in steps:
                    for fn in closures:
                        fn(rc)
            g = self._graphs[gkey] = CudaGraph(self.stream.handle, record)
        g.launch()
        return True

    def _drop_graphs(self) -> None:
        for g in self._graphs.values():
            if isinstance(g, CudaGraph):
                g.destroy()
        self._graphs.clear()

    def _closures(self, env: CudaEnv, key: tuple) -> list[list[Closure]]:
        """Closures of steps ``key[0]:key[1]`` for the bound pointers ``key[2]`` (cached)."""
        got = self._prepared.get(key)
        if got is None:
            self._ensure_workspace()
            if len(self._prepared) >= MAX_GRAPHS:
                self._prepared.clear()
            got = self._prepared[key] = [[self._closure(a, env) for a in acts]
                                         for acts in self.actions[key[0]:key[1]]]
        return got

    def _ensure_workspace(self) -> None:
        """Measure every convolution's cuDNN plan and allocate the largest workspace, once
        (before any closure holds the workspace pointer)."""
        if self._workspace is not None:
            return
        need = 0
        if cudnn.available():
            for acts in self.actions:
                for a in flat_actions(acts):
                    p = self._conv_plan(a)
                    if p is not None:
                        need = max(need, p.ws[a.kind])
        self._workspace = drv.mem_alloc(max(need, 256))
        self._ws_bytes = need

    def _choose(self, act: Choice, env: CudaEnv) -> tuple:
        """The branch of ``act`` to run here (``conv_choice``), decided once. Timing writes
        into a temporary output so that no live slot is touched."""
        got = self._choice.get(act)
        if got is None:
            conv = [a for a in act.primary if isinstance(a, ConvCall)]
            tmp_env = CudaEnv(list(env.ptrs))
            if conv:
                out = conv[0].out
                nbytes = prod(self.schedule.shapes[out.index]) * \
                    np.dtype(self.schedule.dtypes[out.index]).itemsize
                tmp = drv.mem_alloc(max(nbytes, 256))
                tmp_env.ptrs[out.index] = int(tmp)
            got = conv_choice.choose(
                act, self._conv_plan,
                lambda branch: conv_choice.time_ms([self._closure(a, tmp_env) for a in branch],
                                                   self.stream))
            self._choice[act] = got
        return got

    def _conv_plan(self, act: Any) -> Any:
        if isinstance(act, ConvCall) and cudnn.available():
            return cudnn.plan(self.device_id, act.geometry, act.dtype)
        return None

    def _ptr(self, ref: Ref, env: CudaEnv) -> int:
        if ref.kind == "slot":
            return env.ptrs[ref.index] + ref.offset
        if ref.kind == "key":
            return self._base + self._key_base + 8 * ref.index
        if ref.kind == "state":
            return self._base + self._state_base + ref.index + ref.offset
        return self._base + self._scratch_base + ref.index + ref.offset

    def _kernel_closure(self, name: str, grid: int, ptrs: tuple, n: int,
                        block: int = THREADS) -> Closure:
        """A launch with its parameter buffer packed once: pointers, then ``long long n``."""
        func = self._module.get_function(name)
        buf = struct.pack("<" + "Q" * len(ptrs) + "q", *ptrs, n)
        grid_t, block_t, stream = (grid, 1, 1), (block, 1, 1), self.stream
        return lambda rc: func._launch_kernel(grid_t, block_t, buf, 0, stream)

    def _closure(self, act: Any, env: CudaEnv) -> Closure:
        """The launch of one action with its pointers resolved (one builder per action type,
        from the table ``LAUNCHES``)."""
        make = LAUNCHES.get(type(act))
        if make is None:
            raise ExecutionError(f"unknown action {act!r}")
        return make(self, act, env)

    def _launch_kernel(self, act: Kernel, env: CudaEnv) -> Closure:
        ptrs = tuple(self._ptr(r, env) for r in act.args)
        if act.cooperative:
            self._load()
            func = cooperative.function(self.device_id, self._cubin, act.kernel.name)
            return cooperative.launch_closure(func, act.grid, act.block, ptrs, act.n,
                                              self.stream.handle, act.kernel.name)
        return self._kernel_closure(act.kernel.name, act.grid, ptrs, act.n, act.block)

    def _launch_copy(self, act: Copy, env: CudaEnv) -> Closure:
        dst, src, nbytes = self._ptr(act.dst, env), self._ptr(act.src, env), act.nbytes
        stream = self.stream
        return lambda rc: drv.memcpy_dtod_async(dst, src, nbytes, stream)

    def _launch_fill(self, act: Fill, env: CudaEnv) -> Closure:
        """A memset of the value's bits in the fill's dtype (``memset_pattern``: a Fill's 2- or
        4-byte values repeat at their own width)."""
        dst, stream = self._ptr(act.dst, env), self.stream
        value = np.asarray(act.value, as_dtype(act.dtype))
        width, bits = memset_pattern(value)  # (a 2- or 4-byte value repeats at its own width)
        count = act.count * value.itemsize // width
        memset = MEMSETS[width]
        return lambda rc: memset(dst, bits, count, stream) if count else None

    def _launch_gemm(self, act: Gemm, env: CudaEnv) -> Closure:
        a, b, c = (self._ptr(r, env) for r in (act.a, act.b, act.c))
        dev, stream = self.device_id, self.stream
        return lambda rc: cublas.gemm(dev, stream.handle, act.trans_a, act.trans_b, act.m,
                                      act.n, act.k, a, b, c, accumulate=act.accumulate,
                                      batch=act.batch, dtype=act.dtype)

    def _launch_host(self, act: Host, env: CudaEnv) -> Closure:
        return lambda rc: self._host_step(act, env, rc)

    def _launch_upload(self, act: Upload, env: CudaEnv) -> Closure:
        host = drv.pagelocked_empty(len(act.data), np.uint8)
        host[:] = np.frombuffer(act.data, np.uint8)
        dst, stream = self._ptr(act.dst, env), self.stream
        return lambda rc: drv.memcpy_htod_async(dst, host, stream)

    def _launch_switch(self, act: Switch, env: CudaEnv) -> Closure:
        train = [self._closure(a, env) for a in act.train]
        infer = [self._closure(a, env) for a in act.infer]

        def switch(rc: RunCtx) -> None:
            for fn in (train if rc.is_train else infer):
                fn(rc)
        return switch

    def _launch_callback(self, act: Callback, env: CudaEnv) -> Closure:
        return lambda rc: self._callback_step(act, env, rc)

    def _launch_choice(self, act: Choice, env: CudaEnv) -> Closure:
        parts = [self._closure(a, env) for a in self._choose(act, env)]

        def run_all(rc: RunCtx) -> None:
            for fn in parts:
                fn(rc)
        return run_all

    def _launch_conv(self, act: ConvCall, env: CudaEnv) -> Closure:
        p = self._conv_plan(act)
        a, b, out = (self._ptr(r, env) for r in (act.a, act.b, act.out))
        ws, nbytes, dev, kind = int(self._workspace), self._ws_bytes, self.device_id, act.kind
        stream = self.stream
        return lambda rc: cudnn.run(dev, stream.handle, p, kind, a, b, out, ws, nbytes)

    def _callback_step(self, act: Callback, env: CudaEnv, rc: RunCtx) -> None:
        """A custom op: its buffers as GPU NDArrays, outputs zeroed, run on this stream."""
        from ..context import gpu
        from ..ndarray import NDArray
        from .runtime import DeviceArray
        st, shapes, dtypes = act.step, self.schedule.shapes, self.schedule.dtypes

        def wrap(slot: int) -> NDArray:
            arr = DeviceArray(shapes[slot], dtypes[slot], gpudata=env.ptrs[slot])
            arr.device_id = self.device_id
            return NDArray(arr, gpu(self.device_id))
        with activate(self.device_id):
            outs = [wrap(s) for s in st.outputs]
            for o in outs:
                if o.size:
                    drv.memset_d8_async(o._data.ptr, 0, o._data.nbytes, self.stream)
            act.run(st.node.attrs, [wrap(s) for s in st.inputs], outs, rc, self.stream)

    def _host_step(self, act: Host, env: CudaEnv, rc: RunCtx) -> None:
        """Stopgap for ops without a GPU lowering: numpy reference on host copies."""
        st, shapes, dtypes = act.step, self.schedule.shapes, self.schedule.dtypes
        self.stream.synchronize()
        xs = []
        for s in st.inputs:
            x = np.empty(shapes[s], dtypes[s])
            if x.size:
                drv.memcpy_dtoh(wire(x), env.ptrs[s])
            xs.append(x)
        outs = get_op(st.node.op).compute(st.node.attrs, xs, rc)
        for s, v in zip(st.outputs, outs):
            v = np.ascontiguousarray(np.broadcast_to(np.asarray(v, dtypes[s]), shapes[s]))
            if v.size:
                drv.memcpy_htod(env.ptrs[s], wire(v))


ALIGN_MIN = 256

# A memset's width in bytes -> the driver call.
MEMSETS = {1: drv.memset_d8_async, 2: drv.memset_d16_async, 4: drv.memset_d32_async}

# Action type -> the CudaProgram method building its launch closure.
LAUNCHES: dict[type, Callable[[CudaProgram, Any, CudaEnv], Closure]] = {
    Kernel: CudaProgram._launch_kernel, Copy: CudaProgram._launch_copy,
    Fill: CudaProgram._launch_fill, Gemm: CudaProgram._launch_gemm,
    Host: CudaProgram._launch_host, Upload: CudaProgram._launch_upload,
    Switch: CudaProgram._launch_switch, Callback: CudaProgram._launch_callback,
    Choice: CudaProgram._launch_choice, ConvCall: CudaProgram._launch_conv,
}


def compile(schedule: Schedule, ctx: Any = None) -> CudaProgram:  # noqa: A001 (interface name)
    """The backend interface: a runnable program for ``schedule`` on ``ctx`` (default gpu(0))."""
    return CudaProgram(schedule, 0 if ctx is None else ctx.device_id)
