"""Shape inference (analysis): ``Graph -> {Entry: shape}``.

Requires: every op registered. Guarantees: every shape a rule could decide is filled, going
forward and backward through the graph until nothing changes (MXNet's fixpoint), and a shape the
user gave is checked, never overwritten. Only then do ops with a ``guess_shape`` (broadcasts:
MXNet's same-shape ``a + b``) fill what is still unknown, each guess followed by the fixpoint. A contradiction raises ShapeError naming the node, the
op, the input or output, the shape it has and the shape inferred from the other inputs.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from ..base import AttrError, ShapeError, where
from ..graph import VARIABLE, Entry, Graph, Node, check_unique_inputs
from ..registry import PartialShape, ShapeRule, get_op
from ..util import is_np_shape
from .shapes import MAX_ELEMENTS, as_shape, merge_dims
from .table import declared_partial, declared_shape  # noqa: F401  (declared_shape: API)

Shape = tuple[int, ...]

# Full inferences run in this process (tests count them: one per bind).
COUNT = {"infer_shapes": 0}


def _describe(names: Sequence[str], shapes: Sequence[Optional[Shape]], skip: int) -> str:
    known = [f"{n} {s}" for i, (n, s) in enumerate(zip(names, shapes))
             if i != skip and s is not None]
    return " from " + ", ".join(known) if known else ""


class _Known:
    """Shapes found so far: fully known ones, and partial ones (0 = unknown dimension) that
    only rules declaring ``OpDef.partial_shapes`` read."""

    def __init__(self, full: Optional[dict] = None, exact: bool = False) -> None:
        self.full: dict[Entry, Shape] = {} if full is None else full
        self.partial: dict[Entry, Shape] = {}
        self.exact = exact  # shapes of actual arrays: a 0 is an empty axis, not an unknown one

    def get(self, e: Entry, partial: bool) -> Optional[Shape]:
        """The full shape, else (``partial``) the partial one as a ``PartialShape``: a rule
        then reads a 0 in a plain tuple as an empty axis (a bound zero-size array)."""
        got = self.full.get(e)
        if got is not None or not partial:
            return got
        got = self.partial.get(e)
        return None if got is None else PartialShape(got)

    def put(self, e: Entry, new: Shape, partial: bool = False) -> Optional[Shape]:
        """Record ``new``; returns the conflicting known shape, or None. Sets ``changed``.
        ``partial``: a 0 in ``new`` is unknown even in exact mode (``PartialShape``)."""
        exact = self.exact and not partial
        old = self.full.get(e)
        if old is not None:
            same = old == new if exact else merge_dims(old, new) == old
            return None if same else old
        if exact:
            self.full[e] = new
            self.changed = True
            return None
        old = self.partial.get(e)
        merged = new if old is None else merge_dims(old, new)
        if merged is None:
            return old
        if 0 not in merged:
            self.full[e] = merged
            self.partial.pop(e, None)
            self.changed = True
        elif merged != old:
            self.partial[e] = merged
            self.changed = True
        return None

    changed = False


def apply_shape_rule(node: Node, shapes: dict[Entry, Shape]) -> bool:
    """Run ``node``'s rule on exactly known ``shapes`` (updated in place); True if it found
    any new shape (the imperative front end infers one call at a time with it). Example:
    ``apply_shape_rule(relu_node, {x: (2, 3)})`` adds ``relu_node``'s output, ``(2, 3)``."""
    known = _Known(shapes, exact=True)
    _apply(node, known)
    return known.changed


def _nothing_new(entries: Sequence[Entry], shapes: Sequence[Optional[Shape]],
                 full: dict[Entry, Shape]) -> bool:
    """Every shape a rule gave is None or the very tuple already recorded (checked then)."""
    for e, s in zip(entries, shapes):  # (plain loops here: once per node and sweep)
        if s is not None and s is not full.get(e):
            return False
    return True


def _put_plain(entries: Sequence[Entry], news: Sequence[Optional[Shape]], known: _Known) -> bool:
    """Record the shapes a rule found for ``entries`` (its outputs, or its inputs) when each
    is nothing new or a plain new shape (a tuple
    of positive ints, within ``MAX_ELEMENTS``, of an entry known neither fully nor partly):
    what the general path below does for them, without its per-slot names and checks (this
    is every rule of a bind's forward graph). False, recording nothing, for anything else."""
    full = known.full
    for e, s in zip(entries, news):  # (plain loops: once per node)
        if s is None or s is full.get(e):
            continue
        if type(s) is not tuple or e in full:
            return False
        size = 1
        for d in s:
            if type(d) is not int or d <= 0:
                return False
            size *= d
        if size > MAX_ELEMENTS:
            return False
    for e, s in zip(entries, news):
        if s is not None and e not in full:
            full[e] = s
            known.changed = True
    return True


def _apply(node: Node, known: _Known, rule: Optional[ShapeRule] = None) -> bool:
    """Run ``node``'s rule (or ``rule``) and record what it found. True when every input and
    output is fully known now: the rule (a function of them) has nothing left to say; run
    again, it would return the very shapes it was given."""
    opdef = get_op(node.op)
    partial = opdef.partial_shapes
    full = known.full
    entries = node.entries()
    if partial and known.partial:
        ins = [known.get(e, True) for e in node.inputs]
        outs = [known.get(e, True) for e in entries]
    else:  # no partial shapes to look at: the full ones alone (once per node and sweep)
        ins = [full.get(e) for e in node.inputs]
        outs = [full.get(e) for e in entries]
    try:
        new_ins, new_outs = (rule or opdef.infer_shape)(node.attrs, list(ins), list(outs))
    except (ShapeError, AttrError) as exc:  # attribute ranges are checked against the shapes
        given = ", ".join(f"{n} {s}" for n, s in zip(opdef.input_names(node.attrs), ins)
                          if s is not None)
        raise type(exc)(f"{where(node.name, node.op)}{exc} (inputs: {given or 'none known'})") \
            from None
    # (inputs too: FullyConnected's rule gives its weight's and bias's shapes)
    if _nothing_new(node.inputs, new_ins, full) or \
            not known.partial and _put_plain(node.inputs, new_ins, known):
        if _nothing_new(entries, new_outs, full):
            return _all_known(node, entries, full)
        if not known.partial and _put_plain(entries, new_outs, known):
            return _all_known(node, entries, full)
    # in a bind, a 0 is an empty axis, unless it comes from a PartialShape (directly or through
    # a rule that read one): then it is an unknown dimension until a rule fills it in
    partial = partial and bool(known.partial) and any(
        e in known.partial for e in (*node.inputs, *entries))
    partial = partial or any(isinstance(s, PartialShape) for s in (*new_ins, *new_outs))
    in_names = opdef.input_names(node.attrs)
    out_names = opdef.output_names(node.attrs)
    slots = [(e, n, new, i, True) for i, (e, n, new)
             in enumerate(zip(node.inputs, in_names, new_ins))]
    slots += [(e, n, new, i, False) for i, (e, n, new)
              in enumerate(zip(entries, out_names, new_outs))]
    for entry, slot, new, i, is_input in slots:
        if new is None or new is full.get(entry):
            continue
        new = as_shape(new, f"{where(node.name, node.op)}{slot}")
        clash = known.put(entry, new, partial)
        if clash is not None:
            src = _describe(in_names, ins, i if is_input else -1)
            raise ShapeError(f"{where(node.name, node.op)}{slot} has shape {tuple(clash)}, "
                             f"inferred {new}{src}")
    return _all_known(node, entries, full)


def _all_known(node: Node, entries: Sequence[Entry], full: dict[Entry, Shape]) -> bool:
    for e in node.inputs:
        if e not in full:
            return False
    for e in entries:
        if e not in full:
            return False
    return True


def infer_shapes(graph: Graph, given: Mapping[str, Shape]) -> dict[Entry, Shape]:
    """Shapes of every entry that can be decided from ``given`` (variable name -> the shape
    of an actual array: a 0 there is an empty axis, not an unknown one)."""
    return infer_partial_shapes(graph, given, exact=True)[0]


def infer_partial_shapes(graph: Graph, given: Mapping[str, Shape], exact: bool = False
                         ) -> tuple[dict[Entry, Shape], dict[Entry, Shape]]:
    """``(fully known shapes, partially known shapes)``. In declared ``shape=``, and in
    ``given`` unless ``exact``, a 0 is an unknown dimension (MXNet's partial shapes)."""
    COUNT["infer_shapes"] += 1
    nodes = graph.nodes()
    known = _Known(exact=exact)
    for node in nodes:
        if node.op != VARIABLE:
            continue
        user = given.get(node.name)  # overrides a declared shape, as in MXNet
        if user is not None and exact:
            known.full[Entry(node)] = as_shape(user, f"variable {node.name}")
            continue
        shape = user if user is not None else declared_partial(node)
        if shape is not None:
            known.put(Entry(node), as_shape(shape, f"variable {node.name}"), partial=True)
    ops = [n for n in nodes if n.op != VARIABLE]
    # A node whose inputs and outputs are all fully known after its rule ran is settled:
    # shapes never change once fully known, so running it again would give the same answer.
    settled: set[Node] = set()
    _fixpoint(ops, known, settled)
    for node in ops if len(settled) < len(ops) else ():  # last resort: the ops' guesses
        guess = get_op(node.op).extra.get("guess_shape")
        if guess is not None and node not in settled:
            known.changed = False
            if _apply(node, known, guess):
                settled.add(node)
            if known.changed:
                _fixpoint(ops, known, settled)
    return known.full, known.partial


def _fixpoint(ops: list[Node], known: _Known, settled: set[Node]) -> None:
    """Forward and backward sweeps of the rules until nothing changes."""
    for _ in range(len(ops) + 2):
        known.changed = False
        for node in ops:
            if node not in settled and _apply(node, known):
                settled.add(node)
        if not known.changed:  # every rule ran on the final shapes: backward finds nothing
            break
        for node in reversed(ops):
            if node not in settled and _apply(node, known):
                settled.add(node)


def _split_given(sym: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Shape]:
    names = sym.list_arguments()
    if len(args) > len(names):
        raise ShapeError(f"{len(args)} positional shapes for {len(names)} arguments {names}")
    given = {n: tuple(s) for n, s in zip(names, args) if s is not None}
    inputs = set(sym.list_inputs())
    for k, v in kwargs.items():
        if k not in inputs:
            raise ShapeError(f"infer_shape: {k!r} is not an input of the symbol; "
                             f"inputs: {sym.list_inputs()}")
        if v is not None:
            given[k] = tuple(v)
    return given


def symbol_infer_shape(sym: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
                       partial: bool) -> tuple:
    """``Symbol.infer_shape`` / ``infer_shape_partial``. In the partial form a shape that
    stays unknown is ``()`` as in MXNet (``None`` under ``np_shape``, where ``()`` is a
    scalar's shape)."""
    arg_shapes, out_shapes, aux_shapes = symbol_shapes(sym, args, kwargs, partial)[1]
    if not partial or is_np_shape():
        return arg_shapes, out_shapes, aux_shapes
    return tuple([() if s is None else s for s in shapes]
                 for shapes in (arg_shapes, out_shapes, aux_shapes))


def symbol_shapes(sym: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
                  partial: bool, check_names: bool = True) -> tuple[dict[Entry, Shape], tuple]:
    """One inference: every entry's shape, and ``(arg_shapes, out_shapes, aux_shapes)``.
    ``check_names=False`` lets two variables share a name (drawing such a graph is fine;
    binding it is not), a given shape then applying to both."""
    graph = sym.graph()
    if check_names:
        check_unique_inputs(graph)
    np_shape = is_np_shape()
    given = _split_given(sym, args, kwargs)
    if np_shape:  # numpy shape semantics: -1 is the unknown dimension the rules know as 0
        given = {k: tuple(0 if d == -1 else d for d in v) for k, v in given.items()}
    shapes, partly = infer_partial_shapes(graph, given)
    if partial:  # MXNet's infer_shape_partial: unknown dimensions are 0 (-1 under np_shape)
        if np_shape:
            partly = {e: tuple(-1 if d == 0 else d for d in s) for e, s in partly.items()}
        shapes = {**partly, **shapes}
    by_name = {n.name: shapes.get(Entry(n)) for n in graph.variables()}
    arg_shapes = [by_name[n] for n in sym.list_arguments()]
    aux_shapes = [by_name[n] for n in sym.list_auxiliary_states()]
    out_shapes = [shapes.get(e) for e in graph.outputs]
    if not partial:
        missing = [n for n in sym.list_inputs() if by_name[n] is None]
        missing_out = [n for n, s in zip(sym.list_outputs(), out_shapes) if s is None]
        if missing or missing_out:
            raise ShapeError(f"cannot decide the shapes of {missing or missing_out}; "
                             f"give them to infer_shape / simple_bind")
    return shapes, (arg_shapes, out_shapes, aux_shapes)
