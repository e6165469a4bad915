"""Unrolling rules of the control-flow ops (``OpDef.extra["unroll"]``), read by
``passes/unroll_control_flow.py``: each rewrites one node into its subgraphs' ops copied per
step, so a backend that runs whole programs (CUDA: one CUDA graph) needs no per-step host work.

* ``_foreach``: step t reads ``slice_axis(data, 0, t, t+1)`` reshaped to a row; outputs are
  joined with ``Concat`` of ``expand_dims`` rows. The trip count is axis 0 of the data.
* ``_while_loop``: ``max_iterations`` steps, each guarded by a float32 flag ``active`` (1 while
  every ``cond`` so far held): a step's new variables are ``where(active, new, old)`` and its
  output row ``where(active, row, 0)``, which is the numpy reference's result.
* ``_cond``: both branches, then ``where(pred, then, else)`` per output.

A rule returns one entry per node output (hidden ones included), as ``graph.rewrite`` wants.
"""
from __future__ import annotations

from typing import Any, Optional

from ...core.build import OPS, Handle
from ...core.graph import Entry, Node
from ...core.types.table import TypeTable


def _h(e: Entry) -> Handle:
    return Handle((e,))


def _row(x: Entry, t: int, shape: tuple) -> Entry:
    """Row t of ``x`` (axis 0 dropped)."""
    part = OPS.slice_axis(_h(x), axis=0, begin=t, end=t + 1)
    return OPS.Reshape(part, shape=tuple(shape[1:])).outputs_[0]


def stack(rows: list[Entry], shape: Optional[tuple], dtype: Any) -> Entry:
    """``rows`` joined along a new axis 0 (zeros of (0,) + ``shape`` for no rows)."""
    if not rows:
        return OPS._zeros(shape=(0,) + tuple(shape or ()), dtype=dtype).outputs_[0]
    ups = [OPS.expand_dims(_h(r), axis=0) for r in rows]
    return (ups[0] if len(ups) == 1 else OPS.Concat(*ups, dim=0)).outputs_[0]


def _row_shape(e: Entry, types: TypeTable) -> tuple:
    """The shape of one row of a stacked output."""
    return tuple((types.shape(e) or (0,))[1:])


def unroll_foreach(node: Node, types: TypeTable) -> list[Entry]:
    """``_foreach`` as its body copied once per row of the data."""
    a, body = node.attrs, node.attrs["body"]
    data, held, n_out = a["in_data_locs"], a["in_state_locs"], a["num_out_data"]
    nd, ns = len(data), len(held)
    steps = types.shape(node.inputs[0])[0]
    states = list(node.inputs[nd:nd + ns])
    vals: list = [None] * len(body.inputs)
    for k, loc in zip(range(nd + ns, len(node.inputs)), a["remain_locs"]):
        vals[loc] = node.inputs[k]
    rows: list[list] = [[] for _ in range(n_out)]
    entered: list[list] = [[] for _ in range(ns)]
    for t in range(steps):
        for i, loc in enumerate(data):
            vals[loc] = _row(node.inputs[i], t, types.shape(node.inputs[i]))
        for j, loc in enumerate(held):
            vals[loc] = states[j]
            entered[j].append(states[j])
        got = body.splice(vals, f"{node.name}_t{t}_")
        rows = [r + [g] for r, g in zip(rows, got)]
        states = got[n_out:]
    outs = node.entries()
    made = [stack(rows[i], _row_shape(outs[i], types), types.dtype(outs[i]))
            for i in range(n_out)]
    return made + states + [stack(entered[j], types.shape(node.inputs[nd + j]),
                                  types.dtype(node.inputs[nd + j])) for j in range(ns)]


def _pick(flag: Entry, new: Entry, old: Any, types: TypeTable) -> Entry:
    """``new`` where the one-element float32 ``flag`` is set, else ``old``."""
    cond = OPS.broadcast_like(_h(flag), _h(new))
    dtype = types.dtype(new)
    if dtype is not None and dtype.name != "float32":
        cond = OPS.Cast(cond, dtype=dtype.name)
    return OPS.where(cond, _h(new), old).outputs_[0]


def _flag(pred: Entry) -> Handle:
    """A (1,) float32 1.0 / 0.0 from a one-element predicate of any dtype."""
    one = OPS.Reshape(_h(pred), shape=(1,))
    return OPS.Cast(OPS._not_equal_scalar(one, scalar=0.0), dtype="float32")


def unroll_while(node: Node, types: TypeTable) -> list[Entry]:
    """``_while_loop`` as ``max_iterations`` guarded copies of ``cond`` and ``func``."""
    a = node.attrs
    func, cond, n_out = a["func"], a["cond"], a["num_out_data"]
    var_in = [a["func_input_locs"][p] for p in a["func_var_locs"]]
    current = list(node.inputs)
    rows: list[list] = [[] for _ in range(n_out)]
    entered: list[list] = [[] for _ in var_in]
    flags: list[Entry] = []
    active: Optional[Handle] = None
    for t in range(a["max_iterations"]):
        pred = cond.splice([current[k] for k in a["cond_input_locs"]], f"{node.name}_c{t}_")[0]
        step = _flag(pred)
        active = step if active is None else active * step
        flag = active.outputs_[0]
        flags.append(flag)
        got = func.splice([current[k] for k in a["func_input_locs"]], f"{node.name}_t{t}_")
        for i in range(n_out):
            rows[i].append(_pick(flag, got[i], OPS.zeros_like(_h(got[i])), types))
        for j, k in enumerate(var_in):
            entered[j].append(current[k])
            current[k] = _pick(flag, got[n_out + j], _h(current[k]), types)
    outs = node.entries()
    made = [stack(rows[i], _row_shape(outs[i], types), types.dtype(outs[i]))
            for i in range(n_out)]
    finals = [current[k] for k in var_in]
    hidden = [stack(entered[j], types.shape(node.inputs[k]), types.dtype(node.inputs[k]))
              for j, k in enumerate(var_in)]
    mask = stack(flags, (1,), "float32")
    return made + finals + hidden + [mask]


def unroll_cond(node: Node, types: TypeTable) -> list[Entry]:
    """``_cond`` as both branches and a ``where`` per output."""
    a = node.attrs
    ins = node.inputs
    pred = a["cond"].splice([ins[k] for k in a["cond_input_locs"]], f"{node.name}_p_")[0]
    then = a["then_branch"].splice([ins[k] for k in a["then_input_locs"]], f"{node.name}_then_")
    other = a["else_branch"].splice([ins[k] for k in a["else_input_locs"]],
                                    f"{node.name}_else_")
    flag = _flag(pred).outputs_[0]
    return [_pick(flag, t, _h(e), types) for t, e in zip(then, other)]
