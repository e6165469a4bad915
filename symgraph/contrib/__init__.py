"""``sg.contrib``: MXNet's ``mx.contrib`` names; ``sg.contrib.amp`` is :mod:`symgraph.amp`."""
from __future__ import annotations

from .. import amp

__all__ = ["amp"]
