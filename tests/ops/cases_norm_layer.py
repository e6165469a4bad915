"""Cases of the row-normalisation ops: LayerNorm, GroupNorm, InstanceNorm, L2Normalization and
moments. References are float64 numpy written from MXNet 1.9.1's documented formulas (output
layouts checked against MXNet 1.9.1 in tests/ops/test_norm_layer_mxnet.py): std is sqrt(var +
eps), GroupNorm's gamma has one entry per group, L2Normalization's norm adds eps under the
root."""
from __future__ import annotations

import numpy as np

import symgraph as sg

from .case import Case, normal, uniform

S = sg.sym
x, g, b = S.var("x"), S.var("g"), S.var("b")


def layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, axis: int = -1,
               eps: float = 1e-5) -> list:
    mean = x.mean(axis=axis, keepdims=True)
    std = np.sqrt(x.var(axis=axis, keepdims=True) + eps)
    shape = [1] * x.ndim
    shape[axis] = -1
    return [(x - mean) / std * g.reshape(shape) + b.reshape(shape), mean, std]


def layer_norm_backward(dy: np.ndarray, x: np.ndarray, g: np.ndarray, m: np.ndarray,
                        s: np.ndarray) -> list:
    """dx, dgamma, dbeta of y = (x - m) / s * g + b along the last axis, for any m and s (the
    op takes them as inputs): through xhat, and through the batch mean of gy and gy * xhat."""
    xhat = (x - m) / s
    gy = dy * g
    dx = (gy - gy.mean(axis=-1, keepdims=True)
          - xhat * (gy * xhat).mean(axis=-1, keepdims=True)) / s
    return [dx, (dy * xhat).sum(axis=(0, 1)), dy.sum(axis=(0, 1))]


def group_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, groups: int,
               eps: float = 1e-5) -> list:
    n = x.shape[0]
    xg = x.reshape(n, groups, -1)
    mean = xg.mean(axis=2, keepdims=True)
    std = np.sqrt(xg.var(axis=2, keepdims=True) + eps)
    y = (xg - mean) / std * g.reshape(1, -1, 1) + b.reshape(1, -1, 1)
    return [y.reshape(x.shape), mean.reshape(n, groups), std.reshape(n, groups)]


def instance_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = 1e-3) -> np.ndarray:
    axes = tuple(range(2, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return (x - mean) / np.sqrt(var + eps) * g.reshape(shape) + b.reshape(shape)


def l2_normalization(x: np.ndarray, mode: str, eps: float = 1e-10) -> np.ndarray:
    axes = {"instance": tuple(range(1, x.ndim)), "channel": (1,),
            "spatial": tuple(range(2, x.ndim))}[mode]
    return x / np.sqrt((x * x).sum(axis=axes, keepdims=True) + eps)


def moments(x: np.ndarray, axes: tuple, keepdims: bool = False) -> list:
    return [x.mean(axis=axes, keepdims=keepdims), x.var(axis=axes, keepdims=keepdims)]


def _loss_with_stats(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> float:
    """A loss using LayerNorm's output, mean and std, so that the gradient of each output
    (not only the output's) is checked against numeric differences."""
    y, mean, std = layer_norm(x, g, b)
    return float(np.sin(y).sum() + 0.7 * mean.sum() + np.square(std).sum())


def _stats_loss():
    y = S.LayerNorm(x, g, b, output_mean_var=True)
    return S.sum(S.sin(y[0])) + S.sum(y[1]) * 0.7 + S.sum(S.square(y[2]))


CASES = [
    Case("LayerNorm", lambda: S.LayerNorm(x, g, b),
         {"x": normal(2, 3, 6), "g": uniform(6),
          "b": uniform(6)},
         lambda x, g, b: layer_norm(x, g, b)[0], also_covers=("_backward_LayerNorm",),
         id="LayerNorm_last"),
    Case("LayerNorm", lambda: S.LayerNorm(x, g, b, axis=1, eps=1e-3, output_mean_var=True),
         {"x": normal(2, 4, 3), "g": uniform(4), "b": uniform(4)},
         lambda x, g, b: layer_norm(x, g, b, axis=1, eps=1e-3), id="LayerNorm_axis1_stats"),
    Case("LayerNorm", _stats_loss, {"x": normal(2, 3, 6), "g": uniform(6), "b": uniform(6)},
         lambda x, g, b: _loss_with_stats(x, g, b), grad=False, loss=_loss_with_stats,
         id="LayerNorm_stat_gradients"),
    Case("_backward_LayerNorm",
         lambda: S._backward_LayerNorm(S.var("dy"), x, g, S.var("m"), S.var("s")),
         {"dy": normal(2, 3, 5), "x": normal(2, 3, 5), "g": uniform(5), "m": normal(2, 3, 1),
          "s": uniform(2, 3, 1, low=0.5, high=1.5)}, layer_norm_backward,
         id="LayerNorm_backward_op"),
    Case("GroupNorm", lambda: S.GroupNorm(x, g, b, num_groups=2, output_mean_var=True),
         {"x": normal(2, 4, 3, 2), "g": uniform(2), "b": uniform(2)},
         lambda x, g, b: group_norm(x, g, b, 2)),
    Case("GroupNorm", lambda: S.GroupNorm(x, g, b, eps=1e-2),
         {"x": normal(3, 2, 5), "g": uniform(1), "b": uniform(1)},
         lambda x, g, b: group_norm(x, g, b, 1, eps=1e-2)[0], id="GroupNorm_one_group"),
    Case("InstanceNorm", lambda: S.InstanceNorm(x, g, b),
         {"x": normal(2, 3, 4, 2), "g": uniform(3), "b": uniform(3)},
         lambda x, g, b: instance_norm(x, g, b)),
    Case("L2Normalization", lambda: S.L2Normalization(x),
         {"x": normal(3, 2, 4)}, lambda x: l2_normalization(x, "instance"), id="L2_instance"),
    Case("L2Normalization", lambda: S.L2Normalization(x, mode="channel", eps=1e-3),
         {"x": normal(2, 3, 2, 2)}, lambda x: l2_normalization(x, "channel", 1e-3),
         id="L2_channel"),
    Case("L2Normalization", lambda: S.L2Normalization(x, mode="spatial"),
         {"x": normal(2, 3, 5)}, lambda x: l2_normalization(x, "spatial"), id="L2_spatial"),
    Case("moments", lambda: S.moments(x, axes=(0, 2)),
         {"x": normal(3, 2, 4, 2)}, lambda x: moments(x, (0, 2))),
    Case("moments", lambda: S.moments(x, axes=(-1,), keepdims=True),
         {"x": normal(2, 5)}, lambda x: moments(x, (-1,), True), id="moments_keepdims"),
]
