"""``gluon.contrib``: MXNet 1.x's contributed Gluon layers (``contrib.nn``) and samplers
(``contrib.data``)."""
from __future__ import annotations

from . import data, nn

__all__ = ["data", "nn"]
