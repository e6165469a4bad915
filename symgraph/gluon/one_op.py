"""Kept op calls: a block whose imperative forward always makes the same op calls records them
directly after its first call.

``Dense``, ``Conv*``, the pooling layers, ``Activation``, ``BatchNorm`` and ``Embedding``
compute ``hybrid_forward(sg.nd, x, **params)`` as ONE ``HybridBlock._op`` call on ``x``
followed by the layer's parameter arrays, whose result they return as it is (or pass through
their ``act`` child, for ``Dense`` and ``Conv*`` with an activation); a loss such as
``SoftmaxCrossEntropyLoss`` as a fixed sequence of ``_op`` calls on its inputs and the earlier
calls' results. Such a class names its ``hybrid_forward`` in ``_FIXED_OPS``. The first
imperative call runs ``hybrid_forward`` and watches its ``_op`` calls (:func:`capture`); when
every array they read is accounted for (an input, a parameter array, an earlier call's
result) and the result is the last call's, the block keeps them, and its later calls record
them directly (``HybridBlock.forward``, :func:`replay`): no ``hybrid_forward`` frame, keyword
parameters, attribute dicts or ``_op``'s comparison of them. That is a few microseconds per
block and step, which a training step pays for each layer of a non-hybridized network.

Requires: a block's op attributes are fixed after construction (they are in MXNet's layers and
losses; ``HybridBlock._op`` itself compares them at every call only because one block may call
one op with several attribute sets), and which calls it makes depends only on which inputs are
None. Guarantees: the same recorded nodes (op, attributes, inputs, names) as the calls through
``hybrid_forward``; kept only while the block's parameter arrays are the same dict of arrays
(``parameter.VERSION``) and the inputs are as many and None in the same places, dropped by
``hybridize``, ``cast``, a new child or any attribute set on the block, and never kept for a
subclass that overrides ``hybrid_forward`` or when any array is not accounted for (an op
called other than through ``_op``: then every call goes through ``hybrid_forward``).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from ..runtime import ndarray as _nd
from ..frontend.imperative import record


class OneCall:
    """A one-op layer's kept call: its op on ``x`` and the parameter arrays ``params`` held
    (``extra``), then the layer's ``act`` child when ``has_act``."""

    __slots__ = ("params", "call", "extra", "name", "has_act")

    def __init__(self, params: dict, call: Any, extra: tuple, name: Optional[str],
                 has_act: bool) -> None:
        self.params, self.call, self.extra, self.name = params, call, extra, name
        self.has_act = has_act

    def fits(self, params: dict, args: tuple) -> bool:
        """Whether a call on these parameter arrays and extra inputs can use it."""
        return self.params is params and not args

    def run(self, block: Any, x: Any, args: tuple) -> Any:
        """Record the kept call on ``x`` (and ``block.act`` on its result)."""
        outs = record(self.call, (x,) + self.extra, self.name)
        out = outs[0] if self.call.nvis == 1 else outs
        return block.act(out) if self.has_act and block.act is not None else out


class KeptCalls:
    """A block's kept sequence of calls (see :func:`replay`), for inputs None where
    ``none_at`` says and the parameter arrays ``params``."""

    __slots__ = ("params", "none_at", "steps")

    def __init__(self, params: dict, none_at: tuple, steps: tuple) -> None:
        self.params, self.none_at, self.steps = params, none_at, steps

    def fits(self, params: dict, args: tuple) -> bool:
        """Whether a call on these parameter arrays and extra inputs can use them."""
        return self.params is params and len(args) == len(self.none_at) and all(
            (a is None) is n for a, n in zip(args, self.none_at))

    def run(self, block: Any, x: Any, args: tuple) -> Any:
        """Record the kept calls on ``x, *args``; the last call's result."""
        return replay(self.steps, (x,) + args)


def capture(block: Any, x: Any, args: tuple, params: dict) -> Any:
    """``block.hybrid_forward(sg.nd, x, *args, **params)``, keeping the calls it made in
    ``block._kept``: a :class:`OneCall` (one call on ``x`` and parameters) or
    :class:`KeptCalls` (see the module docstring)."""
    cls = type(block)
    if cls.hybrid_forward is not cls._FIXED_OPS:  # (a subclass computing something else)
        return block.hybrid_forward(_nd, x, *args, **params)
    block._seen = seen = []
    try:
        ret = block.hybrid_forward(_nd, x, *args, **params)
    finally:
        block._seen = None
    has_act = getattr(block, "act", None) is not None
    values = list(params.values())
    if len(seen) == 1 and not args:
        call, arrays, name, out = seen[0]
        if arrays and arrays[0] is x and (has_act or ret is out) and all(
                any(a is v for v in values) for a in arrays[1:]):
            block._kept = OneCall(params, call, tuple(arrays[1:]), name, has_act)
            return ret
    steps = _steps(seen, (x,) + args, values, ret)
    if steps is not None and not has_act:
        block._kept = KeptCalls(params, tuple([a is None for a in args]), steps)
    return ret


def _steps(seen: Sequence[tuple], inputs: tuple, values: list, ret: Any) -> Optional[tuple]:
    """``(call, input references, name)`` per watched call, a reference being the position of
    an input or an earlier result, or a parameter array itself; None when an array is none of
    these or the result is not the last call's."""
    known = list(inputs)
    steps = []
    for call, arrays, name, out in seen:
        refs: list = []
        for a in arrays:
            k = next((i for i, v in enumerate(known) if v is a), None)
            if k is None and not any(a is v for v in values):
                return None
            refs.append(a if k is None else k)
        steps.append((call, tuple(refs), name))
        known.append(out)
    return tuple(steps) if steps and ret is known[-1] else None


def replay(steps: tuple, inputs: tuple) -> Any:
    """Record kept ``steps`` on ``inputs``; the last call's result."""
    known = list(inputs)
    for call, refs, name in steps:
        ins = []  # (a loop: a comprehension is a function call in Python 3.11)
        for r in refs:
            ins.append(known[r] if r.__class__ is int else r)
        outs = record(call, ins, name)
        known.append(outs[0] if call.nvis == 1 else outs)
    return known[-1]


Kept = Union[OneCall, KeptCalls]  # what ``HybridBlock._kept`` holds
