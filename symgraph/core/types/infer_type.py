"""Dtype inference (analysis): ``Graph -> {Entry: numpy dtype}``.

Requires: every op registered. Guarantees: dtypes propagate both ways to a fixpoint; variables
still unknown then default to float32 (MXNet's default) and propagation runs again; a
contradiction raises DTypeError naming node, op, slot and both dtypes.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np

from ..base import AttrError, DTypeError, where
from ..graph import Entry, Graph, Node
from ..registry import get_op, same_type

DEFAULT = np.dtype("float32")
# Full inferences run in this process (tests count them: one per bind).
COUNT = {"infer_types": 0}


def _nothing_new(olds: list, news: list) -> bool:
    for old, new in zip(olds, news):  # (plain loops here: once per node and sweep)
        if new is not None and new is not old:
            return False
    return True


def _none_known(olds: list) -> bool:
    for o in olds:  # (not `count(None)`: numpy says dtype("float64") == None)
        if o is not None:
            return False
    return True


def _all_known(olds: list) -> bool:
    for o in olds:  # `is not None`, not `None in`: numpy says dtype("float64") == None
        if o is None:
            return False
    return True


def _apply(node: Node, types: dict[Entry, np.dtype]) -> tuple[bool, bool]:
    """Run ``node``'s rule: (found a new dtype, every input and output is known now: run
    again, the rule would return the dtypes it was given)."""
    opdef = get_op(node.op)
    entries = node.inputs + node.entries()
    olds = [types.get(e) for e in entries]
    n_in = len(node.inputs)
    if opdef.infer_type is same_type and _none_known(olds):
        return False, False  # the default rule has nothing to go on (before the float32 default)
    try:
        new_ins, new_outs = opdef.infer_type(node.attrs, olds[:n_in], olds[n_in:])
    except (DTypeError, AttrError) as exc:
        raise type(exc)(f"{where(node.name, node.op)}{exc}") from None
    news = list(new_ins) + list(new_outs)
    if len(new_ins) == n_in and _nothing_new(olds, news):  # (the usual second look at a node)
        return False, _all_known(olds)
    changed = False
    for k, (entry, old, new) in enumerate(zip(entries, olds, news)):
        if new is None or new is old:
            continue
        new = np.dtype(new)
        if old is None:
            types[entry] = new
            changed = True
        elif old != new:  # (the slot names only for the message: once per node otherwise)
            names = list(opdef.input_names(node.attrs)) + list(opdef.output_names(node.attrs))
            detail = _odd_one_out(names, olds) or f"{names[k]} has dtype {old}, inferred {new}"
            raise DTypeError(f"{where(node.name, node.op)}{detail}")
    for e in entries:
        if types.get(e) is None:
            return changed, False
    return changed, True


def apply_type_rule(node: Node, types: dict[Entry, np.dtype]) -> bool:
    """Run ``node``'s dtype rule on ``types`` (updated in place); True when every entry of the
    node is known after it. Example: ``apply_type_rule(relu_node, {x: float32})`` adds the
    output's float32 (the imperative front end infers one call at a time with it)."""
    return _apply(node, types)[1]


def _odd_one_out(names: list[str], olds: list) -> str:
    """When the known dtypes of a node's slots disagree: the slot(s) whose dtype differs from
    the most common one, against the others (int32 data fed to float32 weights is reported
    against ``data``, not the weight). Empty when they agree."""
    known = [(n, np.dtype(t)) for n, t in zip(names, olds) if t is not None]
    votes: dict[np.dtype, int] = {}
    for _, t in known:
        votes[t] = votes.get(t, 0) + 1
    if len(votes) < 2:
        return ""
    common = max(votes, key=lambda t: votes[t])  # ties: the first seen
    odd = [(n, t) for n, t in known if t != common]
    rest = [n for n, t in known if t == common]
    return (f"{' and '.join(f'{n} has dtype {t}' for n, t in odd)}, but {', '.join(rest)} "
            f"{'has' if len(rest) == 1 else 'have'} {common}; cast {odd[0][0]} (astype or Cast)")


def infer_types(graph: Graph, given: Mapping[str, Any],
                defaults: bool = True) -> dict[Entry, np.dtype]:
    """Dtypes of every entry, from ``given`` (variable name -> dtype) and declared dtypes;
    without ``defaults`` (``infer_type_partial``) undecided variables stay unknown."""
    COUNT["infer_types"] += 1
    nodes = graph.nodes()
    types: dict[Entry, np.dtype] = {}
    for node in nodes:
        if node.is_variable:
            t = given.get(node.name, node.extra.get("__dtype__"))
            if t is not None:
                types[Entry(node)] = np.dtype(t)
    ops = [n for n in nodes if not n.is_variable]

    settled: set[Node] = set()  # all its dtypes known after its rule: nothing more to say
    # op -> its rule is the default one: with no dtype known anywhere yet (no variable
    # declares one, the usual bind before MXNet's float32 default) it has nothing to go on
    defaulted: dict[str, bool] = {}

    def sweep(order: list[Node]) -> bool:
        changed = False
        for node in order:
            if node in settled:
                continue
            if not types:
                plain = defaulted.get(node.op)
                if plain is None:
                    plain = defaulted[node.op] = get_op(node.op).infer_type is same_type
                if plain:
                    continue
            found, done = _apply(node, types)
            changed |= found
            if done:
                settled.add(node)
        return changed

    def propagate() -> None:
        backward = ops[::-1]
        for _ in range(len(ops) + 2):
            # A forward sweep that found nothing ran every rule on the final dtypes: a
            # backward sweep would run them on the same ones again, and find nothing either.
            if not sweep(ops):
                return
            sweep(backward)
    propagate()
    if not defaults:
        return types
    for node in nodes:
        if node.is_variable and Entry(node) not in types:
            types[Entry(node)] = DEFAULT
    propagate()
    return types


def symbol_infer_type(sym: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
                      partial: bool = False) -> tuple:
    """``Symbol.infer_type`` (``infer_type_partial`` with ``partial``: no float32 default for
    undecided variables, which stay None): ``(arg_types, out_types, aux_types)``."""
    return symbol_types(sym, args, kwargs, partial)[1]


def symbol_types(sym: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
                 partial: bool = False) -> tuple[dict[Entry, np.dtype], tuple]:
    """One inference: every entry's dtype, and ``(arg_types, out_types, aux_types)``."""
    names = sym.list_arguments()
    given = {n: t for n, t in zip(names, args) if t is not None}
    given.update({k: v for k, v in kwargs.items() if v is not None})
    unknown = sorted(set(given) - set(sym.list_inputs()))
    if unknown:
        raise DTypeError(f"infer_type: {unknown} are not inputs; inputs: {sym.list_inputs()}")
    graph = sym.graph()
    types = infer_types(graph, given, defaults=not partial)
    by_name = {n.name: types.get(Entry(n)) for n in graph.variables()}
    out: list[Optional[np.dtype]] = [types.get(e) for e in graph.outputs]
    return types, ([by_name[n] for n in names], out,
                   [by_name[n] for n in sym.list_auxiliary_states()])
