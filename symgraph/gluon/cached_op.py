"""A hybridized block's traced program: the Symbol that ``hybrid_forward(sg.sym, ...)``
returned, replayed on NDArrays.

The trace happens once per input signature (shapes, dtypes, context). A call then walks the
traced graph's op nodes in topological order and records each through ``symgraph.imperative``
(the same entry point as every ``sg.nd`` call): the recorded graph is structurally the same at
every step, so the compiled program is found in the imperative program cache, and under
``autograd.record()`` forward and backward still compile into one program. No Block code or
``hybrid_forward`` Python runs after the trace.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ..runtime import ndarray as nd
from ..core.base import BindError, GraphError
from .nested import flatten, regroup
from .hybrid_state import CachedTrace, ParamArrays
from .parameter import VERSION


class TracedProgram:
    """A traced graph ready to replay: per op node its op, attrs and where its inputs are."""

    def __init__(self, block: Any, inputs: Sequence[Any], out: Any) -> None:
        from ..core.graph import topo_order
        graph = out.graph()
        self.input_names = [i.name for i in inputs]
        params = block.collect_params()
        self.params: dict[str, Any] = {}
        self.steps: list[tuple] = []  # (position, call, input references, name)
        self.inputs: list[tuple[int, int]] = []  # (position, argument index)
        self.param_at: list[tuple[int, Any]] = []  # (position, Parameter)
        index: dict[Any, int] = {}
        for node in topo_order(graph.outputs):
            if node.is_variable:
                if node.name in self.input_names:
                    self.inputs.append((len(index), self.input_names.index(node.name)))
                elif node.name in params:
                    self.params[node.name] = params[node.name]
                    self.param_at.append((len(index), params[node.name]))
                else:
                    raise GraphError(f"{block.name}: unknown input {node.name!r} of the "
                                     f"traced graph (not an input nor a Parameter)")
                index[node] = len(index)
                continue
            refs = tuple((index[e.node], e.index) for e in node.inputs)
            self.steps.append((len(index), _call_of(node), refs, node.name))
            index[node] = len(index)
        self.n_nodes = len(index)
        self.outputs = [(index[e.node], e.index) for e in graph.outputs]
        self.n_out = len(graph.outputs)
        self._arrays: Optional[ParamArrays] = None  # (position, (array,)) per parameter

    def run(self, args: Sequence[Any]) -> Any:
        """Record the traced nodes on ``args`` and the parameters' arrays; the outputs."""
        from ..frontend import imperative
        ctx = args[0].context
        got = self._arrays
        if got is None or not got.valid_for(ctx):
            got = self._arrays = ParamArrays(VERSION[0], ctx, [(pos, (p.data(ctx),))
                                                               for pos, p in self.param_at])
        values: list[Any] = [None] * self.n_nodes
        for pos, arrays in got.arrays:
            values[pos] = arrays
        for pos, k in self.inputs:
            values[pos] = (args[k],)
        record = imperative.record
        for pos, info, refs, name in self.steps:
            ins = []  # (a loop: a comprehension is a function call per node in Python 3.11)
            for i, k in refs:
                ins.append(values[i][k])
            values[pos] = record(info, ins, name)
        outs = [values[i][k] for i, k in self.outputs]
        return outs[0] if self.n_out == 1 else outs


def _call_of(node: Any) -> Any:
    """The imperative call of a traced node: its op with its parsed attributes (made once,
    so a replay records each node without parsing or looking up anything)."""
    from ..frontend import imperative
    from ..core.registry import get_op
    return imperative.call_info(get_op(node.op), dict(node.attrs), node.name)


def _finish_deferred(block: Any, inputs: Sequence[Any], out: Any, args: Sequence[Any]) -> None:
    """Infer unknown parameter shapes from the inputs and run pending initialisations."""
    params = block.collect_params()
    pending = [p for p in params.values() if p._data is None and p._deferred is not None]
    if not pending:
        return
    shapes = {i.name: tuple(a.shape) for i, a in zip(inputs, args)}
    arg_shapes, _, aux_shapes = out.infer_shape_partial(**shapes)
    known = dict(zip(out.list_arguments(), arg_shapes))
    known.update(zip(out.list_auxiliary_states(), aux_shapes))
    for p in pending:
        if known.get(p.name):  # (unknown: () or None)
            p.shape = known[p.name]
        p._finish_deferred_init()


MAX_SIGNATURES = 64  # traces a block keeps (one per input shapes; their programs: imperative.cache)


def _check_inputs(block: Any, flat: Sequence[Any]) -> None:
    """BindError (a ValueError, as MXNet raises) unless the inputs of a hybridized call are
    NDArrays (or None) on one context."""
    arrays = [a for a in flat if a is not None]
    for a in arrays:
        if not isinstance(a, nd.NDArray):
            raise BindError(f"{block.name}: a hybridized block takes NDArrays (or None) as "
                            f"inputs, got {type(a).__name__} {str(a)[:40]}")
    ctxs = sorted({str(a.context) for a in arrays})
    if len(ctxs) > 1:
        raise BindError(f"{block.name}: the inputs of a hybridized call are on several "
                        f"contexts {ctxs}; copy them to one (as_in_context)")


def prepare_cached(block: Any, args: Sequence[Any]) -> CachedTrace:
    """``block``'s traced program for NDArrays ``args`` (tracing on a new input signature),
    with the nesting of its outputs."""
    flat, fmt = flatten(args)  # (an RNN layer's states come as a list; None: left out)
    try:
        key = (tuple([None if a is None else (a.shape, a.dtype, a.context) for a in flat]),
               fmt)
    except AttributeError:
        key = None
    got = block._cached.get(key)  # (dtypes hash as themselves)
    if got is None:
        _check_inputs(block, flat)
        inputs, out = block._get_graph(*args)
        _finish_deferred(block, inputs, out, [a for a in flat if a is not None])
        got = block._cached[key] = CachedTrace(TracedProgram(block, inputs, out),
                                               block._out_format)
        while len(block._cached) > MAX_SIGNATURES:  # (the oldest trace: traced again if needed)
            del block._cached[next(iter(block._cached))]
    return got


def call_cached(block: Any, args: Sequence[Any]) -> Any:
    """Run ``block`` hybridized on NDArrays ``args`` (tracing on a new input signature)."""
    cached = prepare_cached(block, args)
    flat = [a for a in flatten(args)[0] if a is not None]
    hook = block._op_hook
    if hook is not None:
        from .op_hook import run_hooked
        outs = run_hooked(cached.program, flat, hook.callback, hook.monitor_all)
    else:
        outs = cached.program.run(flat)
    fmt = cached.out_format
    if fmt is None:
        return outs
    # a list of one output comes back as that list, as the block returned it (MXNet's regroup)
    return regroup(outs if isinstance(outs, list) else [outs], fmt)
