"""``_foreach``: a loop over axis 0 of its data, its body a :class:`~symgraph.core.subgraph.Subgraph`.

MXNet 1.9.1's op and attributes. Node inputs are the data arrays, the initial loop states and
the body's free inputs (weights, values computed outside), in that order; the body input that
each of them feeds is ``in_data_locs`` / ``in_state_locs`` / ``remain_locs`` (positions in the
body's input list). The body's outputs are ``num_out_data`` per-step outputs, then the new
states. The node's outputs: each per-step output stacked over the steps, each final state, and
(hidden) each state as it entered every step, stacked: what the gradient reads.

Gradient: a reverse ``_foreach`` over the body's gradient graph (which recomputes the body from
the saved states), carrying each state's gradient and summing the free inputs' gradients.
GPU: the CUDA backend unrolls the loop into the graph before autodiff
(``passes/unroll_control_flow.py``), so the body's kernels run in the one program and CUDA
graph with everything else; see ``lowering`` below and docs/control_flow.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.build import Handle
from ...core.graph import Entry, Graph, unique_name, variable
from ...core.registry import OPAQUE, OpDef, RunCtx, register
from ...core.subgraph import Subgraph
from ...core.types.shapes import merge_dims
from ...core.types.table import TypeTable
from .control_flow_unroll import unroll_foreach

LOCS_DOC = "Position in the body's input list of each {} input of the node."
UNROLLED = ("unrolled", {"pass": "unroll_control_flow"})
"""The GPU lowering of control-flow ops: the CUDA backend's forward pipeline rewrites them into
their bodies' ops (no step of this op reaches the GPU lowering; see ``cuda/lowering_views``)."""


@dataclass(frozen=True)
class Layout:
    """Where the node's inputs and outputs go in a ``_foreach`` body."""

    data: tuple[int, ...]
    states: tuple[int, ...]
    remain: tuple[int, ...]
    n_out: int  # per-step outputs

    @classmethod
    def of(cls, a: Attrs) -> "Layout":
        return cls(a["in_data_locs"], a["in_state_locs"], a["remain_locs"], a["num_out_data"])

    @property
    def locs(self) -> tuple[int, ...]:
        """Body input position of each node input, in node order."""
        return self.data + self.states + self.remain

    @property
    def nd(self) -> int:
        return len(self.data)

    @property
    def ns(self) -> int:
        return len(self.states)


def _inputs(a: Attrs) -> tuple[str, ...]:
    lay = Layout.of(a)
    return (tuple(f"data{i}" for i in range(lay.nd)) + tuple(f"init_state{j}" for j in
            range(lay.ns)) + tuple(f"remain{k}" for k in range(len(lay.remain))))


def _outputs(a: Attrs) -> tuple[str, ...]:
    return (tuple(f"output{i}" for i in range(a["num_outputs"]))
            + tuple(f"state_steps{j}" for j in range(len(a["in_state_locs"]))))


def _steps(ins: list, nd: int) -> Optional[int]:
    """The trip count: axis 0 of the data (all data arrays share it)."""
    counts = {s[0] for s in ins[:nd] if s is not None and len(s) > 0}
    if len(counts) > 1:
        raise ShapeError(f"data arrays disagree on the number of steps (axis 0): "
                         f"{[s for s in ins[:nd]]}")
    if any(s is not None and len(s) == 0 for s in ins[:nd]):
        raise ShapeError("foreach data must have an axis 0 to loop over, got a 0-d array")
    return counts.pop() if counts else None


def _stacked(steps: Optional[int], shape: Optional[tuple]) -> Optional[tuple]:
    return None if steps is None or shape is None else (steps,) + tuple(shape)


def _foreach_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    lay, body = Layout.of(a), a["body"]
    steps = _steps(ins, lay.nd)
    given: list = [None] * len(body.inputs)
    for k, loc in enumerate(lay.locs):
        s = ins[k]
        given[loc] = (tuple(s[1:]) if s is not None else None) if k < lay.nd else s
    for j, loc in enumerate(lay.states):  # a known final state fixes the initial one
        if given[loc] is None:
            given[loc] = outs[lay.n_out + j]
    # (0s come from partial shapes: Gluon's deferred weights, data of unknown length)
    bins, bouts = body.infer_shapes(given, partial=any(s is not None and 0 in s for s in given))
    state_shapes = []
    for j, loc in enumerate(lay.states):
        s_in, s_out = bins[loc], bouts[lay.n_out + j]
        if s_in is not None and s_out is not None:
            both = merge_dims(tuple(s_in), tuple(s_out))
            if both is None:
                raise ShapeError(f"loop state {j}: the body returns shape {tuple(s_out)} for "
                                 f"a state of shape {tuple(s_in)}")
            s_in = both
        state_shapes.append(s_in if s_in is not None else s_out)
    new_ins = [ins[k] if ins[k] is not None else _stacked(steps, bins[loc])
               for k, loc in enumerate(lay.data)]
    new_ins += state_shapes + [bins[loc] for loc in lay.remain]
    new_outs = [_stacked(steps, s) for s in bouts[:lay.n_out]] + state_shapes
    return new_ins, new_outs + [_stacked(steps, s) for s in state_shapes]


def _foreach_types(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    lay, body = Layout.of(a), a["body"]
    given: list = [None] * len(body.inputs)
    for k, loc in enumerate(lay.locs):
        given[loc] = ins[k]
    for j, loc in enumerate(lay.states):
        if given[loc] is None:
            given[loc] = outs[lay.n_out + j]
    bins, bouts = body.infer_types(given)
    states = [bins[loc] if bins[loc] is not None else bouts[lay.n_out + j]
              for j, loc in enumerate(lay.states)]
    new_ins = [bins[loc] for loc in lay.data] + states + [bins[loc] for loc in lay.remain]
    return new_ins, list(bouts[:lay.n_out]) + states + states


def _stack(items: list, steps: int, shape: Any, dtype: Any) -> np.ndarray:
    if not items:
        return np.zeros((steps,) + tuple(shape or ()), dtype)
    return np.stack(items)


def _foreach_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    lay, body = Layout.of(a), a["body"]
    steps = xs[0].shape[0]
    states = list(xs[lay.nd:lay.nd + lay.ns])
    vals: list = [None] * len(body.inputs)
    for k, loc in zip(range(lay.nd + lay.ns, len(xs)), lay.remain):
        vals[loc] = xs[k]
    outs: list[list] = [[] for _ in range(lay.n_out)]
    entered: list[list] = [[] for _ in range(lay.ns)]
    for t in range(steps):
        for i, loc in enumerate(lay.data):
            vals[loc] = xs[i][t]
        for j, loc in enumerate(lay.states):
            vals[loc] = states[j]
            entered[j].append(states[j])
        got = body.run(vals, ctx)
        for i in range(lay.n_out):
            outs[i].append(got[i])
        states = [np.asarray(s, dtype=np.asarray(xs[lay.nd + j]).dtype)
                  for j, s in enumerate(got[lay.n_out:])]
    if steps == 0:  # nothing ran: shapes from the body's rules
        given = [None] * len(body.inputs)
        for k, loc in enumerate(lay.locs):
            given[loc] = xs[k].shape[1:] if k < lay.nd else xs[k].shape
        shapes = body.infer_shapes(given)[1]
        outs_np = [_stack([], 0, shapes[i], xs[0].dtype) for i in range(lay.n_out)]
    else:
        outs_np = [np.stack(o) for o in outs]
    return outs_np + states + [_stack(e, steps, s.shape, s.dtype)
                               for e, s in zip(entered, xs[lay.nd:lay.nd + lay.ns])]


def body_types(body: Subgraph, shapes: list, dtypes: list) -> TypeTable:
    """A table of the body's input types (what its gradient rules may ask)."""
    known_s = {Entry(n): tuple(s) for n, s in zip(body.inputs, shapes) if s is not None}
    known_t = {Entry(n): np.dtype(t) for n, t in zip(body.inputs, dtypes) if t is not None}
    return TypeTable(known_s, known_t)


def body_gradient(body: Subgraph, table: Optional[TypeTable]) -> tuple[list, list]:
    """Gradient graph of ``body``: ``(head variables, one per output; gradient entries, one per
    input)``, built from the ops' gradient rules (so it runs, fuses and differentiates as any
    graph). Inputs no gradient reaches get ``zeros_like``."""
    from ..passes.gradient import gradient
    taken = {n.name for n in body.nodes()}
    heads = [variable(unique_name(f"{body.outputs[i].node.name}_head{i}", taken))
             for i in range(len(body.outputs))]
    graph = Graph(body.outputs, table)
    grads = gradient(graph, list(body.inputs), [Entry(h) for h in heads])
    return heads, grads


def _input_types(c: Any, lay: Layout, body: Subgraph) -> TypeTable:
    """The body's input types, from the node's input types in the outer table."""
    shapes: list = [None] * len(body.inputs)
    dtypes: list = [None] * len(body.inputs)
    for k, loc in enumerate(lay.locs):
        e = c.inputs[k].outputs_[0]
        s = c.types.shape(e) if c.types is not None else None
        shapes[loc] = (tuple(s[1:]) if k < lay.nd else s) if s is not None else None
        dtypes[loc] = c.types.dtype(e) if c.types is not None else None
    return body_types(body, shapes, dtypes)


def _reverse_body(body: Subgraph, lay: Layout, table: TypeTable) -> tuple[Subgraph, dict]:
    """The reverse loop's body and its attributes: per step it reads the data, the state that
    entered the step and the step's output gradients; it carries the states' gradients and
    sums the free inputs' gradients."""
    heads, grads = body_gradient(body, table)
    taken = {n.name for n in body.nodes()} | {h.name for h in heads}
    accs = [variable(unique_name(f"{body.inputs[loc].name}_grad_sum", taken))
            for loc in lay.remain]
    total = [(Handle((Entry(acc),)) + Handle((grads[loc],))).outputs_[0]
             for acc, loc in zip(accs, lay.remain)]
    outputs = [grads[loc] for loc in lay.data] + [grads[loc] for loc in lay.states] + total
    n_in, n_out = len(body.inputs), len(body.outputs)
    back = Subgraph.of(outputs, list(body.inputs) + heads + accs)
    attrs = {"body": back, "num_out_data": lay.nd,
             "num_outputs": lay.nd + lay.ns + len(lay.remain),
             "in_data_locs": lay.data + lay.states + tuple(n_in + i for i in range(lay.n_out)),
             "in_state_locs": (tuple(n_in + lay.n_out + j for j in range(lay.ns))
                               + tuple(n_in + n_out + k for k in range(len(lay.remain)))),
             "remain_locs": lay.remain}
    return back, attrs


def _foreach_grad(c: Any) -> list:
    a, body = c.attrs, c.attrs["body"]
    lay = Layout.of(a)
    _, attrs = _reverse_body(body, lay, _input_types(c, lay, body))
    n_outputs = a["num_outputs"]
    data = c.inputs[:lay.nd]
    remain = c.inputs[lay.nd + lay.ns:]
    entered = c.outputs[n_outputs:n_outputs + lay.ns]

    def rev(h: Any) -> Any:
        return c.sym.reverse(h, axis=(0,))
    seq = [rev(d) for d in data] + [rev(s) for s in entered] + \
        [rev(dy) for dy in c.ograds[:lay.n_out]]
    init = list(c.ograds[lay.n_out:lay.n_out + lay.ns]) + [c.sym.zeros_like(r) for r in remain]
    ins = seq + init + list(remain)
    got = c.sym._foreach(*ins, num_args=len(ins) + 1, **attrs)
    got = list(got)
    return [rev(g) for g in got[:lay.nd]] + got[lay.nd:]


register(OpDef(
    "_foreach",
    {"body": Param("subgraph", doc="The loop body: per-step inputs to per-step outputs and "
                                   "new states."),
     "num_args": Param("int", doc="Number of inputs plus one (the body), as MXNet counts."),
     "num_outputs": Param("int", doc="Per-step outputs plus final states."),
     "num_out_data": Param("int", doc="Number of per-step outputs (stacked along axis 0)."),
     "in_state_locs": Param("shape", doc=LOCS_DOC.format("loop state")),
     "in_data_locs": Param("shape", doc=LOCS_DOC.format("data")),
     "remain_locs": Param("shape", doc=LOCS_DOC.format("free (loop-invariant)"))},
    _inputs, _foreach_shape, _foreach_compute, _foreach_grad, OPAQUE,
    infer_type=_foreach_types, outputs=_outputs, num_visible=lambda a: a["num_outputs"],
    partial_shapes=True,  # a data shape (0, ...) of unknown length still shapes the body
    lowering=UNROLLED, extra={"unroll": unroll_foreach},
    doc="MXNet's foreach: runs ``body`` over axis 0 of the data, carrying loop states "
        "(``sg.sym.contrib.foreach`` traces the body)."))
