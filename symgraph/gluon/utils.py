"""``gluon.utils``: ``split_data`` and ``split_and_load`` (one slice of a batch per context),
``clip_global_norm``, ``download``/``check_sha1`` and ``HookHandle``."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..runtime import ndarray as nd
from ..core.base import ShapeError
from ..core.context import Context
from .download import check_sha1, download  # noqa: F401  (MXNet's gluon.utils names)
from .hooks import HookHandle  # noqa: F401


def split_data(data: Any, num_slice: int, batch_axis: int = 0,
               even_split: bool = True) -> list:
    """``num_slice`` slices of ``data`` along ``batch_axis`` (the last ones one shorter when
    ``even_split=False`` and the size does not divide): NDArrays on the data's context for
    an NDArray, as MXNet, numpy arrays otherwise.

    Example: ``split_data(sg.nd.ones((6, 2)), 3)`` is three ``(2, 2)`` NDArrays."""
    slices = _split_host(data, num_slice, batch_axis, even_split)
    if isinstance(data, nd.NDArray):
        return [nd.array(s, data.context, data.dtype) for s in slices]
    return slices


def _split_host(data: Any, num_slice: int, batch_axis: int, even_split: bool) -> list:
    """:func:`split_data` as numpy arrays."""
    host = data.asnumpy() if isinstance(data, nd.NDArray) else np.asarray(data)
    size = host.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ShapeError(f"data with shape {host.shape} cannot be evenly split into "
                         f"{num_slice} slices along axis {batch_axis}. Use a batch size "
                         f"that's multiple of {num_slice} or set even_split=False")
    if size < num_slice:
        raise ShapeError(f"too many slices ({num_slice}) for data with shape {host.shape} "
                         f"along axis {batch_axis}")
    step = size // num_slice
    bounds = [i * step for i in range(num_slice)] + [size]
    if not even_split:
        extra = size - step * num_slice
        bounds = [i * step + min(i, extra) for i in range(num_slice)] + [size]
    return [np.take(host, range(lo, hi), axis=batch_axis)
            for lo, hi in zip(bounds[:-1], bounds[1:])]


def split_and_load(data: Any, ctx_list: Sequence[Context], batch_axis: int = 0,
                   even_split: bool = True) -> list:
    """Slices of ``data`` along ``batch_axis``, slice ``i`` copied to ``ctx_list[i]``."""
    dtype = data.dtype if hasattr(data, "dtype") else None
    if len(ctx_list) == 1:
        host = data.asnumpy() if isinstance(data, nd.NDArray) else np.asarray(data)
        return [nd.array(host, ctx_list[0], dtype or host.dtype)]
    slices = _split_host(data, len(ctx_list), batch_axis, even_split)
    return [nd.array(s, c, dtype or s.dtype) for s, c in zip(slices, ctx_list)]


def clip_global_norm(arrays: Sequence[Any], max_norm: float,
                     check_isfinite: bool = True) -> float:
    """Scale ``arrays`` in place so that their joint L2 norm is at most ``max_norm``; returns
    the norm before scaling."""
    hosts = [a.asnumpy().astype(np.float64) for a in arrays]
    total = float(np.sqrt(sum(float((h * h).sum()) for h in hosts)))
    if check_isfinite and not np.isfinite(total):
        import warnings
        warnings.warn("nan or inf is detected. Clipping results will be undefined.",
                      stacklevel=2)
    scale = max_norm / (total + 1e-8)
    if scale < 1.0:
        for a, h in zip(arrays, hosts):
            a[:] = (h * scale).astype(a.dtype)
    return total
