"""Cases for the ``sg.nd.image`` flip ops (``ops/image.py``): numpy's reversed views as the
reference, on an (H, W, C) image and an (N, H, W, C) batch."""
from __future__ import annotations

import symgraph as sg

from .case import Case, normal

S = sg.sym
x = S.var("x")

CASES = [
    Case("_image_flip_left_right", lambda: S.image.flip_left_right(x), {"x": normal(3, 4, 2)},
         lambda x: x[:, ::-1]),
    Case("_image_flip_left_right", lambda: S.image.flip_left_right(x),
         {"x": normal(2, 3, 4, 2)}, lambda x: x[:, :, ::-1], id="flip_left_right_batch"),
    Case("_image_flip_top_bottom", lambda: S.image.flip_top_bottom(x), {"x": normal(3, 4, 2)},
         lambda x: x[::-1]),
    Case("_image_flip_top_bottom", lambda: S.image.flip_top_bottom(x),
         {"x": normal(2, 3, 4, 2)}, lambda x: x[:, ::-1], id="flip_top_bottom_batch"),
]
