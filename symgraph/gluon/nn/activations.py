"""Activation layers: ``Activation`` (relu, sigmoid, tanh, softrelu, softsign) and
``LeakyReLU``, one call of the registered op each."""
from __future__ import annotations

from typing import Any

from ..block import HybridBlock


class Activation(HybridBlock):
    """``F.Activation(x, act_type=activation)``; the block's name hint is the activation."""

    def __init__(self, activation: str, **kwargs: Any) -> None:
        self._act_type = activation
        super().__init__(**kwargs)

    def _alias(self) -> str:
        return self._act_type

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return self._op(F, F.Activation, (x,), {"act_type": self._act_type})
    _FIXED_OPS = hybrid_forward  # one recorded op (gluon/one_op.py)

    def __repr__(self) -> str:
        return f"Activation({self._act_type})"


class LeakyReLU(HybridBlock):
    """``x`` for ``x > 0``, ``alpha * x`` otherwise."""

    def __init__(self, alpha: float, **kwargs: Any) -> None:
        if alpha < 0:
            from ...base import AttrError
            raise AttrError(f"LeakyReLU: alpha must be >= 0, got {alpha}")
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.LeakyReLU(x, act_type="leaky", slope=self._alpha, name="fwd")

    def __repr__(self) -> str:
        return f"LeakyReLU({self._alpha})"
