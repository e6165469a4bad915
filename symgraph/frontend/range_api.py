"""MXNet's Python functions over the ``_arange`` and ``_histogram`` ops: ``sym.arange`` with
MXNet's positional arguments, ``nd.histogram`` / ``sym.histogram`` taking a bin count or edges."""
from __future__ import annotations

import numbers
from typing import Any, Callable, Optional

import numpy as np

from ..core.dtypes import as_dtype


def make_arange(apply_op: Callable) -> Callable:
    """``arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None,
    dtype=None)`` building an ``_arange`` node with ``apply_op``."""

    def arange(start: float, stop: Optional[float] = None, step: float = 1.0, repeat: int = 1,
               infer_range: bool = False, name: Optional[str] = None,
               dtype: Any = None) -> Any:
        """Values ``start, start + step, ...`` below ``stop``, each ``repeat`` times.

        >>> import symgraph as sg
        >>> sg.sym.arange(2, 8, step=2).infer_shape()[1]
        [(3,)]
        """
        attrs = {"start": start, "stop": stop, "step": step, "repeat": repeat,
                 "infer_range": infer_range, "dtype": as_dtype(dtype or np.float32).name}
        return apply_op("_arange", [], attrs, name)
    return arange


def make_histogram(histogram_op: Callable) -> Callable:
    """MXNet's ``histogram(a, bins=10, range=None)`` over the ``_histogram`` op function of
    ``sg.nd`` or ``sg.sym``."""

    def histogram(a: Any, bins: Any = 10, range: Optional[tuple] = None,  # noqa: A002 (MXNet)
                  **kwargs: Any) -> Any:
        """Counts of ``a`` in ``bins`` equal bins over ``range`` (the data's min and max when
        None), or in the bins whose edges the array ``bins`` holds; returns (counts, edges).

        >>> import symgraph as sg
        >>> counts, edges = sg.nd.histogram(sg.nd.array([0.5, 1.5, 1.6, 3.0]), 3, (0, 3))
        >>> counts.asnumpy().tolist(), edges.asnumpy().tolist()
        ([1, 2, 1], [0.0, 1.0, 2.0, 3.0])
        """
        if isinstance(bins, numbers.Number):
            return histogram_op(a, bin_cnt=int(bins), range=tuple(range or ()), **kwargs)
        return histogram_op(a, bins, **kwargs)
    return histogram
