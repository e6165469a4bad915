"""``gluon.contrib.data``: MXNet 1.x keeps ``IntervalSampler`` here; it is also
``gluon.data.IntervalSampler``."""
from __future__ import annotations

from ..data.sampler import IntervalSampler

__all__ = ["IntervalSampler"]
