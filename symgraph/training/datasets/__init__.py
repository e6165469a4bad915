"""``sg.datasets``: readers (and opt-in downloaders) for the data sets the examples use."""
from __future__ import annotations

from . import mnist

__all__ = ["mnist"]
