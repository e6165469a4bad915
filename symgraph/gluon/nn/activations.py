"""Activation layers: ``Activation`` (relu, sigmoid, tanh, softrelu, softsign) and
``LeakyReLU`` with its PReLU, ELU, SELU and GELU forms, and Swish: one or two registered ops
each."""
from __future__ import annotations

from typing import Any

from ...training.initializer import Constant
from ..block import HybridBlock


class Activation(HybridBlock):
    """``F.Activation(x, act_type=activation)``; the block's name hint is the activation.

    Examples
    --------
    >>> sg.gluon.nn.Activation('relu')(sg.nd.array([-1, 2]))
    [0. 2.]
    <NDArray 2 @cpu(0)>
    """

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
    """``x`` for ``x > 0``, ``alpha * x`` otherwise.

    Examples
    --------
    >>> sg.gluon.nn.LeakyReLU(0.1)(sg.nd.array([-10, 2]))
    [-1.  2.]
    <NDArray 2 @cpu(0)>
    """

    def __init__(self, alpha: float, **kwargs: Any) -> None:
        if alpha < 0:
            from ...core.base import AttrError
            raise AttrError(f"LeakyReLU: alpha must be >= 0, got {alpha}")
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.LeakyReLU(x, act_type="leaky", slope=self._alpha, name="fwd")

    def __repr__(self) -> str:
        return f"LeakyReLU({self._alpha})"


class PReLU(HybridBlock):
    """``x`` for ``x > 0``, ``alpha * x`` otherwise, with a learned ``alpha`` of
    ``in_channels`` entries (1: one shared slope; else one per channel, axis 1).

    Example: ``nn.PReLU(in_channels=16)``.

    Examples
    --------
    >>> prelu = sg.gluon.nn.PReLU()  # alpha starts at 0.25
    >>> prelu.initialize()
    >>> prelu(sg.nd.array([-4, 2]))
    [-1.  2.]
    <NDArray 2 @cpu(0)>
    """

    def __init__(self, alpha_initializer: Any = Constant(0.25), in_channels: int = 1,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        with self.name_scope():
            self.alpha = self.params.get("alpha", shape=(in_channels,), init=alpha_initializer)

    def hybrid_forward(self, F: Any, x: Any, alpha: Any) -> Any:
        return F.LeakyReLU(x, gamma=alpha, act_type="prelu", name="fwd")


class _Leaky(HybridBlock):
    """One ``LeakyReLU`` call of a fixed ``act_type`` (and ``slope``)."""

    ACT = ""

    def __init__(self, slope: float = 0.25, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._slope = slope

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.LeakyReLU(x, act_type=self.ACT, slope=self._slope, name="fwd")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ELU(_Leaky):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise.

    Examples
    --------
    >>> sg.gluon.nn.ELU()(sg.nd.array([np.log(0.5), 2]))  # exp(log 0.5) - 1 = -0.5
    [-0.5  2. ]
    <NDArray 2 @cpu(0)>
    """

    ACT = "elu"

    def __init__(self, alpha: float = 1.0, **kwargs: Any) -> None:
        super().__init__(alpha, **kwargs)


class SELU(_Leaky):
    """Scaled ELU with the self-normalising constants (lambda 1.0507, alpha 1.6733).

    Examples
    --------
    >>> sg.gluon.nn.SELU()(sg.nd.array([0, 1]))
    [0.     1.0507]
    <NDArray 2 @cpu(0)>
    """

    ACT = "selu"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)


class GELU(_Leaky):
    """``x * Phi(x)``, Phi the standard normal CDF (MXNet's erf form).

    Examples
    --------
    >>> sg.gluon.nn.GELU()(sg.nd.array([0, 1]))  # Phi(1) = 0.8413
    [0.     0.8413]
    <NDArray 2 @cpu(0)>
    """

    ACT = "gelu"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)


class Swish(HybridBlock):
    """``x * sigmoid(beta * x)``.

    Examples
    --------
    >>> sg.gluon.nn.Swish()(sg.nd.array([0, 1]))  # sigmoid(1) = 0.7311
    [0.     0.7311]
    <NDArray 2 @cpu(0)>
    """

    def __init__(self, beta: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return x * F.sigmoid(x * self._beta, name="fwd")
