"""MXNet's ``sg.nd.image`` flips: ``_image_flip_left_right`` and ``_image_flip_top_bottom``
of an ``(H, W, C)`` image or an ``(N, H, W, C)`` batch.

Each is a reversed strided view, so on the GPU it is the ``gather_views`` copy kernel and its
gradient is the same flip of the output gradient. (``to_tensor`` and ``normalize`` are
compositions of existing ops: symgraph/image_api.py.)
"""
from __future__ import annotations

import numpy as np

from ...core.attrs import Attrs
from ...core.base import ShapeError
from ...core.registry import INJECTIVE, OpDef, register
from ._util import same_shape


def _axis(name: str, from_end: int):
    """The view reversing axis ``ndim - from_end`` (W: 2, H: 3) of a 3-d or 4-d image."""
    def view(a: Attrs, x: np.ndarray, shapes: list = ()) -> list:
        if x.ndim not in (3, 4):
            raise ShapeError(f"{name}: expected an (H, W, C) image or an (N, H, W, C) batch, "
                             f"got shape {x.shape}")
        index = [slice(None)] * x.ndim
        index[x.ndim - from_end] = slice(None, None, -1)
        return [x[tuple(index)]]
    return view


_LEFT_RIGHT = _axis("_image_flip_left_right", 2)
_TOP_BOTTOM = _axis("_image_flip_top_bottom", 3)

register(OpDef(
    "_image_flip_left_right", {}, ("data",), same_shape,
    lambda a, xs, ctx: [np.ascontiguousarray(_LEFT_RIGHT(a, xs[0])[0])],
    lambda c: [c.sym._image_flip_left_right(c.ograds[0])], INJECTIVE,
    lowering=("gather_views", {"views": _LEFT_RIGHT, "dtypes": "any"}),  # moves bytes
    doc="Reverse the width axis of an (H, W, C) image or an (N, H, W, C) batch."))

register(OpDef(
    "_image_flip_top_bottom", {}, ("data",), same_shape,
    lambda a, xs, ctx: [np.ascontiguousarray(_TOP_BOTTOM(a, xs[0])[0])],
    lambda c: [c.sym._image_flip_top_bottom(c.ograds[0])], INJECTIVE,
    lowering=("gather_views", {"views": _TOP_BOTTOM, "dtypes": "any"}),
    doc="Reverse the height axis of an (H, W, C) image or an (N, H, W, C) batch."))
