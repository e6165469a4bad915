"""Float casts done by the steps next to them: ``Graph -> Graph``.

Why: AMP's mixed-precision graphs convert between float32 and a narrow float (float16,
bfloat16) around every op list boundary, and autodiff converts each gradient back: a bfloat16
Transformer encoder's training step has six such steps per layer, each a memory-bound kernel
reading and writing a whole activation (``amp_multicast`` before each residual add also copies
the operand that already has the right dtype). A kernel that computes in float32 anyway can
convert as it loads or stores, for free.

Requires: the graph's types; ``fuse_elementwise`` has run (this pass reads ``_fused`` nodes,
and makes one-member ones). Two rewrites, each of a cast converting each element on its own
(``OpDef.cast``; the data is input 0) or of an op converting each input
(``OpDef.extra["casts_each"]``, ``amp_multicast``: output i converts input i, or is input i
unchanged when their dtypes agree):

* (widen) a cast from a narrow float to float32 that is no graph output, and whose every
  reader computes in float32 from that value: a headless ``_fused`` node computing in
  float32, an elementwise/broadcast op with a formula and float32 output (it becomes a
  one-member ``_fused``), or an op whose ``OpDef.extra["input_cast_attr"]`` attribute names
  the dtype it converts its data to, unset (softmax: set to float32), or one reading those
  inputs in any float (``OpDef.extra["float_inputs"]``). Each reader reads the narrow value
  instead. For ``casts_each`` ops, every output that converts must qualify; the
  outputs that do not convert are their inputs.
* (narrow) a cast from float32 to a narrow float whose input is read by that cast alone, is
  no graph output, and is an output of a headless ``_fused`` node computing in float32 or
  output 0 of an op whose ``OpDef.extra["output_cast_attr"]`` attribute names its output's
  dtype, unset: that node stores the output in the narrow dtype itself.

Guarantees: every graph output keeps its value bit for bit, its name and its type: a
narrow-to-float32 conversion is exact, the reader computes from the same float32 values, and
a store converts with the same rounding as the cast it replaces; a reader never reads a value
computed later (it reads the cast's own input); the graph is unchanged when nothing qualifies.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ...core.attrs import Attrs
from ...core.graph import Entry, Graph, Node, rewrite
from ...core.registry import BROADCAST, ELEMWISE, OpDef, get_op, ops_where
from ...core.types.table import TypeTable, types_of
from ..ops.fused import lone_group
from .fold_casts import is_cast

FUSED = "_fused"
NARROW = ("float16", "bfloat16")
WIDE = np.dtype(np.float32)


def _casts_each(node: Node) -> bool:
    """Output i converts input i (``OpDef.extra["casts_each"]``: ``amp_multicast``)."""
    return not node.is_variable and bool(get_op(node.op).extra.get("casts_each"))


def converts(opdef: OpDef) -> bool:
    """Whether ``opdef`` is a cast or converts each input (for :func:`ops_where`)."""
    return opdef.cast or bool(opdef.extra.get("casts_each"))


def _name(t: Optional[np.dtype]) -> str:
    return "" if t is None else np.dtype(t).name


def _computes_wide(node: Node, types: TypeTable) -> bool:
    """A headless ``_fused`` node computing in float32."""
    if node.op != FUSED or node.attrs["head"] is not None:
        return False
    own = node.attrs.get("dtype")
    return (np.dtype(own) if own is not None else types.dtype(Entry(node))) == WIDE


def _reads_wide(reader: Node, slots: list[int], types: TypeTable) -> bool:
    """Whether ``reader`` computes in float32 from whatever float its inputs ``slots`` hold."""
    if reader.is_variable:
        return False
    if _computes_wide(reader, types):
        return True
    op = get_op(reader.op)
    out = types.dtype(Entry(reader))
    if op.expr is not None and op.pattern in (ELEMWISE, BROADCAST) \
            and op.num_outputs(reader.attrs) == 1:
        return out == WIDE and all(_name(types.dtype(e)) in NARROW + ("float32",)
                                   for e in reader.inputs)
    if set(slots) <= set(op.extra.get("float_inputs", ())):
        return True
    attr = op.extra.get("input_cast_attr")
    return attr is not None and reader.attrs.get(attr) is None and slots == [0] and out == WIDE


def _stores_wide(src: Entry, types: TypeTable) -> bool:
    """Whether ``src`` is a float32 output its producer can store narrow instead."""
    node = src.node
    if _computes_wide(node, types):
        return True
    if node.is_variable or src.index != 0 or types.dtype(src) != WIDE:
        return False
    attr = get_op(node.op).extra.get("output_cast_attr")
    return attr is not None and node.attrs.get(attr) is None


def _conversions(node: Node, types: TypeTable) -> Optional[dict[int, bool]]:
    """Output index -> whether it widens a narrow float to float32, for a cast or a
    multicast whose outputs all widen or keep their input; None for anything else."""
    each = _casts_each(node)
    if each:
        pairs = [(types.dtype(e), types.dtype(Entry(node, i))) for i, e in enumerate(node.inputs)]
    elif is_cast(node):
        pairs = [(types.dtype(node.inputs[0]), types.dtype(Entry(node)))]
    else:
        return None
    out: dict[int, bool] = {}
    for i, (t_in, t_out) in enumerate(pairs):
        if t_in is not None and t_in == t_out and each:
            out[i] = False
        elif _name(t_in) in NARROW and t_out == WIDE:
            out[i] = True
        else:
            return None
    return out


def _plan(graph: Graph, types: TypeTable) -> tuple[set[str], set[str]]:
    """The names of the casts readers absorb (widen) and of those producers absorb (narrow)."""
    readers: dict[Entry, list[tuple[Node, int]]] = {}
    for n in graph.nodes():
        for k, e in enumerate(n.inputs):
            readers.setdefault(e, []).append((n, k))
    outputs = set(graph.outputs)
    widen: set[str] = set()
    narrow: set[str] = set()
    for node in graph.nodes():
        conv = _conversions(node, types)
        if conv is not None and _absorbable(node, conv, readers, outputs, types):
            widen.add(node.name)
        elif is_cast(node) and _name(types.dtype(Entry(node))) in NARROW \
                and types.dtype(node.inputs[0]) == WIDE:
            src = node.inputs[0]
            if _stores_wide(src, types) and src not in outputs \
                    and {r for r, _ in readers[src]} == {node}:
                narrow.add(node.name)
    return widen, narrow


def _absorbable(node: Node, conv: dict[int, bool], readers: dict, outputs: set,
                types: TypeTable) -> bool:
    """Whether every converting output of ``node`` is no graph output and only read by
    readers that compute in float32 from it (:func:`_reads_wide`)."""
    for i, widens in conv.items():
        e = Entry(node, i)
        if not widens:
            continue
        if e in outputs:
            return False
        by_reader: dict[Node, list[int]] = {}
        for r, k in readers.get(e, []):
            by_reader.setdefault(r, []).append(k)
        if not all(_reads_wide(r, ks, types) for r, ks in by_reader.items()):
            return False
    return True


def _as_fused(node: Node, types: TypeTable) -> Node:
    """``node`` (an elementwise op; its inputs already replaced) as a one-member ``_fused``
    node computing in float32."""
    attrs = lone_group(node, types.shape(Entry(node)), WIDE.name)
    return Node(FUSED, f"{attrs['name']}:{node.name}", attrs, node.inputs)


def _absorbed(e: Entry, widen: set[str]) -> bool:
    n = e.node
    return n.name in widen and (_casts_each(n) or is_cast(n))


def _read_through(node: Node, widen: set[str], types: TypeTable) -> Node:
    """``node`` reading each absorbed cast's input instead of the cast, converting it itself
    where the dtype read changes."""
    ins = tuple(e.node.inputs[e.index] if _absorbed(e, widen) else e for e in node.inputs)
    rebuilt = node.with_inputs(ins)
    types.copy(node, rebuilt)
    if all(types.dtype(a) == types.dtype(b) for a, b in zip(ins, node.inputs)):
        return rebuilt  # (only multicast outputs that were copies: nothing to convert)
    if node.op == FUSED:
        return _with_attrs(rebuilt, {"dtype": WIDE.name}, types)
    changed = {k for k, (a, b) in enumerate(zip(ins, node.inputs)) if a != b}
    if changed <= set(get_op(node.op).extra.get("float_inputs", ())):
        return rebuilt  # (reads any float; its output dtype stays)
    attr = get_op(node.op).extra.get("input_cast_attr")
    if attr is not None and get_op(node.op).expr is None:
        return _with_attrs(rebuilt, {attr: WIDE.name}, types)
    new = _as_fused(rebuilt, types)
    types.copy(rebuilt, new)
    return new


def _with_attrs(node: Node, changes: dict, types: TypeTable) -> Node:
    new = Node(node.op, node.name, Attrs({**node.attrs, **changes}), node.inputs, node.extra)
    new.set_entries(len(node.entries()))
    types.copy(node, new)
    return new


def _stored_narrow(node: Node, narrowed: dict[int, str], types: TypeTable) -> Node:
    """``node`` (a ``_fused`` node, or an op with ``output_cast_attr``) storing outputs
    ``narrowed`` in their narrow dtypes."""
    if node.op != FUSED:
        new = _with_attrs(node, {get_op(node.op).extra["output_cast_attr"]: narrowed[0]}, types)
        types.add(Entry(new), types.shape(Entry(node)), narrowed[0])
        return new
    n = len(node.attrs["exprs"])
    dtypes = list(node.attrs.get("out_dtypes") or (WIDE.name,) * n)
    for k, t in narrowed.items():
        dtypes[k] = t
    new = _with_attrs(node, {"dtype": WIDE.name, "out_dtypes": tuple(dtypes)}, types)
    for k, t in narrowed.items():
        types.add(Entry(new, k), types.shape(Entry(node, k)), t)
    return new


def absorb_casts(graph: Graph) -> Graph:
    """``graph`` with the casts its float32 kernels can do as they load or store removed."""
    if graph.op_names().isdisjoint(ops_where(converts)):
        return graph  # (no cast: nothing to walk)
    types = types_of(graph)
    widen, narrow = _plan(graph, types)
    if not widen and not narrow:
        return graph
    # producer name -> its outputs stored narrow (names: rewrite rebuilds nodes)
    stores: dict[str, dict[int, str]] = {}
    for n in graph.nodes():
        if n.name in narrow:
            src = n.inputs[0]
            stores.setdefault(src.node.name, {})[src.index] = _name(types.dtype(Entry(n)))

    def visit(node: Node) -> object:
        if node.name in narrow and is_cast(node):
            return [node.inputs[0]]
        if any(_absorbed(e, widen) for e in node.inputs):
            node = _read_through(node, widen, types)
        if node.name in stores:
            node = _stored_narrow(node, stores[node.name], types)
        return node
    return rewrite(graph, visit)
