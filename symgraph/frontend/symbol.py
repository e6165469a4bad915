"""The Symbol API (``sg.sym``), MXNet 1.x names and semantics.

A :class:`Symbol` is a thin immutable handle on graph entries. Operator functions (``sg.sym.
FullyConnected``, ``sg.sym.relu``...) are made from the registry by :func:`make_op_function`, so a
newly registered op is callable here with no extra code.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Optional, Sequence, Union

import numpy as np

from ..core import build
from ..compiler import ops  # noqa: F401  (registers the built-in ops)
from ..core import registry
from ..core.build import Handle
from ..runtime.executor import Executor
from ..core.fluent import Fluent, make_functions
from ..compiler.passes.gradient import gradient
from .serialize import graph_from_json, load_graph, to_json, save as save_json
from ..core.attribute import HIDDEN_KEYS, AttrScope, hidden_key
from ..core.attrs import format_value
from ..core.base import AttrError, BindError, GraphError, NotImplementedForSymbol
from ..core.dtypes import as_dtype
from ..core.exports import export, sub_namespace
from .image_api import make_namespace as _image_namespace
from .range_api import make_arange, make_histogram
from .split_api import make_split_v2
from ..core.graph import VARIABLE, Entry, Graph, Node, aux_variables, rewrite, variable
from .opdoc import ARRAY_CLASSES, document
from ..core.types.infer_shape import symbol_infer_shape
from ..runtime.random_api import symbol_namespace as _random_namespace
from ..core.types.infer_type import symbol_infer_type

Number = Union[int, float, np.number]


class Symbol(Handle, Fluent):
    """A handle on one or more graph outputs. Immutable: every operation returns a new one.

    Arithmetic operators come from :class:`~symgraph.core.build.Handle` (``a + b`` is
    ``broadcast_add``, ``a * 2`` is ``_mul_scalar``) and return Symbols."""

    __slots__ = ("_graph", "_aux")

    # -- structure -------------------------------------------------------------------------
    def graph(self) -> Graph:
        """The graph of this symbol's outputs (made once: the symbol never changes, and its
        node list is what every ``list_*`` call walks)."""
        try:
            return self._graph
        except AttributeError:
            self._graph: Graph = Graph(self._outputs)
            return self._graph

    @property
    def name(self) -> Optional[str]:
        """The node's name for a single-output symbol, else None (as in MXNet)."""
        return self._outputs[0].node.name if len(self._outputs) == 1 else None

    def __bool__(self) -> bool:
        raise NotImplementedForSymbol(f"bool() of {self!r}: a Symbol has no value until it is "
                                      f"bound and run")

    def __getitem__(self, index: Union[int, str]) -> "Symbol":
        if isinstance(index, str):
            names = self.list_outputs()
            if index not in names:
                raise GraphError(f"no output named {index!r}; outputs: {names}")
            index = names.index(index)
        return Symbol((self._outputs[index],))

    def __repr__(self) -> str:
        return f"<Symbol {self.name or 'group [' + ', '.join(self.list_outputs()) + ']'}>"

    def _nodes(self) -> list[Node]:
        return self.graph().nodes()

    def _aux_nodes(self) -> set[Node]:
        try:
            return self._aux
        except AttributeError:
            self._aux: set[Node] = self._find_aux()
            return self._aux

    def _find_aux(self) -> set[Node]:
        return aux_variables(self._nodes())

    def list_arguments(self) -> list[str]:
        """Names of the non-auxiliary variables, in depth-first order."""
        aux = self._aux_nodes()
        return [n.name for n in self._nodes() if n.op == VARIABLE and n not in aux]

    def list_auxiliary_states(self) -> list[str]:
        """Names of variables that ops use as auxiliary states (BatchNorm's moving stats)."""
        aux = self._aux_nodes()
        return [n.name for n in self._nodes() if n in aux]

    def list_inputs(self) -> list[str]:
        """Every variable, arguments and auxiliary states, in depth-first order."""
        return [n.name for n in self._nodes() if n.is_variable]

    def list_outputs(self) -> list[str]:
        return [_output_name(e) for e in self._outputs]

    def get_internals(self) -> "Symbol":
        """Every visible output of every node, in topological order."""
        entries = []
        for node in self._nodes():
            n = 1 if node.is_variable else _visible(node)
            entries.extend(Entry(node, i) for i in range(n))
        return Symbol(entries)

    def get_children(self) -> Optional["Symbol"]:
        """The inputs of this symbol's node(s), grouped; None for a variable."""
        nodes = list(dict.fromkeys(e.node for e in self._outputs))  # a node's outputs: once
        ins = [i for n in nodes for i in n.inputs]
        return Symbol(ins) if ins else None

    def _gen_atomic_symbol(self) -> "Symbol":
        """This symbol's (single) op node again, with its attributes, over fresh input
        variables named ``<node>_<input>`` (MXNet's atomic symbol of the op)."""
        node = self._outputs[0].node
        if node.is_variable:
            raise GraphError(f"_gen_atomic_symbol: {node.name} is a variable, not an op")
        n_in = len(node.inputs)
        return apply_op(node.op, [None] * n_in, dict(node.attrs), node.name,
                        dict(node.extra))

    # -- attributes ------------------------------------------------------------------------
    def attr(self, key: str) -> Optional[str]:
        """One attribute of this (single) node as a string, or None."""
        node = self._outputs[0].node
        for k in (key, hidden_key(key)):  # `lr_mult` reads `__lr_mult__`, as MXNet's
            if k in node.extra:
                return str(node.extra[k])
        if key in node.attrs:
            return format_value(node.attrs[key])
        return None

    def list_attr(self) -> dict[str, str]:
        node = self._outputs[0].node
        return _node_attr_strings(node)

    def attr_dict(self) -> dict[str, dict[str, str]]:
        """``{node name: {key: value}}`` for every node that has attributes."""
        out = {}
        for node in self._nodes():
            d = _node_attr_strings(node)
            if d:
                out[node.name] = d
        return out

    # -- composition -----------------------------------------------------------------------
    def __call__(self, *args: "Symbol", name: Optional[str] = None, **kwargs: "Symbol") -> "Symbol":
        """Compose: substitute variables by other symbols, ``net(data=other)``.

        Positional symbols replace the arguments in ``list_arguments`` order.
        """
        subst: dict[str, Entry] = {}
        arg_names = self.list_arguments()
        if len(args) > len(arg_names):
            raise GraphError(f"compose: {len(args)} positional symbols for {len(arg_names)} arguments")
        for key, sym in list(zip(arg_names, args)) + list(kwargs.items()):
            if not isinstance(sym, Symbol) or len(sym) != 1:
                raise GraphError(f"compose: {key} must be a single-output Symbol, got {sym!r}")
            subst[key] = sym._outputs[0]
        unknown = sorted(set(kwargs) - set(self.list_inputs()))
        if unknown:
            raise GraphError(f"compose: no variable named {unknown}; inputs: {self.list_inputs()}")
        g = rewrite(self.graph(), lambda n: (subst[n.name],) if n.is_variable and n.name in subst
                    else None)
        return Symbol(g.outputs)

    def __copy__(self) -> "Symbol":
        return self

    def __deepcopy__(self, memo: dict) -> "Symbol":
        return self

    # -- inference, serialisation, binding (implemented in their own modules) -------------------
    def infer_shape(self, *args: Any, **kwargs: Any) -> tuple:
        """``(arg_shapes, out_shapes, aux_shapes)``; raises ShapeError if any stays unknown."""
        return symbol_infer_shape(self, args, kwargs, partial=False)

    def infer_shape_partial(self, *args: Any, **kwargs: Any) -> tuple:
        """Like infer_shape, with ``()`` (``None`` under ``np_shape``) for shapes that stay
        unknown, and 0 (-1 under ``np_shape``) for unknown dimensions, as MXNet."""
        return symbol_infer_shape(self, args, kwargs, partial=True)

    def infer_type(self, *args: Any, **kwargs: Any) -> tuple:
        """``(arg_types, out_types, aux_types)`` as numpy dtypes."""
        return symbol_infer_type(self, args, kwargs)

    def infer_type_partial(self, *args: Any, **kwargs: Any) -> tuple:
        """Like infer_type, without the float32 default: dtypes that stay unknown are None."""
        return symbol_infer_type(self, args, kwargs, partial=True)

    def tojson(self) -> str:
        return to_json(self)

    def save(self, fname: str) -> None:
        save_json(self, fname)

    # -- autodiff and binding -------------------------------------------------------------------
    def gradient(self, wrt: Sequence[str]) -> "Symbol":
        """A symbol whose outputs are d(sum of outputs)/d(each name in ``wrt``)."""
        graph = self.graph()
        by_name = {n.name: n for n in graph.variables()}
        missing = [w for w in wrt if w not in by_name]
        if missing:
            raise GraphError(f"gradient: {missing} are not inputs; inputs: {self.list_inputs()}")
        heads = [build.OPS.ones_like(Handle((e,))).outputs_[0] for e in graph.outputs]
        return Symbol(gradient(graph, [by_name[w] for w in wrt], heads))

    def bind(self, ctx: Any, args: Any, args_grad: Any = None, grad_req: Any = "write",
             aux_states: Any = None, group2ctx: Any = None, shared_exec: Any = None) -> Executor:
        """Bind arrays and return an :class:`~symgraph.runtime.executor.Executor`;
        ``group2ctx`` lets the arrays of grouped parts be on other contexts
        (``runtime/placement.py``)."""
        return Executor.bind(self, ctx, args, args_grad, grad_req, aux_states,
                             group2ctx=group2ctx)

    def simple_bind(self, ctx: Any, grad_req: Any = "write", type_dict: Any = None,
                    stype_dict: Any = None, group2ctx: Any = None, shared_arg_names: Any = None,
                    shared_exec: Any = None, shared_buffer: Any = None,
                    **shapes: Any) -> Executor:
        """Infer every shape from ``shapes`` and bind freshly allocated arrays.

        As MXNet's: keywords that name no input of the symbol are ignored, and so are the
        memory-sharing hints (``shared_*``); storage types other than dense are refused.
        ``group2ctx`` allocates each grouped variable's arrays on its group's context
        (``runtime/placement.py`` says which placements run)."""
        if any(v not in (None, "default") for v in (stype_dict or {}).values()):
            raise BindError(f"simple_bind: only dense storage, got stype_dict={stype_dict}")
        inputs = set(self.list_inputs())
        shapes = {k: v for k, v in shapes.items() if k in inputs}
        return Executor.simple_bind(self, ctx, grad_req, type_dict, shapes, group2ctx=group2ctx)

    def _fluent_function(self, name: str) -> Any:
        fn = _FUNCTIONS.get(name)
        if fn is None:
            raise AttributeError(f"Symbol has no method {name!r}: sg.sym has no such function")
        return fn

    def eval(self, ctx: Any = None, **kwargs: Any) -> list:
        """Bind the arrays in ``kwargs`` (no gradients), run forward, return the outputs."""
        from ..core.context import current_context
        exe = self.bind(ctx or current_context(), kwargs, grad_req="null")
        return exe.forward()

    def debug_str(self) -> str:
        lines = []
        for node in self._nodes():
            ins = ", ".join(repr(e) for e in node.inputs)
            lines.append(f"{node.op:>20s} {node.name}({ins}) {dict(node.attrs)}")
        return "\n".join(lines)


def _visible(node: Node) -> int:
    return registry.get_op(node.op).num_visible_outputs(node.attrs)


def _output_name(e: Entry) -> str:
    if e.node.is_variable:
        return e.node.name
    names = registry.get_op(e.node.op).output_names(e.node.attrs)
    return f"{e.node.name}_{names[e.index]}"


def _node_attr_strings(node: Node) -> dict[str, str]:
    d = {k: format_value(v) for k, v in node.attrs.items()}
    d.update({k: str(v) for k, v in node.extra.items()})
    d.update({k: d[f"__{k}__"] for k in HIDDEN_KEYS if f"__{k}__" in d})  # both spellings
    return d


# -- creating symbols ---------------------------------------------------------------------------

def var(name: str, attr: Optional[dict] = None, shape: Optional[Sequence[int]] = None,
        lr_mult: Optional[float] = None, wd_mult: Optional[float] = None,
        dtype: Any = None, init: Any = None, stype: Optional[str] = None,
        **kwargs: Any) -> Symbol:
    """A variable (graph input). ``shape``/``dtype`` are hints checked by inference."""
    if not isinstance(name, str) or not name:
        raise GraphError(f"variable name must be a non-empty string, got {name!r}")
    extra = AttrScope.current.get(attr)  # the `with sg.AttrScope(...)` block's, then attr
    if shape is not None:
        extra["__shape__"] = format_value(tuple(int(s) for s in shape))
    if dtype is not None:
        extra["__dtype__"] = as_dtype(dtype).name
    for key, mult in (("__lr_mult__", lr_mult), ("__wd_mult__", wd_mult)):
        if mult is not None:  # MXNet keeps the text the user gave (lr_mult=1 reads back '1')
            float(mult)
            extra[key] = str(mult)
    if init is not None:
        extra["__init__"] = init if isinstance(init, str) else init.dumps()
    for k, v in kwargs.items():
        if not (k.startswith("__") and k.endswith("__")):
            raise AttrError(f"{name}: unknown variable attribute {k!r}")
        extra[k] = str(v)
    return Symbol((Entry(variable(name, extra)),))


Variable = var


def Group(symbols: Sequence[Symbol]) -> Symbol:
    """One symbol with the outputs of all of ``symbols``."""
    if not symbols or not all(isinstance(s, Symbol) for s in symbols):
        raise GraphError("Group expects a non-empty list of Symbols")
    return Symbol([e for s in symbols for e in s._outputs])


def apply_op(op: str, inputs: Sequence[Optional[Symbol]], attrs: dict,
             name: Optional[str] = None, extra: Optional[dict] = None,
             hint: Optional[str] = None) -> Symbol:
    """Create a node of ``op`` on ``inputs`` (positional, in the op's input order); ``None``
    inputs become new variables ``<name>_<input>``. Returns the visible outputs
    (:func:`symgraph.core.build.apply_op`)."""
    return build.apply_op(op, inputs, attrs, name, extra, hint, Symbol)


def make_op_function(opdef: registry.OpDef, hint: Optional[str] = None) -> Any:
    """The documented ``sg.sym`` function of one op (:func:`symgraph.core.build.make_op_function`)."""
    return document(build.make_op_function(opdef, Symbol, hint), opdef)


def load_json(text: str) -> Symbol:
    """Load a symbol from :meth:`Symbol.tojson` text (or MXNet's JSON)."""
    return Symbol(graph_from_json(text).outputs)


def load(fname: str) -> Symbol:
    """Load a symbol saved with :meth:`Symbol.save`; a bad file raises GraphError naming it."""
    return Symbol(load_graph(fname).outputs)


def _install_op_functions() -> list[str]:
    """Expose every registered op (and its MXNet aliases) as a function of this module, then
    the functions that pick an op from their operands (``maximum``, ``pow``, ``zeros``...)."""
    namespace = globals()
    for opname, opdef in registry.all_ops().items():
        api = opdef.extra.get("api")
        namespace.setdefault(opname, api(apply_op, Symbol) if api else make_op_function(opdef))
    for alias_name, target in registry.all_aliases().items():
        opdef = registry.get_op(target)
        made = opdef.extra.get("api") is None and alias_name.lower() != target.lower()
        namespace.setdefault(alias_name, make_op_function(opdef, alias_name) if made
                             else namespace[target])
    dispatching = make_functions(apply_op, Symbol)
    for fn_name, fn in dispatching.items():
        namespace.setdefault(fn_name, fn)
    namespace.setdefault("image", _image_namespace(namespace))  # sg.sym.image
    namespace.setdefault("split_v2", make_split_v2(namespace, Group))
    namespace.setdefault("arange", make_arange(apply_op))
    namespace.setdefault("histogram", make_histogram(namespace["_histogram"]))
    # MXNet's `sym._internal`: every op function, private ones included, by its name
    namespace.setdefault("_internal", SimpleNamespace(**{
        n: namespace[n] for n in list(registry.all_ops()) + list(registry.all_aliases())}))
    for sub, prefix in (("contrib", "_contrib_"), ("linalg", "_linalg_")):
        namespace.setdefault(sub, sub_namespace(
            namespace, list(registry.all_ops()) + list(registry.all_aliases()), prefix))
    namespace.setdefault("random", _random_namespace(apply_op, Symbol))  # sg.sym.random
    return list(dispatching)


ARRAY_CLASSES["sym"] = Symbol  # the annotations of sg.sym's functions
_DISPATCHING = _install_op_functions()
_FUNCTIONS: dict[str, Any] = {k: v for k, v in globals().items() if callable(v)}
"""This module's functions by name: what Symbol's fluent methods call."""
__all__ = ["Symbol", "var", "Variable", "Group", "apply_op", "load", "load_json"]
export(globals(), list(registry.all_ops()) + list(registry.all_aliases())
       + _DISPATCHING)  # the op functions
