"""Row statistics shared by the normalisation ops (``ops/norm_layer.py``, ``ops/norm_l2.py``).

Each op states how it sees its data as a :class:`RowView`: a shape of the same bytes, the view
axes a row's statistics run over ("reduced"), and the view axis gamma and beta lie along. A
*row* is one combination of the kept axes (row-major), so every statistic output, whatever
shape the op gives it, holds the rows in order. The numpy references, the gradients (built from
registered ops over the view) and the GPU lowering (``cuda/lowering_row_norm.py``) all read the
view, so they cannot disagree about which elements a statistic covers.

Example: LayerNorm over axis 1 of a (2, 3, 4) array is the view (2, 3, 4) reducing axis 1 with
gamma along axis 1; GroupNorm with 2 groups of a (2, 4, 5) array is (2, 2, 10) reducing axis 2,
gamma (one per group) along axis 1.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any, Optional

import numpy as np

from ...core.base import ShapeError
from ...core.dtypes import compute_dtype, is_narrow

Shape = tuple[int, ...]


@dataclass(frozen=True)
class RowView:
    """The data as ``dims`` (C order); statistics over the axes where ``reduced`` is True;
    gamma and beta laid along view axis ``param_axis`` (None: the op has none)."""

    dims: Shape
    reduced: tuple[bool, ...]
    param_axis: Optional[int] = None

    @property
    def axes(self) -> tuple[int, ...]:
        """The reduced view axes."""
        return tuple(i for i, r in enumerate(self.reduced) if r)

    @property
    def count(self) -> int:
        """Elements of one row (the statistics' divisor)."""
        return prod(d for d, r in zip(self.dims, self.reduced) if r)

    @property
    def rows(self) -> int:
        return prod(d for d, r in zip(self.dims, self.reduced) if not r)

    @property
    def kept_shape(self) -> Shape:
        """``dims`` with the reduced axes as 1 (a statistic, broadcastable over the view)."""
        return tuple(1 if r else d for d, r in zip(self.dims, self.reduced))

    @property
    def param_shape(self) -> Shape:
        """gamma's shape broadcast over the view: 1 but along ``param_axis``."""
        return tuple(d if i == self.param_axis else 1 for i, d in enumerate(self.dims))


def standardize_np(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, view: RowView,
                   eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(y, mean, var) of ``x`` over ``view``'s rows: ``y = (x - mean) / sqrt(var + eps) *
    gamma + beta``; mean and var flat, one per row, all computed in ``compute_dtype``."""
    ct = compute_dtype(x.dtype)
    xv = x.astype(ct).reshape(view.dims)
    mean = xv.mean(axis=view.axes, keepdims=True)
    var = np.square(xv - mean).mean(axis=view.axes, keepdims=True)
    g = gamma.astype(ct).reshape(view.param_shape)
    b = beta.astype(ct).reshape(view.param_shape)
    y = (xv - mean) / np.sqrt(var + ct.type(eps)) * g + b
    return y.reshape(x.shape).astype(x.dtype), mean.reshape(-1), var.reshape(-1)


def data_shape(c: Any, index: int = 0) -> Shape:
    """The shape of input ``index`` of a gradient context (the gradients reshape by it)."""
    shape = None if c.types is None else c.types.shape(c.inputs[index].outputs_[0])
    if shape is None:
        raise ShapeError(f"{c.node.name} ({c.node.op}): the gradient needs the data's shape")
    return tuple(shape)


class GradFloat:
    """Casts of a gradient rule: for float16/bfloat16 data, ``up`` takes a symbol to float32
    and ``down`` brings a result back, so the gradient's sums run in float32 (no-ops for
    wider data)."""

    def __init__(self, c: Any) -> None:
        t = None if c.types is None else c.types.dtype(c.inputs[0].outputs_[0])
        self.c, self.dtype = c, (np.dtype(t).name if t is not None and is_narrow(t) else None)

    def up(self, s: Any) -> Any:
        return s if self.dtype is None else self.c.sym.Cast(s, dtype="float32")

    def down(self, s: Any) -> Any:
        return s if self.dtype is None else self.c.sym.Cast(s, dtype=self.dtype)


def standardize_grad(c: Any, view: RowView, std: Any, stat_grads: bool) -> list:
    """[dx, dgamma, dbeta] of ``y = (x - mean) / std * gamma + beta`` over ``view``'s rows,
    from registered ops: ``dx = (gy - mean(gy) - xhat * mean(gy * xhat)) / std`` with ``gy =
    dy * gamma``. ``std`` (a symbol of the statistics' shape) is sqrt(var + eps). With
    ``stat_grads`` the head gradients of outputs 1 (mean) and 2 (std) flow into dx too."""
    S, f = c.sym, GradFloat(c)
    shape = data_shape(c)
    kept = view.kept_shape
    xv = f.up(S.Reshape(c.inputs[0], shape=view.dims))
    dyv = f.up(S.Reshape(c.ograds[0], shape=view.dims))
    mean = f.up(S.Reshape(c.outputs[1], shape=kept))
    sd = f.up(S.Reshape(std, shape=kept))
    g = f.up(S.Reshape(c.inputs[1], shape=view.param_shape))
    dxv, dgamma, dbeta, xhat = standardize_grad_terms(S, view, dyv, xv, g, mean, sd)
    if stat_grads:  # d mean / dx = 1/m; d std / dx = xhat / m
        dm = f.up(S.Reshape(c.ograds[1], shape=kept))
        ds = f.up(S.Reshape(c.ograds[2], shape=kept))
        dxv = dxv + (dm + ds * xhat) * (1.0 / view.count)
    return [f.down(S.Reshape(dxv, shape=shape)), f.down(dgamma), f.down(dbeta)]


def standardize_grad_terms(S: Any, view: RowView, dyv: Any, xv: Any, g: Any, mean: Any,
                           sd: Any) -> tuple[Any, Any, Any, Any]:
    """(dx, dgamma, dbeta, xhat) over ``view`` from ops of ``S``, given the view-shaped dy and
    x, gamma of ``view.param_shape`` and mean and std of ``view.kept_shape``."""
    ax = view.axes
    xhat = (xv - mean) / sd
    gy = dyv * g
    dxv = (gy - S.mean(gy, axis=ax, keepdims=True)
           - xhat * S.mean(gy * xhat, axis=ax, keepdims=True)) / sd
    pa = view.param_axis
    return (dxv, S.sum(dyv * xhat, axis=pa, exclude=True), S.sum(dyv, axis=pa, exclude=True),
            xhat)
