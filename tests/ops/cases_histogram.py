"""Registry cases of ``_histogram`` against numpy's own ``histogram`` (equal bins over a
range, over the data's span, and given edges; values on edges and outside included)."""
from __future__ import annotations

import numpy as np

import symgraph as sg

from .case import Case

S = sg.sym
x, e = S.var("x"), S.var("e")


def _data(rng: np.random.Generator) -> np.ndarray:
    """Uniform values with some exactly on the edges of 4 bins over (-2, 2), and outside."""
    v = rng.uniform(-3.0, 3.0, size=(5, 6))
    v.flat[:5] = [-2.0, -1.0, 0.0, 2.0, 1.0]
    return v


def _counts(bins, rng=None):
    return lambda x: list(np.histogram(x, bins=bins, range=rng))


CASES = [
    Case("_histogram", lambda: S.histogram(x, bins=4, range=(-2, 2)), {"x": _data},
         _counts(4, (-2, 2)), grad=False),
    Case("_histogram", lambda: S.histogram(x, bins=7), {"x": _data}, _counts(7), grad=False,
         id="_histogram_data_span"),
    Case("_histogram", lambda: S.histogram(x, bins=e),
         {"x": _data, "e": lambda rng: np.array([-2.5, -1.0, 0.0, 0.5, 2.0])},
         lambda x, e: list(np.histogram(x, bins=e)), grad=False, id="_histogram_edges"),
]
