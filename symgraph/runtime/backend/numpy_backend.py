"""The numpy reference backend: runs a schedule step by step with each op's numpy reference.

By default every step's results are fresh arrays: numpy references return new arrays, and
copying each into a planned arena would cost more than the memory it saves on a CPU.

With ``POISON`` (tests) or ``SYMGRAPH_DEBUG>=1`` the memory plan is exercised exactly as the CUDA
backend uses it: the program owns one ``np.uint8`` arena, every planned slot is a view at its
offset, each step's results are copied into their views, and the bytes of every slot whose
lifetime ended are filled with NaN right after its last reader, so a plan that reads a freed or
overwritten buffer yields NaN instead of a plausible number.

An op that may be unable to run on the host (a Python op launching CUDA kernels) states
``OpDef.extra["host_check"](node)``, which the program calls per step when it is built, at bind.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .. import profiler
from .threads import blas_threads
from ...core.base import DataError, where
from ...core.dtypes import NARROW
from ...core.registry import OpDef, RunCtx, get_op, ops_where
from ...compiler.schedule import Schedule

POISON = False
"""Fill freed slots with NaN (tests turn this on)."""

FORWARD_PIPELINE: tuple = ()
"""Passes run before autodiff for this backend: none. ``fuse_conv_pool`` saves GPU memory
traffic, but its numpy gradient recomputes the convolution and pooling it fuses (about 10 % of
a CPU training step), so the CPU keeps the unfused chain."""


def _widen(x: Any) -> Any:
    """Narrow floats (float16, bfloat16) are read as float32: every numpy reference computes in
    float32 and its result is stored back narrow by the caller (the slot's dtype). This is the
    one place that does it, so no op handles narrow dtypes itself (numpy rejects bfloat16 in
    many functions, and float16 arithmetic would round at every intermediate)."""
    return x.astype(np.float32) if isinstance(x, np.ndarray) and x.dtype in NARROW else x


def _poison(view: np.ndarray) -> None:
    if view.dtype.kind in "fc" or view.dtype in NARROW:
        view.fill(np.nan)
    else:
        view.fill(np.iinfo(view.dtype).max if view.dtype.kind in "iu" else 1)


def _host_checked(opdef: OpDef) -> bool:
    return opdef.extra.get("host_check") is not None


def _shape_dependent(opdef: OpDef) -> bool:
    return opdef.extra.get("at_shapes") is not None


def _concrete_attrs(step: Any, schedule: Schedule, ops: frozenset[str]) -> Any:
    """The step's attributes as its numpy reference needs them: an op whose attributes may
    leave dimensions to inference (``_ones(shape=(-1, 3))``) states ``extra["at_shapes"]``,
    which fills them in from the inferred output shapes. ``ops``: the ops that state it."""
    if step.node.op not in ops:
        return step.node.attrs
    at_shapes = get_op(step.node.op).extra["at_shapes"]
    return at_shapes(step.node.attrs, [schedule.shapes[o] for o in step.outputs])


class NumpyProgram:
    """A schedule ready to run on the CPU. ``env`` holds one array per slot."""

    def __init__(self, schedule: Schedule) -> None:
        from ...compiler.passes import debug_level
        from ...compiler.memory_plan import freed_after
        self.schedule = schedule
        checked = ops_where(_host_checked)  # (a set per program: no registry look-up per step)
        for s in schedule.steps:  # refuse, at bind, an op that cannot run on the host
            if s.node.op in checked:
                get_op(s.node.op).extra["host_check"](s.node)
        shaped = ops_where(_shape_dependent)
        self._kernels = [(self.step_compute(k), _concrete_attrs(s, schedule, shaped), s.inputs,
                          s.outputs) for k, s in enumerate(schedule.steps)]
        self._arena: Optional[np.ndarray] = None
        self._views_of = {a: (root, schedule.shapes[a]) for a, root in schedule.aliases.items()}
        plan = schedule.plan
        poison = plan is not None and (POISON or debug_level() >= 1)
        self._freed = freed_after(schedule, plan) if poison else None
        # Without the arena, a value's last reader drops it, so the allocator hands its bytes
        # to a later step's result: the seed CNN's training step at batch 64 holds at most
        # 21.6 MiB of arrays instead of 26.5 and finds more of them in cache (conv1's forward
        # 0.81 to 0.41 ms, the step about 3 % faster). Values a later run may read (the
        # forward's for the backward, the outputs) live to the end (memory_plan.lifetimes).
        self._dead = None if poison or plan is None else freed_after(schedule, plan)

    def step_compute(self, k: int) -> Callable:
        """The function running step ``k``: ``(attrs, inputs, RunCtx) -> outputs``, here its
        op's numpy reference (a compiled backend built on this program replaces some)."""
        return get_op(self.schedule.steps[k].node.op).compute

    def _views(self) -> list[Any]:
        """One array per slot: arena views for planned slots, None for the rest."""
        plan, sch = self.schedule.plan, self.schedule
        env: list[Any] = [None] * len(sch.shapes)
        if plan is None or self._freed is None:
            return env
        if self._arena is None:
            self._arena = np.empty(max(plan.arena_bytes, 1), np.uint8)
            if self._freed is not None:
                self._arena.fill(0xFF)  # all-ones bytes are NaN in every float dtype
        for slot, off in plan.offset.items():
            dt = sch.dtypes[slot]
            n = int(np.prod(sch.shapes[slot], dtype=np.int64)) * dt.itemsize
            env[slot] = self._arena[off:off + n].view(dt).reshape(sch.shapes[slot])
        return env

    def new_env(self) -> list[Any]:
        return self._views()

    def run(self, env: list[Any], start: int, stop: int, ctx: RunCtx,
            tail: Optional[Callable[[Callable[[int], np.ndarray]], None]] = None) -> None:
        """Run steps ``start:stop``, reading and writing ``env`` (each step timed on the host
        while ``sg.profiler`` records). ``tail``: called after the steps with a function
        reading a slot (the CPU form of the CUDA backend's captured tail)."""
        with blas_threads():  # the backend's own thread budget, not the process's
            if profiler.recording():
                profiler.run_host_timed(self.schedule, start, stop, "cpu(0)",
                                        lambda k: self._step(env, k, ctx))
            else:
                dead = self._dead
                for k in range(start, stop):
                    self._step(env, k, ctx)
                    if dead is not None:
                        for slot in dead[k]:
                            env[slot] = None
            if tail is not None:
                tail(lambda slot: self.read(env, slot))

    def time_steps(self, env: list[Any], start: int, stop: int, ctx: RunCtx,
                   repeat: int = 1) -> list[tuple[int, str, str, float]]:
        """(step index, op, name, milliseconds) of each step, run one at a time (``repeat``
        times back to back: the mean)."""
        out = []
        with blas_threads():
            for k in range(start, stop):
                t0 = time.perf_counter()
                for _ in range(repeat):
                    self._step(env, k, ctx)
                node = self.schedule.steps[k].node
                out.append((k, node.op, node.name, 1e3 * (time.perf_counter() - t0) / repeat))
        return out

    def _step(self, env: list[Any], k: int, ctx: RunCtx) -> None:
        compute, attrs, ins, outs = self._kernels[k]
        try:
            results = compute(attrs, [_widen(self.read(env, i)) for i in ins], ctx)
        except DataError as exc:  # bad values seen at run time: say which node met them
            node = self.schedule.steps[k].node
            raise type(exc)(f"{where(node.name, node.op)}{exc}") from None
        dtypes = self.schedule.dtypes
        planned = self._freed is not None
        for slot, value in zip(outs, results):
            value = np.asarray(value)
            if planned:
                np.copyto(env[slot], value, casting="unsafe")
            else:
                env[slot] = value if value.dtype == dtypes[slot] else value.astype(dtypes[slot])
        if self._freed is not None:
            for slot in self._freed[k]:
                _poison(env[slot])

    def read(self, env: list[Any], slot: int) -> np.ndarray:
        """The value of ``slot``; a view slot reshapes the array that owns its bytes."""
        view = self._views_of.get(slot)
        return env[slot] if view is None else env[view[0]].reshape(view[1])

    def store(self, env: list[Any], slot: int, target: Any, accumulate: bool) -> None:
        """Write slot ``slot`` into NDArray ``target`` (``+=`` when ``accumulate``)."""
        if accumulate:
            target._data += self.read(env, slot)
        else:
            np.copyto(target._data, self.read(env, slot))

    def bind_input(self, env: list[Any], slot: int, array: Any) -> None:
        env[slot] = array._data

    def bind_inputs(self, env: list[Any], pairs: Sequence[tuple[int, Any]]) -> None:
        for slot, array in pairs:
            b = array._buf
            env[slot] = b if b is not None else array._data

    def store_all(self, env: list[Any], items: Sequence[tuple[int, Any, bool]]) -> None:
        """:meth:`store` of each ``(slot, target, accumulate)`` (a step's gradients: written
        by assignment, the dtypes being equal by the bind's checks)."""
        views = self._views_of
        for slot, target, accumulate in items:
            view = views.get(slot)
            value = env[slot] if view is None else env[view[0]].reshape(view[1])
            buf = target._buf if target._buf is not None else target._data
            if accumulate:
                buf += value
            else:
                buf[...] = value


def compile(schedule: Schedule, ctx: Any = None) -> NumpyProgram:  # noqa: A001 (interface name)
    """The backend interface: a runnable program for ``schedule`` (``ctx`` is the CPU)."""
    return NumpyProgram(schedule)
