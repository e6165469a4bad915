"""``sg.sym.contrib.while_loop`` and ``cond`` (MXNet 1.9.1): Python functions traced into the
subgraphs of one ``_while_loop`` / ``_cond`` node (see ``control_flow.py`` for the tracing).

Example::

    >>> import symgraph as sg
    >>> i, s = sg.sym.var("i"), sg.sym.var("s")
    >>> outs, (i_end, s_end) = sg.sym.contrib.while_loop(
    ...     lambda i, s: i <= 5, lambda i, s: ([i + s], [i + 1, s + i]), [i, s],
    ...     max_iterations=10)
    >>> outs[0].list_outputs()
    ['_while_loop0_output0']
"""
from __future__ import annotations

from typing import Any, Callable

from ..core.attribute import AttrScope
from ..core.base import GraphError
from .control_flow import cut, flatten, placeholders, regroup, union_inputs
from ..core.graph import Entry
from .symbol import Symbol, apply_op


def _as_list(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def while_loop(cond: Callable, func: Callable, loop_vars: Any,
               max_iterations: Any = None, name: str = "while_loop") -> tuple:
    """Run ``func(*loop_vars) -> (step_outputs, new_loop_vars)`` while ``cond(*loop_vars)``
    is non-zero, at most ``max_iterations`` times. Returns the step outputs stacked over
    ``max_iterations`` rows (rows past the last step are zeros) and the final variables.

    Example::

        >>> import symgraph as sg
        >>> outs, final = sg.sym.contrib.while_loop(lambda x: x < 10, lambda x: (x, x * 2),
        ...                                         sg.sym.var("x"), max_iterations=4)
        >>> len(final)
        1
    """
    if max_iterations is None:
        raise GraphError("while_loop: max_iterations must be given")
    flat_vars, var_fmt = flatten(loop_vars, "while_loop loop_vars")
    if not flat_vars:
        raise GraphError("while_loop: loop_vars must hold at least one Symbol")
    taken: set[str] = set()
    holders = placeholders(flat_vars, taken)
    args, _ = regroup([Symbol((Entry(h),)) for h in holders], var_fmt)
    args = args if isinstance(args, list) else [args]
    with AttrScope(__subgraph_name__=AttrScope.subgraph_name(name + "_cond")):
        pred = cond(*args)
    if not isinstance(pred, Symbol) or len(pred) != 1:
        raise GraphError(f"while_loop: cond must return one Symbol, got {pred!r}")
    with AttrScope(__subgraph_name__=AttrScope.subgraph_name(name + "_func")):
        step_out, new_vars = func(*args)
    # a single Symbol stays one (MXNet returns it unwrapped); a tuple is a list
    flat_out, out_fmt = flatten(_as_list(step_out) if not isinstance(step_out, Symbol)
                                else step_out, "while_loop step output")
    flat_new, _ = flatten(_as_list(new_vars), "while_loop new loop_vars")
    if len(flat_new) != len(flat_vars):
        raise GraphError(f"while_loop: func returns {len(flat_new)} loop variables for "
                         f"{len(flat_vars)}")
    cond_g, cond_outer = cut([pred.outputs_[0]], holders, set(taken), every=False)
    func_g, func_outer = cut([s.outputs_[0] for s in flat_out + flat_new], holders, taken)
    bound = {h: v.outputs_[0] for h, v in zip(holders, flat_vars)}
    inputs, (cond_locs, func_locs) = union_inputs([cond_outer, func_outer], [cond_g, func_g],
                                                  bound)
    position = {n: i for i, n in enumerate(func_g.inputs)}
    got = apply_op("_while_loop", [Symbol((e,)) for e in inputs], {
        "cond": cond_g, "func": func_g, "num_args": len(inputs) + 2,
        "num_outputs": len(flat_out) + len(flat_new), "num_out_data": len(flat_out),
        "max_iterations": int(max_iterations), "cond_input_locs": cond_locs,
        "func_input_locs": func_locs, "func_var_locs": tuple(position[h] for h in holders)},
        hint="_while_loop")
    results = [got[i] for i in range(len(got))]
    outs = regroup(results[:len(flat_out)], out_fmt)[0] if flat_out else []
    final = regroup(results[len(flat_out):], var_fmt)[0]
    return outs, final


def cond(pred: Symbol, then_func: Callable, else_func: Callable, name: str = "cond") -> Any:
    """``then_func()`` where the one-element ``pred`` is non-zero, else ``else_func()``
    (MXNet's ``sym.contrib.cond``: one ``_cond`` node holding the three graphs).

    Example::

        >>> import symgraph as sg
        >>> a, b = sg.sym.var("a"), sg.sym.var("b")
        >>> out = sg.sym.contrib.cond(a * b < 5, lambda: (a + 5) * (b + 5),
        ...                           lambda: (a - 5) * (b - 5))
        >>> out.list_outputs()
        ['_cond0_output0']
    """
    if not isinstance(pred, Symbol) or len(pred) != 1:
        raise GraphError(f"cond: pred must be one Symbol, got {pred!r}")
    taken: set[str] = set()
    graphs, outers, fmts = [], [], []
    for fn, part in ((lambda: pred, "_pred"), (then_func, "_then"), (else_func, "_else")):
        with AttrScope(__subgraph_name__=AttrScope.subgraph_name(name + part)):
            value = fn()
        flat, fmt = flatten(value if isinstance(value, Symbol) else _as_list(value),
                            "cond output")
        sub, outer = cut([s.outputs_[0] for s in flat], [], taken)
        graphs.append(sub)
        outers.append(outer)
        fmts.append((len(flat), fmt))
    if fmts[1][0] != fmts[2][0]:
        raise GraphError(f"cond: then_func gives {fmts[1][0]} outputs, else_func "
                         f"{fmts[2][0]}")
    inputs, locs = union_inputs(outers, graphs, {})
    got = apply_op("_cond", [Symbol((e,)) for e in inputs], {
        "cond": graphs[0], "then_branch": graphs[1], "else_branch": graphs[2],
        "num_args": len(inputs) + 3, "num_outputs": fmts[1][0], "cond_input_locs": locs[0],
        "then_input_locs": locs[1], "else_input_locs": locs[2]}, hint="_cond")
    results = [got[i] for i in range(len(got))]
    return regroup(results, fmts[1][1])[0]
