"""Imperative ``sg.nd`` op calls, recorded lazily as nodes of the one graph IR.

An op call on NDArrays checks its attributes, shape and dtype rules right away (so errors name
the call), creates a :class:`~symgraph.core.graph.Node` whose inputs are the entries of pending inputs
or variables standing for materialised ones, and returns *pending* NDArrays. Nothing runs until
a value is needed: :mod:`symgraph.frontend.imperative.compute` then compiles the subgraph, caches the
program by the graph's structure, and materialises every live pending array of it at once. The
same nodes, when recorded under ``autograd.record()``, are what ``backward()`` differentiates.
Semantics: docs/imperative.md.
"""
from __future__ import annotations

import itertools
import weakref
from typing import Any, Optional, Sequence

import numpy as np

from ...core import registry
from ...core.attrs import Attrs, parse_attrs
from ...core.base import AttrError, BindError, ShapeError, where
from ...core.context import Context, current_context
from ...core.graph import Entry, Node, variable
from ...runtime.ndarray import NDArray
from ...core.types.infer_shape import apply_shape_rule
from ...core.types.infer_type import apply_type_rule
from .engine import (ATTR_SERIAL, ENGINE, GRAD_LEAF, GRAD_VAR, MODE, PENDING, PLAIN, THREAD,
                     VALUE)
from .trace import Tape

_ref, _new_entry = weakref.ref, tuple.__new__
_make_node, _pending = Node.make, NDArray.pending

_ids = itertools.count()
MAX_INTERNED = 50000
FAST_CALLS = ENGINE.fast_calls  # (what a caller gave -> Call: see ``nd_methods``)


def compile_count() -> int:
    """How many programs imperative code has compiled in this process (cache misses)."""
    return ENGINE.stats["compiles"]


class Call:
    """An op with parsed attributes: what every call with the same attributes shares."""

    __slots__ = ("opdef", "op", "attrs", "slots", "arity", "nvis", "sigs", "eager")

    def __init__(self, opdef: registry.OpDef, attrs: Attrs) -> None:
        self.opdef, self.op, self.attrs = opdef, opdef.name, attrs
        self.slots = opdef.input_names(attrs)
        self.arity = len(self.slots)
        self.nvis = opdef.num_visible_outputs(attrs)
        self.sigs: dict[tuple, tuple] = {}  # (input shapes, dtypes) -> output shapes, dtypes
        self.eager = opdef.always_mutates  # runs at the call (see _record_update)


def call_info(opdef: registry.OpDef, kwargs: dict, name: Optional[str]) -> Call:
    """The :class:`Call` of ``opdef`` with attributes ``kwargs`` (parsed once per value set:
    calls seen before are found by the keywords given, then by the parsed attributes)."""
    try:
        key: Optional[tuple] = (opdef.name, tuple(sorted(kwargs.items())) if kwargs else ())
        info = ENGINE.calls.get(key)
    except TypeError:  # an unhashable attribute value (a list): parse every time
        key, info = None, None
    if info is None:
        attrs = parse_attrs(opdef.params, kwargs, where(name or opdef.name, opdef.name))
        info = ENGINE.interned.get((opdef.name, attrs))
        if info is None:
            if len(ENGINE.interned) >= MAX_INTERNED:  # e.g. one attribute set per call
                ENGINE.forget_calls()
            info = ENGINE.interned[opdef.name, attrs] = Call(opdef, attrs)
            ATTR_SERIAL[id(attrs)] = (attrs, next(ENGINE.serials))
        if key is not None:
            ENGINE.calls[key] = info
    return info


def _leaf(a: NDArray) -> Entry:
    """The variable standing for materialised ``a`` in graphs (one per array)."""
    if a._var is None:
        v = variable(f"_leaf{next(_ids)}")
        VALUE[v] = [NDArray(a._buf, a._ctx)]
        a._var = v
    return Entry(a._var)


def input_entry(a: NDArray, recording: bool) -> Entry:
    """The entry an op recorded now reads for input ``a`` (as in :func:`record`)."""
    if a._buf is None:
        return a._entry if not recording or a._recorded else _block(a)
    return a._entry if recording and a._recorded else _leaf(a)


def _block(a: NDArray) -> Entry:
    """``a`` (computed outside record()) behind a BlockGrad: a constant for the gradient."""
    opdef = registry.get_op("BlockGrad")
    node = Node(opdef.name, f"BlockGrad{next(_ids)}", call_info(opdef, {}, None).attrs,
                (a._entry,), PLAIN)
    return Entry(node)


def _infer(info: Call, node: Node, inputs: Sequence[NDArray]) -> tuple:
    """Output shapes and dtypes of one call, from the op's own rules (errors name the call)."""
    shapes = {e: a.shape for e, a in zip(node.inputs, inputs)}
    types = {e: a.dtype for e, a in zip(node.inputs, inputs)}
    apply_shape_rule(node, shapes)
    apply_type_rule(node, types)
    outs = [Entry(node, i) for i in range(info.nvis)]
    if not inputs:  # an op making an array from attributes alone: MXNet's default dtype
        for e in outs:
            types.setdefault(e, np.dtype(np.float32))
    missing = [i for i, e in enumerate(outs) if e not in shapes or e not in types]
    if missing:
        given = ", ".join(f"{n} {a.shape}" for n, a in zip(info.slots, inputs))
        raise ShapeError(f"{where(node.name, node.op)}cannot decide the shape of output(s) "
                         f"{missing} from {given}")
    return tuple(shapes[e] for e in outs), tuple(types[e] for e in outs)


def _bad_inputs(info: Call, inputs: Sequence[Any], name: str) -> None:
    """Raise the error that describes what is wrong with ``inputs``."""
    op = info.opdef.name
    if len(inputs) != len(info.slots):
        missing = list(info.slots[len(inputs):])
        raise AttrError(f"{where(name, op)}takes inputs {list(info.slots)}, got {len(inputs)} "
                        f"arrays" + (f"; missing {missing}" if missing else ""))
    for slot, a in zip(info.slots, inputs):
        if not isinstance(a, NDArray):
            raise AttrError(f"{where(name, op)}input '{slot}' must be an NDArray, got "
                            f"{type(a).__name__}")
    ctx = inputs[0]._ctx
    for slot, a in zip(info.slots, inputs):
        if a._ctx != ctx:
            raise BindError(f"{where(name, op)}input '{slot}' is on {a._ctx}, "
                            f"'{info.slots[0]}' on {ctx}")


def _gather(info: Call, inputs: Sequence[Any], name: Optional[str], ctx: Optional[Context],
            rec: bool, tape: Optional[Tape]) -> tuple:
    """The entries a node recorded now reads for ``inputs``, their (shapes, dtypes), and (with
    a tape following) their tape references (see :func:`record`); checks the inputs."""
    n = len(inputs)
    entries, shapes, dtypes = [None] * n, [None] * n, [None] * n  # (filled by index: no calls)
    refs = [None] * n if tape is not None else []
    local = tape.local if tape is not None else None
    i = 0
    for a in inputs:
        if ctx is None or a.__class__ is not NDArray and not isinstance(a, NDArray):
            _bad_inputs(info, inputs, name or info.op)
        c = a._ctx
        if c is not ctx and c != ctx:
            _bad_inputs(info, inputs, name or info.op)
        b = a._buf
        if b is None:
            e = a._entry if not rec or a._recorded else _block(a)
            shapes[i], dtypes[i] = a._shape, a._dtype
        else:
            if rec and a._recorded:
                e = a._entry
            else:
                v = a._var
                e = _new_entry(Entry, (v, 0)) if v is not None else _leaf(a)
            shapes[i], dtypes[i] = b.shape, b.dtype
        entries[i] = e
        if local is not None:
            k = local.get(e[0])
            refs[i] = (k, e[1]) if k is not None else tape.leaf(e)
        i += 1
    if ctx is None:
        _bad_inputs(info, inputs, name or info.op)
    return tuple(entries), (tuple(shapes), tuple(dtypes)), tuple(refs)


def _gather_one(a: NDArray, tape: Tape) -> tuple:
    """:func:`_gather` of the usual call under ``record()``: one pending recorded input."""
    e = a._entry
    k = tape.local.get(e[0])
    return (e,), ((a._shape,), (a._dtype,)), ((k, e[1]) if k is not None else tape.leaf(e),)


def _record_update(info: Call, inputs: Sequence[NDArray], name: Optional[str],
                   ctx: Optional[Context]) -> list[NDArray]:
    """An op that writes its inputs (``OpDef.always_mutates``: optimizer updates) runs at the
    call, as MXNet's engine orders such writes: pending work, which may read the states, is
    computed first, and the states hold their new values when the call returns (a lazy node
    would leave them stale for a reader that sees no pending work)."""
    from .hooks import flush, force
    flush()
    outs = record(info, inputs, name, ctx, now=True)
    force(outs)
    return outs


def record(info: Call, inputs: Sequence[NDArray], name: Optional[str] = None,
           ctx: Optional[Context] = None, now: bool = False) -> list[NDArray]:
    """Append one node of ``info``'s op on ``inputs``; return its pending visible outputs.
    ``ctx`` places an op without inputs (``_zeros``); others run where their inputs are.

    The per-step hot path of imperative code (about 15 calls a training step): one pass over
    the inputs (none for the usual call under ``record()``: one pending recorded input), one
    Node, a cached shape/dtype rule result, the output arrays, the tape's entry. ``now``: the
    call of :func:`_record_update`. Example: ``record(call_info(get_op("relu"), {}, None),
    [x])`` is ``sg.nd.relu(x)``."""
    if info.eager and not now:
        return _record_update(info, inputs, name, ctx)
    state = THREAD.state
    rec, n = state.recording, len(inputs)
    if n:
        first = inputs[0]
        ctx = first._ctx if n == info.arity and (first.__class__ is NDArray or isinstance(
            first, NDArray)) else None
    else:
        ctx = None if info.slots else ctx or current_context()
    tape = None
    if rec:  # follow the node on the tape (see Tape), in this one pass over the inputs
        tape = state.tape
        if tape is None:
            tape = state.tape = Tape()
        elif not tape.ok:
            tape = None
    if n == 1 and tape is not None and ctx is not None and first._buf is None \
            and first._recorded:  # (ctx known: one NDArray for a one-input op)
        ins, sig, refs = _gather_one(first, tape)
    else:
        ins, sig, refs = _gather(info, inputs, name, ctx, rec, tape)
    train = state.training
    node = _make_node(info.op, name or f"{info.op}{next(_ids)}", info.attrs, ins,
                      MODE[rec, train])
    found = info.sigs.get(sig)
    if found is None:
        found = info.sigs[sig] = _infer(info, node, inputs)
    shapes, dtypes = found
    if info.nvis == 1:  # (the usual op: no comprehension frames)
        a = _pending(ctx, _new_entry(Entry, (node, 0)), shapes[0], dtypes[0], rec)
        outs, alive = [a], [_ref(a)]
    else:
        outs = [_pending(ctx, _new_entry(Entry, (node, i)), shapes[i], dtypes[i], rec)
                for i in range(info.nvis)]
        alive = [_ref(a) for a in outs]
    # (on the tape after the rules: a call that raised is not followed)
    if tape is not None and tape.ok and tape.add(node, alive, (info.op, info, train, refs, sig)):
        return outs
    PENDING[node] = alive  # (not followed: forcing finds it there)
    return outs


def call(op: str, inputs: Sequence[NDArray], attrs: dict, out: Optional[NDArray] = None,
         name: Optional[str] = None, ctx: Optional[Context] = None) -> Any:
    """Call registered op ``op`` on arrays (the engine behind ``sg.nd.<op>`` and methods).
    Example: ``call("broadcast_add", [a, b], {})`` is ``a + b``."""
    try:
        key: Optional[tuple] = (op, tuple(attrs.items()))
        info = FAST_CALLS.get(key)
    except TypeError:  # an unhashable attribute value
        key, info = None, None
    if info is None:
        opdef = registry.get_op(op)
        attrs = dict(attrs)
        if opdef.variadic and opdef.variadic not in attrs:
            attrs[opdef.variadic] = len(inputs)  # depends on the call: not kept below
            key = None
        info = call_info(opdef, attrs, name)
        if key is not None and len(FAST_CALLS) < MAX_INTERNED:
            FAST_CALLS[key] = info
    return result(record(info, inputs, name, ctx), out)


def result(outs: list[NDArray], out: Any) -> Any:
    """What an op function returns: ``outs`` written into ``out`` when given, else the one
    output or the list of them."""
    if out is not None:
        targets = out if isinstance(out, (list, tuple)) else [out]
        for t, o in zip(targets, outs):
            t[:] = o
        return out
    return outs[0] if len(outs) == 1 else outs


# -- autograd leaves ----------------------------------------------------------------------------

def attach_grad(a: NDArray, grad_req: str = "write", grad: Optional[NDArray] = None) -> None:
    """Make ``a`` a variable of autograd with gradient buffer ``grad`` (zeros if None)."""
    if grad_req not in ("write", "add", "null"):
        raise AttrError(f"attach_grad: grad_req {grad_req!r} is not 'write', 'add' or 'null'")
    buf = a._data
    if grad is None:
        from ...runtime.ndarray import zeros
        grad = zeros(a.shape, a._ctx, a.dtype)
    elif grad.shape != a.shape or grad._ctx != a._ctx:
        raise BindError(f"mark_variables: gradient of shape {grad.shape} on {grad._ctx} for a "
                        f"variable of shape {a.shape} on {a._ctx}")
    if a._var is not None:
        GRAD_LEAF.pop(a._var, None)
    v = Node("null", f"_var{next(_ids)}", PLAIN, (), GRAD_VAR)
    ENGINE.attached += 1  # (a steady backward plan made before this is not reused)
    VALUE[v] = [NDArray(buf, a._ctx)]
    GRAD_LEAF[v] = weakref.ref(a)
    a._var, a._entry, a._recorded = v, Entry(v), True
    a._grad, a._grad_req = grad, grad_req
    a._fresh_grad = False  # (no backward wrote the new buffer yet)


def detach(a: NDArray) -> NDArray:
    """The value of ``a`` outside any recorded graph (shares memory when computed)."""
    if a._buf is not None:
        return NDArray(a._buf, a._ctx)
    state = THREAD.state
    saved, state.recording = state.recording, False
    try:
        return call("BlockGrad", [a], {})
    finally:
        state.recording = saved
