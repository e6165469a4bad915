"""The optimizer step on the GPU: every parameter updated by one fused kernel launch.

:class:`FusedUpdate` owns the kernel printed from an optimizer's rule (``update_kernel``) and its
three small device buffers (pointer table, scalar table, chunk table). A step is at most two
operations on the executor's stream: one async host-to-device copy of the scalar table (only
when a value changed: a scheduled learning rate, Adam's bias correction) and one kernel launch.
:class:`FusedUpdater` is an :class:`~symgraph.runtime.updater.Updater` whose states live on the device;
``tail`` gives the launch to the CUDA backend, which appends it to the steps of a run
(``Executor.train_step``: forward and backward) inside the captured CUDA graph, so a training
step, update included, replays as one graph.
"""
from __future__ import annotations

import itertools
import struct
from typing import Any, Callable, Optional, Sequence

import numpy as np
import pycuda.driver as drv

from ...core.base import ExecutionError
from ..updater import Updater
from .codegen import THREADS
from .compiler import compile_module, module_source
from .runtime import DeviceArray, activate, device_info, empty_device, to_device
from .update_kernel import chunk_table, render_update

_KEYS = itertools.count(1)
RING = 4  # pinned staging buffers for the scalar table: the host may run RING steps ahead


class FusedUpdate:
    """One launch of ``rule``'s fused kernel over parameters of the given element counts."""

    def __init__(self, rule: Any, sizes: Sequence[int], device_id: int,
                 dtype: str = "float32") -> None:
        self.rule, self.device_id, self.dtype = rule, device_id, dtype
        self.sizes = list(sizes)
        rendered = render_update(rule, dtype)
        info = device_info(device_id)
        n, n_scal = len(self.sizes), max(len(rule.scalars), 1)
        chunks = np.array(chunk_table(self.sizes), np.int64).reshape(-1, 2)
        with activate(device_id):
            self._module = drv.module_from_buffer(
                compile_module(module_source([rendered]), info["arch"]))
            self._func = self._module.get_function(rendered.name)
            self._chunks = drv.to_device(np.ascontiguousarray(chunks)) if len(chunks) else None
            self._table = drv.mem_alloc(8 * max(n, 1) * (3 + len(rule.states)))
            self._scal = drv.mem_alloc(4 * max(n, 1) * n_scal)
            self._ring = [drv.pagelocked_empty((n, n_scal), np.float32) for _ in range(RING)]
        self._events: list[Optional[Any]] = [None] * RING
        self._turn = 0
        self._rows: Optional[tuple] = None
        self._last: Optional[np.ndarray] = None
        self._last_rows: Optional[tuple] = None  # the last list of row tuples given
        grid = max(1, min(len(chunks), info["sm_count"] * 16))
        self._grid, self._block = (grid, 1, 1), (THREADS, 1, 1)
        chunk_ptr = int(self._chunks) if self._chunks is not None else 0
        self._params = struct.pack("<QQQq", int(self._table), int(self._scal), chunk_ptr,
                                   len(chunks))
        self._closures: dict[int, Callable[[Any], None]] = {}
        self.launches = 0  # kernel launches issued from the host (tests count them)
        self.uploads = 0   # scalar-table copies issued

    def bind(self, rows: Sequence[Sequence[int]]) -> None:
        """Pointers ``(weight, grad, *states)`` per parameter; the device table is rewritten only
        when one changed (first steps, a rebind), never per step."""
        rows = tuple(tuple(int(p) for p in r) for r in rows)
        if rows == self._rows:
            return
        table = np.array([(n, *r) for n, r in zip(self.sizes, rows)], np.uint64)
        with activate(self.device_id):
            drv.Context.synchronize()  # a pending launch may still read the old table
            drv.memcpy_htod(self._table, np.ascontiguousarray(table))
        self._rows = rows

    def set_scalars(self, table: Any, stream: Any) -> None:
        """Queue the scalar table ``(parameters, scalars)`` on ``stream`` if it changed.
        ``table`` is an array or a list of row tuples; rows of plain floats are first compared
        as tuples (no numpy work on the per-step path when nothing changed)."""
        rows = tuple(table) if isinstance(table, list) else None
        if rows is not None and rows == self._last_rows:
            return
        self._last_rows = rows
        table = np.asarray(table, np.float32)  # compared as the device holds it
        if self._last is not None and np.array_equal(table, self._last):
            return
        k = self._turn = (self._turn + 1) % RING
        with activate(self.device_id):
            if self._events[k] is not None:
                self._events[k].synchronize()  # that staging buffer's copy has been done
            self._ring[k][...] = table
            drv.memcpy_htod_async(self._scal, self._ring[k], stream)
            self._events[k] = drv.Event().record(stream)
        self._last = table
        self.uploads += 1

    def closure(self, stream: Any) -> Callable[[Any], None]:
        """The launch on ``stream`` as a backend closure (argument buffer packed once)."""
        key = 0 if stream is None else stream.handle  # None: the legacy default stream
        got = self._closures.get(key)
        if got is None:
            func, grid, block, params = self._func, self._grid, self._block, self._params

            def got(rc: Any = None) -> None:
                self.launches += 1
                func._launch_kernel(grid, block, params, 0, stream)
            self._closures[key] = got
        return got


class UpdateTail:
    """The fused step as work the CUDA backend appends to the steps of one run:
    gradients are read from the run's slots (``grad_slots``), weights and states in place."""

    def __init__(self, updater: "FusedUpdater", indices: Sequence[Any], weights: Sequence[Any],
                 grad_slots: Sequence[int]) -> None:
        self.updater, self.indices = updater, list(indices)
        self.weights, self.grad_slots = list(weights), list(grad_slots)
        self.key = next(_KEYS)  # part of the backend's graph key (ids can be reused)
        updater.prepare(self.indices, self.weights)

    def closures(self, ptrs: Sequence[int], stream: Any) -> list[Callable[[Any], None]]:
        """The launch; the pointer table is checked against this run's slots (states are read
        from the updater each time: ``set_states`` may have replaced them)."""
        states = self.updater.prepare(self.indices, self.weights)
        fused = self.updater.fused
        fused.bind([(w._data.ptr, ptrs[g], *(s.ptr for s in st)) for w, g, st in
                    zip(self.weights, self.grad_slots, states)])
        return [fused.closure(stream)]


def _same(a: tuple, b: Optional[tuple]) -> bool:
    """Whether two ``update_multi`` bindings hold the same objects (identity, not value)."""
    if b is None or a[0] is not b[0] or a[1] != b[1]:
        return False
    return all(x is y for x, y in zip(a[2], b[2])) and len(a[2]) == len(b[2]) and \
        all(x is y for x, y in zip(a[3], b[3])) and len(a[3]) == len(b[3])


FUSED_DTYPES = ("float32", "float16", "bfloat16")  # weight dtypes the fused update prints


class FusedUpdater(Updater):
    """An updater whose states are device arrays and whose step is one :class:`FusedUpdate`."""

    def __init__(self, optimizer: Any, device_id: int, stream: Any = None) -> None:
        super().__init__(optimizer)
        self.device_id = device_id
        self.stream = stream  # the executor's stream: the step is ordered after backward
        self.fused: Optional[FusedUpdate] = None
        # What the last eager step bound (see update_multi): the arrays' buffers, the states
        # table, and the row tuple the kernel's pointer table was then written from.
        self._bound: Optional[tuple] = None
        self._bound_rows: Optional[tuple] = None

    def prepare(self, indices: Sequence[Any], weights: Sequence[Any]) -> list[tuple]:
        """Create missing device states and the kernel (once); the states of ``indices``."""
        dtypes = sorted({np.dtype(w.dtype).name for w in weights})
        if len(dtypes) > 1 or (dtypes and dtypes[0] not in FUSED_DTYPES):
            raise ExecutionError(f"fused GPU update: weights of dtypes {dtypes}; one float "
                                 f"dtype (float32, float16 or bfloat16) per update")
        dtype = dtypes[0] if dtypes else "float32"
        # narrow weights under multi_precision: a float32 master copy is the first state, as
        # in the numpy updater's states (the optimizer's one rule for when that holds)
        master = bool(weights) and self.optimizer._master(weights[0])
        rule = self.optimizer.mp_rule if master else self.optimizer.rule
        for index, weight in zip(indices, weights):
            if index not in self.states:
                self.states[index] = tuple(self._from_weight(weight) if s in rule.from_weight
                                           else self._zeros(weight) for s in rule.states)
        if self.fused is None or self.fused.sizes != [w.size for w in weights] \
                or self.fused.dtype != dtype or self.fused.rule is not rule:
            self.fused = FusedUpdate(rule, [w.size for w in weights], self.device_id, dtype)
        return [self.states[i] for i in indices]

    def _from_weight(self, weight: Any) -> DeviceArray:
        """A float32 copy of ``weight`` (a state that starts as the weight, once per bind)."""
        from ...core.context import gpu
        return to_device(weight.asnumpy().astype(np.float32), gpu(self.device_id))

    def _zeros(self, weight: Any) -> DeviceArray:
        """A zero state of ``weight``'s shape, float32 whatever the weight's dtype."""
        arr = empty_device(weight.shape, np.float32, self.device_id)
        if arr.size:
            with activate(self.device_id):
                drv.memset_d8(arr.gpudata, 0, arr.nbytes)
        return arr

    def set_step_scalars(self, indices: Sequence[Any], stream: Any) -> None:
        """Count one update of each of ``indices`` and queue this step's scalar table."""
        rows = self.optimizer.step_rows(indices)
        self.fused.set_scalars(rows if self.optimizer.rule.scalars
                               else [(0.0,)] * len(indices), stream)

    def tail(self, indices: Sequence[Any], weights: Sequence[Any],
             grad_slots: Sequence[int]) -> UpdateTail:
        """The step as a backward ``tail`` (see :meth:`symgraph.runtime.executor.Executor.backward`)."""
        return UpdateTail(self, indices, weights, grad_slots)

    def __call__(self, index: Any, grad: Any, weight: Any) -> None:
        self.update_multi([index], [grad], [weight])

    def update_multi(self, indices: Sequence[Any], grads: Sequence[Any],
                     weights: Sequence[Any]) -> None:
        """One eager step on ``self.stream`` from gradient arrays (after a separate backward):
        at most one scalar-table copy and one kernel launch."""
        # The same buffers as the last step, and nobody rebound the kernel's table since
        # (a tail, another updater): prepare() and bind() would change nothing.
        bound = (self.states, tuple(indices), [w._buf for w in weights],
                 [g._buf for g in grads])
        fused = self.fused
        if fused is None or fused._rows is not self._bound_rows or \
                not _same(bound, self._bound):
            states = self.prepare(indices, weights)
            self.fused.bind([(w._data.ptr, g._data.ptr, *(s.ptr for s in st))
                             for w, g, st in zip(weights, grads, states)])
            self._bound, self._bound_rows = bound, self.fused._rows
        self.set_step_scalars(indices, self.stream)
        with activate(self.device_id):
            self.fused.closure(self.stream)(None)

    def get_states(self) -> dict[str, np.ndarray]:
        host = {i: tuple(s.get() for s in st) for i, st in self.states.items()}
        device, self.states = self.states, host
        try:
            return super().get_states()
        finally:
            self.states = device

    def set_states(self, arrays: dict[str, np.ndarray]) -> None:
        super().set_states(arrays)
        from ...core.context import gpu
        self.states = {i: tuple(to_device(np.asarray(s, np.float32), gpu(self.device_id))
                                for s in st) for i, st in self.states.items()}
