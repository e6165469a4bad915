"""Rearranging layers of MXNet: depth_to_space / space_to_depth, diag, the legacy Crop, and
im2col / col2im (sliding blocks as columns, and their sum back into an image).

depth_to_space, space_to_depth, diag and Crop are strided views of their input (or, for the
1-D diag and the gradients, of their output): each op states the view once, as a numpy
function that its reference applies to the data and its lowering (``gather_views`` /
``scatter_views``, ``cuda/lowering_views``) to an uninitialised array of the same shape, so
the GPU copies exactly the elements numpy picks. im2col / col2im reuse the convolution's
column kernels (``ops/_window``, ``cuda/kernels_conv``) with MXNet's (N, C*K, L) layout.
"""
from __future__ import annotations

from math import prod
from typing import Any, Callable

import numpy as np

from ...core.attrs import Attrs, Param
from ...core.base import ShapeError
from ...core.registry import INJECTIVE, REDUCE, OpDef, RunCtx, register
from ._util import (check_attr, fmt, forward_shape, known_input_shape, like_input,
                    norm_axis)
from ._window import col2im as window_col2im, im2col as window_im2col
from .conv import Geometry, conv_per_axis as per_axis
from .geometry import ConvWindow

Shape = tuple[int, ...]
BLOCK = {"block_size": Param("int", doc="edge of the blocks moved between depth and space")}


def _d2s_view(a: Attrs, x: np.ndarray) -> np.ndarray:
    """(N, C, H, W) as (N, C/b^2, H, b, W, b): in C order, the elements of depth_to_space."""
    n, c, h, w = x.shape
    b = a["block_size"]
    return x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)


def _s2d_view(a: Attrs, x: np.ndarray) -> np.ndarray:
    """(N, C, H, W) as (N, b, b, C, H/b, W/b): in C order, the elements of space_to_depth."""
    n, c, h, w = x.shape
    b = a["block_size"]
    return x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)


def _d2s_shape(a: Attrs, s: Shape) -> Shape:
    b = a["block_size"]
    check_attr(b >= 1, "block_size", b, "must be >= 1")
    if len(s) != 4 or s[1] % (b * b):
        raise ShapeError(f"data {fmt(s)} must be 4-D (N, C, H, W) with C divisible by "
                         f"block_size^2 = {b * b}")
    return (s[0], s[1] // (b * b), s[2] * b, s[3] * b)


def _s2d_shape(a: Attrs, s: Shape) -> Shape:
    b = a["block_size"]
    check_attr(b >= 1, "block_size", b, "must be >= 1")
    if len(s) != 4 or s[2] % b or s[3] % b:
        raise ShapeError(f"data {fmt(s)} must be 4-D (N, C, H, W) with H and W divisible by "
                         f"block_size {b}")
    return (s[0], s[1] * b * b, s[2] // b, s[3] // b)


def _inverse_pair(forward: Callable, backward: Callable) -> Callable:
    """Shape rule of a one-input op whose output shape is ``forward(input)`` and input shape
    ``backward(output)`` (each op is the other's inverse)."""
    def rule(a: Attrs, ins: list, outs: list) -> tuple[list, list]:
        if ins[0] is not None:
            return ins, [forward(a, tuple(ins[0]))]
        if outs[0] is not None:
            return [backward(a, tuple(outs[0]))], outs
        return ins, outs
    return rule


def _view_compute(view: Callable, shape: Callable) -> Callable:
    def compute(a: Attrs, xs: list, ctx: RunCtx) -> list:
        return [np.ascontiguousarray(view(a, xs[0])).reshape(shape(a, xs[0].shape))]
    return compute


for _name, _view, _fwd, _inv, _other in (
        ("depth_to_space", _d2s_view, _d2s_shape, _s2d_shape, "space_to_depth"),
        ("space_to_depth", _s2d_view, _s2d_shape, _d2s_shape, "depth_to_space")):
    register(OpDef(
        _name, BLOCK, ("data",), _inverse_pair(_fwd, _inv), _view_compute(_view, _fwd),
        lambda c, o=_other: [c.sym.apply_op(o, [c.ograds[0]], c.attrs)], INJECTIVE,
        lowering=("gather_views", {"views": lambda a, x, s, v=_view: [v(a, x)],
                                   "dtypes": "any"}),
        doc=f"{_name} of NCHW data in blocks of block_size x block_size (MXNet's DCR order); "
            f"its gradient is {_other}."))

# -- diag ---------------------------------------------------------------------------------------

DIAG_PARAMS = {"k": Param("int", 0), "axis1": Param("int", 0, doc="First axis of the 2-D planes."),
               "axis2": Param("int", 1, doc="Second axis of the 2-D planes.")}


def diagonal(a: Attrs, big: np.ndarray, vector: bool) -> np.ndarray:
    """The diagonal view diag reads (or, from a 1-D ``vector``, writes) in ``big``."""
    if vector:
        return np.diagonal(big, a["k"])
    nd = big.ndim
    return np.diagonal(big, a["k"], norm_axis(a["axis1"], nd, "axis1"),
                       norm_axis(a["axis2"], nd, "axis2"))


def _diag_shape(a: Attrs, s: list) -> list:
    x, k = tuple(s[0]), a["k"]
    if len(x) == 1:
        return [(x[0] + abs(k),) * 2]
    if not x:
        raise ShapeError("diag needs at least a 1-D input")
    a1, a2 = norm_axis(a["axis1"], len(x), "axis1"), norm_axis(a["axis2"], len(x), "axis2")
    if a1 == a2:
        raise ShapeError(f"axis1={a['axis1']} and axis2={a['axis2']} name one axis")
    n = max(0, min(x[a1], x[a2] - k) if k >= 0 else min(x[a1] + k, x[a2]))
    if n == 0:
        raise ShapeError(f"k={k} is outside the {x[a1]}x{x[a2]} matrices of data {fmt(x)}")
    return [tuple(d for i, d in enumerate(x) if i not in (a1, a2)) + (n,)]


def _onto_diagonal(a: Attrs, values: np.ndarray, shape: Shape, vector: bool) -> np.ndarray:
    """Zeros of ``shape`` with ``values`` on the diagonal view (a view of a fresh array we own,
    which numpy hands out read-only)."""
    out = np.zeros(shape, dtype=values.dtype)
    view = diagonal(a, out, vector)
    view.setflags(write=True)
    view[...] = values
    return out


def _diag(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    if x.ndim != 1:
        return [diagonal(a, x, False).copy()]
    return [_onto_diagonal(a, x, (x.shape[0] + abs(a["k"]),) * 2, True)]


def _backward_diag(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy, x = xs
    if x.ndim == 1:
        return [diagonal(a, dy, True).copy()]
    return [_onto_diagonal(a, dy, x.shape, False)]


register(OpDef(
    "diag", DIAG_PARAMS, ("data",), forward_shape(_diag_shape), _diag,
    lambda c: [c.sym._backward_diag(c.ograds[0], c.inputs[0], **c.attrs)], INJECTIVE,
    lowering=("diag", {"backward": False, "dtypes": "any"}),
    doc="The k-th diagonal of the (axis1, axis2) matrices of data, on a last axis; of a 1-D "
        "input, the square matrix with it on the k-th diagonal."))
register(OpDef(
    "_backward_diag", DIAG_PARAMS, ("ograd", "data"), like_input(1), _backward_diag,
    lambda c: [c.sym.diag(c.ograds[0], **c.attrs), None], INJECTIVE,
    lowering=("diag", {"backward": True, "dtypes": "any"}),
    doc="Gradient of diag: ograd placed on the diagonal of zeros shaped like the data (a 1-D "
        "data: the diagonal of ograd)."))

# -- Crop ---------------------------------------------------------------------------------------

CROP_PARAMS = {"num_args": Param("int"), "offset": Param("shape", (0, 0), doc="(y, x) of the crop's corner."),
               "h_w": Param("shape", (0, 0), doc="(height, width) of the crop (when one input)."),
               "center_crop": Param("bool", False, doc="Crop the centre instead of at offset.")}


def crop_index(a: Attrs, data: Shape, like: Any) -> tuple:
    """The (N, C, y:y+h, x:x+w) slice Crop takes of 4-D ``data``; ``like`` is crop_like's
    shape (num_args=2) or None (h_w gives the size)."""
    check_attr(a["num_args"] in (1, 2), "num_args", a["num_args"], "must be 1 or 2")
    if len(data) != 4:
        raise ShapeError(f"data {fmt(data)} must be 4-D (N, C, H, W)")
    h, w = (like[2], like[3]) if like is not None else tuple(a["h_w"])
    if a["center_crop"]:
        y0, x0 = (data[2] - h) // 2, (data[3] - w) // 2
    else:
        y0, x0 = a["offset"]
    if min(h, w, y0, x0) < 0 or h == 0 or w == 0 or y0 + h > data[2] or x0 + w > data[3]:
        raise ShapeError(f"crop of {h}x{w} at ({y0}, {x0}) does not fit in data {fmt(data)}")
    return (slice(None), slice(None), slice(y0, y0 + h), slice(x0, x0 + w))


def _like(s: list) -> Any:
    return s[1] if len(s) > 1 else None


def _crop_shape(a: Attrs, s: list) -> list:
    index = crop_index(a, s[0], _like(s))
    return [tuple(len(range(*sl.indices(n))) for sl, n in zip(index, s[0]))]


def _crop(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    return [x[crop_index(a, x.shape, xs[1].shape if len(xs) > 1 else None)].copy()]


def _backward_crop(a: Attrs, xs: list, ctx: RunCtx) -> list:
    dy, x = xs[0], xs[1]
    out = np.zeros(x.shape, dtype=dy.dtype)
    out[crop_index(a, x.shape, xs[2].shape if len(xs) > 2 else None)] = dy
    return [out]


def _crop_grad(c: Any) -> list:
    back = c.sym.apply_op("_backward_Crop", [c.ograds[0]] + list(c.inputs), c.attrs)
    return [back] + [None] * (len(c.inputs) - 1)


register(OpDef(
    "Crop", CROP_PARAMS,
    lambda a: ("data", "crop_like")[:a["num_args"]], forward_shape(_crop_shape), _crop,
    _crop_grad, INJECTIVE, variadic="num_args",
    lowering=("gather_views", {"views": lambda a, x, s: [x[crop_index(a, s[0], _like(s))]],
                               "dtypes": "any"}),
    doc="Legacy Crop of NCHW data: to crop_like's height and width (num_args=2) or h_w, at "
        "offset (y, x) or centred (center_crop)."))
register(OpDef(
    "_backward_Crop", CROP_PARAMS, lambda a: ("ograd", "data", "crop_like")[:a["num_args"] + 1],
    lambda a, ins, outs: (ins, [ins[1]] if ins[1] is not None else outs), _backward_crop,
    lambda c: [c.sym.apply_op("Crop", [c.ograds[0]] + list(c.inputs[2:]), c.attrs)]
    + [None] * len(c.inputs[1:]), INJECTIVE,
    lowering=("scatter_views", {"views": lambda a, x, s: [x[crop_index(a, s[1], _like(s[1:]))]],
                                "zero": True, "inputs": (0,), "dtypes": "any"}),
    doc="Gradient of Crop: ograd placed into zeros shaped like the data."))

# -- im2col, col2im -----------------------------------------------------------------------------

WINDOW_PARAMS = {"kernel": Param("shape"), "stride": Param("shape", ()),
                 "dilate": Param("shape", ()), "pad": Param("shape", ())}


def column_window(a: Attrs, image: Shape) -> ConvWindow:
    """The convolution window of im2col / col2im over an image batch (N, C, *spatial)."""
    n = len(a["kernel"])
    if n not in (1, 2, 3) or min(a["kernel"]) < 1:
        raise ShapeError(f"kernel {a['kernel']} must have 1 to 3 positive sizes")
    if len(image) != 2 + n:
        raise ShapeError(f"image {fmt(image)} must be {2 + n}-D for kernel {a['kernel']}")
    g = Geometry(tuple(a["kernel"]), per_axis(a, "stride", n, 1), per_axis(a, "dilate", n, 1),
                 per_axis(a, "pad", n, 0), 1)
    spatial = tuple(image[2:])
    return ConvWindow(image[0], image[1], spatial, g.kernel, g.stride, g.pad, g.dilate,
                      g.out(spatial), 1, 1)


def _columns_shape(g: ConvWindow) -> Shape:
    return (g.n, g.ckk, g.pix)


def _im2col(a: Attrs, xs: list, ctx: RunCtx) -> list:
    x = xs[0]
    g = column_window(a, x.shape)
    cols = window_im2col(x, g.kernel, g.stride, g.dilate, g.pad, g.out, 1)
    return [np.ascontiguousarray(cols.reshape(g.ckk, g.n, g.pix).transpose(1, 0, 2))]


def _image_of(a: Attrs, cols: Shape) -> Shape:
    """col2im's image shape (N, C, *output_size) from the columns' (N, C*K, L)."""
    k = prod(a["kernel"])
    if len(cols) != 3 or cols[1] % k:
        raise ShapeError(f"data {fmt(cols)} must be (N, C*{k}, L) for kernel {a['kernel']}")
    if len(a["output_size"]) != len(a["kernel"]):
        raise ShapeError(f"output_size {a['output_size']} and kernel {a['kernel']} differ "
                         f"in rank")
    image = (cols[0], cols[1] // k) + tuple(a["output_size"])
    g = column_window(a, image)
    if cols[2] != g.pix:
        raise ShapeError(f"data {fmt(cols)} has {cols[2]} blocks, output_size "
                         f"{a['output_size']} gives {g.pix}")
    return image


def _col2im(a: Attrs, xs: list, ctx: RunCtx) -> list:
    cols = xs[0]
    g = column_window(a, _image_of(a, cols.shape))
    flat = np.ascontiguousarray(cols.transpose(1, 0, 2)).reshape(g.ckk, g.n * g.pix)
    return [window_col2im(flat, g.input_shape, g.kernel, g.stride, g.dilate, g.pad, g.out)]


def _col2im_attrs(a: Attrs, image: Shape) -> Attrs:
    return a.replace(output_size=tuple(image[2:]))


register(OpDef(
    "im2col", WINDOW_PARAMS, ("data",),
    forward_shape(lambda a, s: [_columns_shape(column_window(a, tuple(s[0])))]), _im2col,
    lambda c: [c.sym.col2im(c.ograds[0], **_col2im_attrs(c.attrs, known_input_shape(c, 0)))],
    INJECTIVE,
    lowering=("columns", {"inverse": False}),
    doc="Sliding blocks of (N, C, *spatial) data as columns (N, C*prod(kernel), L); its "
        "gradient is col2im."))
register(OpDef(
    "col2im", {"output_size": Param("shape", doc="(height, width) of the image the columns came from."),
                **WINDOW_PARAMS}, ("data",),
    _inverse_pair(_image_of, lambda a, img: _columns_shape(column_window(a, img))), _col2im,
    lambda c: [c.sym.im2col(c.ograds[0], **{k: v for k, v in c.attrs.items()
                                              if k != "output_size"})], REDUCE,
    lowering=("columns", {"inverse": True}),
    doc="Columns (N, C*prod(kernel), L) summed back into (N, C, *output_size) images (each "
        "cell gets every column entry read from it); its gradient is im2col."))
