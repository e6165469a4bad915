"""The Executor: binds arrays to a symbol and runs the forward and backward schedules.

It knows nothing about individual ops: it builds the training graph (outputs, auxiliary-state
updates, gradients from the autodiff pass), runs the pass pipeline, lowers to a schedule and hands
that to the backend of its context. Every check on user input happens before anything is written.
"""
from __future__ import annotations

import contextlib
import gc
import threading
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

import numpy as np

from . import random as _random
from ..core.base import BindError
from .bind_checks import alloc as _alloc, check_no_aliasing as _check_no_aliasing
from .bind_checks import as_list, bound_for, grad_reqs, one_thread as _one_thread
from .placement import check_array_contexts, variable_contexts
from ..core.context import Context
from ..core.graph import Entry
from .ndarray import NDArray, before_run
from .compile import Stage, build_stage, infer
from ..core.types.infer_shape import symbol_shapes
from ..core.types.infer_type import symbol_types
from ..compiler.passes.verify import check_unique_inputs
from ..core.registry import RunCtx
from ..compiler.schedule import Schedule
from ..core.types.table import TypeTable

__all__ = ["Executor"]

GC_PROMOTE_AFTER = 100_000  # young objects left by a bind before they are promoted at once


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Binding makes millions of small objects that stay alive (nodes, entries, tables); the
    cyclic collector's full passes over them made bind time grow faster than the graph. They
    hold no reference cycles that need collecting meanwhile.

    On the way out they are handed to the oldest generation (``freeze`` then ``unfreeze``:
    two list splices), as the collector would after scanning them as young objects three
    times; the first of those scans came right after the bind (about 8 % of a 10^5-node
    bind). Cycles among them are still found, by the next full collection. Only after a bind
    that left many objects (the program's own young objects are promoted with them, so small
    binds, such as imperative code's, leave the generations alone), and not when the program
    froze objects itself: ``unfreeze`` would release those too."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_count()[0] > GC_PROMOTE_AFTER and gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()


class Executor:
    """Runs a bound symbol. Build with ``Symbol.bind`` or ``Symbol.simple_bind``."""

    def __init__(self, symbol: Any, ctx: Context, args: list[NDArray],
                 grads: list[Optional[NDArray]], reqs: list[str], aux: list[NDArray],
                 types: Optional[TypeTable] = None,
                 stages: Optional[tuple[bool, ...]] = None) -> None:
        self._symbol = symbol
        self._ctx = ctx
        self.arg_arrays = args
        self.grad_arrays = grads
        self.aux_arrays = aux
        self._arg_names = symbol.list_arguments()
        self._aux_names = symbol.list_auxiliary_states()
        self._grad_req = dict(zip(self._arg_names, reqs))  # the one form: name -> req
        self.arg_dict = dict(zip(self._arg_names, args))
        self.grad_dict = {n: g for n, g, r in zip(self._arg_names, grads, reqs)
                          if g is not None and r != "null"}
        self.aux_dict = dict(zip(self._aux_names, aux))
        self._op_state: dict = {}  # ops' run-time objects (CustomOp instances), freed with us
        self._busy = threading.Lock()  # held during a run (see _one_thread)
        self._stages: dict[bool, Stage] = {}  # is_train -> built program (see _stage)
        self._eager_stages = bound_for(reqs) if stages is None else stages
        with _gc_paused():
            self._compile(types)
        self.outputs = [_alloc("output", repr(e), self._types.shape(e), ctx, self._types.dtype(e))
                        for e in self._fwd_outputs]
        self.output_dict = dict(zip(symbol.list_outputs(), self.outputs))
        self._trained = False
        self._rng_state: Optional[dict] = None  # the random state the last forward began with
        self._monitor: Any = None
        self._env: Optional[list] = None
        self._ones: dict[int, NDArray] = {}  # default head gradients, by slot

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def bind(cls, symbol: Any, ctx: Context, args: Any, args_grad: Any = None,
             grad_req: Any = "write", aux_states: Any = None,
             types: Optional[TypeTable] = None, stages: Optional[tuple[bool, ...]] = None,
             fresh: bool = False, group2ctx: Optional[Mapping] = None) -> "Executor":
        """Check and bind. ``types``: the symbol's inferred types when the caller has them
        (simple_bind), so that the bind does not infer again; the arrays must have those
        shapes and dtypes. ``stages`` lists the programs (inference ``False``, training
        ``True``) compiled now; any other is compiled on first use. Default: the one the
        executor was bound for (see ``_bound_for``). ``fresh``: every array was just
        allocated by ``simple_bind``, so none can share memory with another (the aliasing
        check, a few microseconds per array, is skipped). ``group2ctx``: arrays may also be
        on its contexts (``placement``)."""
        check_unique_inputs(symbol.graph())
        names = symbol.list_arguments()
        arg_list = as_list("bind args", args, names, required=True)
        # as MXNet, gradient arrays for names that are not arguments are left unused: such a
        # variable has no gradient (a loop body or branch that does not read it)
        grad_list = as_list("bind args_grad", args_grad, names, required=False, extra_ok=True)
        aux_names = symbol.list_auxiliary_states()
        aux_list = as_list("bind aux_states", aux_states, aux_names, required=True)
        req_of = grad_reqs(grad_req, names)
        reqs = [req_of[n] if g is not None else "null" for n, g in zip(names, grad_list)]
        arrays = [("argument", names, arg_list), ("aux state", aux_names, aux_list)]
        check_array_contexts(ctx, group2ctx, arrays + [("gradient", names, grad_list)])
        if not fresh:
            _check_no_aliasing(arrays + [("gradient", names, [
                g if r != "null" else None for g, r in zip(grad_list, reqs)])])
        for n, a, g in zip(names, arg_list, grad_list):
            if g is not None and (g.shape != a.shape or g.dtype != a.dtype):
                raise BindError(f"gradient {n}: shape {g.shape} {g.dtype} differs from the "
                                f"argument's {a.shape} {a.dtype}")
        return cls(symbol, ctx, arg_list, grad_list, reqs, aux_list, types, stages)

    @classmethod
    def simple_bind(cls, symbol: Any, ctx: Context, grad_req: Any = "write",
                    type_dict: Optional[Mapping[str, Any]] = None,
                    shapes: Optional[Mapping[str, Any]] = None,
                    stages: Optional[tuple[bool, ...]] = None,
                    group2ctx: Optional[Mapping] = None) -> "Executor":
        """Infer the shapes and dtypes, allocate every array (on its group's context with
        ``group2ctx``), bind (``stages`` as in :meth:`bind`)."""
        with _gc_paused():  # one pause for the whole bind: each resume costs a collection
            return cls._simple_bind(symbol, ctx, grad_req, type_dict, shapes, stages, group2ctx)

    @classmethod
    def _simple_bind(cls, symbol: Any, ctx: Context, grad_req: Any,
                     type_dict: Optional[Mapping[str, Any]], shapes: Optional[Mapping[str, Any]],
                     stages: Optional[tuple[bool, ...]], group2ctx: Any) -> "Executor":
        # The one inference of this bind: the executor reuses its table.
        shape_of, (arg_shapes, _, aux_shapes) = symbol_shapes(symbol, (), shapes or {}, False)
        type_of, (arg_types, _, aux_types) = symbol_types(symbol, (), type_dict or {})
        names, at = symbol.list_arguments(), variable_contexts(symbol, ctx, group2ctx).get
        args = [_alloc("argument", n, s, at(n, ctx), t)
                for n, s, t in zip(names, arg_shapes, arg_types)]
        reqs = grad_reqs(grad_req, names)
        grads = {n: _alloc("gradient", n, s, at(n, ctx), t)
                 for n, s, t in zip(names, arg_shapes, arg_types) if reqs[n] != "null"}
        aux = [_alloc("aux state", n, s, at(n, ctx), t) for n, s, t
               in zip(symbol.list_auxiliary_states(), aux_shapes, aux_types)]
        return cls.bind(symbol, ctx, args, grads, reqs, aux, TypeTable(shape_of, type_of),
                        stages, fresh=True, group2ctx=group2ctx)

    def _compile(self, types: Optional[TypeTable]) -> None:
        graph = self._symbol.graph()
        names = self._arg_names + self._aux_names
        arrays = self.arg_arrays + self.aux_arrays
        if types is None:  # the one inference of this bind, from the bound arrays
            types = infer(graph, {n: a.shape for n, a in zip(names, arrays)},
                          {n: a.dtype for n, a in zip(names, arrays)})
        var_by_name = {v.name: v for v in graph.variables()}  # once: graphs can be large
        for n, a in zip(names, arrays):
            e = Entry(var_by_name[n])
            if types.dtype(e) != a.dtype:
                raise BindError(f"argument {n}: array has dtype {a.dtype}, the graph needs "
                                f"{types.dtype(e)}")
            if types.shape(e) != tuple(a.shape):
                raise BindError(f"argument {n}: array has shape {tuple(a.shape)}, the graph "
                                f"needs {types.shape(e)}")
        self._fwd_outputs = list(graph.outputs)
        missing = [repr(e) for e in graph.outputs if types.shape(e) is None]
        if missing:
            raise BindError(f"cannot decide the shapes of outputs {missing}")
        self._types = types
        self._graph = graph.with_types(types)
        for train in self._eager_stages:
            self._stage(train)

    def _stage(self, train: bool) -> Stage:
        """The inference or training program, built on first use."""
        stage = self._stages.get(train)
        if stage is None:
            wrt = [n for n, r in self._grad_req.items() if r != "null"]
            with _gc_paused():
                stage = self._stages[train] = build_stage(self._graph, wrt, train, self._ctx)
        return stage

    @property
    def _infer(self) -> Stage:
        return self._stage(False)

    @property
    def _train(self) -> Stage:
        return self._stage(True)

    def __repr__(self) -> str:
        sched = self._train.schedule
        n_grad = sum(r != "null" for r in self._grad_req.values())
        outs = ", ".join(f"{n} {tuple(a.shape)}" for n, a in self.output_dict.items())
        return (f"<Executor {self._symbol.name or 'group'} on {self._ctx}: "
                f"{len(self.arg_arrays)} arguments ({n_grad} with gradients), "
                f"{len(self.aux_arrays)} aux states -> {outs}; training schedule "
                f"{len(sched.steps)} steps ({sched.n_forward_steps} forward)>")

    # -- running ----------------------------------------------------------------------------
    def _check_array(self, kind: str, name: str, value: Any, want: NDArray,
                     any_dtype: bool = False) -> np.ndarray:
        """``value`` on the host, checked against ``want``'s shape (and dtype unless
        ``any_dtype``: head gradients are converted, as MXNet copies them into its buffers)."""
        host = value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)
        if host.shape != want.shape:
            raise BindError(f"{kind} {name}: shape {host.shape}, bound array has {want.shape}")
        if isinstance(value, NDArray) and value.dtype != want.dtype and not any_dtype:
            raise BindError(f"{kind} {name}: dtype {value.dtype}, bound array has {want.dtype}")
        return host

    @_one_thread
    def forward(self, is_train: bool = False, **kwargs: Any) -> list[NDArray]:
        """Run the forward phase; keyword arrays are copied into the bound arguments first."""
        unknown = sorted(set(kwargs) - set(self.arg_dict))
        if unknown:
            raise BindError(f"forward: {unknown} are not arguments; arguments: {self._arg_names}")
        host = {k: self._check_array("forward", k, v, self.arg_dict[k]) for k, v in kwargs.items()}
        for k, v in host.items():
            self.arg_dict[k][:] = v
        stage = self._train if is_train else self._infer
        # For a backward() that replays this forward (after is_train=False) or a monitor; a
        # training forward keeps its env, which backward() uses instead.
        self._rng_state = _random.generator().bit_generator.state \
            if not is_train or self._monitor is not None else None
        env, run_ctx = self._start(stage, is_train)
        stage.run(env, run_ctx, "forward")
        self._finish_forward(stage, env, run_ctx, is_train)
        if self._monitor is not None:
            self._monitor.after_forward(is_train, self._rng_state)
        if not is_train:
            self._env = None  # a later backward() must see these inputs, not older ones
        return self.outputs

    @_one_thread
    def backward(self, out_grads: Union[None, NDArray, Sequence[NDArray]] = None,
                 is_train: bool = True, tail: Any = None) -> None:
        """Run the backward phase and write gradients according to ``grad_req``.

        ``tail``: backend work run right after the backward steps, in the same program run
        (on the GPU a fused optimizer step, captured in the backward's CUDA graph); it reads
        gradients from the run's slots (see :meth:`grad_slots`)."""
        stage = self._train
        if self._env is None:
            # MXNet allows backward() after forward(is_train=False), or with no forward at all:
            # gradients are taken at the bound inputs, so run the training program's forward
            # now (outputs not stored),
            # in ``is_train`` mode (Dropout is the identity in backward(is_train=False)).
            # Random ops draw what that forward drew: replay the generator from its state.
            replay = np.random.default_rng()
            replay.bit_generator.state = self._rng_state or _random.generator().bit_generator.state
            self._env, self._run_ctx = self._start(stage, is_train)
            self._run_ctx.rng = replay
            stage.run(self._env, self._run_ctx, "forward")
        if isinstance(out_grads, (NDArray, np.ndarray)):
            out_grads = [out_grads]
        if out_grads is not None and len(out_grads) != len(self.outputs):
            raise BindError(f"backward: {len(out_grads)} out_grads for {len(self.outputs)} outputs")
        env = self._env
        before_run()
        stage.bind_heads(env, self._heads(out_grads))
        stage.run(env, self._run_ctx, "backward", tail)
        stage.store_grads(env, self.grad_dict, self._grad_req)
        if self._monitor is not None:
            self._monitor.after_backward(is_train, self._rng_state, out_grads)

    @_one_thread
    def train_step(self, tail: Any = None, out_grads: Optional[Sequence[Any]] = None,
                   is_train: bool = True) -> list[NDArray]:
        """``forward(is_train=True)`` then ``backward(out_grads)`` as ONE program run: on the
        GPU one CUDA graph per step, with ``tail`` (a fused optimizer step) captured at its
        end. Outputs, aux updates and gradients are stored after the run. ``is_train=False``
        runs the training graph with train-dependent ops (Dropout, BatchNorm) in inference
        mode (``autograd.record(train_mode=False)``)."""
        stage = self._train
        if out_grads is not None and len(out_grads) != len(self.outputs):
            raise BindError(f"train_step: {len(out_grads)} out_grads for {len(self.outputs)} "
                            f"outputs")
        # Only a monitor replays this forward (a later backward() finds the run's env); reading
        # the generator's state costs more than the rest of the bookkeeping of a step.
        self._rng_state = _random.generator().bit_generator.state \
            if self._monitor is not None else None
        env, run_ctx = self._start(stage, is_train)
        stage.bind_heads(env, self._heads(out_grads))
        stage.run(env, run_ctx, "all", tail)
        self._finish_forward(stage, env, run_ctx, True)
        stage.store_grads(env, self.grad_dict, self._grad_req)
        if self._monitor is not None:
            self._monitor.after_step(is_train, self._rng_state, out_grads)
        return self.outputs

    def set_monitor_callback(self, callback: Any, monitor_all: bool = False) -> None:
        """``callback(name, value)`` for node outputs (and inputs with ``monitor_all``) after
        each forward, and backward outputs after each backward, as MXNet's (runtime/monitor.py)."""
        from .monitor import ExecutorMonitor
        self._monitor = ExecutorMonitor(self._graph, self._ctx, self.arg_dict, self.aux_dict,
                                        callback, monitor_all, self._grad_req)

    def _start(self, stage: Stage, is_train: bool) -> tuple[Any, RunCtx]:
        """A fresh environment of ``stage``'s program with every bound array bound."""
        return stage.start((self.arg_dict, self.aux_dict), is_train, self._op_state)

    def _finish_forward(self, stage: Stage, env: Any, run_ctx: RunCtx, is_train: bool) -> None:
        stage.finish(env, self.outputs, self.aux_dict, is_train)
        if is_train:
            self._env, self._run_ctx, self._trained = env, run_ctx, True

    def _heads(self, out_grads: Optional[Sequence[Any]]) -> dict[int, NDArray]:
        """Head-gradient slot -> array; the default ones are made once per executor."""
        return self._train.head_arrays(out_grads, self._ctx, self._ones)

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False,
                **kwargs: Any) -> "Executor":
        """A new executor for the input shapes in ``kwargs``, sharing this one's memory
        (MXNet's ``Executor.reshape``; see ``executor_reshape.py``)."""
        from .executor_reshape import reshape
        return reshape(self, self._symbol, self._ctx, self.grad_req, partial_shaping,
                       allow_up_sizing, {k: tuple(v) for k, v in kwargs.items()})

    # -- parameters and introspection --------------------------------------------------------
    def copy_params_from(self, arg_params: Mapping[str, NDArray],
                         aux_params: Optional[Mapping[str, NDArray]] = None,
                         allow_extra_params: bool = False) -> None:
        """Copy parameter values in by name (checked first, then written)."""
        plan = []
        for params, targets, kind in ((arg_params, self.arg_dict, "argument"),
                                      (aux_params or {}, self.aux_dict, "aux state")):
            for name, value in params.items():
                if name not in targets:
                    if allow_extra_params:
                        continue
                    raise BindError(f"copy_params_from: {name!r} is not an {kind} of the executor")
                plan.append((targets[name], self._check_array(kind, name, value, targets[name])))
        for target, host in plan:
            target[:] = host

    @property
    def grad_req(self) -> dict[str, str]:
        """``grad_req`` of every argument (``write``, ``add`` or ``null``)."""
        return dict(self._grad_req)

    def grad_slots(self) -> dict[str, int]:
        """Slot of each computed gradient in the training program (for a backward ``tail``)."""
        return dict(self._train.grads)

    @property
    def train_program(self) -> Any:
        """The backend program of the training graph (the CUDA one owns the stream)."""
        return self._train.program

    @property
    def schedule(self) -> Schedule:
        return self._train.schedule

    def debug_str(self) -> str:
        """The training schedule: every step with input/output slots and shapes; steps the
        backend runs on the host (GPU programs' ``has_host``) are marked ``[host]``; last,
        MXNet's ``Total N MB allocated``: the training program's arena (intermediates,
        outputs and gradients before they are stored; bound arrays are not counted)."""
        stage = self._train
        host = getattr(stage.program, "has_host", ())
        plan = stage.schedule.plan
        total = f"\nTotal {plan.arena_bytes >> 20} MB allocated" if plan is not None else ""
        return stage.schedule.describe({k: "host" for k, h in enumerate(host) if h}) + total
