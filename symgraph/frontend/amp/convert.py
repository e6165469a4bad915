"""``convert_symbol`` / ``convert_model``: a float32 graph made mixed precision by inserting
``amp_cast`` and ``amp_multicast`` nodes from the op lists (MXNet's ReducePrecision pass).

For each op node, bottom-up:

* excluded by name, in the fp32 list, or conditional-fp32 with a matching parameter: every
  input is ``amp_cast`` to float32;
* in the narrow list: every input is ``amp_cast`` to the target dtype;
* in the widest list, with two or more inputs: the inputs go through one ``amp_multicast``;
* otherwise unchanged: the op runs in whatever dtype reaches it.

An entry gets at most one ``amp_cast`` per dtype (shared by its consumers). Auxiliary inputs
(BatchNorm's moving statistics) are never cast: the op writes them back in place. Casts that
turn out to be no-ops (a float32 weight cast to float32) are removed by ``simplify`` at bind.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from ...core.attrs import Attrs, format_value
from ...core.base import AttrError
from ...core.graph import Entry, Graph, Node, rewrite
from ...core.registry import get_op
from ..symbol import Symbol
from . import lists as L


class _Plan:
    """Which list each op node falls in (checked once, as MXNet checks its lists)."""

    def __init__(self, target: str, lp16: Optional[Sequence[str]],
                 fp32: Optional[Sequence[str]], conditional: Optional[Sequence[tuple]],
                 excluded: Optional[Sequence[str]]) -> None:
        self.target = target
        self.lp16 = set(L.list_lp16_ops(target) if lp16 is None else _names("target_dtype_ops",
                                                                            lp16))
        self.fp32 = set(L.list_fp32_ops(target) if fp32 is None else _names("fp32_ops", fp32))
        cond = L.list_conditional_fp32_ops(target) if conditional is None else conditional
        self.conditional = {}
        for item in cond:
            if not (isinstance(item, (tuple, list)) and len(item) == 3):
                raise AttrError(f"amp: conditional_fp32_ops entries are (op, parameter, "
                                f"values), got {item!r}")
            self.conditional[item[0]] = (item[1], {str(v) for v in item[2]})
        self.widest = set(L.list_widest_type_cast(target))
        self.excluded = set(_names("excluded_sym_names", excluded or []))
        for a, b, sa, sb in (("target_dtype_ops", "fp32_ops", self.lp16, self.fp32),
                             ("target_dtype_ops", "conditional_fp32_ops", self.lp16,
                              set(self.conditional)),
                             ("fp32_ops", "conditional_fp32_ops", self.fp32,
                              set(self.conditional))):
            if sa & sb:
                raise AttrError(f"amp: ops in both {a} and {b}: {sorted(sa & sb)}")

    def mode(self, node: Node) -> Optional[str]:
        """'fp32', 'narrow', 'widest' or None (unchanged) for an op node."""
        if node.name in self.excluded or node.op in self.fp32:
            return "fp32"
        if node.op in self.conditional:
            param, values = self.conditional[node.op]
            value = node.attrs.get(param)
            return "fp32" if value is not None and format_value(value) in values else None
        if node.op in self.lp16:
            return "narrow"
        if node.op in self.widest and len(node.inputs) > 1:
            return "widest"
        return None


def _names(what: str, names: Sequence[str]) -> list[str]:
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise AttrError(f"amp: {what} must be a list of strings, got {names!r}")
    return list(names)


def _cast_inputs(graph: Graph, plan: _Plan) -> Graph:
    casts: dict[tuple[Entry, str], Entry] = {}
    taken = {n.name for n in graph.nodes()}

    def fresh(base: str) -> str:
        name, k = base, 1
        while name in taken:
            name, k = f"{base}{k}", k + 1
        taken.add(name)
        return name

    def cast(e: Entry, dtype: str) -> Entry:
        if e.node.op == "amp_cast" and e.node.attrs["dtype"] == dtype:
            return e
        key = (e, dtype)
        if key not in casts:
            node = Node("amp_cast", fresh(f"{e.node.name}_amp_cast_{dtype}"),
                        Attrs({"dtype": dtype}), (e,))
            casts[key] = Entry(node)
        return casts[key]

    def visit(node: Node) -> Optional[Node]:
        mode = None if node.is_variable else plan.mode(node)
        if mode is None:
            return None
        op = get_op(node.op)
        names = op.input_names(node.attrs)
        aux = set(op.aux_names(node.attrs))
        if mode == "widest":
            mc = Node("amp_multicast", fresh(f"{node.name}_amp_multicast"),
                      Attrs({"num_outputs": len(node.inputs), "cast_narrow": False}),
                      node.inputs)
            return node.with_inputs(mc.entries())
        dtype = plan.target if mode == "narrow" else "float32"
        return node.with_inputs([e if n in aux else cast(e, dtype)
                                 for e, n in zip(node.inputs, names)])
    return rewrite(graph, visit)


def _narrow_params(graph: Graph, params: set, target: str) -> Graph:
    """Parameters read only through casts to ``target`` are stored in ``target`` instead."""
    readers: dict[Node, list[Node]] = {}
    for n in graph.nodes():
        for e in n.inputs:
            readers.setdefault(e.node, []).append(n)
    narrow = {v for v in graph.variables() if v.name in params and readers.get(v)
              and all(r.op == "amp_cast" and r.attrs["dtype"] == target for r in readers[v])}

    def visit(node: Node) -> Any:
        if node.is_variable and node in narrow:
            return Node(node.op, node.name, node.attrs, (),
                        Attrs({**node.extra, "__dtype__": target}))
        if node.op == "amp_cast" and node.inputs[0].node.name in {v.name for v in narrow}:
            return [node.inputs[0]]
        return None
    return rewrite(graph, visit)


def convert_symbol(sym: Symbol, target_dtype: str = "float16",
                   target_dtype_ops: Optional[list] = None, fp32_ops: Optional[list] = None,
                   conditional_fp32_ops: Optional[list] = None,
                   excluded_sym_names: Optional[list] = None,
                   data_names: Optional[list] = None,
                   cast_optional_params: bool = False) -> Symbol:
    """A mixed-precision copy of float32 ``sym`` (MXNet's ``amp.convert_symbol``).

    ``target_dtype``: ``'float16'`` or ``'bfloat16'``. The op lists default to
    :mod:`symgraph.frontend.amp.lists`. ``data_names``: the inputs that are data (default: those without a
    ``__dtype__``, i.e. all, as MXNet); with ``cast_optional_params`` the other inputs (model
    parameters) read only by narrow ops are declared in the target dtype instead of cast."""
    if not isinstance(sym, Symbol):
        raise AttrError(f"amp.convert_symbol: expected a Symbol, got {type(sym).__name__}")
    target = L.check_target(target_dtype)
    plan = _Plan(target, target_dtype_ops, fp32_ops, conditional_fp32_ops, excluded_sym_names)
    graph = _cast_inputs(sym.graph(), plan)
    if cast_optional_params:
        attrs = sym.attr_dict()
        if data_names is None:
            data_names = [n for n in sym.list_inputs()
                          if "__dtype__" not in attrs.get(n, {})]
        params = set(sym.list_inputs()) - set(data_names)
        graph = _narrow_params(graph, params, target)
    return Symbol(graph.outputs)


def convert_model(sym: Symbol, arg_params: Mapping[str, Any], aux_params: Mapping[str, Any],
                  target_dtype: str = "float16", target_dtype_ops: Optional[list] = None,
                  fp32_ops: Optional[list] = None, conditional_fp32_ops: Optional[list] = None,
                  excluded_sym_names: Optional[list] = None,
                  cast_optional_params: bool = False) -> tuple[Symbol, dict, dict]:
    """``(symbol, arg_params, aux_params)`` in mixed precision (MXNet's ``amp.convert_model``):
    the symbol from :func:`convert_symbol` with the parameters as data names' complement, and
    new parameter dicts where parameters declared narrow are cast (the given dicts and arrays
    are not changed)."""
    if not isinstance(arg_params, Mapping) or not isinstance(aux_params, Mapping):
        raise AttrError("amp.convert_model: arg_params and aux_params must be dicts of arrays")
    data_names = [n for n in sym.list_inputs() if n not in arg_params and n not in aux_params]
    out = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops,
                         excluded_sym_names, data_names, cast_optional_params)
    attrs = out.attr_dict()

    def cast(params: Mapping[str, Any]) -> dict:
        res = {}
        for k, v in params.items():
            dt = attrs.get(k, {}).get("__dtype__")
            res[k] = v.astype(dt) if dt is not None and dt != str(v.dtype) else v
        return res
    return out, cast(arg_params), cast(aux_params)


def remove_amp_cast(sym: Symbol) -> Symbol:
    """``sym`` without its ``amp_cast``/``amp_multicast`` nodes (MXNet's
    ``Symbol.remove_amp_cast``; ``save_checkpoint(remove_amp_cast=True)``)."""
    def visit(node: Node) -> Any:
        return list(node.inputs) if node.op in ("amp_cast", "amp_multicast") else None
    return Symbol(rewrite(sym.graph(), visit).outputs)
