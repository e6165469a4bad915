"""The Symbol API (``sg.sym``), MXNet 1.x names and semantics.

A :class:`Symbol` is a thin immutable handle on graph entries. Operator functions (``sg.sym.
FullyConnected``, ``sg.sym.relu``...) are made from the registry by :func:`make_op_function`, so a
newly registered op is callable here with no extra code.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Iterator, Optional, Sequence, Union

import numpy as np

from . import name as _name
from . import ops  # noqa: F401  (registers the built-in ops)
from . import registry
from .serialize import graph_from_json, load_graph, to_json
from .serialize import save as save_json
from .attrs import Attrs, format_value
from .base import AttrError, GraphError, NotImplementedForSymbol
from .dtypes import as_dtype
from .exports import export
from .base import where as _where  # not `where`: sg.sym.where is the operator
from .graph import VARIABLE, Entry, Graph, Node, rewrite, variable
from .opdoc import ARRAY_CLASSES, document
from .parse_memo import input_names as _input_names
from .parse_memo import parsed as _parsed
from .passes.infer_shape import symbol_infer_shape
from .passes.infer_type import symbol_infer_type

Number = Union[int, float, np.number]


class Symbol:
    """A handle on one or more graph outputs. Immutable: every operation returns a new one."""

    __slots__ = ("_outputs", "_graph", "_aux")
    __array_priority__ = 1000.0  # numpy scalars on the left defer to our operators

    def __init__(self, outputs: Sequence[Entry]) -> None:
        self._outputs = tuple(outputs)

    # -- structure -------------------------------------------------------------------------
    @property
    def outputs_(self) -> tuple[Entry, ...]:
        """The graph entries this symbol stands for."""
        return self._outputs

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

    def __len__(self) -> int:
        return len(self._outputs)

    def __bool__(self) -> bool:
        raise NotImplementedForSymbol(f"bool() of {self!r}: a Symbol has no value until it is "
                                      f"bound and run")

    def __iter__(self) -> Iterator["Symbol"]:
        return (Symbol((e,)) for e in self._outputs)

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
        aux: set[Node] = set()
        for node in self._nodes():
            if node.op == VARIABLE:
                continue
            opdef = registry.get_op(node.op)
            if opdef.aux == ():  # (most ops: no aux inputs, nothing to ask per node)
                continue
            names = opdef.aux_names(node.attrs)
            for slot, e in zip(opdef.input_names(node.attrs), node.inputs):
                if slot in names and e.node.op == VARIABLE:
                    aux.add(e.node)
        return aux

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
        if key in node.extra:
            return str(node.extra[key])
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

    # -- operators ---------------------------------------------------------------------------
    def _binary(self, other: Any, op: str, scalar_op: str, reverse: bool = False) -> "Symbol":
        if isinstance(other, Symbol):
            a, b = (other, self) if reverse else (self, other)
            return apply_op(op, [a, b], {})
        if isinstance(other, (int, float, np.number)) and not isinstance(other, bool):
            return apply_op(scalar_op, [self], {"scalar": float(other)})
        return NotImplemented

    def __add__(self, o: Any) -> "Symbol":
        return self._binary(o, "broadcast_add", "_plus_scalar")

    __radd__ = __add__

    def __sub__(self, o: Any) -> "Symbol":
        return self._binary(o, "broadcast_sub", "_minus_scalar")

    def __rsub__(self, o: Any) -> "Symbol":
        return self._binary(o, "broadcast_sub", "_rminus_scalar", True)

    def __mul__(self, o: Any) -> "Symbol":
        return self._binary(o, "broadcast_mul", "_mul_scalar")

    __rmul__ = __mul__

    def __truediv__(self, o: Any) -> "Symbol":
        return self._binary(o, "broadcast_div", "_div_scalar")

    def __rtruediv__(self, o: Any) -> "Symbol":
        return self._binary(o, "broadcast_div", "_rdiv_scalar", True)

    def __pow__(self, o: Any) -> "Symbol":
        return self._binary(o, "broadcast_power", "_power_scalar")

    def __rpow__(self, o: Any) -> "Symbol":
        return self._binary(o, "broadcast_power", "_rpower_scalar", True)

    def __mod__(self, o: Any) -> "Symbol":
        return self._binary(o, "broadcast_mod", "_mod_scalar")

    def __rmod__(self, o: Any) -> "Symbol":
        return self._binary(o, "broadcast_mod", "_rmod_scalar", True)

    def __neg__(self) -> "Symbol":
        return apply_op("negative", [self], {})

    def __abs__(self) -> "Symbol":
        return apply_op("abs", [self], {})

    def __gt__(self, o: Any) -> "Symbol":
        return self._binary(o, "broadcast_greater", "_greater_scalar")

    def __ge__(self, o: Any) -> "Symbol":
        return self._binary(o, "broadcast_greater_equal", "_greater_equal_scalar")

    def __lt__(self, o: Any) -> "Symbol":
        return self._binary(o, "broadcast_lesser", "_lesser_scalar")

    def __le__(self, o: Any) -> "Symbol":
        return self._binary(o, "broadcast_lesser_equal", "_lesser_equal_scalar")

    def __eq__(self, o: Any) -> "Symbol":  # type: ignore[override]
        return self._binary(o, "broadcast_equal", "_equal_scalar")

    def __ne__(self, o: Any) -> "Symbol":  # type: ignore[override]
        return self._binary(o, "broadcast_not_equal", "_not_equal_scalar")

    __hash__ = object.__hash__

    # -- inference, serialisation, binding (implemented in their own modules) -------------------
    def infer_shape(self, *args: Any, **kwargs: Any) -> tuple:
        """``(arg_shapes, out_shapes, aux_shapes)``; raises ShapeError if any stays unknown."""
        return symbol_infer_shape(self, args, kwargs, partial=False)

    def infer_shape_partial(self, *args: Any, **kwargs: Any) -> tuple:
        """Like infer_shape, with ``None`` (MXNet: ``()``) for shapes that stay unknown."""
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

    # gradient, bind and simple_bind are installed by ``sym_methods.py``: autodiff and the
    # executor build on this module, so it cannot import them.

    def eval(self, ctx: Any = None, **kwargs: Any) -> list:
        """Bind the arrays in ``kwargs`` (no gradients), run forward, return the outputs."""
        from .context import current_context
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
    return d


# -- creating symbols ---------------------------------------------------------------------------

def var(name: str, attr: Optional[dict] = None, shape: Optional[Sequence[int]] = None,
        lr_mult: Optional[float] = None, wd_mult: Optional[float] = None,
        dtype: Any = None, init: Any = None, stype: Optional[str] = None,
        **kwargs: Any) -> Symbol:
    """A variable (graph input). ``shape``/``dtype`` are hints checked by inference."""
    if not isinstance(name, str) or not name:
        raise GraphError(f"variable name must be a non-empty string, got {name!r}")
    extra = {k: str(v) for k, v in (attr or {}).items()}
    if shape is not None:
        extra["__shape__"] = format_value(tuple(int(s) for s in shape))
    if dtype is not None:
        extra["__dtype__"] = as_dtype(dtype).name
    if lr_mult is not None:
        extra["__lr_mult__"] = str(float(lr_mult))
    if wd_mult is not None:
        extra["__wd_mult__"] = str(float(wd_mult))
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
    """Create a node of ``op`` on ``inputs`` (positional, in the op's input order).

    ``None`` inputs become new variables ``<name>_<input>``. Returns the visible outputs.
    ``hint``: the stem of an automatic name (the spelling called: ``flip`` names its node
    ``flip0`` though it makes a ``reverse`` node, as MXNet does); the op's name by default.
    """
    opdef = registry.get_op(op)
    if opdef.variadic and opdef.variadic not in attrs:
        attrs = {**attrs, opdef.variadic: len(inputs)}
    node_name = _name.current().get(name, hint or opdef.name)
    parsed, slots, n_visible, n_outputs = _parsed(opdef, attrs, node_name)
    if len(inputs) > len(slots):
        raise AttrError(f"{_where(node_name, opdef.name)}takes inputs {list(slots)}, "
                        f"got {len(inputs)} symbols")
    # every input a single-output Symbol (autodiff's calls): no per-slot checks needed
    entries = []
    for s in inputs:  # (a plain loop, not a comprehension's frame: autodiff's nodes come here)
        if type(s) is Symbol and len(s._outputs) == 1:
            entries.append(s._outputs[0])
    if len(entries) != len(slots):
        entries = _input_entries(opdef, node_name, slots, inputs)
    for k in extra or {}:  # as MXNet: an op's user attributes are __hidden__ (JSON needs it)
        if not (k.startswith("__") and k.endswith("__") and len(k) > 4):
            raise AttrError(f"{_where(node_name, opdef.name)}user attribute {k!r} must be "
                            f"named like __{k.strip('_')}__ (only variables take any name)")
    # the parse knows the outputs: the node need not ask its op (autodiff makes most nodes here)
    outs = Node(opdef.name, node_name, parsed, tuple(entries),
                Attrs({k: str(v) for k, v in extra.items()}) if extra else None,
                n_outputs).entries()
    return Symbol(outs if n_visible == n_outputs else outs[:n_visible])


def _input_entries(opdef: registry.OpDef, node_name: str, slots: Sequence[str],
                   inputs: Sequence[Optional[Symbol]]) -> list[Entry]:
    """The entry of each input slot; a missing input (``None``, or past the end) becomes a new
    variable ``<node>_<slot>``."""
    entries = []
    n_in = len(inputs)
    for i, slot in enumerate(slots):
        sym = inputs[i] if i < n_in else None
        if sym is None:
            sym = var(f"{node_name}_{slot}")
        if not isinstance(sym, Symbol) or len(sym._outputs) != 1:
            raise AttrError(f"{_where(node_name, opdef.name)}input '{slot}' must be a "
                            f"single-output Symbol, got {sym!r}")
        entries.append(sym._outputs[0])
    return entries


def make_op_function(opdef: registry.OpDef, hint: Optional[str] = None):
    """The ``sg.sym`` function of one op, called as MXNet's generated functions are: inputs
    positionally (``None`` for an input to create) or by name, then attributes positionally in
    the op's parameter order or by name; ``__dunder__`` keywords are node attributes.
    ``hint``: the spelling (an alias) whose automatic node names this function makes."""

    def op_function(*args: Any, name: Optional[str] = None, attr: Optional[dict] = None,
                    **kwargs: Any) -> Symbol:
        # (plain loops: autodiff builds most backward nodes through here)
        sym_kwargs, attrs, extra = {}, {}, dict(attr or {})
        for k, v in kwargs.items():
            if isinstance(v, Symbol):
                sym_kwargs[k] = v
            elif k.startswith("__") and k.endswith("__"):
                extra[k] = v
            else:
                attrs[k] = v
        n_in = len(args)
        for i, a in enumerate(args):
            if not (a is None or isinstance(a, Symbol)):
                n_in = i
                break
        if n_in < len(args):
            _attrs_by_position(opdef, args[n_in:], attrs, name)
            args = args[:n_in]
        if opdef.variadic:
            if sym_kwargs:
                raise AttrError(f"{opdef.name} takes its inputs positionally")
            return apply_op(opdef.name, list(args), attrs, name, extra, hint)
        slots = _input_names(opdef, attrs, name)
        unknown = sorted(set(sym_kwargs) - set(slots)) if sym_kwargs else None
        if unknown:
            raise AttrError(f"{_where(name or '?', opdef.name)}no input named {unknown}; "
                            f"inputs: {list(slots)}")
        while len(args) > len(slots) and args[-1] is None:  # MXNet's `bias=None` with no_bias
            args = args[:-1]
        if len(args) > len(slots):
            raise AttrError(f"{_where(name or '?', opdef.name)}takes inputs {list(slots)}, "
                            f"got {len(args)} positional symbols")
        inputs: list[Optional[Symbol]] = list(args) + [None] * (len(slots) - len(args))
        for i, slot in enumerate(slots):
            if slot in sym_kwargs:
                if inputs[i] is not None:
                    raise AttrError(f"{opdef.name}: input '{slot}' given twice")
                inputs[i] = sym_kwargs[slot]
        return apply_op(opdef.name, inputs, attrs, name, extra, hint)

    return document(op_function, opdef)


def _attrs_by_position(opdef: registry.OpDef, values: Sequence[Any], attrs: dict,
                       name: Optional[str]) -> None:
    """Put attribute values given positionally (``Dropout(x, 0.5)``) into ``attrs`` under the
    op's parameter names, in declaration order (MXNet's)."""
    keys = [k for k in opdef.params if not k.startswith("*")]
    if len(values) > len(keys):
        raise AttrError(f"{_where(name or '?', opdef.name)}{len(values)} positional attributes "
                        f"for parameters {keys}")
    for key, value in zip(keys, values):
        if key in attrs:
            raise AttrError(f"{_where(name or '?', opdef.name)}attribute '{key}' given "
                            f"positionally and by name")
        attrs[key] = value


def load_json(text: str) -> Symbol:
    """Load a symbol from :meth:`Symbol.tojson` text (or MXNet's JSON)."""
    return Symbol(graph_from_json(text).outputs)


def load(fname: str) -> Symbol:
    """Load a symbol saved with :meth:`Symbol.save`; a bad file raises GraphError naming it."""
    return Symbol(load_graph(fname).outputs)


def _install_op_functions() -> None:
    """Expose every registered op (and its MXNet aliases) as a function of this module."""
    namespace = globals()
    for opname, opdef in registry.all_ops().items():
        api = opdef.extra.get("api")
        namespace.setdefault(opname, api(apply_op, Symbol) if api else make_op_function(opdef))
    for alias_name, target in registry.all_aliases().items():
        opdef = registry.get_op(target)
        made = opdef.extra.get("api") is None and alias_name.lower() != target.lower()
        namespace.setdefault(alias_name, make_op_function(opdef, alias_name) if made
                             else namespace[target])
    # (fluent functions and methods are added by sym_methods.py: fluent.py builds on us)
    # MXNet's `sym._internal`: every op function, private ones included, by its name
    namespace.setdefault("_internal", SimpleNamespace(**{
        n: namespace[n] for n in list(registry.all_ops()) + list(registry.all_aliases())}))
    # MXNet's `contrib` namespace: `_contrib_index_copy` as `contrib.index_copy`
    namespace.setdefault("contrib", SimpleNamespace(**{
        short: namespace[full] for short, full in registry.contrib_names().items()}))


ARRAY_CLASSES["sym"] = Symbol  # the annotations of sg.sym's functions
_install_op_functions()
__all__ = ["Symbol", "var", "Variable", "Group", "apply_op", "load", "load_json"]
export(globals(), list(registry.all_ops()) + list(registry.all_aliases()))  # the op functions
