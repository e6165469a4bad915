"""The CUDA backend interface: ``compile(schedule, ctx)`` -> :class:`CudaProgram`.

A program owns one stream, one arena allocation (the memory plan's ``arena_bytes`` plus scratch
buffers) and one module (compiled on first run, from the disk cache when possible; a large one
as several parts at once, ``module_parts``). Each step's actions are turned into closures with
every device pointer baked in, once per set of bound arrays. With CUDA graphs on (default;
``SYMGRAPH_CUDA_GRAPHS=0`` turns them off), a step range run a second time with the same bound
arrays is captured into a graph and from then on replayed with one launch; new bound arrays
(or shapes, which mean a new program) get a new graph. A range is cut at each host step
(custom-op Python, host stopgaps): those run eagerly, the device-only runs between them are
captured and replayed.
"""
from __future__ import annotations

from math import prod
from typing import Any, Optional, Sequence

import numpy as np

from ...core import config
from .libs import require_pycuda

require_pycuda()  # a missing pycuda says how to install it, not just ModuleNotFoundError
import pycuda.driver as drv  # noqa: E402

from .. import profiler, random as _random
from ...core.base import ExecutionError
from ...compiler.passes.channel_last import channel_last
from ...compiler.passes.fold_heads import fold_heads
from ...compiler.passes.unroll_control_flow import unroll_control_flow
from ...core.registry import RunCtx
from ...compiler.schedule import Schedule
from .codegen import THREADS
from .fuse_conv_pool import fuse_conv_pool
from . import conv_choice, cudnn, module_parts
from .actions import Callback, Choice, ConvCall, Host, Ref, flat_actions
from .launches import LAUNCHES, Closure, kernel_closure
from .module_parts import Modules, split
from .plan import ACCUMULATE, align, lower_schedule, segments
from .replay import MAX_GRAPHS, GraphCache
from .runtime import activate, device_info, wire


def channel_last_for_cudnn(graph: Any) -> Any:
    """``channel_last`` when cuDNN runs the convolutions (its NHWC kernels are what the
    layout is for); ``SYMGRAPH_NHWC=0`` keeps every convolution NCHW."""
    if not config.get("SYMGRAPH_NHWC") or not cudnn.available():
        return graph
    return channel_last(graph)


# Read by compile.build_stage, before autodiff: control flow unrolled into plain ops (each
# step's kernels in the one program and CUDA graph), convolution-activation-pool chains fused
# (the fused op brings its own gradient), then the layout this backend's library wants;
# attention's head transposes folded into its GEMMs' addressing (cuBLAS pointer arrays).
FORWARD_PIPELINE = (unroll_control_flow, fuse_conv_pool, channel_last_for_cudnn, fold_heads)


def graphs_enabled() -> bool:
    return config.get("SYMGRAPH_CUDA_GRAPHS")


class CudaEnv:
    """Device pointers of every slot for one run; keeps bound arrays alive."""

    def __init__(self, ptrs: list[int]) -> None:
        self.ptrs = ptrs
        self.keep: dict[int, Any] = {}


class CudaProgram:
    """One compiled schedule on one device: its stream, arena, module, launch closures
    (``launches.py``), captured graphs (``replay.GraphCache``) and host steps
    (``host_steps.py``)."""

    def __init__(self, schedule: Schedule, device_id: int) -> None:
        self.schedule = schedule
        self.device_id = device_id
        info = device_info(device_id)
        self.arch = info["arch"]
        low = lower_schedule(schedule, info["sm_count"])
        self.plan, self.actions, self.source = low.plan, low.actions, low.source
        self.parts = split(low.kernels)  # the module's translation units, compiled at once
        self.alias = low.alias
        self.has_host = [any(isinstance(a, (Host, Callback)) for a in flat_actions(acts))
                         for acts in self.actions]
        self._scratch_base = align(max(low.arena_bytes, self.plan.arena_bytes))
        self._key_base = self._scratch_base + align(low.scratch_bytes)
        self.key_steps = low.key_steps  # random keys (Dropout...): 8 bytes each, after scratch
        self._state_base = align(self._key_base + 8 * len(self.key_steps))
        total = self._state_base + low.state_bytes
        with activate(device_id):
            self.stream = drv.Stream()
            self._arena = drv.mem_alloc(max(total, ALIGN_MIN))
            if low.state_bytes:  # (the arena's other bytes are written before they are read)
                drv.memset_d8(int(self._arena) + self._state_base, 0, low.state_bytes)
        self.base = int(self._arena)
        self.workspace: Any = None  # cuDNN workspace, sized once from the measured plans
        self.ws_bytes = 0
        self.choices: dict[Choice, tuple] = {}  # library or generated path, measured once
        # HeadGemm pointer arrays by (action, buffer addresses): kept as long as the program,
        # since a captured graph may outlive the closures that made them
        self.head_pointers: dict[tuple, list] = {}
        self.module: Optional[Modules] = None
        self._prepared: dict[tuple, list[list[Closure]]] = {}
        self.graphs = GraphCache(self.stream)
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
                ptrs[slot] = self.base + off
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
            self.load()
            self._draw_keys(start, stop, rc)
            key = self._resolve(env)
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
                if host or not graphs_enabled() or not self.graphs.replay(gkey, seg, rc):
                    for closures in seg:
                        for fn in closures:
                            fn(rc)
            for closures in extra:  # after a host step (or no steps): eagerly
                for fn in closures:
                    fn(rc)

    def _resolve(self, env: CudaEnv) -> tuple:
        """Point redirected slots at their targets and views at the bytes they share; the
        pointers then key the closures and graphs of this run."""
        for slot, (_, ptr) in self._redirect.items():
            env.ptrs[slot] = ptr
        for dst, src in self.alias:
            env.ptrs[dst] = env.ptrs[src]
        return tuple(env.ptrs)

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
                self.load()
                n = target.size
                grid = max(1, min((n + 1023) // 1024, 4096))
                kern = ACCUMULATE[np.dtype(target.dtype).name]
                self.kernel_closure(kern.name, grid, (dst, dst, src), n)(RunCtx())
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

    # -- what the launch builders read (launches.py) -------------------------------------------
    def load(self) -> None:
        """Compile (or fetch from the disk cache) and load the program's module, once."""
        if self.module is None:
            cubins = module_parts.compile_parts(self.parts, self.arch)
            with activate(self.device_id):
                self.module = Modules(self.parts, cubins, drv.module_from_buffer)

    def ptr(self, ref: Ref, env: CudaEnv) -> int:
        """The device address ``ref`` stands for in ``env``."""
        if ref.kind == "slot":
            return env.ptrs[ref.index] + ref.offset
        if ref.kind == "key":
            return self.base + self._key_base + 8 * ref.index
        if ref.kind == "state":
            return self.base + self._state_base + ref.index + ref.offset
        if ref.kind == "arena":
            return self.base + ref.index + ref.offset
        return self.base + self._scratch_base + ref.index + ref.offset

    def kernel_closure(self, name: str, grid: int, ptrs: tuple, n: int,
                       block: int = THREADS) -> Closure:
        """A launch of the module's kernel ``name`` on the program's stream."""
        return kernel_closure(self.module, self.stream, name, grid, ptrs, n, block)

    def closure(self, act: Any, env: CudaEnv) -> Closure:
        """The launch of one action with its pointers resolved (one builder per action type,
        from the table ``launches.LAUNCHES``)."""
        make = LAUNCHES.get(type(act))
        if make is None:
            raise ExecutionError(f"unknown action {act!r}")
        return make(self, act, env)

    def choose(self, act: Choice, env: CudaEnv) -> tuple:
        """The branch of ``act`` to run here (``conv_choice``), decided once. Timing writes
        into a temporary output so that no live slot is touched."""
        got = self.choices.get(act)
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
                act, self.conv_plan,
                lambda branch: conv_choice.time_ms([self.closure(a, tmp_env) for a in branch],
                                                   self.stream),
                lambda: cudnn.identity(self.device_id))
            self.choices[act] = got
        return got

    def conv_plan(self, act: Any) -> Any:
        """cuDNN's plan of a convolution call (None when cuDNN is not used)."""
        if isinstance(act, ConvCall) and cudnn.available():
            return cudnn.plan(self.device_id, act.geometry, act.dtype)
        return None

    # -- internals -----------------------------------------------------------------------------
    def _draw_keys(self, start: int, stop: int, rc: RunCtx) -> None:
        """Fresh random keys for the steps ``start:stop`` that own one, drawn from the run's
        generator (``sg.random``) and copied in on the stream before the steps' graph, which
        reads them from device memory: a replay draws new numbers, a reseed repeats them."""
        ks = [k for k, s in enumerate(self.key_steps) if start <= s < stop]
        if ks:
            rng = rc.rng if rc.rng is not None else _random.generator()
            values = rng.integers(0, 2 ** 64, size=len(ks), dtype=np.uint64)
            for k, v in zip(ks, values):  # pageable source: staged at once, reusable after
                drv.memcpy_htod_async(self.ptr(Ref("key", k), None), np.array([v]), self.stream)

    def _closures(self, env: CudaEnv, key: tuple) -> list[list[Closure]]:
        """Closures of steps ``key[0]:key[1]`` for the bound pointers ``key[2]`` (cached)."""
        got = self._prepared.get(key)
        if got is None:
            self._ensure_workspace()
            if len(self._prepared) >= MAX_GRAPHS:
                self._prepared.clear()
            got = self._prepared[key] = [[self.closure(a, env) for a in acts]
                                         for acts in self.actions[key[0]:key[1]]]
        return got

    def _ensure_workspace(self) -> None:
        """Measure every convolution's cuDNN plan and allocate the largest workspace, once
        (before any closure holds the workspace pointer)."""
        if self.workspace is not None:
            return
        need = 0
        if cudnn.available():
            for acts in self.actions:
                for a in flat_actions(acts):
                    p = self.conv_plan(a)
                    if p is not None:
                        need = max(need, p.ws[a.kind])
        self.workspace = drv.mem_alloc(max(need, 256))
        self.ws_bytes = need


ALIGN_MIN = 256

def compile(schedule: Schedule, ctx: Any = None) -> CudaProgram:  # noqa: A001 (interface name)
    """The backend interface: a runnable program for ``schedule`` on ``ctx`` (default gpu(0))."""
    return CudaProgram(schedule, 0 if ctx is None else ctx.device_id)
