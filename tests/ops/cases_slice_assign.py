"""Cases for ``_slice_assign`` and ``_slice_assign_scalar``: float64 numpy assignment into a
copy as the reference, numeric gradients through both inputs."""
from __future__ import annotations

import numpy as np

import symgraph as sg

from .case import Case, normal

S = sg.sym
x, v = S.var("x"), S.var("v")


def _assigned(x: np.ndarray, index: tuple, value) -> np.ndarray:
    out = x.copy()
    out[index] = value
    return out


CASES: list[Case] = [
    Case("_slice_assign", lambda: S._slice_assign(x, v, begin=(1, None), end=(3, None)),
         {"x": normal(4, 5), "v": normal(2, 5)},
         lambda x, v: _assigned(x, np.s_[1:3, :], v)),
    Case("_slice_assign", lambda: S._slice_assign(x, v, begin=(None, -1, 0), end=(None, 0, 3),
                                                  step=(2, -2, None)),
         {"x": normal(3, 4, 3), "v": normal(2, 2, 3)},
         lambda x, v: _assigned(x, np.s_[::2, -1:0:-2, 0:3], v), id="slice_assign-steps"),
    Case("_slice_assign_scalar",
         lambda: S._slice_assign_scalar(x, scalar=2.5, begin=(0, 1), end=(2, None), step=(1, 2)),
         {"x": normal(3, 6)}, lambda x: _assigned(x, np.s_[0:2, 1::2], 2.5)),
    Case("_slice_assign_scalar", lambda: S._slice_assign_scalar(x, begin=(-2,), end=(None,)),
         {"x": normal(4, 2)}, lambda x: _assigned(x, np.s_[-2:], 0.0),
         id="slice_assign_scalar-default"),
]
