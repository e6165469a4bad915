"""MXNet's 2-bit gradient compression for ``KVStore.set_gradient_compression``.

Each pushed gradient is added to a residual kept per key and per pushing device; every element
whose residual reaches ``threshold`` sends ``+threshold`` (and the residual loses it), every one
at or below ``-threshold`` sends ``-threshold`` (the residual gains it), the rest send 0. What
is sent is then summed over devices (and workers) as an uncompressed push would be: the
values are exactly those MXNet's 2-bit codes decode to, so no packing is needed within one
process. At most one threshold leaves per element and push; the remainder waits in the
residual, so nothing of the gradient is lost, only delayed.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np

from ..core.base import AttrError

__all__ = ["TwoBitCompression", "parse_compression"]


class TwoBitCompression:
    """The 2-bit quantiser with its residuals (``{(key, device index): array}``).

    >>> c = TwoBitCompression(0.5)
    >>> c.compress("w", 0, np.array([0.3, 0.6, -0.7, 1.2], np.float32))
    array([ 0. ,  0.5, -0.5,  0.5], dtype=float32)
    """

    def __init__(self, threshold: float) -> None:
        self.threshold = float(threshold)
        self.residuals: dict[tuple[Any, int], np.ndarray] = {}

    def compress(self, key: Any, device: int, grad: np.ndarray) -> np.ndarray:
        """What ``device`` sends for ``grad`` of ``key`` (its residual updated in place)."""
        res = self.residuals.get((key, device))
        if res is None or res.shape != grad.shape:
            res = self.residuals[(key, device)] = np.zeros(grad.shape, grad.dtype)
        res += grad
        t = res.dtype.type(self.threshold)
        sent = np.where(res >= t, t, np.where(res <= -t, -t, res.dtype.type(0)))
        res -= sent
        return sent


def parse_compression(params: Mapping[str, Any]) -> Optional[TwoBitCompression]:
    """The compressor MXNet's ``{'type': '2bit', 'threshold': t}`` asks for (``threshold``
    defaults to 0.5); AttrError names a missing or unknown type, a threshold that is not
    positive, or a key MXNet does not read."""
    if not isinstance(params, Mapping) or "type" not in params:
        raise AttrError(f"set_gradient_compression: {params!r} needs a 'type' ('2bit')")
    extra = sorted(set(params) - {"type", "threshold"})
    if extra:
        raise AttrError(f"set_gradient_compression: unknown keys {extra}; known: 'type', "
                        f"'threshold'")
    if params["type"] != "2bit":
        raise AttrError(f"set_gradient_compression: unknown type {params['type']!r}; "
                        f"supported: '2bit'")
    threshold = float(params.get("threshold", 0.5))
    if not threshold > 0:
        raise AttrError(f"set_gradient_compression: threshold must be greater than 0, got "
                        f"{threshold}")
    return TwoBitCompression(threshold)
