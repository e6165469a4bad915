"""``sg.sym.contrib.rand_zipfian`` and ``sg.nd.contrib.rand_zipfian`` (MXNet 1.9.1): candidate
classes for sampled softmax, drawn with replacement from the approximately log-uniform law
``P(c) = log((c + 2) / (c + 1)) / log(range_max + 1)`` on ``[0, range_max)``, with the
expected number of times each true and each sampled class is drawn.

Composed from registered ops (a float64 uniform, exp, cast, modulo, log), so it has the
samplers' seeding, and their Philox kernels on the GPU. Importing this module installs both
functions.

Example::

    >>> import symgraph as sg
    >>> s, c_true, c_s = sg.nd.contrib.rand_zipfian(sg.nd.array([3]), 4, 5)
    >>> s.shape, s.dtype, c_true.dtype
    ((4,), dtype('int64'), dtype('float64'))
"""
from __future__ import annotations

import math
from typing import Any

from ..core.base import AttrError
from ..runtime import ndarray as nd
from ..runtime.ndarray import NDArray
from . import symbol as sym
from .symbol import Symbol


def _expected_count(classes: Any, num_sampled: int, log_range: float) -> Any:
    """``num_sampled * P(class)`` in float64 (no integer division)."""
    c = classes.astype("float64")
    return ((c + 2.0) / (c + 1.0)).log() / log_range * num_sampled


def _draw(kind: type, module: Any, true_classes: Any, num_sampled: int, range_max: int,
          **ctx: Any) -> tuple:
    if not isinstance(true_classes, kind):
        raise AttrError(f"rand_zipfian: true_classes must be a {kind.__name__}, got "
                        f"{type(true_classes).__name__}")
    if int(num_sampled) < 1 or int(range_max) < 1:
        raise AttrError(f"rand_zipfian: num_sampled={num_sampled} and range_max={range_max} "
                        f"must be positive")
    log_range = math.log(range_max + 1)
    u = module.random.uniform(0, log_range, shape=(int(num_sampled),), dtype="float64", **ctx)
    # exp(u) - 1 is below range_max + 1; the modulo folds the one value past the range
    sampled = module._internal._mod_scalar((u.exp() - 1).astype("int64"), scalar=int(range_max))
    return (sampled, _expected_count(true_classes, num_sampled, log_range),
            _expected_count(sampled, num_sampled, log_range))


def rand_zipfian_sym(true_classes: Symbol, num_sampled: int, range_max: int) -> tuple:
    """Symbols ``(sampled classes int64, expected count of each true class float64,
    expected count of each sampled class float64)``.

    Example::

        >>> import symgraph as sg
        >>> outs = sg.sym.contrib.rand_zipfian(sg.sym.var("true_cls"), 4, 5)
        >>> len(outs)
        3
    """
    return _draw(Symbol, sym, true_classes, num_sampled, range_max)


def rand_zipfian_nd(true_classes: NDArray, num_sampled: int, range_max: int,
                    ctx: Any = None) -> tuple:
    """NDArrays ``(sampled classes int64, expected count of each true class float64,
    expected count of each sampled class float64)``, drawn on ``ctx`` (default: that of
    ``true_classes``).

    Example::

        >>> import symgraph as sg
        >>> s, _, _ = sg.nd.contrib.rand_zipfian(sg.nd.array([1, 2]), 3, 10)
        >>> s.shape
        (3,)
    """
    if ctx is None and isinstance(true_classes, NDArray):
        ctx = true_classes.context
    return _draw(NDArray, nd, true_classes, num_sampled, range_max, ctx=ctx)


rand_zipfian_sym.__name__ = rand_zipfian_nd.__name__ = "rand_zipfian"
sym.contrib.rand_zipfian = rand_zipfian_sym
nd.contrib.rand_zipfian = rand_zipfian_nd
