"""The Executor: binds arrays to a symbol and runs the forward and backward schedules.

It knows nothing about individual ops: it builds the training graph (outputs, auxiliary-state
updates, gradients from the autodiff pass), runs the pass pipeline, lowers to a schedule and hands
that to the backend of its context. Every check on user input happens before anything is written.
"""
from __future__ import annotations

import threading
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from . import random as _random
from .attrs import Attrs, format_value
from .base import BindError, ExecutionError
from .bind_checks import alloc as _alloc
from .bind_checks import check_no_aliasing as _check_no_aliasing
from .bind_checks import one_thread as _one_thread
from .context import Context
from .graph import Entry, Graph, Node, variable
from .imperative import before_run
from .ndarray import NDArray, array
from . import passes
from .passes import INFERENCE_PIPELINE, TRAINING_PIPELINE, plan_memory, run_pipeline
from .passes.gradient import gradient
from .passes.infer_shape import infer_shapes
from .passes.infer_type import infer_types
from .passes.verify import check_unique_inputs
from .registry import RunCtx, get_op
from .schedule import Schedule, lower

GRAD_REQS = ("write", "add", "null")


def _as_list(kind: str, value: Any, names: Sequence[str], required: bool) -> list:
    """Turn a list or dict of per-argument values into a list in ``names`` order."""
    if value is None:
        if required and names:
            raise BindError(f"{kind}: missing arrays for {list(names)}")
        return [None] * len(names)
    if isinstance(value, Mapping):
        extra = sorted(set(value) - set(names))
        if extra:
            raise BindError(f"{kind}: {extra} are not arguments of the symbol; expected {list(names)}")
        missing = [n for n in names if n not in value]
        if required and missing:
            raise BindError(f"{kind}: missing arrays for {missing}")
        return [value.get(n) for n in names]
    value = list(value)
    if len(value) != len(names):
        raise BindError(f"{kind}: {len(value)} arrays given for {len(names)} names {list(names)}")
    return value


def _declare(node: Node, shape: tuple, dtype: np.dtype) -> Node:
    """A copy of variable ``node`` carrying its bound shape and dtype."""
    extra = dict(node.extra)
    extra["__shape__"] = format_value(tuple(shape))
    extra["__dtype__"] = np.dtype(dtype).name
    return Node(node.op, node.name, node.attrs, (), Attrs(extra))


class Executor:
    """Runs a bound symbol. Build with ``Symbol.bind`` or ``Symbol.simple_bind``."""

    def __init__(self, symbol: Any, ctx: Context, args: list[NDArray],
                 grads: list[Optional[NDArray]], reqs: list[str], aux: list[NDArray],
                 stages: tuple[bool, ...] = (False, True)) -> None:
        self._symbol = symbol
        self._ctx = ctx
        self.arg_arrays = args
        self.grad_arrays = grads
        self.aux_arrays = aux
        self._arg_names = symbol.list_arguments()
        self._aux_names = symbol.list_auxiliary_states()
        self._reqs = reqs
        self.arg_dict = dict(zip(self._arg_names, args))
        self.grad_dict = {n: g for n, g, r in zip(self._arg_names, grads, reqs)
                          if g is not None and r != "null"}
        self.aux_dict = dict(zip(self._aux_names, aux))
        self._op_state: dict = {}  # ops' run-time objects (CustomOp instances), freed with us
        self._busy = threading.Lock()  # held during a run (see _one_thread)
        self._stages: dict[bool, dict] = {}  # is_train -> built program (see _stage)
        self._eager_stages = stages
        self._compile()
        self.outputs = [_alloc("output", repr(e), self._shapes[e], ctx, self._dtypes[e])
                        for e in self._fwd_outputs]
        self.output_dict = dict(zip(symbol.list_outputs(), self.outputs))
        self._trained = False
        self._forwarded = False
        self._monitor: Any = None
        self._env: Optional[list] = None
        self._ones: dict[int, NDArray] = {}  # default head gradients, by slot
        self._req_of = dict(zip(self._arg_names, reqs))

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def bind(cls, symbol: Any, ctx: Context, args: Any, args_grad: Any = None,
             grad_req: Any = "write", aux_states: Any = None,
             stages: tuple[bool, ...] = (False, True)) -> "Executor":
        """Check and bind; ``stages`` lists the programs (inference ``False``, training
        ``True``) compiled now; any other is compiled on first use (imperative programs
        build only the one they run)."""
        check_unique_inputs(symbol.graph())
        names = symbol.list_arguments()
        arg_list = _as_list("bind args", args, names, required=True)
        grad_list = _as_list("bind args_grad", args_grad, names, required=False)
        aux_list = _as_list("bind aux_states", aux_states, symbol.list_auxiliary_states(),
                            required=True)
        if isinstance(grad_req, str):
            reqs = [grad_req] * len(names)
        else:
            reqs = [r or "null" for r in _as_list("grad_req", grad_req, names, required=False)]
        for n, r, g in zip(names, reqs, grad_list):
            if r not in GRAD_REQS:
                raise BindError(f"grad_req for {n}: {r!r} is not one of {GRAD_REQS}")
        reqs = [r if g is not None else "null" for r, g in zip(reqs, grad_list)]
        for kind, names_, arrays in (("argument", names, arg_list),
                                     ("aux state", symbol.list_auxiliary_states(), aux_list),
                                     ("gradient", names, grad_list)):
            for n, a in zip(names_, arrays):
                if a is not None and not isinstance(a, NDArray):
                    raise BindError(f"{kind} {n}: expected an NDArray, got {type(a).__name__}")
                if a is not None and a.context != ctx:
                    raise BindError(f"{kind} {n}: array is on {a.context}, executor on {ctx}")
        _check_no_aliasing([("argument", names, arg_list),
                            ("aux state", symbol.list_auxiliary_states(), aux_list),
                            ("gradient", names, [g if r != "null" else None
                                                 for g, r in zip(grad_list, reqs)])])
        for n, a, g in zip(names, arg_list, grad_list):
            if g is not None and (g.shape != a.shape or g.dtype != a.dtype):
                raise BindError(f"gradient {n}: shape {g.shape} {g.dtype} differs from the "
                                f"argument's {a.shape} {a.dtype}")
        return cls(symbol, ctx, arg_list, grad_list, reqs, aux_list, stages)

    @classmethod
    def simple_bind(cls, symbol: Any, ctx: Context, grad_req: Any = "write",
                    type_dict: Optional[Mapping[str, Any]] = None,
                    shapes: Optional[Mapping[str, Any]] = None) -> "Executor":
        arg_shapes, _, aux_shapes = symbol.infer_shape(**(shapes or {}))
        arg_types, _, aux_types = symbol.infer_type(**(type_dict or {}))
        names = symbol.list_arguments()
        args = [_alloc("argument", n, s, ctx, t) for n, s, t in zip(names, arg_shapes, arg_types)]
        if isinstance(grad_req, str):
            reqs = {n: grad_req for n in names}
        elif isinstance(grad_req, Mapping):
            reqs = {n: grad_req.get(n, "null") for n in names}
        else:
            reqs = dict(zip(names, _as_list("grad_req", grad_req, names, required=True)))
        grads = {n: _alloc("gradient", n, s, ctx, t)
                 for n, s, t in zip(names, arg_shapes, arg_types)
                 if reqs[n] != "null"}
        aux = [_alloc("aux state", n, s, ctx, t) for n, s, t
               in zip(symbol.list_auxiliary_states(), aux_shapes, aux_types)]
        return cls.bind(symbol, ctx, args, grads, reqs, aux)

    def _compile(self) -> None:
        graph = self._symbol.graph()
        given_shapes = {n: a.shape for n, a in zip(self._arg_names + self._aux_names,
                                                    self.arg_arrays + self.aux_arrays)}
        given_types = {n: a.dtype for n, a in zip(self._arg_names + self._aux_names,
                                                   self.arg_arrays + self.aux_arrays)}
        shapes = infer_shapes(graph, given_shapes)
        types = infer_types(graph, given_types)
        var_by_name = {v.name: v for v in graph.variables()}  # once: graphs can be large
        for n, a in zip(self._arg_names, self.arg_arrays):
            node = var_by_name[n]
            if types[Entry(node)] != a.dtype:
                raise BindError(f"argument {n}: array has dtype {a.dtype}, the graph needs "
                                f"{types[Entry(node)]}")
        self._fwd_outputs = list(graph.outputs)
        missing = [repr(e) for e in graph.outputs if e not in shapes]
        if missing:
            raise BindError(f"cannot decide the shapes of outputs {missing}")
        self._shapes, self._dtypes = shapes, types
        declared = {v: _declare(v, shapes[Entry(v)], types[Entry(v)]) for v in graph.variables()}
        self._graph_declared = (graph, declared)
        for train in self._eager_stages:
            self._stage(train)

    def _stage(self, train: bool) -> dict:
        """The inference or training program, built on first use."""
        stage = self._stages.get(train)
        if stage is None:
            stage = self._stages[train] = self._build(*self._graph_declared, train=train)
        return stage

    @property
    def _infer(self) -> dict:
        return self._stage(False)

    @property
    def _train(self) -> dict:
        return self._stage(True)

    def _build(self, graph: Graph, declared: dict[Node, Node], train: bool) -> dict:
        """Make the inference or training graph, optimise, lower, and compile for the backend."""
        from .graph import rewrite
        g = rewrite(graph, lambda n: declared.get(n) if n.is_variable else None)
        g = run_pipeline(g, self._backend().FORWARD_PIPELINE)  # the backend's choice
        var_by_name = {v.name: v for v in g.variables()}
        outputs = list(g.outputs)
        mutations: list[tuple[Entry, str]] = []
        if train:
            for node in g.nodes():
                if node.is_variable:
                    continue
                for out_idx, in_idx in get_op(node.op).mutates:
                    src = node.inputs[in_idx].node
                    if src.is_variable:
                        mutations.append((Entry(node, out_idx), src.name))
        outputs += [e for e, _ in mutations]
        n_forward = len(outputs)
        heads: list[Node] = []
        wrt_names = [n for n, r in zip(self._arg_names, self._reqs) if r != "null"]
        if train and wrt_names:
            from .symbol import Symbol
            # Head gradients are bound only in backward(); fusion must know (__phase__).
            heads = [_declare(variable(f"_head_grad{i}", {"__phase__": "backward"}),
                              self._shapes[e], self._dtypes[e])
                     for i, e in enumerate(self._fwd_outputs)]
            head_syms = [Symbol((Entry(h),)) for h in heads]
            grads = gradient(Graph(tuple(g.outputs)), [var_by_name[n] for n in wrt_names],
                             head_syms)
            outputs += [s.outputs_[0] for s in grads]
        full = Graph(tuple(outputs))
        full = run_pipeline(full, TRAINING_PIPELINE if train else INFERENCE_PIPELINE)
        schedule = lower(full, n_forward, views=passes.ENABLED)
        schedule.plan = plan_memory(schedule)
        program = self._backend().compile(schedule, self._ctx)
        outs = list(full.outputs)
        return {
            "schedule": schedule, "program": program,
            "outputs": [schedule.slot_of[e] for e in outs[:len(self._fwd_outputs)]],
            "mutations": [(schedule.slot_of[e], name)
                          for e, (_, name) in zip(outs[len(self._fwd_outputs):n_forward],
                                                  mutations)],
            "grads": dict(zip(wrt_names, [schedule.slot_of[e] for e in outs[n_forward:]])),
            "heads": {i: schedule.variables[h] for i, h in enumerate(heads)
                      if h in schedule.variables},
        }

    def __repr__(self) -> str:
        sched = self._train["schedule"]
        n_grad = sum(r != "null" for r in self._reqs)
        outs = ", ".join(f"{n} {tuple(a.shape)}" for n, a in self.output_dict.items())
        return (f"<Executor {self._symbol.name or 'group'} on {self._ctx}: "
                f"{len(self.arg_arrays)} arguments ({n_grad} with gradients), "
                f"{len(self.aux_arrays)} aux states -> {outs}; training schedule "
                f"{len(sched.steps)} steps ({sched.n_forward_steps} forward)>")

    def _backend(self) -> Any:
        if self._ctx.device_type == "cpu":
            from .backend import numpy_backend
            return numpy_backend
        from .cuda import backend
        return backend

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
        self._rng_state = _random.generator().bit_generator.state  # for a later backward()
        env, run_ctx = self._start(stage, is_train)
        stage["program"].run(env, 0, stage["schedule"].n_forward_steps, run_ctx)
        self._finish_forward(stage, env, run_ctx, is_train)
        self._forwarded = True
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
        if not self._forwarded:
            raise ExecutionError("backward called before forward")
        stage = self._train
        if self._env is None:
            # MXNet allows backward() after forward(is_train=False): gradients are taken at
            # the last inputs, so run the training program's forward now (outputs not stored),
            # in ``is_train`` mode (Dropout is the identity in backward(is_train=False)).
            # Random ops draw what that forward drew: replay the generator from its state.
            replay = np.random.default_rng()
            replay.bit_generator.state = self._rng_state
            self._env, self._run_ctx = self._start(stage, is_train)
            self._run_ctx.rng = replay
            stage["program"].run(self._env, 0, stage["schedule"].n_forward_steps,
                                 self._run_ctx)
        if isinstance(out_grads, (NDArray, np.ndarray)):
            out_grads = [out_grads]
        if out_grads is not None and len(out_grads) != len(self.outputs):
            raise BindError(f"backward: {len(out_grads)} out_grads for {len(self.outputs)} outputs")
        program, env = stage["program"], self._env
        before_run()
        for slot, value in self._heads(out_grads).items():
            program.bind_input(env, slot, value)
        extra = {} if tail is None else {"tail": tail}
        program.run(env, stage["schedule"].n_forward_steps, len(stage["schedule"].steps),
                    self._run_ctx, **extra)
        self._store_grads(env)

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
        self._rng_state = _random.generator().bit_generator.state
        env, run_ctx = self._start(stage, is_train)
        program = stage["program"]
        for slot, value in self._heads(out_grads).items():
            program.bind_input(env, slot, value)
        extra = {} if tail is None else {"tail": tail}
        program.run(env, 0, len(stage["schedule"].steps), run_ctx, **extra)
        self._finish_forward(stage, env, run_ctx, True)
        self._forwarded = True
        self._store_grads(env)
        if self._monitor is not None:
            self._monitor.after_forward(is_train, self._rng_state)
        return self.outputs

    def set_monitor_callback(self, callback: Any, monitor_all: bool = False) -> None:
        """Call ``callback(name, value)`` for every node output after each forward (and its
        inputs first with ``monitor_all``), as MXNet does; see ``symgraph/monitor.py``."""
        from .monitor import ExecutorMonitor
        self._monitor = ExecutorMonitor(self, callback, monitor_all)

    def _start(self, stage: dict, is_train: bool) -> tuple[Any, RunCtx]:
        """A fresh environment of ``stage``'s program with every bound array bound."""
        before_run()  # pending sg.nd work may read arrays this run overwrites
        program = stage["program"]
        env = program.new_env()
        if "bound" not in stage:  # (name, slot) of every bound variable, found once
            by_name = {n.name: slot for n, slot in stage["schedule"].variables.items()}
            stage["bound"] = [(d, n, by_name[n]) for d in (self.arg_dict, self.aux_dict)
                              for n in d if n in by_name]
        for arrays, name, slot in stage["bound"]:
            program.bind_input(env, slot, arrays[name])
        return env, RunCtx(is_train=is_train, rng=_random.generator(), state=self._op_state)

    def _finish_forward(self, stage: dict, env: Any, run_ctx: RunCtx, is_train: bool) -> None:
        program = stage["program"]
        for out, slot in zip(self.outputs, stage["outputs"]):
            program.store(env, slot, out, accumulate=False)
        if is_train:
            for slot, name in stage["mutations"]:
                program.store(env, slot, self.aux_dict[name], accumulate=False)
            self._env, self._run_ctx, self._trained = env, run_ctx, True

    def _heads(self, out_grads: Optional[Sequence[Any]]) -> dict[int, NDArray]:
        """Head-gradient slot -> array; the default ones are made once per executor."""
        heads = {}
        for i, slot in self._train["heads"].items():
            out = self.outputs[i]
            if out_grads is None or out_grads[i] is None:
                if slot not in self._ones:
                    self._ones[slot] = array(np.ones(out.shape, out.dtype), self._ctx, out.dtype)
                heads[slot] = self._ones[slot]
            else:
                value = self._check_array("out_grads", str(i), out_grads[i], out, True)
                heads[slot] = array(value.astype(out.dtype), self._ctx, out.dtype)
        return heads

    def _store_grads(self, env: Any) -> None:
        program = self._train["program"]
        for name, slot in self._train["grads"].items():
            program.store(env, slot, self.grad_dict[name],
                          accumulate=self._req_of[name] == "add")

    def reshape(self, partial_shaping: bool = False, allow_up_sizing: bool = False,
                **kwargs: Any) -> "Executor":
        """A new executor for the input shapes in ``kwargs``, sharing this one's memory
        (MXNet's ``Executor.reshape``; see ``executor_reshape.py``)."""
        from .executor_reshape import reshape
        return reshape(self, partial_shaping, allow_up_sizing,
                       {k: tuple(v) for k, v in kwargs.items()})

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
        return dict(zip(self._arg_names, self._reqs))

    def grad_slots(self) -> dict[str, int]:
        """Slot of each computed gradient in the training program (for a backward ``tail``)."""
        return dict(self._train["grads"])

    @property
    def train_program(self) -> Any:
        """The backend program of the training graph (the CUDA one owns the stream)."""
        return self._train["program"]

    @property
    def schedule(self) -> Schedule:
        return self._train["schedule"]

    def debug_str(self) -> str:
        """The training schedule: every step with input/output slots and shapes."""
        return self._train["schedule"].describe()
