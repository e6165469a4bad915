"""What a :class:`~symgraph.gluon.block.HybridBlock` keeps between calls, one named type per
kind of state.

``HybridBlock.forward`` picks one path per call: Symbols in, trace ``hybrid_forward`` with
``F = sg.sym`` (the result kept as a :class:`Trace`); hybridized, replay the traced program of
the input signature (a :class:`CachedTrace`); otherwise run imperatively on the parameter
arrays of the context (kept as :class:`ParamArrays`), through the block's kept op calls
(``one_op.OneCall`` / ``one_op.KeptCalls``) when they fit, by watching ``hybrid_forward`` on
the first call of a layer with fixed op calls, or by calling ``hybrid_forward``.

Example::

    >>> import symgraph as sg
    >>> net = sg.gluon.nn.Dense(2, in_units=3)
    >>> net.initialize()
    >>> net.hybridize()
    >>> _ = net(sg.nd.ones((1, 3)))
    >>> [type(t).__name__ for t in net._cached.values()], type(net._cached_graph).__name__
    (['CachedTrace'], 'Trace')
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

from .parameter import VERSION


class Trace(NamedTuple):
    """The last trace of ``hybrid_forward(sg.sym, ...)``: the input variables and the output
    (one Symbol, or a Group of several); what ``export`` and ``summary`` read."""

    inputs: list
    output: Any


class CachedTrace(NamedTuple):
    """A hybridized block's path for one input signature (shapes, dtypes, context, nesting):
    the traced program (``cached_op.TracedProgram``) and the nesting of its outputs."""

    program: Any
    out_format: Any


class ParamArrays(NamedTuple):
    """A block's parameter arrays on ``ctx`` (name -> NDArray; a traced program's: by graph
    position), as they were when ``parameter.VERSION`` was ``version``."""

    version: int
    ctx: Any
    arrays: Any

    def valid_for(self, ctx: Any) -> bool:
        """Whether these are still the arrays on ``ctx`` (no Parameter's arrays changed)."""
        return self.version == VERSION[0] and (self.ctx is ctx or self.ctx == ctx)


class OpCall(NamedTuple):
    """``HybridBlock._op``'s parsed call of one (function, arity): the attributes it was
    parsed for and the imperative call made from them."""

    attrs: dict
    call: Any


class OpHook(NamedTuple):
    """``register_op_hook``'s callback and whether it sees op inputs too."""

    callback: Callable
    monitor_all: bool
