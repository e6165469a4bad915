"""``sg.sym.contrib.foreach``, ``while_loop`` and ``cond``: Python bodies traced into subgraphs.

Each function calls the user's body once on placeholder variables, cuts the result into a
:class:`~symgraph.core.subgraph.Subgraph` and makes one control-flow node (``_foreach``,
``_while_loop``, ``_cond``: ``ops/control_flow*.py``) whose inputs are the loop's data and
states followed by the body's free inputs. A free input is anything the body reads that does
not depend on a placeholder: an outer variable (a weight, kept under its name), or a value
computed outside the body, or inside it from loop-invariant values only (it is computed once,
before the loop, instead of once per step). Nested inputs and outputs (lists of lists) are
flattened and regrouped as in MXNet 1.9.1.

Example::

    >>> import symgraph as sg
    >>> data, s = sg.sym.var("data"), sg.sym.var("s")
    >>> outs, states = sg.sym.contrib.foreach(lambda x, st: (x + st[0], [st[0] * 2]), data, [s])
    >>> outs.list_outputs()
    ['_foreach0_output0']
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from ..core import registry
from ..core.attribute import AttrScope
from ..core.attrs import Attrs
from ..core.base import GraphError, UnusedLoopValueError
from ..core.graph import VARIABLE, Entry, Node, topo_order, unique_name, variable
from ..core.subgraph import Subgraph
from .symbol import Symbol, apply_op


def flatten(args: Any, what: str, leaf: type = Symbol) -> tuple[list, Any]:
    """Nested lists of ``leaf`` values (Symbols, or NDArrays for ``sg.nd``) -> a flat list and
    the format to regroup it (MXNet's); a Symbol of several outputs is that many values."""
    if isinstance(args, leaf):
        if isinstance(args, Symbol) and len(args) > 1:
            return [args[i] for i in range(len(args))], len(args)
        return [args], 0
    if not isinstance(args, (list, tuple)):
        raise GraphError(f"{what} must be a {leaf.__name__} or a (nested) list of them, got "
                         f"{type(args).__name__}")
    flat, fmts = [], []
    for a in args:
        got, fmt = flatten(a, what, leaf)
        flat.extend(got)
        fmts.append(fmt)
    return flat, fmts


def regroup(args: Sequence[Any], fmt: Any) -> tuple[Any, list]:
    """Inverse of :func:`flatten`: ``(nested value, the items left over)``."""
    if isinstance(fmt, int):
        return (args[0], list(args[1:])) if fmt == 0 else (list(args[:fmt]), list(args[fmt:]))
    out = []
    for f in fmt:
        got, args = regroup(args, f)
        out.append(got)
    return out, list(args)


def placeholders(symbols: Sequence[Symbol], taken: set[str]) -> list[Node]:
    """One variable per loop value, named as MXNet names them (``<node>-<output index>``)."""
    return [variable(unique_name(f"{s.outputs_[0].node.name}-{s.outputs_[0].index}", taken))
            for s in symbols]


def _free_name(e: Entry, taken: set[str]) -> str:
    if e.node.is_variable:
        return unique_name(e.node.name, taken)
    names = registry.get_op(e.node.op).output_names(e.node.attrs)
    return unique_name(f"{e.node.name}_{names[e.index]}", taken)


def cut(outputs: Sequence[Entry], holders: Sequence[Node], taken: set[str],
        every: bool = True) -> tuple[Subgraph, list[Optional[Entry]]]:
    """The subgraph computing ``outputs`` from the placeholders ``holders``, and the outer
    value of each of its inputs.

    Nodes depending on a placeholder are copied into the subgraph; every other entry they
    read becomes a subgraph input variable. Subgraph inputs are in MXNet's ``list_inputs``
    order; the returned entries are the outer values of those that are not placeholders, by
    input position (None at a placeholder's). ``every``: each placeholder must be read."""
    holder_set = set(holders)
    variant: set[Node] = set(holder_set)
    for node in topo_order(outputs):
        if node.op != VARIABLE and any(e.node in variant for e in node.inputs):
            variant.add(node)
    taken |= {n.name for n in variant}
    free: dict[Entry, Node] = {}
    remap: dict[Entry, Entry] = {Entry(h): Entry(h) for h in holders}

    def source(e: Entry) -> Entry:
        if e.node in variant:
            return remap[e]
        if e not in free:
            extra = e.node.extra if e.node.is_variable else None
            free[e] = variable(_free_name(e, taken), dict(extra) if extra else None)
        return Entry(free[e])

    for node in topo_order(outputs):
        if node in variant and node not in holder_set:
            new = Node(node.op, node.name, node.attrs, tuple(source(e) for e in node.inputs),
                       node.extra)
            remap.update(zip(node.entries(), new.entries()))
    outs = []
    for k, e in enumerate(outputs):
        got = source(e)
        if got.node.is_variable:  # as MXNet: a body output is never an input variable
            got = Node("identity", unique_name(f"{got.node.name}_identity{k}", taken), Attrs(),
                       (got,), n_outputs=1).entries()[0]
        outs.append(got)
    inputs = [n for n in topo_order(outs) if n.is_variable]
    unused = [h.name for h in holders if h not in set(inputs)]
    if unused and every:
        raise UnusedLoopValueError(f"loop values {unused} are not used by the body (MXNet "
                                   f"requires every data array and state to be used)")
    outer = {v: e for e, v in free.items()}
    return Subgraph.of(outs, inputs), [outer.get(n) for n in inputs]


def foreach(body: Callable, data: Any, init_states: Any, name: str = "foreach") -> tuple:
    """Run ``body(data_t, states) -> (outputs, new_states)`` over axis 0 of ``data``
    (MXNet's ``sym.contrib.foreach``): returns the per-step outputs stacked on axis 0 and the
    final states, grouped as ``body`` returned them. ``data`` and ``init_states`` may be a
    Symbol or nested lists of Symbols.

    Example::

        >>> import symgraph as sg
        >>> step = lambda x, st: (x * st[0], [st[0] + x])
        >>> outs, final = sg.sym.contrib.foreach(step, sg.sym.var("x"), [sg.sym.var("h")])
        >>> len(final)
        1
    """
    flat_data, data_fmt = flatten(data, "foreach data")
    flat_init, init_fmt = flatten(init_states, "foreach init_states")
    if not flat_data:
        raise GraphError("foreach: needs at least one data array to loop over")
    taken: set[str] = set()
    data_vars = placeholders(flat_data, taken)
    state_vars = placeholders(flat_init, taken)
    x_t, _ = regroup([Symbol((Entry(v),)) for v in data_vars], data_fmt)
    s_t, _ = regroup([Symbol((Entry(v),)) for v in state_vars], init_fmt)
    with AttrScope(__subgraph_name__=AttrScope.subgraph_name(name)):
        outs, new_states = body(x_t, s_t)
    flat_out, out_fmt = flatten(outs if outs is not None else [], "foreach output")
    flat_new, new_fmt = flatten(new_states if new_states is not None else [],
                                "foreach states")
    if len(flat_new) != len(flat_init):
        raise GraphError(f"foreach: the body returns {len(flat_new)} states for "
                         f"{len(flat_init)} initial states")
    sub, outer = cut([s.outputs_[0] for s in flat_out + flat_new], data_vars + state_vars,
                     taken)
    position = {n: i for i, n in enumerate(sub.inputs)}
    remain = [i for i, e in enumerate(outer) if e is not None]
    ins = flat_data + flat_init + [Symbol((outer[i],)) for i in remain]
    got = apply_op("_foreach", ins, {
        "body": sub, "num_args": len(ins) + 1, "num_outputs": len(flat_out) + len(flat_new),
        "num_out_data": len(flat_out), "in_data_locs": tuple(position[v] for v in data_vars),
        "in_state_locs": tuple(position[v] for v in state_vars),
        "remain_locs": tuple(remain)}, hint="_foreach")
    results = [got[i] for i in range(len(got))]
    out_value, _ = regroup(results[:len(flat_out)], out_fmt) if flat_out else ([], [])
    state_value, _ = regroup(results[len(flat_out):], init_fmt) if flat_new else ([], [])
    return out_value, state_value


def union_inputs(outers: Sequence[Sequence[Optional[Entry]]], subs: Sequence[Subgraph],
                 bound: dict[Node, Entry]) -> tuple[list[Entry], list[tuple[int, ...]]]:
    """The node inputs shared by several subgraphs (each outer value once, in first-use
    order) and, per subgraph, the node input feeding each of its inputs (MXNet's
    ``*_input_locs``). ``bound``: placeholder -> the outer value it stands for.

    A placeholder keeps an input of its own even when a free value is the same outer entry
    (a second loop over the first one's final states that also reads those states): the
    loop updates a placeholder's input each step, the free value must stay as it was."""
    inputs: list[Entry] = []
    index: dict[Any, int] = {}
    locs = []
    for outer, sub in zip(outers, subs):
        mine = []
        for node, e in zip(sub.inputs, outer):
            key: Any = ("loop", node) if e is None else ("free", e)
            if key not in index:
                index[key] = len(inputs)
                inputs.append(bound[node] if e is None else e)
            mine.append(index[key])
        locs.append(tuple(mine))
    return inputs, locs

