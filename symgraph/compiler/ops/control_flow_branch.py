"""``_while_loop`` and ``_cond``: MXNet 1.9.1's data-dependent control-flow ops.

Both take the union of their subgraphs' inputs as node inputs; ``<graph>_input_locs[i]`` is the
node input feeding input i of that subgraph (MXNet's attributes).

* ``_while_loop``: while ``cond`` (a one-element subgraph output) is non-zero and fewer than
  ``max_iterations`` steps ran, ``func`` maps the loop variables (input ``func_var_locs[j]`` of
  ``func`` is variable j) to ``num_out_data`` step outputs and new variables. Step outputs are
  stacked over ``max_iterations`` rows, as MXNet's shapes are static; rows past the last step
  are zeros (MXNet leaves them undefined). Hidden outputs: each variable as it entered every
  step (rows past the last step repeat the final value) and a (max_iterations, 1) mask of the
  steps that ran. Gradient: a reverse ``_foreach`` over all rows whose body applies ``func``'s
  gradient where the mask is set and passes the carried gradient on elsewhere.
* ``_cond``: ``then_branch`` or ``else_branch`` by the one-element output of ``cond``.
  Gradient: a ``_cond`` on the same predicate choosing between the branches' gradient graphs.

GPU: unrolled into the graph by the CUDA backend (``passes/unroll_control_flow.py``): a
``_while_loop`` becomes ``max_iterations`` masked steps, a ``_cond`` both branches and a
``where``, so neither returns to the host.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.build import OPS, Handle
from ...core.graph import Entry, variable
from ...core.registry import OPAQUE, OpDef, RunCtx, register
from ...core.subgraph import Subgraph
from .control_flow import UNROLLED, body_gradient, body_types
from .control_flow_unroll import unroll_cond, unroll_while

LOCS_DOC = "Node input feeding each input of the {} subgraph."


def n_inputs(a: Attrs, graphs: tuple[str, ...]) -> int:
    """Node inputs: one past the largest position any subgraph reads."""
    return 1 + max((x for g in graphs for x in a[f"{g}_input_locs"]), default=-1)


def _scalar(value: Any, what: str) -> bool:
    arr = np.asarray(value)
    if arr.size != 1:
        raise ShapeError(f"{what} must have one element, got shape {arr.shape}")
    return bool(arr.reshape(()))


def _var_inputs(a: Attrs) -> list[int]:
    """Node input holding each loop variable's initial value."""
    return [a["func_input_locs"][p] for p in a["func_var_locs"]]


def _subgraph_given(locs: tuple, values: list) -> list:
    return [values[k] for k in locs]


def _while_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    func, cond, top = a["func"], a["cond"], a["max_iterations"]
    n_out, var_in = a["num_out_data"], _var_inputs(a)
    ins = list(ins)
    for j, k in enumerate(var_in):  # a known final variable fixes the initial one
        if ins[k] is None:
            ins[k] = outs[n_out + j]
    fins, fouts = func.infer_shapes(_subgraph_given(a["func_input_locs"], ins))
    cins, couts = cond.infer_shapes(_subgraph_given(a["cond_input_locs"], ins))
    for locs, found in ((a["func_input_locs"], fins), (a["cond_input_locs"], cins)):
        for k, s in zip(locs, found):
            ins[k] = ins[k] if ins[k] is not None else s
    if couts[0] is not None and int(np.prod(couts[0])) != 1:
        raise ShapeError(f"cond must give one element, gives shape {couts[0]}")
    var_shapes = [ins[k] for k in var_in]
    for j, (s_in, s_out) in enumerate(zip(var_shapes, fouts[n_out:])):
        if s_in is not None and s_out is not None and tuple(s_in) != tuple(s_out):
            raise ShapeError(f"loop variable {j}: func returns shape {tuple(s_out)} for a "
                             f"variable of shape {tuple(s_in)}")
    rows = [None if s is None else (top,) + tuple(s) for s in fouts[:n_out]]
    hidden = [None if s is None else (top,) + tuple(s) for s in var_shapes]
    return ins, rows + var_shapes + hidden + [(top, 1)]


def _while_types(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    n_out, var_in = a["num_out_data"], _var_inputs(a)
    ins = list(ins)
    for j, k in enumerate(var_in):
        if ins[k] is None:
            ins[k] = outs[n_out + j]
    fins, fouts = a["func"].infer_types(_subgraph_given(a["func_input_locs"], ins))
    cins, _ = a["cond"].infer_types(_subgraph_given(a["cond_input_locs"], ins))
    for locs, found in ((a["func_input_locs"], fins), (a["cond_input_locs"], cins)):
        for k, t in zip(locs, found):
            ins[k] = ins[k] if ins[k] is not None else t
    var_types = [ins[k] for k in var_in]
    return ins, list(fouts[:n_out]) + var_types + var_types + [np.dtype(np.float32)]


def _while_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    func, cond, top, n_out = a["func"], a["cond"], a["max_iterations"], a["num_out_data"]
    var_in = _var_inputs(a)
    current = list(xs)
    rows: list[list] = [[] for _ in range(n_out)]
    entered: list[list] = [[] for _ in var_in]
    steps = 0
    while steps < top and _scalar(cond.run(_subgraph_given(a["cond_input_locs"], current),
                                           ctx)[0], "while_loop cond"):
        got = func.run(_subgraph_given(a["func_input_locs"], current), ctx)
        for i in range(n_out):
            rows[i].append(np.asarray(got[i]))
        for j, k in enumerate(var_in):
            entered[j].append(current[k])
            current[k] = np.asarray(got[n_out + j], dtype=np.asarray(xs[k]).dtype)
        steps += 1
    shapes = _while_shape(a, [np.shape(x) for x in xs], [None] * (n_out + 2 * len(var_in) + 1))
    dtypes = _while_types(a, [np.asarray(x).dtype for x in xs], [None] * len(shapes[1]))[1]
    outs = []
    for i in range(n_out):
        full = np.zeros(shapes[1][i], dtypes[i])
        if steps:
            full[:steps] = np.stack(rows[i])
        outs.append(full)
    finals = [current[k] for k in var_in]
    hidden = [np.stack(e + [f] * (top - steps)) if top else np.zeros((0,) + f.shape, f.dtype)
              for e, f in zip(entered, finals)]
    mask = (np.arange(top) < steps).astype(np.float32).reshape(top, 1)
    return outs + finals + hidden + [mask]


def _masked_reverse_body(func: Subgraph, a: Attrs, table: Any) -> tuple[Subgraph, dict]:
    """Body of the reverse loop of a ``_while_loop``'s gradient: ``func``'s gradient where
    the step ran (mask 1), the carried gradient unchanged where it did not."""
    heads, grads = body_gradient(func, table)
    n_out, var_pos = a["num_out_data"], list(a["func_var_locs"])
    free = [p for p in range(len(func.inputs)) if p not in var_pos]
    mask = variable("_step_mask")
    accs = [variable(f"_grad_sum{k}") for k in range(len(free))]
    m = Handle((Entry(mask),))

    def chosen(p: int, other: Any) -> Entry:
        """Input p's gradient where the step ran, ``other`` elsewhere (the mask is float32:
        cast to the gradient's dtype, which ``where`` needs)."""
        g = Handle((grads[p],))
        dtype = table.dtype(Entry(func.inputs[p])) if table is not None else None
        cond = OPS.broadcast_like(m, g)
        cond = cond if dtype is None or dtype == np.float32 else OPS.Cast(cond, dtype=dtype)
        return OPS.where(cond, g, other).outputs_[0]
    carried = [Handle((Entry(h),)) for h in heads[n_out:]]
    new_carried = [chosen(p, carried[j]) for j, p in enumerate(var_pos)]
    sums = [(Handle((Entry(acc),)) + Handle((chosen(p, OPS.zeros_like(Handle((grads[p],)))),))
             ).outputs_[0] for acc, p in zip(accs, free)]
    back = Subgraph.of(new_carried + sums, list(func.inputs) + heads + [mask] + accs)
    n_in, n_heads = len(func.inputs), len(heads)
    lay = {"body": back, "num_out_data": 0, "num_outputs": len(var_pos) + len(free),
           "in_data_locs": tuple(var_pos) + tuple(n_in + i for i in range(n_out))
           + (n_in + n_heads,),
           "in_state_locs": tuple(n_in + n_out + j for j in range(len(var_pos)))
           + tuple(n_in + n_heads + 1 + k for k in range(len(free))),
           "remain_locs": tuple(free)}
    return back, lay


def _while_grad(c: Any) -> list:
    a, func = c.attrs, c.attrs["func"]
    n_out, n_var = a["num_out_data"], len(a["func_var_locs"])
    locs = a["func_input_locs"]
    table = _types_at(c, func, locs)
    _, attrs = _masked_reverse_body(func, a, table)
    n_outputs = a["num_outputs"]
    hidden = c.outputs[n_outputs:n_outputs + n_var]
    mask = c.outputs[n_outputs + n_var]

    def rev(h: Any) -> Any:
        return c.sym.reverse(h, axis=(0,))
    free = [locs[p] for p in attrs["remain_locs"]]
    seq = [rev(h) for h in hidden] + [rev(dy) for dy in c.ograds[:n_out]] + [rev(mask)]
    init = list(c.ograds[n_out:n_out + n_var]) + [c.sym.zeros_like(c.inputs[k]) for k in free]
    remain = [c.inputs[k] for k in free]
    ins = seq + init + remain
    got = list(c.sym._foreach(*ins, num_args=len(ins) + 1, **attrs))
    grads: list = [None] * len(c.inputs)
    for j, p in enumerate(a["func_var_locs"]):
        grads[locs[p]] = got[j]
    for k, node_in in enumerate(free):
        grads[node_in] = got[n_var + k] if grads[node_in] is None else \
            grads[node_in] + got[n_var + k]
    return grads


def _types_at(c: Any, sub: Subgraph, locs: tuple) -> Any:
    """The table of ``sub``'s input types, read from the node's inputs at ``locs``."""
    shapes, dtypes = [], []
    for k in locs:
        e = c.inputs[k].outputs_[0]
        shapes.append(c.types.shape(e) if c.types is not None else None)
        dtypes.append(c.types.dtype(e) if c.types is not None else None)
    return body_types(sub, shapes, dtypes)


register(OpDef(
    "_while_loop",
    {"cond": Param("subgraph", doc="The loop condition: loop values to one element."),
     "func": Param("subgraph", doc="The loop body: loop values to step outputs and new "
                                   "loop variables."),
     "num_args": Param("int", doc="Number of inputs plus the two subgraphs, as MXNet counts."),
     "num_outputs": Param("int", doc="Step outputs plus final loop variables."),
     "num_out_data": Param("int", doc="Number of step outputs (stacked along axis 0)."),
     "max_iterations": Param("int", doc="Most steps run; step outputs have this many rows."),
     "cond_input_locs": Param("shape", doc=LOCS_DOC.format("cond")),
     "func_input_locs": Param("shape", doc=LOCS_DOC.format("func")),
     "func_var_locs": Param("shape", doc="Position in func's inputs of each loop variable.")},
    lambda a: tuple(f"in{i}" for i in range(n_inputs(a, ("cond", "func")))),
    _while_shape, _while_compute, _while_grad, OPAQUE, infer_type=_while_types,
    outputs=lambda a: (tuple(f"output{i}" for i in range(a["num_outputs"]))
                       + tuple(f"var_steps{j}" for j in range(len(a["func_var_locs"])))
                       + ("steps_mask",)),
    num_visible=lambda a: a["num_outputs"], lowering=UNROLLED,
    extra={"unroll": unroll_while},
    doc="MXNet's while_loop: runs ``func`` while ``cond`` holds, at most max_iterations "
        "times (``sg.sym.contrib.while_loop`` traces both)."))


def _cond_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    ins = list(ins)
    found = []
    for g in ("cond", "then", "else"):
        sub = a[g if g == "cond" else f"{g}_branch"]
        locs = a[f"{g}_input_locs"]
        sins, souts = sub.infer_shapes(_subgraph_given(locs, ins))
        for k, s in zip(locs, sins):
            ins[k] = ins[k] if ins[k] is not None else s
        found.append(souts)
    for i, (t, e) in enumerate(zip(found[1], found[2])):
        if t is not None and e is not None and tuple(t) != tuple(e):
            raise ShapeError(f"output {i}: then_branch gives shape {tuple(t)}, else_branch "
                             f"{tuple(e)}")
    return ins, [t if t is not None else e for t, e in zip(found[1], found[2])]


def _cond_types(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    ins = list(ins)
    found = []
    for g in ("cond", "then", "else"):
        sub, locs = a[g if g == "cond" else f"{g}_branch"], a[f"{g}_input_locs"]
        sins, souts = sub.infer_types(_subgraph_given(locs, ins))
        for k, t in zip(locs, sins):
            ins[k] = ins[k] if ins[k] is not None else t
        found.append(souts)
    return ins, [t if t is not None else e for t, e in zip(found[1], found[2])]


def _cond_compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
    pred = a["cond"].run(_subgraph_given(a["cond_input_locs"], xs), ctx)[0]
    g = "then" if _scalar(pred, "cond's predicate") else "else"
    return a[f"{g}_branch"].run(_subgraph_given(a[f"{g}_input_locs"], xs), ctx)


def _branch_gradient(sub: Subgraph, locs: tuple, n_in: int, table: Any) -> Subgraph:
    """Gradient graph of one branch over every node input (zeros for those it does not
    read): inputs are the node's inputs then one head gradient per output."""
    outer = [variable(f"_in{k}") for k in range(n_in)]
    spliced = sub.splice([Entry(outer[k]) for k in locs], "")
    inner = Subgraph(outer, spliced)
    heads, grads = body_gradient(inner, table)
    return Subgraph.of(grads, outer + heads)


def _cond_grad(c: Any) -> list:
    a = c.attrs
    n_in = len(c.inputs)
    shapes = [c.types.shape(h.outputs_[0]) if c.types is not None else None for h in c.inputs]
    dtypes = [c.types.dtype(h.outputs_[0]) if c.types is not None else None for h in c.inputs]
    every = tuple(range(n_in + len(c.ograds)))
    branches = {}
    for g in ("then", "else"):
        outer = [variable(f"_in{k}") for k in range(n_in)]
        table = body_types(Subgraph(outer, ()), shapes, dtypes)
        branches[f"{g}_branch"] = _branch_gradient(a[f"{g}_branch"], a[f"{g}_input_locs"],
                                                   n_in, table)
    ins = list(c.inputs) + list(c.ograds)
    got = c.sym._cond(*ins, cond=a["cond"], num_args=len(ins) + 3, num_outputs=n_in,
                      cond_input_locs=a["cond_input_locs"], then_input_locs=every,
                      else_input_locs=every, **branches)
    return [got[k] for k in range(n_in)]


register(OpDef(
    "_cond",
    {"cond": Param("subgraph", doc="The predicate: inputs to one element."),
     "then_branch": Param("subgraph", doc="Outputs when the predicate is non-zero."),
     "else_branch": Param("subgraph", doc="Outputs when the predicate is zero."),
     "num_args": Param("int", doc="Number of inputs plus the three subgraphs, as MXNet "
                                  "counts."),
     "num_outputs": Param("int", doc="Number of outputs of each branch."),
     "cond_input_locs": Param("shape", doc=LOCS_DOC.format("cond")),
     "then_input_locs": Param("shape", doc=LOCS_DOC.format("then_branch")),
     "else_input_locs": Param("shape", doc=LOCS_DOC.format("else_branch"))},
    lambda a: tuple(f"in{i}" for i in range(n_inputs(a, ("cond", "then", "else")))),
    _cond_shape, _cond_compute, _cond_grad, OPAQUE, infer_type=_cond_types,
    outputs=lambda a: tuple(f"output{i}" for i in range(a["num_outputs"])), lowering=UNROLLED,
    extra={"unroll": unroll_cond},
    doc="MXNet's cond: then_branch or else_branch by a one-element predicate "
        "(``sg.sym.contrib.cond`` traces all three)."))

