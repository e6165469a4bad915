"""Compiling what imperative code recorded: walk, cache by structure, run, materialise.

Requires: nodes recorded by :mod:`symgraph.frontend.imperative.calls` (every pending array's output
shape and dtype known). Guarantees: a subgraph is compiled by the unchanged pipeline (a
:class:`~symgraph.runtime.compile.Stage` over a canonical copy whose variables are ``_in0``,
``_in1``...), once per structure: the cache key is the ops, attributes and wiring in topological
order, the leaves' shapes and dtypes, the outputs, the context, the training mode and (for
``backward``) which leaves get gradients and how. A cache hit costs one walk over the recorded
nodes (for ``backward`` usually not even that: the tape, ``trace.Tape``), a dict
lookup and one program run. Every live pending array of the subgraph is materialised by that
one run. Programs are kept under a byte budget (``cache.ProgramCache``).
"""
from __future__ import annotations

import warnings
import weakref
from typing import Any, Optional, Sequence

from ...runtime import compile
from ...core.base import ExecutionError
from ...core.build import OPS, Handle
from ...core.context import Context
from ...core.graph import Entry, Graph, Node, aux_variables, variable
from ...runtime.ndarray import NDArray
from ...core.registry import get_op
from . import steady
from .engine import (ENGINE, FAILED, FREED, GRAD_LEAF, GRAD_VAR, PENDING, PLAIN, STATS, THREAD,
                     VALUE, is_training)
from .program import Program
from .trace import Tape, Trace, settle, walk


def _live_outputs(tr: Trace, skip: set) -> list[tuple[Entry, NDArray]]:
    """Pending arrays, alive, that stand for outputs of the walked nodes (a walk runs after
    ``settle()``: PENDING knows every pending node then; a tape knows its own)."""
    outs = []
    if isinstance(tr, Tape):
        found = tr.alive if not tr.settled else [tr.pending_of(k)
                                                 for k in range(len(tr.nodes))]
    else:
        pending_of, ref = PENDING.data.get, weakref.ref
        found = [pending_of(ref(n)) for n in tr.nodes]
    for node, refs in zip(tr.nodes, found):
        if refs is None:
            continue
        for i, r in enumerate(refs):
            a = r()
            if a is None or a._buf is not None:
                continue
            e = a._entry
            if e is not None and e.node is node and e.index == i and e not in skip:
                outs.append((e, a))
    return outs


def _canonical(tr: Trace, prefix: str = "_in") -> tuple[list[Node], list[Node]]:
    """Copies of the walked nodes reading variables ``_in<k>`` instead of the leaves."""
    variables = [variable(f"{prefix}{k}") for k in range(len(tr.leaves))]
    new: list[Node] = []
    for node, sig in zip(tr.nodes, tr.sig):
        ins = tuple(Entry(variables[-1 - r]) if isinstance(r, int) else Entry(new[r[0]], r[1])
                    for r in sig[3])
        new.append(Node(node.op, node.name, node.attrs, ins, PLAIN))  # modes stay here
    return new, variables


def _compile(tr: Trace, ctx: Context, outputs: list[Entry], blocked: list[Entry],
             grads: dict[int, tuple[NDArray, str]], train: bool) -> Program:
    """Compile a stage over ``outputs`` (+ ``blocked``: forward values that get no gradient)
    reading the leaves as variables ``_in0``, ``_in1``..."""
    new, variables = _canonical(tr)

    def canon(e: Entry) -> Entry:
        return Entry(new[tr.local[e.node]], e.index)
    heads = [canon(e) for e in outputs]
    heads += [OPS.BlockGrad(Handle((canon(e),))).outputs_[0] for e in blocked]
    graph = Graph(tuple(heads))
    aux = aux_variables(graph.nodes())
    names = [v.name for v in variables]
    types = compile.infer(graph, {n: a.shape for n, a in zip(names, tr.leaves)},
                          {n: a.dtype for n, a in zip(names, tr.leaves)})
    leaf_of = {v: k for k, v in enumerate(variables)}
    # in the graph's variable order (MXNet's list_arguments), as an executor asks
    wrt = [v.name for v in graph.variables() if v not in aux and leaf_of[v] in grads]
    stage = compile.build_stage(graph.with_types(types), wrt, train, ctx)
    STATS["compiles"] += 1
    prog = Program(stage, ctx, tr.leaves, [v in aux for v in variables],
                   len(outputs) + len(blocked))
    prog.train_dependent = any(get_op(n.op).train_dependent for n in tr.nodes)
    return prog


PROGRAMS = ENGINE.programs  # key -> Program, least recently used first, under a budget
_remember = PROGRAMS.put
MAX_BAD_TAPES = 4096


def materialise(pairs: Sequence[tuple[Entry, NDArray]], bufs: Sequence[Any],
                 tape: Optional[Tape] = None) -> None:
    """Give each pending array of ``pairs`` its buffer and note the value of its node (how
    many visible outputs a node has: from PENDING, or ``tape`` for its nodes PENDING does
    not know)."""
    value_of, pending_of, ref = VALUE.data.get, PENDING.data.get, weakref.ref
    for (entry, a), buf in zip(pairs, bufs):
        if a._buf is not None:
            continue
        a._buf = buf
        node = entry.node
        vals = value_of(ref(node))  # VALUE.get(node), through the dict (no Python frame)
        if vals is None:
            refs = pending_of(ref(node))
            if refs is None and tape is not None and node in tape.local:
                refs = tape.pending_of(tape.local[node])
            vals = [None] * len(refs or ()) or [None]
            VALUE.data[ref(node, VALUE._remove)] = vals  # VALUE[node] = vals
        if entry.index < len(vals):
            vals[entry.index] = NDArray(buf, a._ctx)
        if not a._recorded:  # its value is all that is needed from now on
            a._entry = None


def _forget_pending(tr: Trace) -> None:
    """``PENDING.pop(node, None)`` for each node of ``tr`` (through the dict: one C call
    each; a tape has the keys already)."""
    pop = PENDING.data.pop
    if isinstance(tr, Tape):  # (the nodes it did not register are not in PENDING)
        for key in tr.pkeys:
            pop(key, None)
        return
    ref = weakref.ref
    for node in tr.nodes:
        pop(ref(node), None)


def _run_forward(prog: Program, tr: Trace) -> list[Any]:
    THREAD.state.running += 1
    try:
        bufs = prog.forward(tr.leaves, tr.train)
    finally:
        THREAD.state.running -= 1
    STATS["runs"] += 1
    return bufs


# FAILED: nodes whose computation failed -> the error: reading what needs them raises it
# again (their inputs may have been written since, so computing them later could differ).


def force_pending(arrays: Sequence[NDArray], salvage: bool = True) -> None:
    """Compute pending ``arrays`` and every live pending array of their subgraph."""
    ctx = arrays[0]._ctx
    settle()  # (the walk's live outputs are found in PENDING)
    tr = walk([a._entry for a in arrays], for_backward=False)
    if FAILED:
        failed = next((FAILED[n] for n in tr.nodes if n in FAILED), None)
        if failed is not None:  # (what reads a failed result fails with it, and leaves PENDING)
            _after_failure(tr, [], failed, salvage=False)
            raise failed
    outs = _live_outputs(tr, set())
    key = ("forward", ctx, tr.train, tr.key(), tr.refs([e for e, _ in outs]))
    try:
        prog = PROGRAMS.get(key)
        if prog is None:
            prog = _remember(key, _compile(tr, ctx, [e for e, _ in outs], [], {}, tr.train))
        bufs = _run_forward(prog, tr)
    except Exception as exc:
        _after_failure(tr, outs, exc, salvage)
        raise
    materialise(outs, bufs)
    _forget_pending(tr)


def _after_failure(tr: Trace, outs: list, exc: Exception, salvage: bool) -> None:
    """One program failed: compute its live arrays one at a time, in topological order, so
    that those the failure does not reach get their values (as MXNet's engine, which fails
    only the ops that read a failed result); the others raise ``exc`` when read and leave
    PENDING, so that flushing before an unrelated write does not raise it."""
    if salvage:
        for _, a in outs:
            if a._buf is None and a._entry is not None:
                try:
                    force_pending([a], salvage=False)
                except Exception:  # (recorded in FAILED by the inner call)
                    pass
        return
    for node in tr.nodes:
        FAILED[node] = exc
    _forget_pending(tr)


def describe(a: NDArray) -> str:
    made = f" made by {a._entry.node.name}" if a._entry is not None else ""
    return f"NDArray {a.shape} {a.dtype} on {a._ctx}{made}"


def check_heads(heads: Sequence[NDArray]) -> None:
    for h in heads:
        if not isinstance(h, NDArray):
            raise ExecutionError(f"backward: heads must be NDArrays, got {type(h).__name__}")
        if h._entry is None or not h._recorded or h._entry.node.is_variable:
            raise ExecutionError(
                f"backward: {describe(h)} was not computed under autograd.record() from "
                f"arrays with attach_grad(), so it has no graph to differentiate")
        if weakref.ref(h._entry.node) in FREED.data:  # (FREED's own test, without its frame)
            raise ExecutionError(
                f"backward: the graph of {describe(h)} was released by an earlier backward; "
                f"pass retain_graph=True to differentiate it twice")


def _grad_leaves(tr: Trace, variables: Optional[Sequence[NDArray]]) -> tuple[dict, list, list]:
    """Leaf index -> (gradient array, grad_req) for the leaves that get gradients; (for
    ``autograd.grad``) one result array per variable, zeros where the heads do not read it;
    (otherwise) the variables whose ``.grad`` the run writes, to be marked fresh after it."""
    out: dict[int, tuple] = {}
    if variables is None:
        fresh = []
        leaf_of, ref = GRAD_LEAF.data.get, weakref.ref
        for k, e in enumerate(tr.leaf_entries):
            r = leaf_of(ref(e.node)) if e.node.extra is GRAD_VAR else None
            a = r() if r is not None else None
            if a is not None and a._grad_req != "null" and a._grad is not None:
                out[k] = (a._grad, a._grad_req)
                fresh.append(a)
        return out, [], fresh
    from ...runtime.ndarray import zeros
    results = []
    for v in variables:
        if not isinstance(v, NDArray) or v._var is None or v._entry is None \
                or v._entry.node is not v._var:
            raise ExecutionError(f"autograd.grad: {v!r:.60} is not a variable; call "
                                 f"attach_grad() or autograd.mark_variables() on it first")
        k = tr.leaf_of.get(v._entry)
        if k in out:
            results.append(out[k][0])
            continue
        g = zeros(v.shape, v._ctx, v.dtype)
        results.append(g)
        if k is not None:
            out[k] = (g, "write")
    return out, results, []


def _warn_recomputed(tr: Trace) -> None:
    """A train-dependent node (Dropout) whose value was read before backward() is computed
    again by the backward program, with new random draws: say so (docs/imperative.md)."""
    value_of, ref = VALUE.data.get, weakref.ref  # (no value: the usual case, tested first)
    for node in tr.nodes:
        if value_of(ref(node)) is not None and get_op(node.op).train_dependent \
                and is_training(node):
            warnings.warn(f"backward(): {node.name} ({node.op}) was computed before backward() "
                          f"(a graph break inside record()); the backward program computes it "
                          f"again, so its gradient may not match the value read",
                          RuntimeWarning, stacklevel=4)


def backward(heads: Sequence[NDArray], head_grads: Optional[Sequence[Any]],
             retain_graph: bool, train_mode: bool,
             variables: Optional[Sequence[NDArray]] = None) -> Optional[list[NDArray]]:
    """Forward, loss and backward of the recorded graph of ``heads`` as one program; gradients
    go into the variables' ``.grad`` (or, with ``variables``, into new arrays returned).
    Train-dependent ops run in the mode they were recorded in; ``train_mode`` (MXNet's
    argument) cannot change that, since forward and backward are one program."""
    check_heads(heads)
    ctx = heads[0]._ctx
    entries = [h._entry for h in heads]
    tr, plan, prog = _taped(entries, ctx, head_grads, variables)
    if tr is None:
        tr = walk(entries, for_backward=True)
        plan = _plan(tr, ctx, entries, head_grads, variables)
        prog = PROGRAMS.get(plan[0])
    tape = tr if isinstance(tr, Tape) else None
    key, grads, results, others, hg, fresh = plan
    try:
        if prog is None:
            prog = _remember(key, _compile(tr, ctx, entries, [e for e, _ in others], grads,
                                           True))
        if variables is None and tape is not None and not steady.is_last(key):
            steady.remember(tape, ctx, entries, plan, head_grads, prog)
        if tr.train and prog.train_dependent:
            _warn_recomputed(tr)
        THREAD.state.running += 1
        try:
            bufs = prog.train(tr.leaves, grads, hg, tr.train)
        finally:
            THREAD.state.running -= 1
    except BaseException:
        if tape is not None:  # (its pending arrays stay pending: PENDING must know them)
            tape.settle()
        raise
    STATS["runs"] += 1
    for a in fresh:  # MXNet's _fresh_grad: a backward wrote .grad (gluon.Trainer reads it)
        a._fresh_grad = True
    materialise(list(zip(entries, heads)) + others, bufs, tape)
    _forget_pending(tr)
    if not retain_graph:
        freed, gone = FREED.data, FREED._remove
        for e in entries:
            freed.add(weakref.ref(e.node, gone))  # FREED.add(e.node)
    return results if variables is not None else None


_BAD_TAPES = ENGINE.bad_tapes  # backward keys of tapes holding more than the heads need


def _taped(entries: list[Entry], ctx: Context, head_grads: Optional[Sequence[Any]],
           variables: Optional[Sequence[NDArray]]) -> tuple:
    """``(tape, its plan, the cached program or None)`` when the tape can stand for the walk
    from ``entries`` (``trace.Tape``), else ``(None, None, None)``. A tape that
    repeats the previous backward takes its plan (``steady``). The check that the
    heads need every node of the tape runs when its key has no program yet."""
    tape, THREAD.state.tape = THREAD.state.tape, None  # a backward ends what the tape followed
    if tape is None:
        return None, None, None
    got = _tape_plan(tape, entries, ctx, head_grads, variables)
    if got is None:
        tape.settle()  # (the walk finds the live pending outputs in PENDING)
        return None, None, None
    return (tape,) + got


def _tape_plan(tape: Tape, entries: list[Entry], ctx: Context,
               head_grads: Optional[Sequence[Any]],
               variables: Optional[Sequence[NDArray]]) -> Optional[tuple]:
    """``(plan, program or None)`` of a backward taking ``tape`` as its trace, or None."""
    if not tape.ok:
        return None
    for e in entries:
        if e.node not in tape.local:
            return None
    others = _live_outputs(tape, set(entries))
    if variables is None:
        got = steady.lookup(tape, ctx, entries, head_grads, others)
        if got is not None:
            return got
    if not tape.resolve():
        return None
    plan = _plan(tape, ctx, entries, head_grads, variables, others)
    prog = PROGRAMS.get(plan[0])
    if prog is None and (plan[0] in _BAD_TAPES or not tape.needs_all(entries)):
        _BAD_TAPES[plan[0]] = True  # heads that need only part of the tape: walk
        while len(_BAD_TAPES) > MAX_BAD_TAPES:
            del _BAD_TAPES[next(iter(_BAD_TAPES))]
        return None
    return plan, prog


def _plan(tr: Trace, ctx: Context, entries: list[Entry], head_grads: Optional[Sequence[Any]],
          variables: Optional[Sequence[NDArray]], others: Optional[list] = None) -> tuple:
    """The program key of a backward over ``tr``, with the gradient leaves, results, live
    outputs and head gradients it is run with."""
    grads, results, fresh = _grad_leaves(tr, variables)
    if others is None:
        others = _live_outputs(tr, set(entries))
    hg = None if head_grads is None else list(head_grads) + [None] * len(others)
    gpu_ids = tuple([id(g._buf) for g, _ in grads.values()]) if ctx.device_type == "gpu" \
        else ()
    key = ("backward", ctx, tr.train, tr.key(), tr.refs(entries),
           tr.refs([e for e, _ in others]),
           tuple([g is None for g in hg]) if hg is not None else (),
           tuple([(k, req) for k, (_, req) in grads.items()]), gpu_ids)
    return key, grads, results, others, hg, fresh


def recorded_symbol(a: NDArray) -> Any:
    """``autograd.get_symbol``: the recorded graph of ``a`` as a Symbol whose variables
    ``var0``, ``var1``... are the arrays it read, in the order the graph first reads them."""
    from ..symbol import Symbol
    check_heads([a])
    tr = walk([a._entry], for_backward=True)
    new, _ = _canonical(tr, "var")
    return Symbol((Entry(new[tr.local[a._entry.node]], a._entry.index),))
