"""The steady backward: the previous ``backward()``'s plan, reused when the tape repeats it.

A training loop records the same calls on the same parameters at every step: the tape's
signature (each node's call, mode, wiring and input shapes and dtypes; ``Tape.sig``) equals the
previous backward's, and so do its leaves, but for the batch (new arrays, so new plain
variables). Then the program key, the gradient leaves and the leaf values are the previous
ones, except the values of the leaves that changed, which are looked up again. This saves the
per-leaf lookups of ``Tape.resolve`` and ``compute._grad_leaves``, and building and
hashing the key (docs/imperative.md, "The steady backward").

Requires: a tape that can stand for the walk (``compute._taped`` checked the heads)
and the live outputs computed for this step. Guarantees: the plan returned is the one
``compute._plan`` would build, or None. It is reused only when the signatures are
equal, no ``attach_grad`` ran since it was made (gradient buffers and ``grad_req`` are as they
were), every changed leaf is a plain variable (no gradient) in both steps, the heads, the live
outputs, the head-gradient pattern and the context are the same, and (GPU) the gradient buffers
are the same memory. The previous variables are held until the next backward replaces the plan
(so the gradient leaves it names stay alive, as the full plan requires).
"""
from __future__ import annotations

import weakref
from typing import Any, Optional, Sequence

from ...core.context import Context
from ...core.graph import Entry
from .engine import ENGINE, GRAD_VAR, STATS, THREAD, VALUE
from .trace import Tape


class Steady:
    """What a backward found: its tape's signature and leaves, and the plan it ran."""

    __slots__ = ("sig", "leaf_entries", "leaves", "ctx", "epoch", "heads", "others",
                 "pattern", "key", "grads", "fresh", "gpu_ids", "prog")

    def __init__(self, tape: Tape, ctx: Context, heads: tuple, others: tuple, pattern: tuple,
                 plan: tuple, gpu_ids: tuple, prog: Any) -> None:
        self.sig, self.leaf_entries, self.leaves = tape.sig, tape.leaf_entries, tape.leaves
        self.ctx, self.epoch, self.heads, self.others = ctx, ENGINE.attached, heads, others
        self.pattern, self.key, self.grads, self.fresh = pattern, plan[0], plan[1], plan[5]
        self.gpu_ids, self.prog = gpu_ids, prog


def _pattern(head_grads: Optional[Sequence[Any]], n_others: int) -> tuple:
    hg = None if head_grads is None else list(head_grads) + [None] * n_others
    return hg, (tuple([g is None for g in hg]) if hg is not None else ())


def remember(tape: Tape, ctx: Context, entries: Sequence[Entry], plan: tuple,
             head_grads: Optional[Sequence[Any]], prog: Any) -> None:
    """Keep ``plan`` (``compute._plan``'s) for the next backward; only when every
    leaf is a variable (other leaves' values are looked up on every step anyway)."""
    for e in tape.leaf_entries:
        if e[0].op != "null":
            THREAD.state.steady = None
            return
    others = plan[3]
    THREAD.state.steady = Steady(tape, ctx, tape.refs(entries), tape.refs([e for e, _ in others]),
                      _pattern(head_grads, len(others))[1], plan, _gpu_ids(ctx, plan[1]), prog)


def is_last(key: tuple) -> bool:
    """Whether ``key`` is the kept plan's (a plan :func:`lookup` just returned)."""
    return THREAD.state.steady is not None and THREAD.state.steady.key is key


def _gpu_ids(ctx: Context, grads: dict) -> tuple:
    return tuple([id(g._buf) for g, _ in grads.values()]) if ctx.device_type == "gpu" else ()


def lookup(tape: Tape, ctx: Context, entries: Sequence[Entry],
           head_grads: Optional[Sequence[Any]], others: list) -> Optional[tuple]:
    """``(plan, program)`` of the previous backward when this tape repeats it (see the module
    docstring), with this step's leaf values on the tape; else None."""
    m = THREAD.state.steady
    if m is None or m.ctx is not ctx or m.epoch != ENGINE.attached or tape.sig != m.sig:
        return None
    ents, old = tape.leaf_entries, m.leaf_entries
    if len(ents) != len(old):
        return None
    leaves = None
    for k, e in enumerate(ents if ents != old else ()):  # (the same arrays: no loop)
        p = old[k]
        if e[0] is p[0] and e[1] == p[1]:
            continue
        n = e[0]
        if n.op != "null" or n.extra is GRAD_VAR or p[0].extra is GRAD_VAR:
            return None  # (a plain variable both times: it gets no gradient)
        vals = VALUE.data.get(weakref.ref(n))
        if vals is None:
            return None
        if leaves is None:
            leaves = list(m.leaves)
        leaves[k] = vals[0]
    hg, pattern = _pattern(head_grads, len(others))
    if pattern != m.pattern or tape.refs(entries) != m.heads \
            or tape.refs([e for e, _ in others]) != m.others \
            or _gpu_ids(ctx, m.grads) != m.gpu_ids:
        return None
    if leaves is not None:  # (compared with this step's next time: the old batch can go)
        m.leaf_entries, m.leaves = ents, leaves
    tape.leaves = m.leaves
    STATS["steady"] += 1
    return (m.key, m.grads, [], others, hg, m.fresh), m.prog
