"""The imperative engine's state: one :class:`Engine` owning its side tables and caches (one
:meth:`Engine.invalidate`), and autograd's switches kept per thread (:class:`ThreadState`), as
MXNet keeps them: two threads may each record and train their own model.

Nodes are immutable, so what the engine knows about a node lives in weak tables keyed by it:
its pending output arrays, its computed values, the autograd variable it stands for. How a node
was recorded (recorded or not, training mode) is told by which ``Attrs`` object its ``extra``
is. The module names below (``PENDING``, ``VALUE``...) are the engine's own objects, bound once
(the per-op paths read them without an attribute lookup); they are cleared, never rebound.
Semantics: docs/imperative.md.

Example::

    >>> from symgraph.frontend.imperative import ENGINE
    >>> thread_state().recording      # this thread's switch
    False
    >>> ENGINE.invalidate()           # forget every compiled program and cached call
"""
from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any, Optional

from ...core.attrs import Attrs
from ...core.graph import Node
from .cache import ProgramCache


class ThreadState:
    """autograd's switches (``record`` / ``pause`` / ``train_mode``) and what the thread
    recorded: one per thread (:func:`thread_state`)."""

    __slots__ = ("recording", "training", "running", "tape", "steady")

    def __init__(self) -> None:
        self.recording = False
        self.training = False
        self.running = 0  # > 0 while a compiled program runs (custom ops write outputs then)
        self.tape: Any = None  # trace.Tape: what record() recorded since recording started
        self.steady: Any = None  # steady.Steady: the previous backward's plan, for the next


class _PerThread(threading.local):
    # (one thread-local lookup, then plain slots: the per-op path reads several switches)
    def __init__(self) -> None:
        self.state = ThreadState()


THREAD = _PerThread()


class Engine:
    """The tables and caches of imperative execution, shared by every thread, and each thread's
    recording state (:attr:`state`)."""

    def __init__(self) -> None:
        self.stats = {"compiles": 0, "runs": 0, "steady": 0}  # steady: plans reused
        self.attached = 0  # attach_grad calls so far (gradient buffers unchanged while equal)
        # Pending op nodes -> weak references to their visible output arrays (a tape's nodes
        # are on the tape until it settles: trace.Tape.alive / settle).
        self.pending: "weakref.WeakKeyDictionary[Node, list]" = weakref.WeakKeyDictionary()
        # Computed values: variable node -> [array]; op node -> [array or None per output].
        self.value: "weakref.WeakKeyDictionary[Node, list]" = weakref.WeakKeyDictionary()
        self.grad_leaf: "weakref.WeakKeyDictionary[Node, Any]" = weakref.WeakKeyDictionary()
        self.freed: "weakref.WeakSet[Node]" = weakref.WeakSet()  # heads backward released
        # Gradient nodes made by autograd.grad(create_graph=True): (recorded, training).
        self.late: "weakref.WeakKeyDictionary[Node, tuple]" = weakref.WeakKeyDictionary()
        # Nodes whose computation failed -> the error (reading what needs them raises it).
        self.failed: "weakref.WeakKeyDictionary[Node, BaseException]" = \
            weakref.WeakKeyDictionary()
        # id(Attrs) -> (the Attrs, serial): keys hash a small int instead of the attributes.
        # Serials are never reused, so forgetting interned Attrs cannot make an old program
        # match new attributes; it only costs recompilations.
        self.attr_serial: dict[int, tuple[Attrs, int]] = {}
        self.serials = itertools.count()
        self.calls: dict[tuple, Any] = {}  # (op, given keyword attributes) -> calls.Call
        self.interned: dict[tuple, Any] = {}  # (op, parsed Attrs) -> calls.Call
        self.fast_calls: dict[tuple, Any] = {}  # what the caller gave -> calls.Call
        self.programs = ProgramCache()
        self.bad_tapes: dict[tuple, bool] = {}  # backward keys of tapes holding extra nodes

    def forget_calls(self) -> None:
        """Drop the parsed calls (and the serials of their attributes)."""
        self.calls.clear()
        self.interned.clear()
        self.fast_calls.clear()
        self.attr_serial.clear()

    def invalidate(self) -> None:
        """Forget every cached call, compiled program and steady plan: the next calls parse,
        infer and compile again (values and pending arrays are kept)."""
        self.forget_calls()
        self.programs.clear()
        self.bad_tapes.clear()
        THREAD.state.steady = None

    @property
    def state(self) -> ThreadState:
        """This thread's recording state."""
        return THREAD.state

    def compile_count(self) -> int:
        """Programs compiled so far (cache misses)."""
        return self.stats["compiles"]


ENGINE = Engine()
STATS = ENGINE.stats
PENDING, VALUE, GRAD_LEAF = ENGINE.pending, ENGINE.value, ENGINE.grad_leaf
FREED, LATE, FAILED, ATTR_SERIAL = ENGINE.freed, ENGINE.late, ENGINE.failed, ENGINE.attr_serial

# How a node was made is told by WHICH of these objects its ``extra`` is (an identity test on
# the per-step path, no lookup); compiled copies drop them (compute.canonical).
PLAIN = Attrs()
MODE = {(False, False): PLAIN, (True, False): Attrs({"__recorded__": "1"}),
        (False, True): Attrs({"__train__": "1"}),
        (True, True): Attrs({"__recorded__": "1", "__train__": "1"})}
REC, TRN, REC_TRN = MODE[True, False], MODE[False, True], MODE[True, True]
GRAD_VAR = Attrs({"__grad_var__": "1"})  # extra of the variables of attach_grad arrays


# id of a mode's Attrs -> (recorded, training): the mode objects live as long as the module
_MODE_OF = {id(attrs): mode for mode, attrs in MODE.items()}


def mode_of(node: Node) -> tuple[bool, bool]:
    """(recorded, training) of ``node``: by which mode object its ``extra`` is, else (a
    gradient node of ``autograd.grad(create_graph=True)``) from LATE."""
    got = _MODE_OF.get(id(node.extra))
    return got if got is not None else LATE.get(node, (False, False))


def is_recorded(node: Node) -> bool:
    return mode_of(node)[0]


def is_training(node: Node) -> bool:
    return mode_of(node)[1]


def thread_state() -> ThreadState:
    """This thread's recording state (``thread_state().recording``...)."""
    return THREAD.state


def serial(attrs: Attrs) -> Optional[int]:
    """The interned serial of ``attrs`` (None when not interned)."""
    got = ATTR_SERIAL.get(id(attrs))
    return got[1] if got is not None and got[0] is attrs else None
