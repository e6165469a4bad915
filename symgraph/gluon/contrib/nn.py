"""``gluon.contrib.nn`` (MXNet 1.x names, arguments, defaults): ``Concurrent`` and
``HybridConcurrent`` (children side by side, outputs concatenated), ``Identity``,
``PixelShuffle1D/2D/3D``, ``SparseEmbedding``, and ``SyncBatchNorm`` (also ``gluon.nn``'s).
Each composes registered ops through ``F``.
"""
from __future__ import annotations

from math import prod
from typing import Any, Sequence, Union

import numpy as np

from ...runtime import ndarray as _nd
from ...core.base import AttrError
from ..block import Block, HybridBlock
from ..nn.basic_layers import HybridSequential, Sequential
from ..nn.sync_batch_norm import SyncBatchNorm


class Concurrent(Sequential):
    """Feeds the input to every child and concatenates their outputs on ``axis``.

    Example::

        net = Concurrent(axis=1)
        with net.name_scope():
            net.add(nn.Dense(10), nn.Dense(20))
        net(x)  # (N, 30)

    Examples
    --------
    >>> net = sg.gluon.contrib.nn.Concurrent(axis=-1)
    >>> net.add(sg.gluon.nn.Lambda(lambda x: x), sg.gluon.nn.Lambda(lambda x: 2 * x))
    >>> net(sg.nd.array([[1, 2]]))  # each child's output, joined along axis -1
    [[1. 2. 2. 4.]]
    <NDArray 1x4 @cpu(0)>
    """

    def __init__(self, axis: int = -1, prefix: Any = None, params: Any = None) -> None:
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x: Any) -> Any:
        return _nd.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class HybridConcurrent(HybridSequential):
    """:class:`Concurrent` of HybridBlocks, so the whole block can be hybridized.

    Example: ``HybridConcurrent(axis=1)`` holding ``nn.Dense(10)`` and ``Identity()``
    gives a residual-style concatenation ``[dense(x), x]``.

    Examples
    --------
    >>> net = sg.gluon.contrib.nn.HybridConcurrent(axis=0)
    >>> net.add(sg.gluon.contrib.nn.Identity(), sg.gluon.nn.HybridLambda(lambda F, x: 2 * x))
    >>> net(sg.nd.array([[1, 2]]))
    [[1. 2.]
     [2. 4.]]
    <NDArray 2x2 @cpu(0)>
    """

    def __init__(self, axis: int = -1, prefix: Any = None, params: Any = None) -> None:
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return F.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class Identity(HybridBlock):
    """Returns its input (with :class:`HybridConcurrent`, a residual branch).

    Example: ``Identity()(x)`` is ``x``.

    Examples
    --------
    >>> sg.gluon.contrib.nn.Identity()(sg.nd.array([1, 2]))
    [1. 2.]
    <NDArray 2 @cpu(0)>
    """

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        return x


def _factors(factor: Union[int, Sequence[int]], ndim: int, who: str) -> tuple[int, ...]:
    """``factor`` as one positive int per spatial axis (an int is used for every axis)."""
    try:
        factors = (int(factor),) * ndim if np.ndim(factor) == 0 else \
            tuple(int(f) for f in factor)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        factors = ()
    if len(factors) != ndim or min(factors) < 1:
        raise AttrError(f"{who}: factor must be a positive int or {ndim} of them, got "
                        f"{factor!r}")
    return factors


class _PixelShuffle(HybridBlock):
    """Moves channel groups into space: ``(N, C*prod(f), S1, ...)`` to
    ``(N, C, S1*f1, ...)``, channel ``c*prod(f) + (i1*f2 + i2)...`` landing at offset
    ``(i1, i2...)`` of each output block (MXNet's order)."""

    NDIM = 0

    def __init__(self, factor: Union[int, Sequence[int]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._factors = _factors(factor, self.NDIM, type(self).__name__)

    def hybrid_forward(self, F: Any, x: Any) -> Any:
        f, n = self._factors, self.NDIM
        keep = (0,) * n
        x = F.reshape(x, shape=(0, -4, -1, prod(f)) + keep)  # (N, C, f1*f2..., S...)
        for i in range(n - 1):  # split the factor axis into f1, f2...: (N, C, f..., S...)
            x = F.reshape(x, shape=(0, 0) + (0,) * i + (-4, f[i], -1) + keep)
        # (N, C, S1, f1, S2, f2, ...), then merge each pair
        perm = (0, 1) + tuple(a for i in range(n) for a in (2 + n + i, 2 + i))
        x = F.transpose(x, axes=perm)
        return F.reshape(x, shape=(0, 0) + (-3,) * n)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._factors if self.NDIM > 1 else self._factors[0]})"


class PixelShuffle1D(_PixelShuffle):
    """``(N, C*f, W)`` to ``(N, C, W*f)``.

    Example: ``PixelShuffle1D(2)(x)`` of x ``(1, 4, 3)`` is ``(1, 2, 6)``.

    Examples
    --------
    >>> x = sg.nd.array([[[1, 2], [3, 4]]])  # (N, C * f, W) with f = 2
    >>> sg.gluon.contrib.nn.PixelShuffle1D(2)(x)  # channel j of each group fills slot j
    [[[1. 3. 2. 4.]]]
    <NDArray 1x1x4 @cpu(0)>
    """

    NDIM = 1


class PixelShuffle2D(_PixelShuffle):
    """``(N, C*f1*f2, H, W)`` to ``(N, C, H*f1, W*f2)``; ``factor`` an int or ``(f1, f2)``.

    Example: ``PixelShuffle2D((2, 3))(x)`` of x ``(1, 12, 3, 5)`` is ``(1, 2, 6, 15)``.

    Examples
    --------
    >>> x = sg.nd.array([0, 1, 2, 3]).reshape((1, 4, 1, 1))  # (N, C * 2 * 2, H, W)
    >>> sg.gluon.contrib.nn.PixelShuffle2D(2)(x)
    [[[[0. 1.]
       [2. 3.]]]]
    <NDArray 1x1x2x2 @cpu(0)>
    """

    NDIM = 2


class PixelShuffle3D(_PixelShuffle):
    """``(N, C*f1*f2*f3, D, H, W)`` to ``(N, C, D*f1, H*f2, W*f3)``.

    Example: ``PixelShuffle3D(2)(x)`` of x ``(1, 16, 2, 3, 4)`` is ``(1, 2, 4, 6, 8)``.

    Examples
    --------
    >>> x = sg.nd.arange(8).reshape((1, 8, 1, 1, 1))  # (N, C * 2 * 2 * 2, D, H, W)
    >>> y = sg.gluon.contrib.nn.PixelShuffle3D(2)(x)
    >>> y.shape, y.reshape((8,)).asnumpy().tolist()
    ((1, 1, 2, 2, 2), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    """

    NDIM = 3


class SparseEmbedding(Block):
    """Rows of ``weight`` ``(input_dim, output_dim)`` picked by integer indices, as
    ``nn.Embedding``. MXNet keeps the weight and its gradient row-sparse; symgraph has no
    sparse storage, so both are dense (the same values, more memory for a large vocabulary).

    Example: ``SparseEmbedding(1000, 16)(sg.nd.array([[1, 5]]))`` is ``(1, 2, 16)``.

    Examples
    --------
    >>> emb = sg.gluon.contrib.nn.SparseEmbedding(3, 2)
    >>> emb.initialize()
    >>> emb.weight.set_data(sg.nd.array([[0, 0], [1, 1], [2, 2]]))
    >>> emb(sg.nd.array([2, 0]))
    [[2. 2.]
     [0. 0.]]
    <NDArray 2x2 @cpu(0)>
    """

    def __init__(self, input_dim: int, output_dim: int, dtype: Any = "float32",
                 weight_initializer: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim,
                        "dtype": np.dtype(dtype).name}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype)

    def forward(self, x: Any) -> Any:
        return _nd.Embedding(x, self.weight.data(x.context), name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        k = self._kwargs
        return f"SparseEmbedding({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"


__all__ = ["Concurrent", "HybridConcurrent", "Identity", "PixelShuffle1D", "PixelShuffle2D",
           "PixelShuffle3D", "SparseEmbedding", "SyncBatchNorm"]
