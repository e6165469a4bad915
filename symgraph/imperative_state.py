"""The imperative engine's switches and side tables, below everything that records, walks or
compiles (``imperative``, ``imperative_trace``, ``imperative_compile`` read them).

Nodes are immutable, so what the engine knows about a node lives in weak tables keyed by it:
its pending output arrays, its computed values, the autograd variable it stands for. How a node
was recorded (recorded or not, training mode) is told by which ``Attrs`` object its ``extra``
is. Semantics: docs/imperative.md.
"""
from __future__ import annotations

import itertools
import weakref
from typing import Any

from .core.attrs import Attrs
from .core.graph import Node


class _State:
    """autograd's switches (``record`` / ``pause`` / ``train_mode``)."""

    recording = False
    training = False
    running = 0  # > 0 while a compiled program runs (custom ops write their outputs then)
    tape: Any = None  # imperative_trace.Tape: what record() recorded since recording started
    attached = 0  # attach_grad calls so far (gradient buffers and grad_req unchanged while equal)


STATE = _State()
STATS = {"compiles": 0, "runs": 0, "steady": 0}  # steady: imperative_steady plans reused

# Pending op nodes -> weak references to their visible output arrays (the current tape's
# nodes are on the tape until it settles: imperative_trace.Tape.alive / settle).
PENDING: "weakref.WeakKeyDictionary[Node, list]" = weakref.WeakKeyDictionary()
# Computed values: variable node -> [array]; op node -> [array or None per visible output].
VALUE: "weakref.WeakKeyDictionary[Node, list]" = weakref.WeakKeyDictionary()
GRAD_LEAF: "weakref.WeakKeyDictionary[Node, Any]" = weakref.WeakKeyDictionary()
FREED: "weakref.WeakSet[Node]" = weakref.WeakSet()  # heads whose graph backward released
# Gradient nodes made by autograd.grad(create_graph=True): (recorded, training) by node.
LATE: "weakref.WeakKeyDictionary[Node, tuple]" = weakref.WeakKeyDictionary()

# How a node was made is told by WHICH of these objects its ``extra`` is (an identity test on
# the per-step path, no lookup); compiled copies drop them (imperative_compile._canonical).
PLAIN = Attrs()
MODE = {(False, False): PLAIN, (True, False): Attrs({"__recorded__": "1"}),
        (False, True): Attrs({"__train__": "1"}),
        (True, True): Attrs({"__recorded__": "1", "__train__": "1"})}
_REC, _TRN, _REC_TRN = MODE[True, False], MODE[False, True], MODE[True, True]
GRAD_VAR = Attrs({"__grad_var__": "1"})  # extra of the variables of attach_grad arrays


def is_recorded(node: Node) -> bool:
    x = node.extra
    if x is _REC or x is _REC_TRN:
        return True
    if x is PLAIN or x is _TRN:
        return False
    return LATE.get(node, (False, False))[0]


def is_training(node: Node) -> bool:
    x = node.extra
    if x is _TRN or x is _REC_TRN:
        return True
    if x is PLAIN or x is _REC:
        return False
    return LATE.get(node, (False, False))[1]


# id(Attrs) -> (the Attrs, serial): cache keys hash a small int instead of the attributes.
# Serials are never reused, so forgetting interned Attrs (past MAX_INTERNED) cannot make an
# old program match new attributes; it only costs recompilations.
ATTR_SERIAL: dict[int, tuple[Attrs, int]] = {}
_serials = itertools.count()
