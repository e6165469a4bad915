"""Imperative ``sg.nd`` op calls, recorded lazily as nodes of the one graph IR.

An op call on NDArrays checks its attributes, shape and dtype rules right away (so errors name
the call), creates a :class:`~symgraph.graph.Node` whose inputs are the entries of pending inputs
or variables standing for materialised ones, and returns *pending* NDArrays. Nothing runs until
a value is needed: :mod:`symgraph.imperative_compile` then compiles the subgraph through the
Executor (passes, fusion, memory plan, backend), caches the program by the graph's structure, and
materialises every live pending array of it at once. The same nodes, when recorded under
``autograd.record()``, are what ``backward()`` differentiates. Semantics: docs/imperative.md.
"""
from __future__ import annotations

import itertools
import weakref
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import registry
from .attrs import Attrs, parse_attrs
from .base import AttrError, BindError, ShapeError, where
from .graph import Entry, Node, variable
from .ndarray import NDArray
from .passes.infer_shape import _apply_rule
from .passes.infer_type import _apply as _apply_type


class _State:
    """autograd's switches (``record`` / ``pause`` / ``train_mode``)."""

    recording = False
    training = False
    running = 0  # > 0 while a compiled program runs (custom ops write their outputs then)


STATE = _State()
STATS = {"compiles": 0, "runs": 0}

# Pending op nodes -> weak references to their visible output arrays.
PENDING: "weakref.WeakKeyDictionary[Node, list]" = weakref.WeakKeyDictionary()
# Computed values: variable node -> [array]; op node -> [array or None per visible output].
VALUE: "weakref.WeakKeyDictionary[Node, list]" = weakref.WeakKeyDictionary()
GRAD_LEAF: "weakref.WeakKeyDictionary[Node, Any]" = weakref.WeakKeyDictionary()
RECORDED: "weakref.WeakSet[Node]" = weakref.WeakSet()  # op nodes made under record()
TRAIN: "weakref.WeakSet[Node]" = weakref.WeakSet()  # nodes made in training mode
FREED: "weakref.WeakSet[Node]" = weakref.WeakSet()  # heads whose graph backward released

_ids = itertools.count()
_NO_EXTRA = Attrs()


def compile_count() -> int:
    """How many programs imperative code has compiled in this process (cache misses)."""
    return STATS["compiles"]


class _Call:
    """An op with parsed attributes: what every call with the same attributes shares."""

    __slots__ = ("opdef", "attrs", "slots", "nvis", "train", "sigs")

    def __init__(self, opdef: registry.OpDef, attrs: Attrs) -> None:
        self.opdef, self.attrs = opdef, attrs
        self.slots = opdef.input_names(attrs)
        self.nvis = opdef.num_visible_outputs(attrs)
        self.train = opdef.train_dependent
        self.sigs: dict[tuple, tuple] = {}  # (input shapes, dtypes) -> output shapes, dtypes


_CALLS: dict[tuple, _Call] = {}


def _call_info(opdef: registry.OpDef, kwargs: dict, name: Optional[str]) -> _Call:
    try:
        key: Optional[tuple] = (opdef.name, tuple(sorted(kwargs.items())))
        info = _CALLS.get(key)
    except TypeError:  # an unhashable attribute value (a list): parse every time
        key, info = None, None
    if info is None:
        info = _Call(opdef, parse_attrs(opdef.params, kwargs, where(name or opdef.name,
                                                                    opdef.name)))
        if key is not None and len(_CALLS) < 100000:
            _CALLS[key] = info
    return info


def _leaf(a: NDArray) -> Entry:
    """The variable standing for materialised ``a`` in graphs (one per array)."""
    if a._var is None:
        v = variable(f"_leaf{next(_ids)}")
        VALUE[v] = [NDArray(a._buf, a._ctx)]
        a._var = v
    return Entry(a._var)


def _input_entry(a: NDArray, recording: bool) -> Entry:
    if a._buf is None:
        if recording and not a._recorded:  # computed outside record(): a constant here
            return _block(a)
        return a._entry
    if recording and a._recorded:
        return a._entry
    return _leaf(a)


def _block(a: NDArray) -> Entry:
    opdef = registry.get_op("BlockGrad")
    node = Node(opdef.name, f"BlockGrad{next(_ids)}", _call_info(opdef, {}, None).attrs,
                (a._entry,), _NO_EXTRA)
    return Entry(node)


def _infer(info: _Call, node: Node, inputs: Sequence[NDArray]) -> tuple:
    """Output shapes and dtypes of one call, from the op's own rules (errors name the call)."""
    shapes = {e: a.shape for e, a in zip(node.inputs, inputs)}
    types = {e: a.dtype for e, a in zip(node.inputs, inputs)}
    _apply_rule(node, shapes)
    _apply_type(node, types)
    outs = [Entry(node, i) for i in range(info.nvis)]
    missing = [i for i, e in enumerate(outs) if e not in shapes or e not in types]
    if missing:
        given = ", ".join(f"{n} {a.shape}" for n, a in zip(info.slots, inputs))
        raise ShapeError(f"{where(node.name, node.op)}cannot decide the shape of output(s) "
                         f"{missing} from {given}")
    return tuple(shapes[e] for e in outs), tuple(types[e] for e in outs)


def _check_inputs(info: _Call, inputs: Sequence[Any], name: str) -> None:
    op = info.opdef.name
    if len(inputs) != len(info.slots):
        missing = list(info.slots[len(inputs):])
        raise AttrError(f"{where(name, op)}takes inputs {list(info.slots)}, got {len(inputs)} "
                        f"arrays" + (f"; missing {missing}" if missing else ""))
    for slot, a in zip(info.slots, inputs):
        if not isinstance(a, NDArray):
            raise AttrError(f"{where(name, op)}input '{slot}' must be an NDArray, got "
                            f"{type(a).__name__}")
    ctx = inputs[0]._ctx if inputs else None
    for slot, a in zip(info.slots, inputs):
        if a._ctx != ctx:
            raise BindError(f"{where(name, op)}input '{slot}' is on {a._ctx}, "
                            f"'{info.slots[0]}' on {ctx}")


def record(info: _Call, inputs: Sequence[NDArray], name: Optional[str] = None) -> list[NDArray]:
    """Append one node of ``info``'s op on ``inputs``; return its pending visible outputs."""
    node_name = name or f"{info.opdef.name}{next(_ids)}"
    _check_inputs(info, inputs, node_name)
    if not inputs:
        raise AttrError(f"{where(node_name, info.opdef.name)}an imperative call needs at "
                        f"least one input array")
    rec = STATE.recording
    node = Node(info.opdef.name, node_name, info.attrs,
                tuple(_input_entry(a, rec) for a in inputs), _NO_EXTRA)
    sig = (tuple(a.shape for a in inputs), tuple(a.dtype for a in inputs))
    found = info.sigs.get(sig)
    if found is None:
        found = info.sigs[sig] = _infer(info, node, inputs)
    ctx = inputs[0]._ctx
    outs = []
    for i, (shape, dtype) in enumerate(zip(*found)):
        a = NDArray(None, ctx)
        a._entry, a._shape, a._dtype, a._recorded = Entry(node, i), shape, dtype, rec
        outs.append(a)
    PENDING[node] = [weakref.ref(a) for a in outs]
    if rec:
        RECORDED.add(node)
    if STATE.training:  # the program runs train-dependent ops (Dropout...) in training mode
        TRAIN.add(node)
    return outs


def call(op: str, inputs: Sequence[NDArray], attrs: dict, out: Optional[NDArray] = None,
         name: Optional[str] = None) -> Any:
    """Call registered op ``op`` on arrays (the engine behind ``sg.nd.<op>`` and methods)."""
    opdef = registry.get_op(op)
    attrs = dict(attrs)
    if opdef.variadic and opdef.variadic not in attrs:
        attrs[opdef.variadic] = len(inputs)
    outs = record(_call_info(opdef, attrs, name), inputs, name)
    return _result(outs, out)


def _result(outs: list[NDArray], out: Any) -> Any:
    if out is not None:
        targets = out if isinstance(out, (list, tuple)) else [out]
        for t, o in zip(targets, outs):
            t[:] = o
        return out
    return outs[0] if len(outs) == 1 else outs


# -- forcing, writing, autograd leaves -----------------------------------------------------------

def force(arrays: Sequence[NDArray]) -> None:
    """Compute pending ``arrays`` (and every live pending array of their subgraph)."""
    from .imperative_compile import force_pending
    pending = [a for a in arrays if a._buf is None]
    if pending:
        force_pending(pending)


def flush() -> None:
    """Compute every live pending array."""
    arrays = [a for refs in list(PENDING.values()) for r in refs
              for a in (r(),) if a is not None and a._buf is None]
    by_ctx: dict = {}
    for a in arrays:
        by_ctx.setdefault(a._ctx, []).append(a)
    for group in by_ctx.values():
        force(group)


def wait(a: NDArray) -> None:
    """``wait_to_read``: compute ``a`` and wait for its device."""
    force([a])
    if a._ctx.device_type == "gpu":
        import pycuda.driver as drv
        from .cuda.runtime import activate
        with activate(a._ctx.device_id):
            drv.Context.synchronize()


def before_write(a: NDArray) -> None:
    """``a`` is about to be written in place: compute everything pending first (it may read
    ``a``), and cut ``a`` from the recorded graph unless it is a variable."""
    if STATE.running:  # a custom op writing its outputs inside a run
        return
    if PENDING:
        flush()
    if a._entry is not None and a._entry.node is not a._var:
        a._entry, a._recorded = None, False


def attach_grad(a: NDArray, grad_req: str = "write", grad: Optional[NDArray] = None) -> None:
    """Make ``a`` a variable of autograd with gradient buffer ``grad`` (zeros if None)."""
    if grad_req not in ("write", "add", "null"):
        raise AttrError(f"attach_grad: grad_req {grad_req!r} is not 'write', 'add' or 'null'")
    buf = a._data
    if grad is None:
        from .ndarray import zeros
        grad = zeros(a.shape, a._ctx, a.dtype)
    elif grad.shape != a.shape or grad._ctx != a._ctx:
        raise BindError(f"mark_variables: gradient of shape {grad.shape} on {grad._ctx} for a "
                        f"variable of shape {a.shape} on {a._ctx}")
    if a._var is not None:
        GRAD_LEAF.pop(a._var, None)
    v = variable(f"_var{next(_ids)}")
    VALUE[v] = [NDArray(buf, a._ctx)]
    GRAD_LEAF[v] = weakref.ref(a)
    a._var, a._entry, a._recorded = v, Entry(v), True
    a._grad, a._grad_req = grad, grad_req


def detach(a: NDArray) -> NDArray:
    """The value of ``a`` outside any recorded graph (shares memory when computed)."""
    if a._buf is not None:
        return NDArray(a._buf, a._ctx)
    saved, STATE.recording = STATE.recording, False
    try:
        return call("BlockGrad", [a], {})
    finally:
        STATE.recording = saved


# -- indexing -------------------------------------------------------------------------------------

def getitem(a: NDArray, key: Any) -> NDArray:
    """Basic indexing (ints and slices) as recorded ``slice``/``Reshape`` ops; anything else
    reads the value on the host (not recorded)."""
    if isinstance(key, slice) and key == slice(None):
        return a
    parts = key if isinstance(key, tuple) else (key,)
    if not all(isinstance(k, (int, np.integer, slice)) for k in parts):
        from .ndarray import array
        return array(a.asnumpy()[key if not isinstance(key, NDArray) else
                                 key.asnumpy().astype(np.int64)], a._ctx, a.dtype)
    if len(parts) > a.ndim:
        raise ShapeError(f"index {key!r} has {len(parts)} entries for an array of shape "
                         f"{a.shape}")
    begin, end, step, keep = [], [], [], []
    for axis, k in enumerate(parts):
        if isinstance(k, slice):
            begin.append(k.start)
            end.append(k.stop)
            step.append(1 if k.step is None else k.step)
            keep.append(True)
            continue
        n = a.shape[axis]
        i = int(k) + n if k < 0 else int(k)
        if not 0 <= i < n:
            raise ShapeError(f"index {int(k)} is out of bounds for axis {axis} of size {n}")
        begin.append(i)
        end.append(i + 1)
        step.append(1)
        keep.append(False)
    y = call("slice", [a], {"begin": tuple(begin), "end": tuple(end), "step": tuple(step)})
    if all(keep):
        return y
    shape = tuple(d for d, k in zip(y.shape, keep + [True] * (y.ndim - len(keep))) if k)
    return call("Reshape", [y], {"shape": shape or (1,)})  # MXNet 1.x has no 0-d arrays


# -- sg.nd op functions -----------------------------------------------------------------------------

def make_nd_function(opdef: registry.OpDef):
    """The ``sg.nd`` function of one op: arrays positionally or by input name, then attributes
    by keyword (or positionally, in the op's schema order, after the arrays); ``out=``."""
    params = [p for p in opdef.params if p != "**"]

    def op_function(*args: Any, out: Optional[NDArray] = None, name: Optional[str] = None,
                    **kwargs: Any) -> Union[NDArray, list]:
        if opdef.variadic:
            arrays = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) \
                else list(args)
            return call(opdef.name, arrays, kwargs, out, name)
        n = 0
        while n < len(args) and isinstance(args[n], NDArray):
            n += 1
        named = {k: v for k, v in kwargs.items() if isinstance(v, NDArray)}
        attrs = {k: v for k, v in kwargs.items() if not isinstance(v, NDArray)}
        for p, v in zip(params, args[n:]):
            if p in attrs:
                raise AttrError(f"{where(name or opdef.name, opdef.name)}attribute {p} given "
                                f"twice")
            attrs[p] = v
        if len(args) - n > len(params):
            raise AttrError(f"{where(name or opdef.name, opdef.name)}too many positional "
                            f"arguments: {len(args) - n} after the arrays")
        info = _call_info(opdef, attrs, name)
        inputs = list(args[:n])
        for slot in info.slots[n:]:
            if slot in named:
                inputs.append(named.pop(slot))
        if named:
            raise AttrError(f"{where(name or opdef.name, opdef.name)}no input named "
                            f"{sorted(named)}; inputs: {list(info.slots)}")
        return _result(record(info, inputs, name), out)

    op_function.__name__ = opdef.name
    op_function.__doc__ = opdef.doc or f"The {opdef.name} operator."
    return op_function


def make_nd_from_symbol_api(api: Any):
    """``sg.nd`` version of a hand-written ``sg.sym`` function (``Custom``): the symbol it
    builds on placeholder variables gives the node's op and attributes."""
    from . import symbol as S

    def op_function(*args: Any, out: Optional[NDArray] = None, name: Optional[str] = None,
                    **kwargs: Any) -> Any:
        arrays: dict[str, NDArray] = {}

        def hold(v: Any) -> Any:
            if isinstance(v, NDArray):
                key = f"_nd{len(arrays)}"
                arrays[key] = v
                return S.var(key)
            return v
        sym = api(*[hold(a) for a in args], **{k: hold(v) for k, v in kwargs.items()})
        node = sym.outputs_[0].node
        inputs = []
        for e in node.inputs:
            if not (e.node.is_variable and e.node.name in arrays):
                raise AttrError(f"{where(name or node.name, node.op)}input {e.node.name!r} "
                                f"must be given as an NDArray")
            inputs.append(arrays[e.node.name])
        info = _Call(registry.get_op(node.op), node.attrs)
        return _result(record(info, inputs, name), out)

    op_function.__name__ = getattr(api, "__name__", "op")
    op_function.__doc__ = api.__doc__
    return op_function
