"""Registry cases of ``_arange`` (``sg.sym.arange``): references from numpy's own arange, and
for integer dtypes MXNet 1.9.1's documented rule (start and step truncated first). The
``infer_range`` form, symbolic only (its length comes from the consumers), is checked in
test_operator_suite_semantics.py."""
from __future__ import annotations

import numpy as np

import symgraph as sg

from .case import Case, normal

S = sg.sym
x = S.var("x")

CASES = [
    Case("_arange", lambda: S.arange(1.5, 9, 2.5, repeat=2, dtype=np.float64) * x,
         {"x": normal(6)}, lambda x: np.repeat(np.arange(1.5, 9, 2.5), 2) * x),
    Case("_arange", lambda: S.arange(4, dtype=np.float64) + x, {"x": normal(4)},
         lambda x: np.arange(4.0) + x,
         id="_arange_stop_none"),
    Case("_arange", lambda: S.arange(-3.7, 8, 1.9, dtype="int32"), {},
         lambda: -3 + np.arange(7) * 1, grad=False, id="_arange_int_truncates"),
]
