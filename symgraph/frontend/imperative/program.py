"""A compiled imperative subgraph (:class:`Program`): its compiled stage, and how each call's
leaves and gradient buffers are bound to it and its outputs handed out, on the CPU and the GPU.

Requires: a :class:`~symgraph.runtime.compile.Stage` built over a canonical copy whose variables are
``_in0``, ``_in1``... (``compute._compile``). Guarantees: on the GPU the arrays a
program reads never change between calls (changed inputs are copied into buffers it owns), so
its CUDA graph replays.
"""
from __future__ import annotations

import threading
from typing import Any, Optional, Sequence

import numpy as np

from ...core.base import ExecutionError
from ...runtime.compile import GradStores, Stage
from ...core.context import Context
from ...runtime.ndarray import NDArray


class Program:
    """A compiled subgraph: its stage, the array each leaf's variable reads now (``bound``),
    and the run-time state its runs share (ops' objects, default head gradients, a lock: one
    run at a time)."""

    def __init__(self, stage: Stage, ctx: Context, leaves: Sequence[NDArray],
                 aux: Sequence[bool], n_out: int) -> None:
        self.stage, self.ctx, self.n_out = stage, ctx, n_out
        self.names = [f"_in{k}" for k in range(len(leaves))]
        self.aux = list(aux)  # leaf k is an aux state (written back by a training forward)
        self.bound = list(leaves)
        self.arrays = dict(zip(self.names, leaves))  # ``bound`` by variable name
        self.owned = [False] * len(leaves)
        self.gpu = ctx.device_type == "gpu"
        self.train_dependent = False  # holds a Dropout-like op (see _warn_recomputed)
        self.op_state: dict = {}  # ops' run-time objects (CustomOp instances), freed with us
        self.busy = threading.Lock()
        self.owner: Optional[int] = None  # the thread running the program now
        self.ones: dict[int, NDArray] = {}  # the default head gradients (made once)
        self._grad_stores: Optional[tuple[dict, GradStores]] = None  # train's grads, stores

    @property
    def nbytes(self) -> int:
        """The memory a run of the program holds: its memory plan's arena and (on the GPU,
        once measured) its library workspace."""
        plan = self.stage.schedule.plan
        return (plan.arena_bytes if plan is not None else 0) + \
            getattr(self.stage.program, "ws_bytes", 0)

    def bind(self, leaves: Sequence[NDArray]) -> None:
        """Point the program at this call's leaves: on the CPU by rebinding; on the GPU a
        changing argument is copied into a buffer the program owns, so device pointers stay
        fixed and the CUDA graph replays."""
        bound = self.bound
        copies = []
        for k, leaf in enumerate(leaves):
            if bound[k]._buf is leaf._buf:
                continue
            if not self.gpu or self.aux[k]:
                bound[k] = self.arrays[self.names[k]] = leaf
                continue
            if not self.owned[k]:
                bound[k] = self.arrays[self.names[k]] = _device_array(leaf.shape, leaf.dtype,
                                                                      self.ctx)
                self.owned[k] = True
            copies.append((bound[k], leaf))
        if copies:
            _copy_device(copies, self.ctx.device_id)

    def forward(self, leaves: Sequence[NDArray], is_train: bool) -> list[Any]:
        """Run the forward steps on ``leaves``; aux updates of a training forward go into the
        aux leaves; returns the first ``n_out`` outputs' buffers, handed over."""
        stage = self.stage
        self._acquire("forward")
        try:
            self.bind(leaves)
            env, run_ctx = stage.start((self.arrays,), is_train, self.op_state)
            stage.run(env, run_ctx, "forward")
            stage.finish(env, (), self.arrays, is_train)  # (state and aux updates, if any)
            return self._hand_out(stage.program, env, stage.outputs[:self.n_out])
        finally:
            self._release()

    def train(self, leaves: Sequence[NDArray], grads: dict[int, tuple[NDArray, str]],
              out_grads: Optional[Sequence[Any]], is_train: bool) -> list[Any]:
        """Forward and backward as one run of the training stage; gradients go into
        ``grads`` (leaf index -> (array, grad_req)), aux updates into the aux leaves (as a
        training forward writes them, whatever ``is_train``); returns the first ``n_out``
        outputs' buffers, handed over. Call inside ``thread_state().running`` (nothing
        flushes)."""
        stage = self.stage
        self._acquire("backward")
        try:
            self.bind(leaves)
            env, run_ctx = stage.start((self.arrays,), is_train, self.op_state)
            stage.bind_heads(env, stage.head_arrays(out_grads, self.ctx, self.ones))
            stage.run(env, run_ctx, "all")
            stage.finish(env, (), self.arrays, True)
            kept = self._grad_stores
            if kept is None or kept[0] is not grads:  # (a steady backward: the same dict)
                kept = self._grad_stores = (grads, self._where(grads))
            stage.write_grads(env, kept[1])
            return self._hand_out(stage.program, env, stage.outputs[:self.n_out])
        finally:
            self._release()

    def _where(self, grads: dict[int, tuple[NDArray, str]]) -> GradStores:
        """The stage's stores of ``grads`` (leaf index -> (array, grad_req))."""
        names = self.names
        return self.stage.grad_stores({names[k]: g for k, (g, _) in grads.items()},
                                      {names[k]: req for k, (_, req) in grads.items()})

    def _acquire(self, what: str) -> None:
        """Hold the program for one run: another thread's run (two threads training models
        of one structure share the program) waits for it; a run from inside itself (a
        custom op computing the same structure) is refused, as it would never finish."""
        me = threading.get_ident()
        if self.owner == me:
            raise ExecutionError(f"{what}: this imperative program is already running in "
                                 f"this thread (a custom op computing its own structure)")
        self.busy.acquire()
        self.owner = me

    def _release(self) -> None:
        self.owner = None
        self.busy.release()

    def _hand_out(self, program: Any, env: Any, slots: Sequence[int]) -> list[Any]:
        """Copies of the output slots' values (the run's memory is the program's)."""
        if self.gpu:
            sch = program.schedule
            return _device_copies([(env.ptrs[s], sch.shapes[s], sch.dtypes[s]) for s in slots],
                                  self.ctx.device_id)
        read = program.read
        return [np.array(read(env, s)) for s in slots]


_POOLS: dict[int, Any] = {}  # device id -> pycuda DeviceMemoryPool


def _pool_buffer(shape: tuple, dtype: np.dtype, device_id: int) -> Any:
    """Uninitialised device memory from a per-device pool (``device_id``'s context current):
    results handed out every step are allocated and freed without cuMemAlloc/cuMemFree (the
    latter synchronises the device)."""
    from pycuda.tools import DeviceMemoryPool
    from ...runtime.cuda.runtime import DeviceArray, at_exit
    pool = _POOLS.get(device_id)
    if pool is None:
        pool = _POOLS[device_id] = DeviceMemoryPool()
        at_exit(pool.stop_holding)  # (arrays freed after exit then go straight to the device)
    arr = DeviceArray(tuple(shape), np.dtype(dtype), allocator=pool.allocate)
    arr.device_id = device_id
    return arr


def _device_array(shape: tuple, dtype: np.dtype, ctx: Context) -> NDArray:
    """A pool buffer (see :func:`_pool_buffer`) as an NDArray on ``ctx``."""
    from ...runtime.cuda.runtime import activate
    with activate(ctx.device_id):
        arr = _pool_buffer(shape, dtype, ctx.device_id)
    return NDArray(arr, ctx)


def _device_copies(sources: Sequence[tuple[int, tuple, Any]], device_id: int) -> list[Any]:
    """Pool buffers holding copies of the device memory ``sources`` (pointer, shape, dtype),
    copied as :func:`_copy_device` does, under one activation of the context: a push and a
    pop per array cost more host time than the copies' launches (this runs at every step)."""
    import pycuda.driver as drv
    from ...runtime.cuda.runtime import activate
    with activate(device_id):
        bufs = [_pool_buffer(shape, dtype, device_id) for _, shape, dtype in sources]
        for buf, (ptr, _, _) in zip(bufs, sources):
            if buf.nbytes:
                drv.memcpy_dtod_async(buf.ptr, ptr, buf.nbytes)
    return bufs


def _copy_device(pairs: Sequence[tuple[NDArray, NDArray]], device_id: int) -> None:
    """Device-to-device copies ``(destination, source)`` on the legacy default stream, under
    one activation of the context: asynchronous for the host, yet ordered after the work of
    every (blocking) program stream and before their later work, so programs of different
    executors that share arrays see each other's results."""
    import pycuda.driver as drv
    from ...runtime.cuda.runtime import activate
    with activate(device_id):
        for dst, src in pairs:
            if dst._buf.nbytes:
                drv.memcpy_dtod_async(dst._buf.ptr, src._buf.ptr, dst._buf.nbytes)
