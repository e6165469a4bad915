"""The one compile interface under the user APIs: a typed graph in, a runnable :class:`Stage` out.

``build_stage`` makes the inference or training graph of a typed graph (outputs, the aux-state
updates a training forward writes back, gradients from the autodiff pass), runs the backend's
forward passes and the optimisation pipeline, lowers to a schedule with its memory plan and
compiles it for the backend of the context. The :class:`Stage` it returns says where every value
lives and runs itself: ``start`` binds arrays by name, ``run`` runs a range of steps, and
``finish``/``store_grads`` write outputs, aux updates and gradients into arrays. The Executor
(MXNet's surface), the imperative engine and the monitor all compile through here.

Example::

    >>> import numpy as np, symgraph as sg
    >>> from symgraph import compile as C
    >>> net = sg.sym.relu(sg.sym.var("x") * 2.0)
    >>> graph = net.graph()
    >>> types = C.infer(graph, {"x": (2, 3)}, {"x": np.float32})
    >>> stage = C.build_stage(graph.with_types(types), ["x"], True, sg.cpu())
    >>> x, g = sg.nd.ones((2, 3)), sg.nd.zeros((2, 3))
    >>> env, run = stage.start([{"x": x}], is_train=True)
    >>> heads = stage.head_arrays([np.ones((2, 3), np.float32)], sg.cpu(), {})
    >>> stage.bind_heads(env, heads)
    >>> stage.run(env, run)
    >>> stage.store_grads(env, {"x": g}, {"x": "write"})
    >>> float(g.asnumpy()[0, 0])
    2.0
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence

import numpy as np

from ..compiler import passes
from ..core import config
from . import random as _random
from .backend import Program
from ..core.base import BindError, ShapeError
from ..core.context import Context
from ..core.expr import evaluate as _expr_evaluate
from ..core.graph import Entry, Graph, Node, variable
from .ndarray import NDArray, array, before_run
from ..compiler.memory_plan import plan_memory
from ..compiler.passes import OPTIMIZE_PIPELINE, run_pipeline
from ..compiler.passes.gradient import gradient
from ..compiler.passes.merge_replicas import merge_replicas
from ..compiler.passes.rematerialise import rematerialise
from ..core.types.infer_shape import infer_shapes
from ..core.types.infer_type import infer_types
from ..core.registry import OpDef, RunCtx, get_op, ops_where
from ..compiler.schedule import Schedule, lower
from ..core.types.table import TypeTable


def _cpu_backend() -> Any:
    """The CPU backend ``SYMGRAPH_CPU`` names: the numpy reference, or compiled kernels (the
    default; without numba installed the default is the numpy reference, said once)."""
    if config.get("SYMGRAPH_CPU") == "compiled" and _numba_or_asked():
        from .cpu import backend as compiled  # imports numba only when it is asked for
        return compiled
    from .backend import numpy_backend
    return numpy_backend


def formula_evaluator() -> Callable:
    """How host code evaluates ``core.expr`` formulas on numpy arrays (``expr.evaluate``'s
    signature): one compiled kernel each on the compiled CPU backend (``cpu.backend.evaluate``),
    numpy's ufuncs on the numpy one. The optimizers' update rules use it."""
    backend = _cpu_backend()
    return getattr(backend, "evaluate", None) or _expr_evaluate


def formula_updater() -> Optional[Callable]:
    """How host code applies an update rule to many parameters in place
    (``cpu.update.update_in_place``'s signature) on the compiled CPU backend; None on the
    numpy one (each parameter then goes through :func:`formula_evaluator`)."""
    return getattr(_cpu_backend(), "update_in_place", None)


_NO_NUMBA_SAID = []


@lru_cache(maxsize=1)
def _numba_installed() -> bool:
    import importlib.util
    return importlib.util.find_spec("numba") is not None


def _numba_or_asked() -> bool:
    """Whether numba is installed, or ``SYMGRAPH_CPU=compiled`` was asked for by name (then a
    missing numba is the kernels' error, naming the package)."""
    if _numba_installed() or config.is_set("SYMGRAPH_CPU"):
        return True
    if not _NO_NUMBA_SAID:
        _NO_NUMBA_SAID.append(True)
        import warnings
        warnings.warn("symgraph: numba is not installed, so the CPU backend runs the numpy "
                      "references (pip install numba for the compiled one)", RuntimeWarning,
                      stacklevel=3)
    return False


def _cuda_backend() -> Any:
    from .cuda import backend  # imports pycuda: only when a GPU program is made
    return backend


# Device type -> the backend module: ``FORWARD_PIPELINE`` and ``compile(schedule, ctx)``,
# which returns a :class:`~symgraph.runtime.backend.Program`.
BACKENDS: dict[str, Callable[[], Any]] = {"cpu": _cpu_backend, "gpu": _cuda_backend}


def backend_for(ctx: Context) -> Any:
    """The backend module of ``ctx``'s device type; BindError when there is none."""
    try:
        return BACKENDS[ctx.device_type]()
    except KeyError:
        raise BindError(f"no backend for device type {ctx.device_type!r}; "
                        f"backends: {sorted(BACKENDS)}") from None


def infer(graph: Graph, shapes: Mapping[str, Any], dtypes: Mapping[str, Any]) -> TypeTable:
    """The types of every entry of ``graph`` from its variables' shapes and dtypes."""
    return TypeTable(infer_shapes(graph, dict(shapes)), infer_types(graph, dict(dtypes)))


class GradStores(NamedTuple):
    """Where a stage's gradients go: ``(slot, array, accumulate)`` per computed gradient, and
    the ``write`` gradients no gradient reaches (filled with 0)."""

    stores: list
    zeroed: list


@dataclass
class Stage:
    """One compiled graph (inference, or training: forward then backward) and where its values
    live: slots of the visible outputs, of the aux states a training forward writes back
    (``mutations``: slot, aux name) and those every forward writes (``updates``), of each argument's gradient, of each head gradient (by
    output index); ``zero_grads``: arguments no gradient reaches (filled, not computed)."""

    schedule: Schedule
    program: Program
    outputs: list[int]
    mutations: list[tuple[int, str]]
    grads: dict[str, int]
    heads: dict[int, int]
    zero_grads: tuple[str, ...] = ()
    bound: Optional[list] = None
    updates: list = field(default_factory=list)  # (slot, name) written after every forward  # (which mapping, name, slot) of each bound variable

    def start(self, arrays: Sequence[Mapping[str, NDArray]], is_train: bool,
              state: Optional[dict] = None) -> tuple[Any, RunCtx]:
        """A fresh environment with every variable the program reads bound to its array in
        ``arrays`` (mappings from variable name, looked up at each start: a caller may replace
        an array; which names each mapping holds is found on the first start and kept), and
        the run context (``state``: ops' run-time objects, kept per caller)."""
        before_run()  # pending sg.nd work may read arrays this run overwrites
        if self.bound is None:
            by_name = {n.name: slot for n, slot in self.schedule.variables.items()}
            self.bound = [(k, n, by_name[n]) for k, d in enumerate(arrays) for n in d
                          if n in by_name]
        env = self.program.new_env()
        self.program.bind_inputs(env, [(slot, arrays[k][n]) for k, n, slot in self.bound])
        return env, RunCtx(is_train=is_train, rng=_random.generator(), state=state)

    def run(self, env: Any, run_ctx: RunCtx, phase: str = "all", tail: Any = None) -> None:
        """Run the ``forward``, ``backward`` or ``all`` steps; ``tail``: backend work right after
        the backward steps, in the same run (the GPU's fused optimizer step)."""
        n, nf = len(self.schedule.steps), self.schedule.n_forward_steps
        begin, end = {"forward": (0, nf), "backward": (nf, n), "all": (0, n)}[phase]
        self.program.run(env, begin, end, run_ctx, tail=tail)

    def head_arrays(self, out_grads: Optional[Sequence[Any]], ctx: Context,
                    ones: dict[int, NDArray]) -> dict[int, NDArray]:
        """Head-gradient slot -> array: ``out_grads[i]`` (an NDArray or host values of output
        i's shape, converted to its dtype), or ones where it is None or absent (made once,
        kept in ``ones``)."""
        if out_grads is None and len(ones) == len(self.heads):
            return ones  # (every step of a training loop with default head gradients)
        heads = {}
        sch = self.schedule
        for i, slot in self.heads.items():
            shape, dtype = sch.shapes[slot], sch.dtypes[slot]
            value = None if out_grads is None else out_grads[i]
            if value is None:
                if slot not in ones:
                    ones[slot] = array(np.ones(shape, dtype), ctx, dtype)
                heads[slot] = ones[slot]
                continue
            host = value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)
            if host.shape != tuple(shape):
                raise BindError(f"out_grads {i}: shape {host.shape}, bound array has "
                                f"{tuple(shape)}")
            heads[slot] = array(host.astype(dtype), ctx, dtype)
        return heads

    def bind_heads(self, env: Any, heads: Mapping[int, NDArray]) -> None:
        """Bind head-gradient arrays (from :meth:`head_arrays`) into ``env``."""
        self.program.bind_inputs(env, heads.items())

    def finish(self, env: Any, outputs: Sequence[NDArray],
               aux: Optional[Mapping[str, NDArray]] = None, is_train: bool = True) -> None:
        """Store the visible outputs into ``outputs`` and, given ``aux``, the states written
        after every forward (``updates``) and the aux updates of a training forward
        (``is_train``) into those arrays."""
        items = [(slot, out, False) for out, slot in zip(outputs, self.outputs)]
        if aux is not None:  # (most graphs have neither: no list made per step)
            if self.updates:
                items += [(slot, aux[name], False) for slot, name in self.updates]
            if is_train and self.mutations:
                items += [(slot, aux[name], False) for slot, name in self.mutations]
        if items:
            self.program.store_all(env, items)

    def store_grads(self, env: Any, grads: Mapping[str, NDArray],
                    reqs: Mapping[str, str]) -> None:
        """Write each computed gradient into ``grads[name]`` (``+=`` where ``reqs`` says
        ``add``); a ``write`` gradient no gradient reaches becomes 0."""
        self.write_grads(env, self.grad_stores(grads, reqs))

    def grad_stores(self, grads: Mapping[str, NDArray],
                    reqs: Mapping[str, str]) -> GradStores:
        """Where :meth:`store_grads` writes ``grads`` (found once by a caller whose arrays
        stay the same from run to run, then given to :meth:`write_grads`)."""
        stores, zeroed = [], []
        for name, g in grads.items():
            slot = self.grads.get(name)
            if slot is not None:
                stores.append((slot, g, reqs[name] == "add"))
            elif name in self.zero_grads and reqs[name] == "write":
                zeroed.append(g)
        return GradStores(stores, zeroed)

    def write_grads(self, env: Any, where: GradStores) -> None:
        """Store the gradients of a run as :meth:`grad_stores` found them."""
        self.program.store_all(env, where.stores)
        for g in where.zeroed:
            g[:] = 0


def _writes_back(opdef: OpDef) -> bool:
    return opdef.mutates != ()


def _mutations(g: Graph, train: bool) -> tuple[list, list]:
    """The (hidden output, variable name) pairs a forward writes back: aux updates of a
    training forward (``OpDef.mutates``), and those of ops that write after every forward
    (``OpDef.always_mutates``: optimizer updates)."""
    mutations: list[tuple[Entry, str]] = []
    updates: list[tuple[Entry, str]] = []
    if g.op_names().isdisjoint(ops_where(_writes_back)):
        return mutations, updates  # (most graphs: nothing written back, nothing to walk)
    for node in g.nodes():
        if node.is_variable:
            continue
        opdef = get_op(node.op)
        if opdef.mutates == () or not (train or opdef.always_mutates):
            continue
        into = updates if opdef.always_mutates else mutations
        for out_idx, in_idx in opdef.mutated(node.attrs):
            src = node.inputs[in_idx].node
            if src.is_variable:
                into.append((Entry(node, out_idx), src.name))
    return mutations, updates


def _refuse_empty_batch(graph: Graph) -> None:
    """Training on a zero-size input is refused before anything runs: BatchNorm would turn its
    running statistics into NaN and the gradients of an empty batch are undefined (MXNet
    poisons the statistics or fails deep in backward)."""
    for v in graph.variables():
        shape = graph.types.shape(Entry(v))
        if shape is not None and len(shape) and 0 in shape:
            raise ShapeError(f"input {v.name!r} has shape {tuple(shape)}: a zero-size input "
                             f"cannot be trained on (is_train=True / autograd.record()); skip "
                             f"empty batches")


def build_stage(graph: Graph, wrt: Sequence[str], train: bool, ctx: Context) -> Stage:
    """Compile typed ``graph`` (``graph.types`` set) for ``ctx``: the inference graph, or with
    ``train`` the training graph (aux updates, and gradients of the variables named in
    ``wrt``; head gradients are variables ``_head_grad<i>`` bound by the caller)."""
    if train:
        _refuse_empty_batch(graph)
        graph = merge_replicas(graph)  # (SyncBatchNorm: one computation over the devices)
    types = graph.types
    g = run_pipeline(graph, backend_for(ctx).FORWARD_PIPELINE)  # the backend's choice
    var_by_name = {v.name: v for v in g.variables()}
    outputs = list(g.outputs)
    n_visible = len(outputs)
    mutations, updates = _mutations(g, train)
    outputs += [e for e, _ in mutations + updates]
    n_forward = len(outputs)
    heads: list[Node] = []
    zero_grads: tuple[str, ...] = ()
    wrt_names = list(wrt) if train else []
    if wrt_names:
        # Head gradients are bound only in backward(); fusion must know (__phase__).
        heads = [variable(f"_head_grad{i}", {"__phase__": "backward"}) for i in range(n_visible)]
        for h, e in zip(heads, graph.outputs):
            types.add(Entry(h), types.shape(e), types.dtype(e))
        # a variable the forward passes removed (an op that only read its shape) gets zeros
        kept = [n for n in wrt_names if n in var_by_name]
        found = dict(zip(kept, gradient(g.with_types(types), [var_by_name[n] for n in kept],
                                        [Entry(h) for h in heads], zero_as_none=True)))
        # Last argument first: arguments come in forward order, and the depth-first step
        # order then runs each layer's weight gradient as soon as the data gradient reaches
        # it, instead of keeping every layer's output gradient alive until the chain ends.
        grads = [found.get(n) for n in reversed(wrt_names)]
        zero_grads = tuple(n for n, e in zip(reversed(wrt_names), grads) if e is None)[::-1]
        wrt_names = [n for n, e in zip(reversed(wrt_names), grads) if e is not None]
        outputs += [e for e in grads if e is not None]
    full = Graph(tuple(outputs), types)
    if wrt_names and passes.ENABLED:  # (needs to know where the forward ends)
        full = rematerialise(full, n_forward)
    full = run_pipeline(full, OPTIMIZE_PIPELINE)
    schedule = lower(full, n_forward, views=passes.ENABLED)
    schedule.plan = plan_memory(schedule)
    program = backend_for(ctx).compile(schedule, ctx)
    outs = list(full.outputs)
    return Stage(
        schedule, program,
        outputs=[schedule.slot_of[e] for e in outs[:n_visible]],
        mutations=[(schedule.slot_of[e], name)
                   for e, (_, name) in zip(outs[n_visible:n_forward], mutations)],
        updates=[(schedule.slot_of[e], name) for e, (_, name)
                 in zip(outs[n_visible + len(mutations):n_forward], updates)],
        grads=dict(zip(wrt_names, [schedule.slot_of[e] for e in outs[n_forward:]])),
        heads={i: schedule.variables[h] for i, h in enumerate(heads)
               if h in schedule.variables},
        zero_grads=zero_grads)
