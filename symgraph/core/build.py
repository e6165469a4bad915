"""Applying ops to graph entries: the one way nodes are made from op calls.

A :class:`Handle` stands for one or more graph entries and composes with Python's operators
(``a + b`` is ``broadcast_add``, ``a * 2`` is ``_mul_scalar``); :func:`apply_op` makes a node of
an op on handles, and :func:`make_op_function` the op function MXNet's generated functions are
(inputs positionally or by name, attributes positionally in parameter order or by name). Both
take the class of the handles they return: the front end's ``Symbol`` is a Handle with the
user-facing methods, and autodiff's gradient rules build on plain Handles (``GradCtx.sym``), so
the graph layer below the front end never imports it.

Parsed attributes are remembered per (op, plain-valued attrs): autodiff makes most backward
nodes from a few such combinations; errors are never remembered (a bad call raises each time,
with its node's name).

Example::

    >>> from symgraph import build
    >>> from symgraph.core.graph import Entry, variable
    >>> x = build.Handle((Entry(variable("x")),))
    >>> y = build.OPS.relu(x * 2.0)
    >>> y.outputs_[0].node.op
    'relu'
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import name as _name, registry
from .attribute import HIDDEN_KEYS, AttrScope, hidden_key, current_attrs as scoped
from .attrs import Attrs, parse_attrs
from .base import AttrError, where as _where, where_unnamed
from .fluent import Fluent
from .graph import Entry, Node, variable
from .probe import probe_input_names

# (op, registry generation, given attrs) -> (parsed attrs, input names, visible outputs,
# all outputs); the types are part of the key: 1, 1.0 and True are equal but may parse apart.
_PARSED: dict[tuple, tuple[Attrs, tuple[str, ...], int, int]] = {}
_PLAIN = (str, int, float, bool, type(None))  # values remembered (containers are not)


class Handle(Fluent):
    """Graph entries an op call returned, composable with Python's arithmetic operators and
    MXNet's fluent methods (``h.reshape(...)``: what a custom op's Python ``bprop`` may use)."""

    __slots__ = ("_outputs",)
    __array_priority__ = 1000.0  # numpy scalars on the left defer to our operators

    def __init__(self, outputs: Sequence[Entry]) -> None:
        self._outputs = tuple(outputs)

    @property
    def outputs_(self) -> tuple[Entry, ...]:
        """The graph entries this handle stands for."""
        return self._outputs

    def __len__(self) -> int:
        return len(self._outputs)

    def __iter__(self) -> Any:
        return (type(self)((e,)) for e in self._outputs)

    def __getitem__(self, index: int) -> Any:
        return type(self)((self._outputs[index],))

    def _fluent_function(self, name: str) -> Callable[..., Any]:
        return OPS.function(name)

    def _binary(self, other: Any, op: str, scalar_op: str, reverse: bool = False) -> Any:
        if isinstance(other, Handle):
            a, b = (other, self) if reverse else (self, other)
            return apply_op(op, [a, b], {}, cls=type(self))
        if isinstance(other, (int, float, np.number)) and not isinstance(other, bool):
            return apply_op(scalar_op, [self], {"scalar": float(other)}, cls=type(self))
        return NotImplemented

    def __add__(self, o: Any) -> Any:
        return self._binary(o, "broadcast_add", "_plus_scalar")

    __radd__ = __add__

    def __sub__(self, o: Any) -> Any:
        return self._binary(o, "broadcast_sub", "_minus_scalar")

    def __rsub__(self, o: Any) -> Any:
        return self._binary(o, "broadcast_sub", "_rminus_scalar", True)

    def __mul__(self, o: Any) -> Any:
        return self._binary(o, "broadcast_mul", "_mul_scalar")

    __rmul__ = __mul__

    def __truediv__(self, o: Any) -> Any:
        return self._binary(o, "broadcast_div", "_div_scalar")

    def __rtruediv__(self, o: Any) -> Any:
        return self._binary(o, "broadcast_div", "_rdiv_scalar", True)

    def __pow__(self, o: Any) -> Any:
        return self._binary(o, "broadcast_power", "_power_scalar")

    def __rpow__(self, o: Any) -> Any:
        return self._binary(o, "broadcast_power", "_rpower_scalar", True)

    def __mod__(self, o: Any) -> Any:
        return self._binary(o, "broadcast_mod", "_mod_scalar")

    def __rmod__(self, o: Any) -> Any:
        return self._binary(o, "broadcast_mod", "_rmod_scalar", True)

    def __neg__(self) -> Any:
        return apply_op("negative", [self], {}, cls=type(self))

    def __abs__(self) -> Any:
        return apply_op("abs", [self], {}, cls=type(self))

    def __gt__(self, o: Any) -> Any:
        return self._binary(o, "broadcast_greater", "_greater_scalar")

    def __ge__(self, o: Any) -> Any:
        return self._binary(o, "broadcast_greater_equal", "_greater_equal_scalar")

    def __lt__(self, o: Any) -> Any:
        return self._binary(o, "broadcast_lesser", "_lesser_scalar")

    def __le__(self, o: Any) -> Any:
        return self._binary(o, "broadcast_lesser_equal", "_lesser_equal_scalar")

    def __eq__(self, o: Any) -> Any:  # type: ignore[override]
        return self._binary(o, "broadcast_equal", "_equal_scalar")

    def __ne__(self, o: Any) -> Any:  # type: ignore[override]
        return self._binary(o, "broadcast_not_equal", "_not_equal_scalar")

    __hash__ = object.__hash__


def parsed(opdef: registry.OpDef, attrs: dict,
           node_name: Optional[str]) -> tuple[Attrs, tuple[str, ...], int, int]:
    """``attrs`` parsed against ``opdef``'s schema, with the op's input names and numbers of
    visible and of all outputs under them (remembered when every value is a plain
    str/int/float/bool/None)."""
    items: Optional[list] = []
    for k, v in attrs.items():
        t = type(v)
        if t not in _PLAIN:
            items = None
            break
        items.append((k, t, v))  # type: ignore[union-attr]
    key: Optional[tuple] = None
    if items is not None:
        key = (opdef.name, registry.generation(), tuple(items))
        found = _PARSED.get(key)
        if found is not None:
            return found
    values = parse_attrs(opdef.params, attrs, where_unnamed(node_name, opdef.name))
    try:  # an op's input/output lists may check its attributes (SliceChannel's num_outputs)
        found = (values, opdef.input_names(values), opdef.num_visible_outputs(values),
                 opdef.num_outputs(values))
    except AttrError as exc:
        raise AttrError(f"{where_unnamed(node_name, opdef.name)}{exc}") from None
    if key is not None:
        if len(_PARSED) > 4096:  # distinct scalars could grow it without bound
            _PARSED.clear()
        _PARSED[key] = found
    return found


def apply_op(op: str, inputs: Sequence[Optional[Handle]], attrs: dict,
             name: Optional[str] = None, extra: Optional[dict] = None,
             hint: Optional[str] = None, cls: type = Handle) -> Any:
    """Create a node of ``op`` on ``inputs`` (positional, in the op's input order) and return
    its visible outputs as a ``cls``.

    ``None`` inputs become new variables ``<name>_<input>``. ``hint``: the stem of an automatic
    name (the spelling called: ``flip`` names its node ``flip0`` though it makes a ``reverse``
    node, as MXNet does); the op's name by default."""
    opdef = registry.get_op(op)
    if opdef.variadic and opdef.variadic not in attrs:
        attrs = {**attrs, opdef.variadic: len(inputs)}
    node_name = _name.current().get(name, hint or opdef.name)
    values, slots, n_visible, n_outputs = parsed(opdef, attrs, node_name)
    if len(inputs) > len(slots):
        raise AttrError(f"{_where(node_name, opdef.name)}takes inputs {list(slots)}, "
                        f"got {len(inputs)} symbols")
    entries = []
    for s in inputs:  # (a plain loop, not a comprehension's frame: autodiff's nodes come here)
        if isinstance(s, Handle) and len(s._outputs) == 1:
            entries.append(s._outputs[0])
    if len(entries) != len(slots):
        entries = _input_entries(opdef, node_name, slots, inputs, extra)
    for k in extra or {}:  # as MXNet: an op's user attributes are __hidden__ (JSON needs it)
        if not (k.startswith("__") and k.endswith("__") and len(k) > 4):
            raise AttrError(f"{_where(node_name, opdef.name)}user attribute {k!r} must be "
                            f"named like __{k.strip('_')}__ (only variables take any name)")
    # the parse knows the outputs: the node need not ask its op (autodiff makes most nodes here)
    outs = Node(opdef.name, node_name, values, tuple(entries),
                Attrs({k: str(v) for k, v in extra.items()}) if extra else None,
                n_outputs).entries()
    return cls(outs if n_visible == n_outputs else outs[:n_visible])


def _input_entries(opdef: registry.OpDef, node_name: str, slots: Sequence[str],
                   inputs: Sequence[Optional[Handle]],
                   extra: Optional[dict] = None) -> list[Entry]:
    """The entry of each input slot; a missing input (``None``, or past the end) becomes a new
    variable ``<node>_<slot>`` with the node's user attributes (as MXNet: ``__lr_mult__`` or
    ``__ctx_group__`` on a layer reach the weights it creates), and the op's default
    initializer for that slot (``extra["input_init"]``) unless the user gave one."""
    var_extra = {k: str(v) for k, v in extra.items()} if extra else None
    inits = opdef.extra.get("input_init", {})
    entries = []
    n_in = len(inputs)
    for i, slot in enumerate(slots):
        h = inputs[i] if i < n_in else None
        if h is None:
            attrs = {"__init__": inits[slot], **(var_extra or {})} if slot in inits \
                else var_extra
            entries.append(Entry(variable(f"{node_name}_{slot}", attrs)))
            continue
        if not isinstance(h, Handle) or len(h._outputs) != 1:
            raise AttrError(f"{_where(node_name, opdef.name)}input '{slot}' must be a "
                            f"single-output Symbol, got {h!r}")
        entries.append(h._outputs[0])
    return entries


def make_op_function(opdef: registry.OpDef, cls: type = Handle,
                     hint: Optional[str] = None) -> Callable[..., Any]:
    """The op function of one op, returning ``cls``, called as MXNet's generated functions
    are: inputs positionally (``None`` for an input to create) or by name, then attributes
    positionally in the op's parameter order or by name; ``__dunder__`` keywords are node
    attributes. ``hint``: the spelling (an alias) whose automatic node names it makes."""

    def op_function(*args: Any, name: Optional[str] = None, attr: Optional[dict] = None,
                    **kwargs: Any) -> Any:
        # (plain loops: autodiff builds most backward nodes through here)
        handle_kwargs, attrs = {}, {}
        extra = AttrScope.current.get(attr) if attr or scoped() else {}
        for k, v in kwargs.items():
            if isinstance(v, Handle):
                handle_kwargs[k] = v
            elif k.startswith("__") and k.endswith("__"):
                extra[k] = v
            elif k in HIDDEN_KEYS:  # MXNet's `lr_mult=` on a layer is its `__lr_mult__`
                extra[hidden_key(k)] = str(v)
            elif v is None and k not in opdef.params:
                continue  # an input given as None is absent (MXNet's `sequence_length=None`)
            else:
                attrs[k] = v
        n_in = len(args)
        for i, a in enumerate(args):
            if not (a is None or isinstance(a, Handle)):
                n_in = i
                break
        if n_in < len(args):
            _attrs_by_position(opdef, args[n_in:], attrs, name)
            args = args[:n_in]
        if opdef.variadic:
            if handle_kwargs:
                raise AttrError(f"{opdef.name} takes its inputs positionally")
            return apply_op(opdef.name, list(args), attrs, name, extra, hint, cls)
        slots = input_names(opdef, attrs, name)
        unknown = sorted(set(handle_kwargs) - set(slots)) if handle_kwargs else None
        if unknown:
            raise AttrError(f"{where_unnamed(name, opdef.name)}no input named {unknown}; "
                            f"inputs: {list(slots)}")
        while len(args) > len(slots) and args[-1] is None:  # MXNet's `bias=None` with no_bias
            args = args[:-1]
        if len(args) > len(slots):
            raise AttrError(f"{where_unnamed(name, opdef.name)}takes inputs {list(slots)}, "
                            f"got {len(args)} positional symbols")
        inputs: list[Optional[Handle]] = list(args) + [None] * (len(slots) - len(args))
        for i, slot in enumerate(slots):
            if slot in handle_kwargs:
                if inputs[i] is not None:
                    raise AttrError(f"{opdef.name}: input '{slot}' given twice")
                inputs[i] = handle_kwargs[slot]
        return apply_op(opdef.name, inputs, attrs, name, extra, hint, cls)

    op_function.__name__ = op_function.__qualname__ = hint or opdef.name
    return op_function


def _attrs_by_position(opdef: registry.OpDef, values: Sequence[Any], attrs: dict,
                       name: Optional[str]) -> None:
    """Put attribute values given positionally (``Dropout(x, 0.5)``) into ``attrs`` under the
    op's parameter names, in declaration order (MXNet's)."""
    keys = [k for k in opdef.params if not k.startswith("*")]
    if len(values) > len(keys):
        raise AttrError(f"{where_unnamed(name, opdef.name)}{len(values)} positional attributes "
                        f"for parameters {keys}")
    for key, value in zip(keys, values):
        if key in attrs:
            raise AttrError(f"{where_unnamed(name, opdef.name)}attribute '{key}' given "
                            f"positionally and by name")
        attrs[key] = value


def input_names(opdef: registry.OpDef, attrs: dict, name: Optional[str]) -> tuple[str, ...]:
    """The op's input names under ``attrs``: from the full parse when the attrs are valid
    (remembered, and apply_op asks the same), else a probe that tolerates invalid values
    (the real error is raised by apply_op)."""
    params = opdef.params
    for k in attrs:
        if k not in params:
            return probe_input_names(opdef, attrs)
    try:
        return parsed(opdef, attrs, name)[1]
    except AttrError:
        return probe_input_names(opdef, attrs)


class Ops:
    """Every registered op (and MXNet alias) as a function returning ``cls``: ``Ops(Handle)
    .relu(x)``. Functions are made on first use and kept per registry generation."""

    def __init__(self, cls: type = Handle) -> None:
        self._cls = cls
        self._made: dict[str, Callable[..., Any]] = {}
        self._generation = registry.generation()

    def __getattr__(self, op: str) -> Callable[..., Any]:
        if op.startswith("__"):
            raise AttributeError(op)
        return self.function(op)

    def function(self, op: str) -> Callable[..., Any]:
        """The function of op or alias ``op``."""
        if self._generation != registry.generation():
            self._made.clear()
            self._generation = registry.generation()
        fn = self._made.get(op)
        if fn is None:
            fn = self._made[op] = op_function(op, self._cls)
        return fn

    def apply_op(self, op: str, inputs: Sequence[Optional[Handle]], attrs: dict,
                 name: Optional[str] = None) -> Any:
        """:func:`apply_op` returning this namespace's class."""
        return apply_op(op, inputs, attrs, name, cls=self._cls)

    def Group(self, handles: Sequence[Handle]) -> Any:
        """One handle with the outputs of all of ``handles``."""
        return self._cls([e for h in handles for e in h._outputs])


def op_function(spelling: str, cls: type = Handle) -> Callable[..., Any]:
    """The function of op or alias ``spelling`` returning ``cls`` (an op's own ``api`` when it
    has one: Custom's ``op_type`` picks its inputs)."""
    opdef = registry.get_op(spelling)
    api = opdef.extra.get("api")
    if api is not None:
        return api(lambda *a, **k: apply_op(*a, **k, cls=cls), cls)
    made_alias = spelling != opdef.name and spelling.lower() != opdef.name.lower()
    return make_op_function(opdef, cls, spelling if made_alias else None)


OPS = Ops(Handle)
"""The op functions over plain handles: what gradient rules see as ``GradCtx.sym``."""
