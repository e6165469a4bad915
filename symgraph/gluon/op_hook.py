"""``HybridBlock.register_op_hook``: a traced program replayed with a callback on each op.

MXNet's monitor names an op's output ``<node>_output`` (``<node>_output<i>`` past the first)
and, with ``monitor_all``, its inputs ``<node>_<input name>`` before the op runs (``input0``...
for the ops MXNet registers without input names, as ``sg.monitor`` does). Names come
as bytes, as MXNet's C API passes them (callbacks decode them with ``py_str``); the array is
the (lazy) NDArray itself, and reading it computes what it depends on.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..runtime.monitor import monitor_input_names


def run_hooked(program: Any, args: Sequence[Any], callback: Callable,
               monitor_all: bool) -> Any:
    """:meth:`TracedProgram.run` with ``callback(name, op_name, array)`` per op."""
    from ..frontend import imperative
    ctx = args[0].context
    values: list[Any] = [None] * program.n_nodes
    for pos, p in program.param_at:
        values[pos] = (p.data(ctx),)
    for pos, k in program.inputs:
        values[pos] = (args[k],)
    for pos, info, refs, name in program.steps:
        ins = [values[i][k] for i, k in refs]
        if monitor_all:
            for slot, arr in zip(monitor_input_names(info.opdef, info.attrs), ins):
                callback(f"{name}_{slot}".encode(), info.op.encode(), arr)
        values[pos] = outs = imperative.record(info, ins, name)
        for j, arr in enumerate(outs[:info.nvis]):
            callback(f"{name}_output{j or ''}".encode(), info.op.encode(), arr)
    outs = [values[i][k] for i, k in program.outputs]
    return outs[0] if program.n_out == 1 else outs
