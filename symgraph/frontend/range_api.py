"""MXNet's ``sym.arange``: the ``_arange`` op with MXNet's positional arguments."""
from __future__ import annotations

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
