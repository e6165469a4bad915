"""One-op layers: a layer whose imperative forward is one recorded op records it directly.

``Dense``, ``Conv*``, the pooling layers, ``Activation``, ``BatchNorm`` and ``Embedding`` compute
``hybrid_forward(sg.nd, x, **params)`` as ONE ``HybridBlock._op`` call on ``x`` followed by the
layer's parameter arrays, whose result they return as it is (or pass through their ``act``
child, for ``Dense`` and ``Conv*`` with an activation). Such a class names its
``hybrid_forward`` in ``_ONE_OP``. The first imperative call runs ``hybrid_forward`` and
watches its ``_op`` calls (:func:`capture`); when it made exactly that one call, the block
keeps ``(parameter arrays, parsed call, the parameters' input arrays, node name, act?)`` and
its later calls record the op on ``x`` directly (``HybridBlock.forward``), without the
``hybrid_forward`` frame, the keyword parameters, the layer's attribute dict and ``_op``'s
comparison of it: a few microseconds per layer and step, which a training step pays for each
layer of a non-hybridized network.

Requires: a layer's op attributes are fixed after construction (they are in MXNet's layers;
``HybridBlock._op`` itself compares them at every call only because one block may call one op
with several attribute sets). Guarantees: the same recorded node (op, attributes, inputs,
name) as the call through ``hybrid_forward``; kept only while the block's parameter arrays are
the same dict of arrays (``parameter.VERSION``), dropped by ``hybridize``, ``cast``, a new child
or any attribute set on the block, and never kept for a subclass that overrides
``hybrid_forward`` or a call with extra inputs.
"""
from __future__ import annotations

from typing import Any

from .. import ndarray as _nd


def capture(block: Any, x: Any, params: dict) -> Any:
    """``block.hybrid_forward(sg.nd, x, **params)``, keeping the call it made when it is a
    one-op layer's (see the module docstring) in ``block._one``."""
    cls = type(block)
    if cls.hybrid_forward is not cls._ONE_OP:  # (a subclass computing something else)
        return block.hybrid_forward(_nd, x, **params)
    block._seen = seen = []
    try:
        ret = block.hybrid_forward(_nd, x, **params)
    finally:
        block._seen = None
    if len(seen) != 1:
        return ret
    call, arrays, name, out = seen[0]
    has_act = getattr(block, "act", None) is not None
    values = list(params.values())
    if arrays and arrays[0] is x and (has_act or ret is out) and all(
            any(a is v for v in values) for a in arrays[1:]):
        block._one = (params, call, tuple(arrays[1:]), name, has_act)
    return ret
