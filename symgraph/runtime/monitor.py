"""``sg.monitor.Monitor`` (MXNet's ``mx.mon.Monitor``) and the executor's monitor callback.

``Executor.set_monitor_callback(callback, monitor_all)`` makes every ``forward`` report the
value of every op node's outputs, named ``<node>_<output>`` (``fc1_output``), and with
``monitor_all`` its inputs first (``<node>_<input>``, preceded by the variable's own name for a
variable input), in execution order, as MXNet's graph executor does; every ``backward`` reports
what each op node sends back to its inputs (``<node>_backward_output<i>``, see
``monitor_backward``). The name is passed as
``bytes`` (MXNet passes a C string; its tests decode it with ``py_str``), the value as an
NDArray.

The values come from a second program compiled from the same graph with every node output
made a graph output, bound to the same argument arrays and to copies of the auxiliary states
(its own training forward must not update them twice), and run with the random generator
replayed from the state the monitored forward started from, so Dropout masks agree. The
optimised program the executor runs is untouched: fused kernels do not materialise
intermediate values, and a monitored run is a debugging run.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Optional

import numpy as np

from ..core.attrs import Attrs
from .compile import Stage, build_stage
from ..core.context import Context
from ..core.graph import Entry, Graph
from .ndarray import NDArray, array
from ..core.registry import OpDef, get_op

__all__ = ["Monitor"]

Callback = Callable[[bytes, NDArray], None]


class ExecutorMonitor:
    """What one executor reports to its monitor callback: ``graph`` (typed) is the executor's,
    run on ``ctx`` with its argument and aux arrays (probe programs built on first use)."""

    def __init__(self, graph: Graph, ctx: Context, arg_dict: dict[str, NDArray],
                 aux_dict: dict[str, NDArray], callback: Callback, monitor_all: bool,
                 grad_req: Optional[dict[str, str]] = None) -> None:
        self.graph, self.ctx, self.callback, self.monitor_all = graph, ctx, callback, monitor_all
        self.grad_req = grad_req or {}  # the executor's: which arguments get a gradient
        self.arg_dict, self.aux_dict = arg_dict, aux_dict
        self._entries = [e for n in graph.nodes() if not n.is_variable for e in n.entries()]
        self._probes: dict[bool, Stage] = {}  # is_train -> program with every entry an output
        self._backward: Any = None  # the BackwardProbe, built on the first backward

    def _probe(self, is_train: bool) -> Stage:
        stage = self._probes.get(is_train)
        if stage is None:
            probe = Graph(tuple(self._entries), self.graph.types)
            stage = self._probes[is_train] = build_stage(probe, (), is_train, self.ctx)
        return stage

    def after_forward(self, is_train: bool, rng_state: dict) -> None:
        """Report the forward that just ran (from ``rng_state``)."""
        stage = self._probe(is_train)
        env, _ = self._replay(rng_state, lambda aux: self._run_forward(stage, aux, is_train))
        read, dtypes = stage.program.read, stage.schedule.dtypes
        values = {e: array(read(env, slot), self.ctx, dtypes[slot])
                  for e, slot in zip(self._entries, stage.outputs)}
        self._report(values)

    def after_step(self, is_train: bool, rng_state: dict, out_grads: Any) -> None:
        """Report a forward and its backward run as one program (``train_step``)."""
        self.after_forward(is_train, rng_state)
        self.after_backward(is_train, rng_state, out_grads)

    def after_backward(self, is_train: bool, rng_state: dict, out_grads: Any) -> None:
        """Report what each op node's backward sent to its inputs, last node first (see
        ``monitor_backward``), for the forward that began from ``rng_state``."""
        from .monitor_backward import BackwardProbe
        if self._backward is None:
            needs = {n for n, r in self.grad_req.items() if r != "null"}
            self._backward = BackwardProbe(self.graph, self.ctx, needs)
        probe = self._backward
        found = self._replay(rng_state, lambda aux: probe.run((self.arg_dict, aux), is_train,
                                                              out_grads))
        for name, value in found:
            self.callback(name.encode(), value)

    def _run_forward(self, stage: Stage, aux: dict, is_train: bool) -> tuple:
        env, run_ctx = stage.start((self.arg_dict, aux), is_train)
        stage.run(env, run_ctx, "forward")
        return env, run_ctx

    def _replay(self, rng_state: dict, run: Callable[[dict], Any]) -> Any:
        """``run(copies of the aux states)`` with the generator at ``rng_state`` (the
        monitored run's draws), restored afterwards."""
        from . import random as _random
        aux = {n: array(a.asnumpy(), a.context, a.dtype) for n, a in self.aux_dict.items()}
        saved = _random.generator().bit_generator.state
        _random.generator().bit_generator.state = rng_state
        try:
            return run(aux)
        finally:
            _random.generator().bit_generator.state = saved

    def _report(self, values: dict[Entry, NDArray]) -> None:
        arrays = {**self.arg_dict, **self.aux_dict}
        for node in self.graph.nodes():
            if node.is_variable:
                continue
            opdef = get_op(node.op)
            if self.monitor_all:
                for slot, e in zip(monitor_input_names(opdef, node.attrs), node.inputs):
                    value = arrays[e.node.name] if e.node.is_variable else values[e]
                    if e.node.is_variable:
                        self.callback(e.node.name.encode(), value)
                    self.callback(f"{node.name}_{slot}".encode(), value)
            for out, e in zip(opdef.output_names(node.attrs), node.entries()):
                self.callback(f"{node.name}_{out}".encode(), values[e])


def monitor_input_names(opdef: OpDef, attrs: Attrs) -> tuple[str, ...]:
    """The input names MXNet's monitor reports: the op's, or ``input0``... for ops that MXNet
    registers without input names (``OpDef.extra["monitor_inputs"]``: Activation...)."""
    names = opdef.input_names(attrs)
    prefix = opdef.extra.get("monitor_inputs")
    return names if prefix is None else tuple(f"{prefix}{i}" for i in range(len(names)))


def _norm_stat(x: NDArray) -> NDArray:
    """MXNet's default statistic: the L2 norm divided by sqrt(size)."""
    v = x.asnumpy().astype(np.float64)
    return array(np.array([np.linalg.norm(v.ravel()) / math.sqrt(max(v.size, 1))]),
                 x.context, np.float32)


class Monitor:
    """Collect a statistic of every node output (and, at ``toc``, of every argument and
    auxiliary state) whose name matches ``pattern``, every ``interval`` batches.

    ``install(exe)`` before training; ``tic()`` before a batch's forward; ``toc()`` after
    it returns ``[(step, name, text of the statistic)]``; ``toc_print()`` logs them."""

    def __init__(self, interval: int, stat_func: Optional[Callable[[NDArray], Any]] = None,
                 pattern: str = ".*", sort: bool = False, monitor_all: bool = False) -> None:
        self.stat_func = stat_func or _norm_stat
        self.interval = int(interval)
        self.activated = False
        self.queue: list[tuple[int, str, Any]] = []
        self.step = 0
        self.exes: list[Any] = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

    def stat_helper(self, name: Any, array_: NDArray) -> None:
        """The executor callback: queue the statistic of a matching tensor while active."""
        name = name.decode() if isinstance(name, bytes) else str(name)
        if self.activated and self.re_prog.match(name):
            self.queue.append((self.step, name, self.stat_func(array_)))

    def install(self, exe: Any) -> None:
        """Monitor executor ``exe`` (several may be installed)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def tic(self) -> None:
        """Start collecting if this batch is one of every ``interval``."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self) -> list[tuple[int, str, str]]:
        """Stop collecting; add the arguments and auxiliary states; return the queue."""
        if not self.activated:
            return []
        for exe in self.exes:
            for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(arr)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda item: item[1])
        res = [(step, name, _as_text(stat)) for step, name, stat in self.queue]
        self.queue = []
        return res

    def toc_print(self) -> None:
        """``toc`` and log each line as MXNet does (to the ``symgraph`` logger, which
        propagates to the root logger MXNet writes to)."""
        from ..core.log import LOGGER
        for step, name, text in self.toc():
            LOGGER.info("Batch: {:7d} {:30s} {:s}".format(step, name, text))


def _as_text(stat: Any) -> str:
    values = stat if isinstance(stat, list) else [stat]
    out = ""
    for v in values:
        host = v.asnumpy() if isinstance(v, NDArray) else np.asarray(v)
        out += (str(host.reshape(())[()]) if host.shape == (1,) else str(host)) + "\t"
    return out
