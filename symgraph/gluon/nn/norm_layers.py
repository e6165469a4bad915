"""Normalisation layers over the row-statistics ops (MXNet 1.9.1's Gluon names, defaults and
parameter names, so parameter files cross): ``LayerNorm``, ``GroupNorm`` and ``InstanceNorm``.

Example::

    net = nn.HybridSequential()
    net.add(nn.Dense(64, flatten=False), nn.LayerNorm())   # gamma, beta of 64, inferred
"""
from __future__ import annotations

from typing import Any

from ...core.base import AttrError
from ..block import HybridBlock


def scale_shift(block: HybridBlock, shape: tuple, center: bool, scale: bool, beta_init: Any,
                gamma_init: Any) -> tuple:
    """A normalisation layer's (gamma, beta) Parameters of ``shape``, trained unless ``scale``
    / ``center`` is False (MXNet's ``grad_req='null'``); call inside ``name_scope()``."""
    gamma = block.params.get("gamma", grad_req="write" if scale else "null", shape=shape,
                             init=gamma_init, allow_deferred_init=True, differentiable=scale)
    beta = block.params.get("beta", grad_req="write" if center else "null", shape=shape,
                            init=beta_init, allow_deferred_init=True, differentiable=center)
    return gamma, beta


class _Norm(HybridBlock):
    """gamma and beta of ``shape`` (0: inferred from the data), trained unless ``scale`` /
    ``center`` is False (MXNet's ``grad_req='null'``)."""

    def __init__(self, kwargs: dict, shape: tuple, center: bool, scale: bool,
                 beta_initializer: Any, gamma_initializer: Any, **block_kwargs: Any) -> None:
        super().__init__(**block_kwargs)
        self._kwargs = kwargs
        with self.name_scope():
            self.gamma, self.beta = scale_shift(self, shape, center, scale, beta_initializer,
                                                gamma_initializer)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({args}, in_channels={self.gamma.shape[0] or None})"


class LayerNorm(_Norm):
    """Normalises each sample along ``axis``: ``(x - mean) / sqrt(var + epsilon) * gamma +
    beta``, gamma and beta of the axis' length (``in_channels``, 0: inferred).

    Examples
    --------
    >>> ln = sg.gluon.nn.LayerNorm()
    >>> ln.initialize()
    >>> ln(sg.nd.array([[1, 3]]))  # mean 2, variance 1
    [[-1.  1.]]
    <NDArray 1x2 @cpu(0)>
    """

    def __init__(self, axis: int = -1, epsilon: float = 1e-5, center: bool = True,
                 scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", in_channels: int = 0, **kwargs: Any) -> None:
        super().__init__({"axis": axis, "eps": epsilon}, (in_channels,), center, scale,
                         beta_initializer, gamma_initializer, **kwargs)

    def hybrid_forward(self, F: Any, x: Any, gamma: Any, beta: Any) -> Any:
        return self._op(F, F.LayerNorm, (x, gamma, beta), self._kwargs, name=None)
    _FIXED_OPS = hybrid_forward  # one recorded op (gluon/one_op.py)


class GroupNorm(_Norm):
    """Normalises each sample's ``num_groups`` groups of channels (axis 1) with everything
    after them; gamma and beta have one entry per group, as in MXNet 1.9.1.

    Examples
    --------
    >>> gn = sg.gluon.nn.GroupNorm(num_groups=1)
    >>> gn.initialize()
    >>> gn(sg.nd.array([[[1], [3]]]))  # one group of both channels: mean 2, variance 1
    [[[-1.]
      [ 1.]]]
    <NDArray 1x2x1 @cpu(0)>
    """

    def __init__(self, num_groups: int = 1, epsilon: float = 1e-5, center: bool = True,
                 scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", **kwargs: Any) -> None:
        if num_groups < 1:
            raise AttrError(f"GroupNorm: num_groups must be >= 1, got {num_groups}")
        super().__init__({"num_groups": num_groups, "eps": epsilon}, (num_groups,), center,
                         scale, beta_initializer, gamma_initializer, **kwargs)

    def hybrid_forward(self, F: Any, x: Any, gamma: Any, beta: Any) -> Any:
        return self._op(F, F.GroupNorm, (x, gamma, beta), self._kwargs, name=None)
    _FIXED_OPS = hybrid_forward


class InstanceNorm(_Norm):
    """Normalises each sample's channel over its other axes; the channel axis is ``axis``
    (MXNet swaps it to 1 around the op). gamma is not trained by default (``scale=False``).

    Examples
    --------
    >>> inorm = sg.gluon.nn.InstanceNorm()
    >>> inorm.initialize()
    >>> inorm(sg.nd.array([[[1, 3]]]))
    [[[-1.  1.]]]
    <NDArray 1x1x2 @cpu(0)>
    """

    def __init__(self, axis: int = 1, epsilon: float = 1e-5, center: bool = True,
                 scale: bool = False, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", in_channels: int = 0, **kwargs: Any) -> None:
        super().__init__({"eps": epsilon}, (in_channels,), center, scale, beta_initializer,
                         gamma_initializer, **kwargs)
        self._axis = axis

    def hybrid_forward(self, F: Any, x: Any, gamma: Any, beta: Any) -> Any:
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name="fwd", **self._kwargs)
        y = F.InstanceNorm(F.swapaxes(x, 1, self._axis), gamma, beta, name="fwd",
                           **self._kwargs)
        return F.swapaxes(y, 1, self._axis)
