"""MXNet's ``image`` colour and flip augmentations on ``(H, W, C)`` images (C = 1 or 3, RGB)
and, beyond MXNet, ``(N, H, W, C)`` batches (one draw per image):
``_image_adjust_lighting``, ``_image_random_brightness``, ``_image_random_contrast``,
``_image_random_saturation``, ``_image_random_lighting``, ``_image_random_flip_left_right``
and ``_image_random_flip_top_bottom`` (hue and colour jitter: ``image_hue.py``).

Each op is a composition (``ops/_composite.py``): a sampler draws the factors and broadcast
arithmetic applies them, so the GPU runs a Philox draw and fused elementwise kernels. Integer
images are computed in float32 and stored as MXNet's ``saturate_cast`` does (clipped to the
type's range, then truncated). The numpy references draw from ``RunCtx.rng`` (``sg.random``).

The random ops are not differentiable (their factors are draws; MXNet passes the head gradient
through unchanged, which is not their gradient: docs/mxnet_parity.md). ``adjust_lighting`` adds
a constant per channel, so its gradient is the head gradient.

Example::

    y = sg.nd.image.random_brightness(img, min_factor=0.5, max_factor=1.5)
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import NOT_DIFFERENTIABLE, OPAQUE, OpDef, RunCtx, register
from ._composite import COMPOSED, composite_gradient, composite_unroll, constant
from .sampling import generator_of as rng_of

GRAY = np.array([0.299, 0.587, 0.114])  # ITU-R 601 luma, MXNet's (and OpenCV's) weights
# AlexNet's PCA lighting: eigenvectors (columns) scaled by their eigenvalues, MXNet's table
EIG = np.array([[55.46 * -0.5675, 4.794 * 0.7192, 1.148 * 0.4009],
                [55.46 * -0.5808, 4.794 * -0.0045, 1.148 * -0.8140],
                [55.46 * -0.5836, 4.794 * -0.6948, 1.148 * 0.4203]])
ENHANCE = {"min_factor": Param("float", doc="Minimum factor (>= 0)."),
           "max_factor": Param("float", doc="Maximum factor (>= 0).")}
Expand = Callable[[Any, Attrs, list, list, list], list]


def image_shape(name: str) -> Callable:
    """Shape rule: (H, W, C) or (N, H, W, C) with C = 1 or 3, the output alike."""
    def rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        data = ins[0] if ins[0] is not None else outs[0]
        if data is None:
            return ins, outs
        if len(data) not in (3, 4) or data[-1] not in (1, 3):
            raise ShapeError(f"{name}: expected an (H, W, C) image or an (N, H, W, C) batch "
                             f"with C = 1 or 3, got shape {tuple(data)}")
        if a.get("min_factor", 0.0) > a.get("max_factor", 1.0) or \
                min(a.get("min_factor", 0.0), a.get("max_factor", 0.0)) < 0:
            raise ShapeError(f"{name}: need 0 <= min_factor <= max_factor, got "
                             f"{a['min_factor']} and {a['max_factor']}")
        return [tuple(data)], [tuple(data)]
    return rule


def draw_shape(shape: tuple, last: int = 1) -> tuple:
    """One draw per image, laid to broadcast over it: (1, 1, last) or (N, 1, 1, last)."""
    return (1, 1, last) if len(shape) == 3 else (shape[0], 1, 1, last)


def saturate(v: np.ndarray, dtype: Any) -> np.ndarray:
    """MXNet's ``saturate_cast``: integers clipped to the type's range and truncated."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.trunc(np.clip(v, info.min, info.max)).astype(dtype)
    return v.astype(dtype)


def work(S: Any, x: Any, dtype: Any) -> tuple[Any, Any]:
    """(x in its compute type, a function storing a value back as ``dtype``)."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        return x, lambda v: v
    info = np.iinfo(dtype)
    return (S.Cast(x, dtype="float32"),
            lambda v: S.Cast(S.clip(v, a_min=float(info.min), a_max=float(info.max)),
                             dtype=dtype.name))


def gray_np(x: np.ndarray, keepdims: bool = True) -> np.ndarray:
    """Luma per pixel (the value itself for one channel)."""
    return x if x.shape[-1] == 1 else (x * GRAY).sum(-1, keepdims=keepdims)


def gray(S: Any, x: Any, dtype: Any, channels: int) -> Any:
    return x if channels == 1 else S.sum(S.broadcast_mul(x, constant(S, GRAY, dtype)),
                                         axis=-1, keepdims=True)


def uniform(S: Any, lo: float, hi: float, shape: tuple, dtype: Any) -> Any:
    return S._random_uniform(low=lo, high=hi, shape=shape, dtype=compute_dtype(dtype))


def compute_dtype(dtype: Any) -> str:
    """float32 for integer images (computed in float), else the image's own float type."""
    dtype = np.dtype(dtype)
    return "float32" if dtype.kind in "iu" else dtype.name


# -- the colour transforms, numpy (float64) and composed, given their factors -------------------

def brightness_np(x: np.ndarray, f: np.ndarray) -> np.ndarray:
    return x * f


def contrast_np(x: np.ndarray, f: np.ndarray) -> np.ndarray:
    """x * f + (1 - f) * the image's mean luma."""
    mean = gray_np(x).mean(axis=(-3, -2, -1), keepdims=True)
    return x * f + (1.0 - f) * mean


def saturation_np(x: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Blend of each pixel with its luma (a one-channel image is unchanged)."""
    return x if x.shape[-1] == 1 else gray_np(x) * (1.0 - f) + x * f


def lighting_np(x: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """x + EIG @ alpha per image (``alpha``: shape draw_shape(x, 3)); one channel unchanged."""
    return x if x.shape[-1] == 1 else x + alpha @ EIG.T


def brightness(S: Any, x: Any, f: Any, shape: tuple, dtype: Any) -> Any:
    return S.broadcast_mul(x, f)


def contrast(S: Any, x: Any, f: Any, shape: tuple, dtype: Any) -> Any:
    mean = S.mean(gray(S, x, dtype, shape[-1]), axis=(-3, -2, -1), keepdims=True)
    return S.broadcast_add(S.broadcast_mul(x, f), S.broadcast_mul(1.0 - f, mean))


def saturation(S: Any, x: Any, f: Any, shape: tuple, dtype: Any) -> Any:
    if shape[-1] == 1:
        return x
    return S.broadcast_add(S.broadcast_mul(gray(S, x, dtype, 3), 1.0 - f),
                           S.broadcast_mul(x, f))


def lighting(S: Any, x: Any, alpha: Any, shape: tuple, dtype: Any) -> Any:
    if shape[-1] == 1:
        return x
    m = 1 if len(shape) == 3 else shape[0]
    pca = S.dot(S.Reshape(alpha, shape=(m, 3)), constant(S, EIG.T, dtype))
    return S.broadcast_add(x, S.Reshape(pca, shape=draw_shape(shape, 3)))


# -- registration --------------------------------------------------------------------------------

def drawn(draw_np: Callable, apply_np: Callable) -> Callable:
    """The numpy reference of an op drawing ``draw_np(attrs, shape, rng)`` and applying them
    with ``apply_np(x, factors)`` in float64."""
    def compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
        x = xs[0]
        factors = draw_np(a, x.shape, rng_of(ctx))
        return [saturate(apply_np(x.astype(np.float64), factors), x.dtype)]
    return compute


def register_random(name: str, params: dict, compute: Callable, expand: Expand,
                    doc: str) -> None:
    """A random image op: numpy reference ``compute``, composition ``expand`` (its output
    blocked for autodiff, which runs after unrolling on the GPU: not differentiable there
    either)."""
    def blocked(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
        return [S.BlockGrad(y) for y in expand(S, a, xs, shapes, dtypes)]
    register(OpDef(name, params, ("data",), image_shape(name), compute, NOT_DIFFERENTIABLE,
                   OPAQUE, lowering=COMPOSED, train_dependent=True,
                   extra={"unroll": composite_unroll(blocked)}, doc=doc))


def _enhance(draw_apply: Callable) -> Expand:
    """The expansion of an op drawing one factor in [min_factor, max_factor) per image."""
    def expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
        shape, dtype = tuple(shapes[0]), dtypes[0]
        x, store = work(S, xs[0], dtype)
        f = uniform(S, a["min_factor"], a["max_factor"], draw_shape(shape), dtype)
        return [store(draw_apply(S, x, f, shape, compute_dtype(dtype)))]
    return expand


def _one_factor(a: Attrs, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    return rng.uniform(a["min_factor"], a["max_factor"], draw_shape(shape))


for _name, _np_fn, _fn, _what in (
        ("brightness", brightness_np, brightness, "x * f"),
        ("contrast", contrast_np, contrast, "x * f + (1 - f) * the image's mean luma"),
        ("saturation", saturation_np, saturation, "luma * (1 - f) + x * f per pixel")):
    register_random(f"_image_random_{_name}", ENHANCE, drawn(_one_factor, _np_fn), _enhance(_fn),
                    f"Random {_name}: {_what}, f drawn from U[min_factor, max_factor) per "
                    f"image.")


def _lighting_draw(a: Attrs, shape: tuple, rng: np.random.Generator) -> np.ndarray:
    return rng.normal(0.0, a["alpha_std"], draw_shape(shape, 3))


def _lighting_expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    shape, dtype = tuple(shapes[0]), dtypes[0]
    x, store = work(S, xs[0], dtype)
    alpha = S._random_normal(loc=0.0, scale=a["alpha_std"], shape=draw_shape(shape, 3),
                             dtype=compute_dtype(dtype))
    return [store(lighting(S, x, alpha, shape, compute_dtype(dtype)))]


register_random("_image_random_lighting",
                {"alpha_std": Param("float", 0.05, doc="Level of the lighting noise.")},
                drawn(_lighting_draw, lighting_np), _lighting_expand,
                "AlexNet-style PCA lighting noise: x + EIG @ alpha per image, alpha drawn "
                "from N(0, alpha_std) per channel.")


def _flip_expand(axis: int) -> Expand:
    def expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
        shape, dtype = tuple(shapes[0]), dtypes[0]
        x, store = work(S, xs[0], dtype)  # (integer images are moved as exact floats)
        keep = S.Cast(uniform(S, 0.0, 1.0, draw_shape(shape), "float32") < 0.5,
                      dtype=compute_dtype(dtype))
        keep = S.broadcast_like(keep, x)
        return [store(S.where(keep, x, S.reverse(x, axis=len(shape) - axis)))]
    return expand


def _flip_np(axis: int) -> Callable:
    def apply(x: np.ndarray, keep: np.ndarray) -> np.ndarray:
        return np.where(keep, x, np.flip(x, axis=x.ndim - axis))
    return apply


for _name, _axis in (("left_right", 2), ("top_bottom", 3)):
    register_random(f"_image_random_flip_{_name}", {},
                    drawn(lambda a, shape, rng: rng.uniform(0.0, 1.0, draw_shape(shape)) < 0.5,
                          _flip_np(_axis)), _flip_expand(_axis),
                    f"Flips the image {_name.replace('_', '-')} with probability 1/2 "
                    f"(per image of a batch).")


def _adjust_lighting_expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    shape, dtype = tuple(shapes[0]), dtypes[0]
    if shape[-1] == 1:
        return [S.identity(xs[0])]
    x, store = work(S, xs[0], dtype)
    return [store(S.broadcast_add(x, constant(S, EIG @ np.asarray(a["alpha"]), compute_dtype(dtype))))]


def _adjust_lighting(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    alpha = np.asarray(a["alpha"], np.float64).reshape(1, 3)
    return [saturate(lighting_np(x.astype(np.float64), alpha), x.dtype)]


def _alpha_shape(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
    if len(a["alpha"]) != 3:
        raise ShapeError(f"_image_adjust_lighting: alpha needs 3 values (R, G, B), got "
                         f"{tuple(a['alpha'])}")
    return image_shape("_image_adjust_lighting")(a, ins, outs)


register(OpDef(
    "_image_adjust_lighting",
    {"alpha": Param("floats", doc="The lighting alphas for the R, G, B channels.")},
    ("data",), _alpha_shape, _adjust_lighting,
    composite_gradient(_adjust_lighting_expand), OPAQUE, lowering=COMPOSED,
    extra={"unroll": composite_unroll(_adjust_lighting_expand)},
    doc="AlexNet-style lighting: adds EIG @ alpha (the PCA of ImageNet's colours) to every "
        "RGB pixel; a one-channel image is unchanged."))
