"""MXNet's ``image.random_hue`` and ``image.random_color_jitter`` (``_image_random_hue``,
``_image_random_color_jitter``) on ``(H, W, C)`` images or ``(N, H, W, C)`` batches.

The hue shift turns each RGB pixel into hue, lightness and saturation (OpenCV's HLS, as MXNet),
adds ``alpha * 360`` degrees to the hue and turns it back. The numpy reference follows that
sector table; the composition writes the inverse in closed form (channel n of 0, 8, 4 for R, G,
B is ``l - a * clip(min(k - 3, 9 - k), -1, 1)`` with ``k = (n + hue / 30) mod 12`` and ``a``
half the pixel's range), elementwise ops the GPU fuses. Colour jitter applies brightness,
contrast, saturation and hue (those of positive strength) in a random order per image; its
composition computes every transform at each of the four positions and keeps the one whose
rank (among four uniform keys per image) is that position.

Example::

    y = sg.nd.image.random_color_jitter(img, brightness=0.4, contrast=0.4, saturation=0.4,
                                        hue=0.1)
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...core.attrs import Attrs, Param
from .image_color import (ENHANCE, brightness, brightness_np, compute_dtype, contrast,
                          contrast_np, draw_shape, drawn, register_random, rng_of, saturate,
                          saturation, saturation_np, uniform, work)

# OpenCV's HLS -> RGB: per hue sector, the table entry of (b, g, r)
SECTORS = np.array([[1, 3, 0], [1, 0, 2], [3, 0, 1], [0, 2, 1], [0, 1, 3], [2, 1, 0]])


def hue_np(x: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """MXNet's hue shift by ``alpha`` turns (broadcast per image) of RGB values in [0, 255]."""
    if x.shape[-1] == 1:
        return x
    r, g, b = (x[..., c] / 255.0 for c in range(3))
    alpha = alpha[..., 0]
    vmax, vmin = np.maximum(np.maximum(r, g), b), np.minimum(np.minimum(r, g), b)
    diff, light = vmax - vmin, (vmax + vmin) / 2.0
    grey = diff <= np.finfo(np.float32).eps
    safe = np.where(grey, 1.0, diff)
    sat = np.where(grey, 0.0, np.where(light < 0.5, safe / np.where(grey, 1.0, vmax + vmin),
                                       safe / np.where(grey, 1.0, 2.0 - vmax - vmin)))
    h = np.where(vmax == r, (g - b) * 60 / safe,
                 np.where(vmax == g, (b - r) * 60 / safe + 120, (r - g) * 60 / safe + 240))
    h = np.where(grey, 0.0, h + 360.0 * (h < 0)) + alpha * 360.0
    p2 = np.where(light <= 0.5, light * (1 + sat), light + sat - light * sat)
    p1 = 2 * light - p2
    h = np.mod(h / 60.0, 6.0)
    sector = np.minimum(h.astype(np.int64), 5)
    frac = h - sector
    tab = np.stack([p2, p1, p1 + (p2 - p1) * (1 - frac), p1 + (p2 - p1) * frac], -1)
    pick = [np.take_along_axis(tab, SECTORS[sector][..., k:k + 1], -1)[..., 0]
            for k in (2, 1, 0)]  # r, g, b
    out = np.stack([np.where(sat == 0, light, v) for v in pick], -1)
    return out * 255.0


def hue(S: Any, x: Any, alpha: Any, shape: tuple, dtype: Any) -> Any:
    """The hue shift composed of elementwise ops (closed-form HLS -> RGB)."""
    if shape[-1] == 1:
        return x
    r, g, b = (S.slice_axis(x, axis=-1, begin=c, end=c + 1) * (1.0 / 255.0) for c in range(3))
    vmax = S.broadcast_maximum(S.broadcast_maximum(r, g), b)
    vmin = S.broadcast_minimum(S.broadcast_minimum(r, g), b)
    half = (vmax - vmin) * 0.5
    light = (vmax + vmin) * 0.5
    inv = 60.0 / S.clip(vmax - vmin, a_min=1e-12, a_max=1e30)  # (grey: any hue, a = 0)
    h = S.where(vmax == r, (g - b) * inv,
                S.where(vmax == g, (b - r) * inv + 120.0, (r - g) * inv + 240.0))
    turns = S.broadcast_add(h * (1.0 / 30.0), alpha * 12.0)
    out = []
    for n in (0.0, 8.0, 4.0):
        k = turns + n
        k = k - S.floor(k * (1.0 / 12.0)) * 12.0
        ramp = S.clip(S.broadcast_minimum(k - 3.0, 9.0 - k), a_min=-1.0, a_max=1.0)
        out.append((light - half * ramp) * 255.0)
    return S.concat(*out, dim=-1)


def _hue_expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    shape, dtype = tuple(shapes[0]), dtypes[0]
    x, store = work(S, xs[0], dtype)
    alpha = uniform(S, a["min_factor"], a["max_factor"], draw_shape(shape), dtype)
    return [store(hue(S, x, alpha, shape, compute_dtype(dtype)))]


register_random("_image_random_hue", ENHANCE,
                drawn(lambda a, shape, rng: rng.uniform(a["min_factor"], a["max_factor"],
                                                        draw_shape(shape)), hue_np),
                _hue_expand,
                "Random hue: the hue of every pixel turned by alpha * 360 degrees, alpha drawn "
                "from U[min_factor, max_factor) per image.")

# -- colour jitter -------------------------------------------------------------------------------

JITTER = {"brightness": Param("float", doc="How much to jitter brightness."),
          "contrast": Param("float", doc="How much to jitter contrast."),
          "saturation": Param("float", doc="How much to jitter saturation."),
          "hue": Param("float", doc="How much to jitter hue.")}
# name: (numpy transform, composed transform, offset of its factor: 1 + U(-s, s) or U(-s, s))
STAGES: dict[str, tuple[Callable, Callable, float]] = {
    "brightness": (brightness_np, brightness, 1.0), "contrast": (contrast_np, contrast, 1.0),
    "saturation": (saturation_np, saturation, 1.0), "hue": (hue_np, hue, 0.0)}


def _jitter_np(a: Attrs, xs: list, ctx: Any) -> list:
    x, rng = xs[0], rng_of(ctx)
    images = x.reshape((-1,) + x.shape[-3:]).astype(np.float64)
    out = []
    for img in images:
        for k in rng.permutation(4):
            name = tuple(STAGES)[k]
            if a[name] > 0:
                fn, _, offset = STAGES[name]
                img = fn(img, offset + rng.uniform(-a[name], a[name], (1, 1, 1)))
        out.append(img)
    return [saturate(np.stack(out).reshape(x.shape), x.dtype)]


def _jitter_expand(S: Any, a: Attrs, xs: list, shapes: list, dtypes: list) -> list:
    shape, dtype = tuple(shapes[0]), dtypes[0]
    x, store = work(S, xs[0], dtype)
    m, fdt = draw_shape(shape)[0] if len(shape) == 4 else 1, compute_dtype(dtype)
    keys = uniform(S, 0.0, 1.0, (m, 4), "float32")
    # rank of stage t among the four keys: the position it is applied at
    rank = S.sum(S.broadcast_lesser(S.Reshape(keys, shape=(m, 1, 4)),
                                    S.Reshape(keys, shape=(m, 4, 1))), axis=-1)
    active = [(t, name) for t, name in enumerate(STAGES) if a[name] > 0]
    factors = {name: uniform(S, STAGES[name][2] - a[name], STAGES[name][2] + a[name],
                             draw_shape(shape), fdt) for _, name in active}
    for pos in range(4):
        y = x
        for t, name in active:
            at = S.Cast(S.Reshape(S.slice_axis(rank, axis=1, begin=t, end=t + 1) == float(pos),
                                  shape=draw_shape(shape)), dtype=fdt)
            y = S.where(S.broadcast_like(at, x), STAGES[name][1](S, x, factors[name], shape,
                                                                 fdt), y)
        x = y
    return [store(x)]


register_random("_image_random_color_jitter", JITTER, _jitter_np, _jitter_expand,
                "Random colour jitter: brightness, contrast, saturation and hue (each with "
                "strength > 0: factor 1 + U(-s, s), hue U(-s, s)) in a random order per image.")
