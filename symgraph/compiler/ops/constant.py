"""``_constant``: a literal array made by the constant-folding pass.

Attributes: ``value``, a hashable ``(bytes, shape, dtype name)`` triple, so two equal constants
are equal nodes for CSE. Only passes create it; it has no inputs and no gradient.
"""
from __future__ import annotations

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.registry import INJECTIVE, NOT_DIFFERENTIABLE, OpDef, register


def constant_attrs(value: np.ndarray) -> Attrs:
    """The attrs of a ``_constant`` node holding ``value``."""
    value = np.ascontiguousarray(value)
    return Attrs({"value": (value.tobytes(), tuple(value.shape), value.dtype.name)})


def _value(a: Attrs) -> np.ndarray:
    data, shape, dtype = a["value"]
    return np.frombuffer(data, dtype=dtype).reshape(shape)


register(OpDef(
    "_constant", {"value": Param("any")}, (),
    lambda a, ins, outs: (ins, [tuple(a["value"][1])]),
    lambda a, xs, ctx: [_value(a).copy()], NOT_DIFFERENTIABLE, INJECTIVE, lowering='constant',
    infer_type=lambda a, ins, outs: (ins, [np.dtype(a["value"][2])]),
    doc="A literal array (made by constant folding)."))
